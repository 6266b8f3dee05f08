"""The call watch: what a learner's function calls while it runs.

It runs in the learner's process (inside the sandbox, when the class grader
runs), around every call that :func:`grading.run.call_learner` makes. A
function that hands its work to the course's own package (``sdpa_course``:
its reference ``lib``, its checks, its helpers), torch, scipy, ... is caught
however it reaches it; so is one that starts a thread
or a process, or switches the watch off.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

import numpy as np

#: A tracing function, as sys.settrace takes it.
_Tracer = Callable[[FrameType, str, Any], Any]

__all__ = ["FORBIDDEN_PACKAGES", "NOTED_CALLS", "CallWatch", "GRADING_DIR", "SYSTEM_DIRS"]

#: Top-level packages whose code a learner's function may not run: the
#: course's own (its reference, graders and teaching helpers), and libraries
#: that ship an attention or a softmax. numpy is allowed: it is what the
#: exercises are written in.
FORBIDDEN_PACKAGES = ("sdpa_course", "torch", "scipy", "jax", "jaxlib", "tensorflow", "keras", "sklearn")
#: Packages whose use means work done where the watch cannot see it (another
#: thread or process) or an attempt to switch the watch off.
_HIDING_PACKAGES = ("multiprocessing", "concurrent", "subprocess", "_posixsubprocess", "queue", "_queue", "ctypes")
_HIDING_FUNCTIONS = {
    ("sys", "setprofile"),
    ("sys", "settrace"),
    ("sys", "_setprofileallthreads"),
    ("sys", "_settraceallthreads"),
    ("threading", "setprofile"),
    ("threading", "settrace"),
    ("threading", "setprofile_all_threads"),
    ("threading", "settrace_all_threads"),
    ("_thread", "start_new_thread"),
    ("_thread", "start_joinable_thread"),
    ("posix", "fork"),
    ("posix", "system"),
    ("posix", "posix_spawn"),
    ("posix", "posix_spawnp"),
    ("posix", "execv"),
    ("posix", "execve"),
    ("os", "fork"),
    ("os", "system"),
    ("os", "popen"),
    ("os", "execv"),
    ("os", "execve"),
    ("os", "execl"),
    ("os", "execvp"),
    ("os", "spawnv"),
    ("os", "posix_spawn"),
    ("threading", "start"),
    ("threading", "_start_new_thread"),
}


def _package_dirs(name: str) -> list[str]:
    """The folders of an installed top-level package, found without importing it (a namespace
    package, as the course is inside the grader's sandbox, may have several)."""
    mod = sys.modules.get(name)
    paths = getattr(mod, "__path__", None) if mod is not None else None
    if not paths:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        paths = spec.submodule_search_locations if spec is not None else None
    return [os.path.realpath(path) + os.sep for path in paths or ()]


#: numpy functions whose use is recorded (``record["calls"]``): the ways of
#: joining arrays, which homework 8 forbids for the blocks. (``np.vstack``,
#: ``np.hstack``, ``np.stack``, ``np.append`` and ``np.block`` all end in
#: ``concatenate``.)
NOTED_CALLS = frozenset({"concatenate"})
#: numpy's folder: its array-function dispatchers (the ``concatenate`` that
#: every joining function reaches) are Python functions there.
_NUMPY_DIR = os.path.dirname(np.__file__)

#: This package's folder: its code is the grader's, never the learner's.
GRADING_DIR = os.path.realpath(os.path.dirname(__file__)) + os.sep
#: The course package's folder, which holds this one.
_COURSE_DIR = os.path.dirname(GRADING_DIR.rstrip(os.sep)) + os.sep
#: The standard library's and the installed packages' folders.
SYSTEM_DIRS = tuple(
    {
        os.path.realpath(p) + os.sep
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (p := sysconfig.get_paths().get(key))
    }
)


class CallWatch:
    """Record what a learner's function calls while it runs.

    Inside ``with CallWatch() as watch:`` every Python function call and every
    call of a C function is looked at (``sys.setprofile``, also for threads
    started meanwhile). A call is *forbidden* when the code it runs belongs to
    one of :data:`FORBIDDEN_PACKAGES`, by the file it was loaded from or by the
    module it was defined in, which catches the reference reached through an
    alias, a wrapper, ``np.vectorize``, an import inside the function or a
    copied code object. Starting threads or processes and switching the watch
    off are recorded too. ``watch.forbidden`` lists what was seen, e.g.
    ``["sdpa_course.lib.softmax.softmax"]``.

    With ``count_lines=True`` it also counts the lines of learner code
    executed (``sys.settrace``), outside numpy and the standard library.
    """

    def __init__(self, *, count_lines: bool = False) -> None:
        self.count_lines = count_lines
        self.forbidden: list[str] = []
        #: Calls of the numpy functions in :data:`NOTED_CALLS` (rules such as
        #: "never concatenate the blocks" are judged from these).
        self.noted_calls: set[str] = set()
        self.lines = 0
        self._packages = {d: p for p in FORBIDDEN_PACKAGES + _HIDING_PACKAGES for d in _package_dirs(p)}
        self._packages.setdefault(_COURSE_DIR, "sdpa_course")
        self._dirs = tuple(d for d, p in self._packages.items() if p in FORBIDDEN_PACKAGES)
        self._hiding_dirs = tuple(d for d, p in self._packages.items() if p in _HIDING_PACKAGES)
        self._code_verdicts: dict[Any, str | None] = {}
        self._frame: FrameType | None = None
        self._own = (CallWatch.__exit__.__code__,)
        self._hook = self._profile  # one bound method, so that `is` can recognise it

    # -- classification ------------------------------------------------------
    def _classify_code(self, frame: FrameType) -> str | None:
        code = frame.f_code
        filename = os.path.realpath(code.co_filename) if code.co_filename[:1] not in "<" else code.co_filename
        module = frame.f_globals.get("__name__") or ""
        top = module.partition(".")[0] if isinstance(module, str) else ""
        qualname = getattr(code, "co_qualname", code.co_name)
        for folder, package in self._packages.items():
            if filename.startswith(folder):  # named by where the code was loaded from
                module = package + "." + filename[len(folder) :].removesuffix(".py").replace(os.sep, ".")
                module = module.removesuffix(".__init__")
                top = package
                break
        name = f"{module}.{qualname}"
        if top in FORBIDDEN_PACKAGES or filename.startswith(self._dirs):
            return name
        if top in _HIDING_PACKAGES or filename.startswith(self._hiding_dirs):
            return name
        if top == "threading" and code.co_name in ("start", "_start_new_thread"):
            return name
        return None

    def _classify_c(self, func: object) -> str | None:
        module = getattr(func, "__module__", None)
        owner = getattr(func, "__self__", None)
        if not module and owner is not None:
            module = owner.__name__ if type(owner).__name__ == "module" else type(owner).__module__
        module = module if isinstance(module, str) else ""
        fname = getattr(func, "__name__", "?")
        top = module.partition(".")[0]
        if top in FORBIDDEN_PACKAGES or top in _HIDING_PACKAGES:
            return f"{module}.{fname}"
        if (top, fname) in _HIDING_FUNCTIONS or (module, fname) in _HIDING_FUNCTIONS:
            return f"{module}.{fname}"
        if fname.startswith(("exec", "spawn", "posix_spawn", "fork")) and top in ("os", "posix", "nt"):
            return f"{module}.{fname}"
        return None

    def _note(self, what: str) -> None:
        if what not in self.forbidden and len(self.forbidden) < 20:
            self.forbidden.append(what)

    # -- hooks ---------------------------------------------------------------
    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if frame.f_code in self._own:
            return
        if event == "call":
            code = frame.f_code
            if code.co_name in NOTED_CALLS and _NUMPY_DIR and code.co_filename.startswith(_NUMPY_DIR):
                self.noted_calls.add(f"np.{code.co_name}")
            try:
                verdict = self._code_verdicts[code]
            except KeyError:
                verdict = self._code_verdicts[code] = self._classify_code(frame)
            if verdict is not None:
                self._note(verdict)
        elif event == "c_call":
            if frame is self._frame:
                return
            name = getattr(arg, "__name__", None)
            if name in NOTED_CALLS:
                self.noted_calls.add(f"np.{name}")
            verdict = self._classify_c(arg)
            if verdict is not None:
                self._note(verdict)

    def _is_learner_code(self, code: CodeType) -> bool:
        filename = code.co_filename
        if filename.startswith("<frozen"):
            return False
        real = os.path.realpath(filename) if not filename.startswith("<") else filename
        return not real.startswith(SYSTEM_DIRS + self._dirs)

    def _trace(self, frame: FrameType, event: str, arg: Any) -> _Tracer | None:
        if event == "call" and frame is not self._frame and self._is_learner_code(frame.f_code):
            return self._trace_lines
        return None

    def _trace_lines(self, frame: FrameType, event: str, arg: Any) -> _Tracer:
        if event == "line":
            self.lines += 1
        return self._trace_lines

    # -- context manager -----------------------------------------------------
    def __enter__(self) -> CallWatch:
        thread_profile = threading.getprofile() if hasattr(threading, "getprofile") else None
        self._saved = (sys.getprofile(), sys.gettrace(), thread_profile)
        self._frame = sys._getframe(1)
        threading.setprofile(self._hook)
        if self.count_lines:
            sys.settrace(self._trace)
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc: object) -> None:
        current = sys.getprofile()
        sys.setprofile(self._saved[0])
        if current is not self._hook:
            self._note("sys.setprofile (the watch was switched off)")
        if self.count_lines:
            sys.settrace(self._saved[1])
        threading.setprofile(self._saved[2])
