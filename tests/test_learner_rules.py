"""Every rule that costs points is announced where it can be applied, in the feedback's words.

The rules are declared once (:mod:`grading.rules`); each check names the ones
it can apply (``Check.rules``). These tests check the declarations against
what the checks really do (on a corpus file per rule and on solutions made to
break a rule), that every release states each rule its checks declare, and
that the check before submitting reports a rule broken.
"""

from __future__ import annotations

import numpy as np
import pytest
from fixtures.homework import submissions as subs

from sdpa_course import grading
from sdpa_course.grading.plain import case_inputs
from sdpa_course.grading.rules import ALL_RULES, DTYPE, IN_PLACE, OWN_CODE, Rule


def _declared(assignment: str, check_id: str) -> set[str]:
    return {rule.id for rule in grading.get_check(assignment, check_id).rules}


#: For each rule, a corpus file whose mistake it prices. That the corpus applies a rule only where
#: the check declares it is checked on every file, by the test of the file's points.
APPLIED_BY = {
    "own_code": ("hw2_stable_softmax", "calls_reference"),
    "in_place": ("hw2_stable_softmax", "changes_its_input"),
    "dtype": ("hw2_stable_softmax", "float64_result"),
    "precision": ("hw4_scaled_dot_product_attention", "float32_scale"),
    "mask_form": ("hw6_causal_masking", "mask_float_tril"),
    "no_loop": ("hw1_dot_product_scores", "loop_only"),
    "no_concatenate": ("hw8_online_softmax", "concatenates_blocks"),
}


def test_every_rule_has_a_corpus_file_whose_mistake_it_prices():
    assert set(APPLIED_BY) == {rule.id for rule in ALL_RULES}


@pytest.mark.parametrize("rule", sorted(APPLIED_BY))
def test_the_corpus_file_of_a_rule_loses_points_by_it(rule):
    assignment, name = APPLIED_BY[rule]
    verdicts = subs.corpus_verdicts(assignment, subs.HERE / assignment / f"{name}.py")
    told = [cid for cid, v in verdicts.items() if rule in subs.rules_stated(v.message) and v.fraction < 1]
    assert told, (rule, {cid: v.message for cid, v in verdicts.items()})


def _breaking(fn, how: str):
    """``fn`` made to break one rule: change its float inputs in place, return float64, or call lib."""

    def broken(*args, **kwargs):
        value = fn(*args, **kwargs)
        if how == "in_place":
            for arg in args:
                if isinstance(arg, np.ndarray) and arg.dtype.kind == "f" and arg.size:
                    arg[...] = 0
        elif how == "dtype":
            value = value.astype(np.float64) if isinstance(value, np.ndarray) and value.dtype == np.float32 else value
            if isinstance(value, tuple):
                value = tuple(
                    v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype == np.float32 else v for v in value
                )
        elif how == "own_code":
            from sdpa_course import lib

            lib.softmax(np.zeros(2))
        return value

    return broken


@pytest.mark.parametrize("rule", [IN_PLACE, DTYPE, OWN_CODE], ids=lambda r: r.id)
@pytest.mark.parametrize("assignment", subs.ASSIGNMENTS)
def test_a_solution_that_breaks_a_rule_is_told_so_only_where_the_rule_is_declared(assignment, rule: Rule):
    """The solution, made to break the rule, loses points with the rule's statement as feedback;
    each assignment has a check where that happens, and only declared checks say it."""
    ns = subs.solution_namespace(assignment)
    told = 0
    for check in grading.checks_for(assignment):
        broken = {name: _breaking(ns[name], rule.id) for name in check.functions}
        verdict = check.grade({**ns, **broken}, 1 if check.hidden else None)
        applied = subs.rules_stated(verdict.message)
        assert applied <= _declared(assignment, check.id), (check.id, verdict.message)
        if rule.id in applied:
            assert verdict.fraction < 1, (check.id, verdict)
            told += 1
    if any(rule in check.rules for check in grading.checks_for(assignment)):
        assert told > 0, f"no check of {assignment} applied {rule.id}"


def _input_dtypes(value, found: set[str]) -> set[str]:
    if isinstance(value, np.ndarray):
        found.add(value.dtype.name)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _input_dtypes(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _input_dtypes(item, found)
    return found


# Checks that judge values in any dtype (hw8's running state m, l: the statement asks for the dtype of
# online_softmax and blocked_attention only), so they state no dtype rule although a case is float32.
BY_VALUE = {("hw8_online_softmax", c) for c in ("running_state", "running_state_masked", "running_state_hidden")}


@pytest.mark.parametrize(("assignment", "check_id"), [(a, c.id) for a, cs in grading.all_checks().items() for c in cs])
def test_the_per_case_rules_are_declared_exactly_where_the_inputs_allow_them(assignment, check_id):
    """An input can be changed in place only if a case passes an array; a dtype kept only if one is float32
    (and the check judges dtypes)."""
    check = grading.get_check(assignment, check_id)
    found: set[str] = set()
    for case in check.make_cases(1):
        args, kwargs = case_inputs(case)
        _input_dtypes([*args, *kwargs.values()], found)
    assert (IN_PLACE in check.rules) == bool(found), (check.rules, found)
    assert (DTYPE in check.rules) == ("float32" in found and (assignment, check_id) not in BY_VALUE), (
        check.rules,
        found,
    )
    assert OWN_CODE in check.rules


@pytest.mark.parametrize("assignment", subs.ASSIGNMENTS)
def test_the_release_states_every_rule_its_checks_can_apply(assignment):
    nb = subs.release_notebook(assignment)
    text = " ".join(
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in nb["cells"]
        if c["cell_type"] == "markdown"
    )
    rules = {rule.id for check in grading.checks_for(assignment) for rule in check.rules}
    assert OWN_CODE.id in rules
    assert subs.rules_stated(text) == rules, assignment


def test_check_before_submit_reports_an_input_changed_in_place(capsys):
    path = subs.HERE / "hw2_stable_softmax" / "changes_its_input.py"
    ns = subs.fixture_namespace("hw2_stable_softmax", path)
    scores = grading.hw2.check_before_submit(ns, seed=3)
    out = capsys.readouterr().out
    assert IN_PLACE.id in subs.rules_stated(out), out
    assert 0 < sum(scores.values()) < sum(c.points for c in grading.checks_for("hw2_stable_softmax"))
