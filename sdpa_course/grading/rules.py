"""The rules that cost points, each stated once, in the words a learner reads.

A check can take points away for what a function *does*, not only for a wrong
value: calling the reference, changing its input in place, returning the wrong
dtype, looping where vectorised code is asked for, concatenating the blocks of
an online computation. Each such rule is a :class:`Rule` here. Its
:attr:`~Rule.statement` is the one text of the rule: the feedback of a check
that applies it ends with it, and every homework notebook whose checks can
apply it states it before the first exercise (``nbgrader_tools.generated``
writes that cell from :func:`rules_text`). A check declares the rules it can
apply (:attr:`grading.check.Check.rules`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ALL_RULES",
    "DTYPE",
    "DTYPE_SHARE",
    "IN_PLACE",
    "MASK_FORM",
    "MUTATION_SHARE",
    "NO_CONCATENATE",
    "NO_LOOP",
    "OWN_CODE",
    "PRECISION",
    "Rule",
    "rules_list",
    "rules_text",
]

#: Share of a case that a result earns when its values are right but its
#: dtype is not (float64 for float32 input): the dtype is a small share.
DTYPE_SHARE = 0.25
#: Share of a case lost when the learner's function changed an input array in
#: place (a caller would find its data overwritten).
MUTATION_SHARE = 0.25


@dataclass(frozen=True)
class Rule:
    """One rule that costs points: ``title`` heads it in the notebook, ``statement`` says it
    (and what it costs) in the notebook and in the feedback alike."""

    id: str
    title: str
    statement: str


OWN_CODE = Rule(
    "own_code",
    "Your own code",
    "This exercise asks for your own implementation (numpy only): a function that calls the course's "
    "own package sdpa_course (its reference lib, its checks or its helpers), or torch, scipy, jax, "
    "tensorflow or sklearn (directly or however it reaches them), earns no points in any check that calls it.",
)
IN_PLACE = Rule(
    "in_place",
    "Leave the inputs as they were",
    "A function must leave its input arrays as they were: changing one in place (with -= or an "
    f"assignment into it) costs {MUTATION_SHARE:.0%} of each case where it happens; work on a copy, "
    "or write x = x - m instead of x -= m.",
)
DTYPE = Rule(
    "dtype",
    "Keep the input's dtype",
    "A result must have the dtype of the inputs (float32 in, float32 out): a case whose values are all "
    f"right but whose dtype is not earns {DTYPE_SHARE:.0%} of its share.",
)
PRECISION = Rule(
    "precision",
    "Compute at the input's precision",
    "A result must be right to its dtype's precision: a case whose float64 values agree with the expected "
    "ones only to about 7 significant digits (float32's precision, as when the scale sqrt(d_k) is computed "
    "in float32), or whose float32 values only to about 3 (float16's), earns "
    f"{DTYPE_SHARE:.0%} of its share, as a wrong dtype does.",
)
MASK_FORM = Rule(
    "mask_form",
    "A mask is a boolean array of its own shape",
    "A mask must be a boolean array (dtype=bool) of exactly the shape asked for: a mask whose pattern "
    "is right but which holds 0/1 numbers, or has an extra leading axis of size 1, earns "
    f"{DTYPE_SHARE:.0%} of its case's share; a wrong pattern earns nothing.",
)
NO_LOOP = Rule(
    "no_loop",
    "Vectorised means no Python loop",
    "Where the exercise asks for vectorised code, a function that loops in Python over the tokens "
    "(more lines of Python run for more tokens) earns no points in the check that counts those lines.",
)
NO_CONCATENATE = Rule(
    "no_concatenate",
    "Never concatenate the blocks",
    "The exercise says: never concatenate the blocks. A blocked_attention that calls np.concatenate "
    "(np.stack, np.vstack, np.hstack and np.append call it too) earns no points in its checks: keep a "
    "running maximum m, sum l and weighted sum of values per query, and update them block by block.",
)

#: Every rule, in the order a notebook states them.
ALL_RULES = (OWN_CODE, IN_PLACE, DTYPE, PRECISION, MASK_FORM, NO_LOOP, NO_CONCATENATE)


def rules_list(rules: Iterable[Rule]) -> str:
    """The rules as a Markdown list, in :data:`ALL_RULES` order: a bold title, then the statement."""
    wanted = {r.id for r in rules}
    return "\n".join(f"- **{r.title}.** {r.statement}" for r in ALL_RULES if r.id in wanted)


def rules_text(rules: Iterable[Rule]) -> str:
    """The notebook's section on the rules that cost points (Markdown)."""
    return (
        "## Rules that cost points\n\n"
        "The tests check your values, and also these rules; the feedback of a test that applies one "
        "repeats its words.\n\n" + rules_list(rules)
    )
