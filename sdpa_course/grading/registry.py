"""Which assignments exist, and their checks: the one list of the homework.

:data:`MODULES` names the assignment modules, in course order, and is the
only place that lists them. Importing this module imports each of them (each
builds its :class:`~grading.check.Assignment`); nothing fills a global table
as a side effect, and no module imports this one back.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from .authoring.hints import HINTS
from .check import Check

__all__ = ["ASSIGNMENTS", "MODULES", "all_checks", "all_hints", "checks_for", "get_check"]

#: The assignment modules (``sdpa_course/grading/<name>.py``), in course order.
MODULES = ("hw1", "hw2", "hw3", "hw4", "hw5", "hw6", "hw7", "hw8", "hw9", "hw10", "hw11", "hw12")

#: Assignment name -> its module (``hw1.A.name == "hw1_dot_product_scores"``), in course order.
ASSIGNMENTS: dict[str, ModuleType] = {
    module.A.name: module for module in (import_module(f"{__package__}.{short}") for short in MODULES)
}


def checks_for(assignment: str) -> list[Check]:
    """Every check of an assignment, in the order they were defined."""
    try:
        return list(ASSIGNMENTS[assignment].A.checks.values())
    except KeyError:
        raise KeyError(f"no assignment {assignment!r}; known: {sorted(ASSIGNMENTS)}") from None


def get_check(assignment: str, check_id: str) -> Check:
    """One check by assignment name and check id (= the test cell's grade_id)."""
    for check in checks_for(assignment):
        if check.id == check_id:
            return check
    raise KeyError(f"{assignment} has no check {check_id!r}")


def all_checks() -> dict[str, list[Check]]:
    """Every assignment's checks, by assignment name."""
    return {name: checks_for(name) for name in ASSIGNMENTS}


def all_hints() -> dict[str, str]:
    """Every usual mistake a message can name, key -> the phrase every message naming it contains:
    :data:`~grading.authoring.hints.HINTS`, and the ``MISTAKES`` of each assignment module that keeps
    its own table (keyed ``"hwN.<piece>.<mistake>"``, each phrase still kept in its table)."""
    out = dict(HINTS)
    for module in ASSIGNMENTS.values():
        mistakes = getattr(module, "MISTAKES", {})
        clash = set(out) & set(mistakes)
        if clash:
            raise ValueError(f"{module.__name__}.MISTAKES reuses the keys {sorted(clash)}")
        out.update(mistakes)
    return out
