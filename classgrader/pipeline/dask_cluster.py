"""Grade a class on a Dask cluster: one task per submission, the books kept by the client.

``./course grade ASSIGNMENT SUBMISSIONS --cluster tcp://host:8786`` sends each
submission to a running Dask scheduler as one task. The task runs on a worker
exactly what a local run does (:func:`classgrader.stages.grade.grade`: the same
matching, the same bubblewrap sandbox with the same limits on the worker's
machine, the same comparison with ``lib`` outside the learner's process) and
returns plain data: the result (JSON), the autograded notebook (its JSON text)
and the feedback page (HTML). The client, the machine that runs ``./course
grade``, then writes every output exactly as a local run does: the atomic
result file, then the gradebook (one transaction per student). So an
interrupted or failed run resumes as a local one does, and a task that Dask
runs twice (its worker died after finishing) is still written once.

Before any grading, :class:`Session` compares a fingerprint of every worker
with the client's (:func:`worker_environment`: Python, the version of every pinned
package, and a hash of ``lib``, ``grading`` and ``classgrader``) and refuses
the run, naming each worker and what differs, if any worker differs or cannot
start a sandbox. A worker that joins later is checked by its first task.

Faults:

- a worker that dies mid-task: Dask runs its tasks again on another worker
  (up to the scheduler's ``distributed.scheduler.allowed-failures``, 3 by
  default; past that the submission is reported as not graded and the next
  run grades it);
- a submission that kills its sandbox: its status as in a local run (the
  sandbox is a child process: the worker survives it); a task that raises is
  reported and never retried;
- the scheduler going away: the run stops with :class:`ClusterLost`, whose
  message says how many submissions are saved; the next run resumes.

The task carries what grading needs and the worker may lack: the release and
instructor notebooks, the course secret (for the hidden inputs' seeds) and
the submitted file's bytes. Use a ``tls://`` address on a network you do not
trust (see Dask's security settings).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import os
import platform
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat

from classgrader import sandbox
from classgrader.after_deadline import late
from classgrader.assignments.course import AssignmentInfo, SetupError
from classgrader.pipeline import fingerprint
from classgrader.pipeline.executors import Outcome
from classgrader.pipeline.intake import Submission
from classgrader.stages.grade import Graded, Settings, grade

#: Folder of the lock files that give each running sandbox on a machine its own uid.
SLOT_DIR = Path(tempfile.gettempdir()) / "classgrader-slots"
MAX_SLOTS = 900  # sandbox uids uid_base .. uid_base + 899
#: How long the client waits for the first worker, in seconds.
WORKER_WAIT = 60.0


class ClusterError(SetupError):
    """The cluster cannot grade this run (unreachable, no worker, a worker refused); the message says why."""


class ClusterLost(ClusterError):
    """The scheduler went away during the run; what was graded is saved."""


class WorkerRefused(RuntimeError):
    """Raised by a task on a worker whose fingerprint differs from the client's."""


# --------------------------------------------------------------------------
# Fingerprints: the same environment, lib and checks on every machine
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def worker_environment(names: tuple[str, ...], sandboxed: bool) -> dict[str, Any]:
    """What grading on this machine depends on (computed once per process).

    :func:`classgrader.pipeline.fingerprint.environment` (Python, the pinned
    packages, hashes of ``lib``, ``grading`` and ``classgrader``), the host,
    and ``sandbox``: None when a sandbox can start here (or ``sandboxed`` is
    false), else why not.
    """
    problem = None
    if sandboxed:
        try:
            sandbox.check_available()
        except sandbox.SandboxUnavailable as exc:
            problem = str(exc)
    return {**fingerprint.environment(names), "sandbox": problem, "host": platform.node()}


WHAT = {
    "python": "Python",
    "machine": "processor architecture",
    "lib": "lib (the reference implementation)",
    "grading": "grading (the checks)",
    "classgrader": "classgrader (this grader)",
}


def differences(mine: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """What differs between the client's fingerprint and a worker's, in words (empty: nothing)."""
    out = []
    for key, what in WHAT.items():
        if mine.get(key) != theirs.get(key):
            a, b = str(theirs.get(key)), str(mine.get(key))
            if key in ("lib", "grading", "classgrader"):
                a, b = f"hash {a[:12]}", f"hash {b[:12]}"
            out.append(f"{what}: {a} on the worker, {b} here")
    packages = [
        f"{name} {theirs.get('packages', {}).get(name) or 'absent'} on the worker, {version or 'absent'} here"
        for name, version in sorted(mine.get("packages", {}).items())
        if theirs.get("packages", {}).get(name) != version
    ]
    if packages:
        out.append(
            "pinned packages differ: "
            + "; ".join(packages[:8])
            + (f" (and {len(packages) - 8} more)" if len(packages) > 8 else "")
        )
    if theirs.get("sandbox"):
        out.append(f"it cannot start a sandbox: {theirs['sandbox']}")
    return out


# --------------------------------------------------------------------------
# The task: runs on a worker
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Task:
    """One submission, carried to a worker: who it is, and the bytes of its files."""

    submission: Submission  # its paths are the client's: the worker rebuilds them from ``files``
    notebook: bytes | None
    extra: dict[str, bytes]


def for_workers(info: AssignmentInfo) -> AssignmentInfo:
    """``info`` without what is the client's own (its checks' objects and folders): the worker uses its own."""
    return dataclasses.replace(info, checks=[], grading_dir=Path(), lib_dir=Path())


_INFOS: dict[str, AssignmentInfo] = {}


def _shared(info: AssignmentInfo) -> AssignmentInfo:
    """The task every grading task of a run depends on: it gives the assignment (see :meth:`Session.grade`)."""
    return info


def _worker_info(info: AssignmentInfo) -> AssignmentInfo:
    """The assignment with this worker's checks and packages (identical to the client's: fingerprinted)."""
    cached = _INFOS.get(info.key)
    if cached is None:
        from sdpa_course import grading, lib

        cached = dataclasses.replace(
            info,
            checks=grading.checks_for(info.name),
            grading_dir=Path(grading.__file__).parent,
            lib_dir=Path(lib.__file__).parent,
        )
        _INFOS[info.key] = cached
    return cached


@contextlib.contextmanager
def machine_slot(folder: Path = SLOT_DIR, count: int = MAX_SLOTS) -> Iterator[int]:
    """A slot number no other running sandbox on this machine holds (its uid is ``uid_base + slot``).

    Each slot is an exclusive lock on a file, so it holds across every worker
    process of the machine and is freed when its holder ends, even by a crash.
    """
    folder.mkdir(mode=0o700, exist_ok=True)
    for slot in range(count):
        fd = os.open(folder / f"{slot}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield slot
        finally:
            os.close(fd)
        return
    raise RuntimeError(f"more than {count} sandboxes are running on this machine")


def grade_task(
    info: AssignmentInfo, task: Task, settings: Settings, policy: late.Policy | None, expected: dict[str, Any]
) -> dict[str, Any]:
    """Grade one submission on this worker; return plain data (see :func:`unpack`).

    Refuses (:class:`WorkerRefused`) when this worker's fingerprint differs
    from the client's ``expected`` one.
    """
    mine = worker_environment(tuple(sorted(expected["packages"])), settings.sandboxed)
    diff = differences(expected, mine)
    if diff:
        raise WorkerRefused(f"worker on {mine['host']} differs from the client: " + "; ".join(diff))
    info = _worker_info(info)
    sub = task.submission
    with tempfile.TemporaryDirectory(prefix="classgrader-task-") as tmp:
        folder = Path(tmp)
        os.chmod(folder, 0o755)  # extra files are bound into the sandbox, read by its uid
        path = None
        if task.notebook is not None:
            path = folder / (sub.path.name if sub.path is not None else info.notebook)
            path.write_bytes(task.notebook)
        extra_dir = folder / "extra"
        extra_dir.mkdir(mode=0o755)
        extra: dict[str, Path] = {}
        for name, data in task.extra.items():
            extra[name] = extra_dir / f"{len(extra)}"
            extra[name].write_bytes(data)
            os.chmod(extra[name], 0o644)
        local = dataclasses.replace(sub, path=path, extra_files=extra)
        with machine_slot() as slot:
            graded = grade(info, local, settings, policy, slot=slot)
    return {
        "result": graded.result,
        "notebook": None if graded.notebook is None else nbformat.writes(graded.notebook),
        "feedback": graded.feedback,
    }


def pack(sub: Submission) -> Task:
    """The task for one submission: its files' bytes travel with it."""
    return Task(
        submission=sub,
        notebook=None if sub.path is None else sub.path.read_bytes(),
        extra={name: p.read_bytes() for name, p in sub.extra_files.items()},
    )


def unpack(data: dict[str, Any]) -> Graded:
    """What a task returned, as the :class:`~classgrader.stages.grade.Graded` a local run makes."""
    nb = None if data["notebook"] is None else nbformat.reads(data["notebook"], as_version=4)
    return Graded(data["result"], nb, data["feedback"])


# --------------------------------------------------------------------------
# The client side
# --------------------------------------------------------------------------


class Session:
    """A connection to a Dask scheduler whose workers have been checked; a context manager.

    ``cluster`` is the scheduler's address, e.g. ``tcp://host:8786``, or a
    ``distributed.Client`` already connected (from dask-jobqueue,
    dask-kubernetes or dask-gateway: ``cluster.get_client()``), which is left
    open at the end; ``log`` gets one-line messages (the dashboard link among
    them).
    """

    def __init__(
        self,
        cluster: Any,
        settings: Settings,
        *,
        log: Callable[[str], None] = print,
        worker_wait: float = WORKER_WAIT,
        connect_timeout: float = 30.0,
    ):
        from distributed import Client

        self.settings = settings
        self.log = log
        self._futures: dict[Any, Submission] = {}
        self._own = isinstance(cluster, str)
        if self._own:
            self.address = cluster
            try:
                self.client = Client(cluster, timeout=connect_timeout, set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise ClusterError(f"cannot reach the Dask scheduler at {cluster}: {exc}") from None
        else:
            self.client = cluster
            self.address = cluster.scheduler.address
        try:
            self._check_workers(worker_wait)
            self.log(f"classgrader: grading on the Dask cluster at {self.address}: {self._describe()}")
            self.log(f"classgrader: Dask dashboard: {self.dashboard()}")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._own:
            with contextlib.suppress(Exception):
                self.client.close(timeout=10)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def threads(self) -> int:
        """How many tasks the cluster's workers run at once now (their threads)."""
        return sum(self.client.nthreads().values())

    def _describe(self) -> str:
        return f"{len(self.client.nthreads())} workers, {self.threads} threads"

    def dashboard(self) -> str:
        """The dashboard's address, or why there is none (the scheduler serves it only with bokeh)."""
        services = self.client.scheduler_info().get("services", {})
        if "dashboard" not in services:
            return "none (the scheduler serves its dashboard only when bokeh is installed where it runs)"
        link: str = self.client.dashboard_link  # distributed leaves the property unannotated
        return link

    def _check_workers(self, worker_wait: float) -> None:
        try:
            self.client.wait_for_workers(1, timeout=worker_wait)
        except TimeoutError:
            raise ClusterError(
                f"no worker joined the Dask scheduler at {self.address} within {worker_wait:g} s"
            ) from None
        self.expected = worker_environment(tuple(fingerprint.pinned_names()), self.settings.sandboxed)
        expected = {**self.expected, "sandbox": None}
        seen = self.client.run(
            worker_environment,
            tuple(sorted(self.expected["packages"])),
            self.settings.sandboxed,
            on_error="return",
        )
        refused = []
        for address, theirs in sorted(seen.items()):
            if isinstance(theirs, BaseException):
                refused.append(f"{address}: could not report its environment ({type(theirs).__name__}: {theirs})")
                continue
            diff = differences(expected, theirs)
            if diff:
                refused.append(f"{address} ({theirs.get('host')}): " + "; ".join(diff))
        if refused:
            raise ClusterError(
                f"refusing to grade: {len(refused)} of {len(seen)} workers differ from this machine, so they "
                "could score differently:\n  "
                + "\n  ".join(refused)
                + "\nProvision every worker from the same course checkout and pins (the instructors' "
                "guide, ./course solutions: Grading on a cluster), then run again."
            )
        self.expected = expected

    def grade(
        self, info: AssignmentInfo, subs: list[Submission], policy: late.Policy | None, window: int | None = None
    ) -> Iterator[Outcome]:
        """Grade ``subs`` on the cluster; yield each one's outcome (in the client's thread) as it comes back.

        A submission that could not be graded (its task raised, or its workers
        kept dying) comes back with why; the next run grades it. At most
        ``window`` tasks are queued at once (default: four per worker thread,
        at least 64). Raises :class:`ClusterLost` if the scheduler goes away,
        :class:`ClusterError` if a worker is refused.
        """
        from distributed import as_completed

        window = window or max(64, 4 * (self.threads or 1))
        run = uuid.uuid4().hex[:8]
        # The assignment goes as a task's result, not as scattered data: Dask keeps a key only where the
        # tasks still waiting on it run, and scattered data lost with that worker cannot be made again,
        # so every task still to run would be cancelled; a task's result is computed again. (Its key
        # cannot be a grading task's: those begin "classgrader-".)
        shared = self.client.submit(
            _shared, for_workers(info), key=f"classgrader.assignment-{info.name}-{run}", pure=False
        )
        submit = functools.partial(self._submit, shared, info.name, policy, run)
        todo = list(reversed(subs))
        ac = as_completed(loop=self.client.loop)
        done = 0
        try:
            while todo and len(self._futures) < window:
                ac.add(submit(todo.pop()))
            for fut in ac:
                outcome = self._outcome(fut, self._futures.pop(fut), done)
                fut.release()
                done += outcome.graded is not None
                yield outcome  # the class run saves it before asking for the next
                while todo and len(self._futures) < window:
                    ac.add(submit(todo.pop()))
        except BaseException:
            self.interrupt()
            raise

    def _submit(self, shared: Any, name: str, policy: late.Policy | None, run_id: str, sub: Submission) -> Any:
        fut = self.client.submit(
            grade_task,
            shared,
            pack(sub),
            self.settings,
            policy,
            self.expected,
            key=f"classgrader-{name}-{sub.student}-{run_id}",
            pure=False,
            retries=0,
        )
        self._futures[fut] = sub
        return fut

    def _outcome(self, fut: Any, sub: Submission, done: int) -> Outcome:
        """What one finished task gave; raises when the run cannot go on (scheduler lost, worker refused)."""
        from distributed.scheduler import KilledWorker

        if fut.status == "cancelled":
            raise ClusterLost(
                f"the Dask scheduler at {self.address} went away: {done} submissions of this run were "
                "graded and saved. Run the same command again (with a scheduler up) to grade the rest."
            )
        try:
            return Outcome(sub, unpack(fut.result()))
        except WorkerRefused as exc:
            raise ClusterError(
                f"refusing a worker that joined during the run: {exc}. "
                f"{done} submissions were graded and saved; fix the worker and run "
                "the same command again."
            ) from None
        except KilledWorker:
            why = "the workers grading it died repeatedly (past Dask's allowed-failures); the next run tries again"
            return Outcome(sub, None, why)
        except Exception as exc:  # a bug in grading one notebook must not stop the class
            return Outcome(sub, None, f"internal error: {type(exc).__name__}: {exc}")

    def interrupt(self) -> None:
        """Cancel the tasks still queued or running."""
        with contextlib.suppress(Exception):
            self.client.cancel(list(self._futures), force=True)
        self._futures.clear()
