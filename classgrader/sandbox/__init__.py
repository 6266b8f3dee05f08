"""The bubblewrap sandbox that runs a submission's code, and the program inside it.

* :mod:`~classgrader.sandbox.limits`: how much a sandbox may use (:class:`Limits`);
* :mod:`~classgrader.sandbox.command`: the bwrap command line, and what the sandbox is made of;
* :mod:`~classgrader.sandbox.mode`: which sandbox this machine allows (as root, or in a user namespace);
* :mod:`~classgrader.sandbox.session`: one sandbox per submission serving its jobs (:class:`Session`);
* :mod:`~classgrader.sandbox.driver`: the program that runs inside, by file path, importing nothing of the grader's;
* :mod:`~classgrader.sandbox.bytecode`: the grader's own packages compiled once, for the sandbox to import.

The names the rest of the grader uses are importable from this package.
"""

from classgrader.sandbox.command import DRIVER, DRIVER_FILES
from classgrader.sandbox.limits import Limits
from classgrader.sandbox.mode import SandboxUnavailable, check_available
from classgrader.sandbox.session import Registry, RunOutcome, Session, run

__all__ = [
    "DRIVER",
    "DRIVER_FILES",
    "Limits",
    "Registry",
    "RunOutcome",
    "SandboxUnavailable",
    "Session",
    "check_available",
    "run",
]
