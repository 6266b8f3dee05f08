"""Where submissions are graded: a pool of threads on this machine, or the workers of a Dask cluster.

Both are an :class:`Executor`: given the submissions, it yields one
:class:`Outcome` per submission as each one finishes, in the class run's
thread. The class run (:func:`classgrader.pipeline.class_run.grade_rest`)
saves each outcome and writes the gradebook, the same way for both; an
executor writes nothing.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import queue
import threading
from collections.abc import Iterator
from typing import Protocol

from classgrader import sandbox
from classgrader.after_deadline import late
from classgrader.assignments.course import AssignmentInfo
from classgrader.pipeline.intake import Submission
from classgrader.stages.grade import Graded, Settings, grade


@dataclasses.dataclass
class Outcome:
    """One submission back from an executor: graded, or why not (it is graded again by the next run)."""

    sub: Submission
    graded: Graded | None
    failure: str = ""


class Executor(Protocol):
    """Grades submissions somewhere; a context manager whose exit waits for, and frees, what it started."""

    @property
    def threads(self) -> int:
        """How many submissions it grades at once."""
        ...

    def grade(self, info: AssignmentInfo, subs: list[Submission], policy: late.Policy | None) -> Iterator[Outcome]:
        """Grade ``subs``; yield each one's outcome as it finishes."""
        ...

    def interrupt(self) -> None:
        """Stop what is running now (an interrupt): nothing it was grading is yielded."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


class LocalPool:
    """``workers`` threads on this machine, each grading in its own sandbox (slot ``i`` runs as its own uid)."""

    def __init__(self, settings: Settings, workers: int):
        self.settings = settings
        self.workers = workers
        self._stop = threading.Event()
        self._registry = sandbox.Registry()
        self._slots: queue.Queue[int] = queue.Queue()
        for i in range(workers):
            self._slots.put(i)
        self._pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="classgrader")

    @property
    def threads(self) -> int:
        return self.workers

    def _grade_one(self, info: AssignmentInfo, sub: Submission, policy: late.Policy | None) -> Graded | None:
        if self._stop.is_set():
            return None
        slot = self._slots.get()
        try:
            graded = grade(info, sub, self.settings, policy, slot=slot, registry=self._registry)
        finally:
            self._slots.put(slot)
        return None if self._stop.is_set() else graded  # killed by the interrupt: not a real outcome

    def grade(self, info: AssignmentInfo, subs: list[Submission], policy: late.Policy | None) -> Iterator[Outcome]:
        futures = {self._pool.submit(self._grade_one, info, sub, policy): sub for sub in subs}
        for fut in cf.as_completed(futures):
            sub = futures[fut]
            try:
                graded = fut.result()
            except Exception as exc:  # a bug in grading one notebook must not stop the class
                yield Outcome(sub, None, f"internal error: {type(exc).__name__}: {exc}")
                continue
            if graded is not None:
                yield Outcome(sub, graded)

    def interrupt(self) -> None:
        self._stop.set()
        self._registry.kill_all()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
