"""Unit tests of the homework checks in sdpa_course/grading/, run in-process (fast).

The end-to-end runs through nbgrader are in test_homework_nbgrader.py.
"""

from __future__ import annotations

import ast
import importlib
import json
import math
import re
import subprocess
import sys
import textwrap
import threading
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
from fixtures.homework import submissions as subs
from release_run import before_submit_points

from nbgrader_tools.authoring import problems
from nbgrader_tools.cells import nbgrader_meta
from nbgrader_tools.corpus import grade
from sdpa_course import grading, lib
from sdpa_course.grading import all_hints
from sdpa_course.grading.plain import decode, encode, make_case
from sdpa_course.grading.run import run_cases
from sdpa_course.grading.watch import CallWatch

ALL_CHECKS = [(a, c.id) for a, checks in grading.all_checks().items() for c in checks]


# ---------------------------------------------------------------- registry and notebooks


def test_every_assignment_has_a_source_notebook_and_checks():
    assert sorted(grading.ASSIGNMENTS) == subs.ASSIGNMENTS
    for name, checks in grading.all_checks().items():
        assert checks, name
        assert sum(c.points for c in checks) == 10, name
        assert any(c.hidden for c in checks) and any(not c.hidden for c in checks), name


@pytest.mark.parametrize("assignment", subs.ASSIGNMENTS)
def test_source_notebook_cells_match_the_registry(assignment):
    path = subs.REPO / "solutions" / assignment / f"{assignment}.ipynb"
    assert problems(path, assignment) == []


@pytest.mark.parametrize("assignment", subs.ASSIGNMENTS)
def test_each_check_has_one_named_notebook_function_and_the_notebooks_call_only_those(assignment):
    module = grading.ASSIGNMENTS[assignment]
    named = {
        name: fn
        for name, fn in vars(module).items()
        if name.startswith("check_") and getattr(fn, "__module__", None) == "sdpa_course.grading.notebook"
    }
    bases = {cid.removesuffix("_hidden") for cid in module.A.checks}
    assert set(named) == {f"check_{b}" for b in bases} | {"check_before_submit"}
    assert all(fn.__name__ == name for name, fn in named.items())
    short = assignment.split("_")[0]
    for folder in ("solutions", "exercises"):
        text = (subs.REPO / folder / assignment / f"{assignment}.ipynb").read_text()
        called = set(re.findall(rf"\b{short}\.(check_\w+)\(", text))
        assert called and called <= set(named), (folder, called - set(named))


def test_the_notebook_validator_reports_a_wrong_points_value(tmp_path):
    nb = subs.source_notebook("hw2_stable_softmax")
    for cell in nb["cells"]:
        if nbgrader_meta(cell).get("grade_id") == "softmax_large":
            cell["metadata"]["nbgrader"]["points"] = 5
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    assert problems(path, "hw2_stable_softmax") == ["test cell 'softmax_large': 5 points; the check has 2"]


def test_importing_grading_does_not_import_lib():
    """The runner must work where lib cannot be imported (a sandbox)."""
    code = (
        "import sys; from sdpa_course import grading; grading.checks_for('hw2_stable_softmax');"
        " print('sdpa_course.lib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cases_are_deterministic_plain_json():
    for name, checks in grading.all_checks().items():
        for check in checks:
            first, again = check.make_cases(123), check.make_cases(123)
            assert json.dumps(first, allow_nan=False) == json.dumps(again, allow_nan=False), check.id
            if check.hidden:
                assert check.make_cases(124) != first, f"{name}:{check.id} ignores its seed"


# ---------------------------------------------------------------- plain data


@pytest.mark.parametrize(
    "value",
    [
        np.array([[1.5, -np.inf], [np.nan, 3e38]], dtype=np.float32),
        np.arange(6, dtype=np.int16).reshape(2, 3),
        np.array([True, False]),
        np.zeros((0, 3)),
        np.float32(0.1),
    ],
)
def test_arrays_survive_the_json_round_trip_exactly(value):
    back = decode(json.loads(json.dumps(encode(value), allow_nan=False)))
    assert type(back) is type(value) and back.dtype == value.dtype and back.shape == value.shape
    assert np.array_equal(back, value, equal_nan=value.dtype.kind == "f")


def test_other_values_are_described_without_calling_them():
    calls = []

    class Sneaky:
        def __array__(self, *args, **kwargs):
            calls.append("array")
            return np.zeros(3)

        def __eq__(self, other):
            calls.append("eq")
            return True

    class SubArray(np.ndarray):
        pass

    assert encode(Sneaky()) == {
        "other": f"{__name__}.test_other_values_are_described_without_calling_them.<locals>.Sneaky"
    }
    assert "other" in encode(np.zeros(2).view(SubArray))
    assert encode((1, 2.5, None)) == {"tuple": [{"number": 1}, {"number": 2.5}, {"none": True}]}
    assert calls == []


def test_the_check_fails_an_object_that_equals_everything():
    class Equal:
        def __eq__(self, other):
            return True

        __hash__ = object.__hash__

    verdict = grade("hw2_stable_softmax", "softmax_basic", {"softmax_rows": lambda z: Equal()})
    assert not verdict.passed
    assert "returned a" in verdict.message and "Equal" in verdict.message


def test_patching_numpy_inside_the_learner_function_does_not_pass_the_check():
    original = np.allclose

    def softmax_rows(z):
        np.allclose = lambda *a, **k: True
        return np.zeros_like(z)

    try:
        verdict = grade("hw2_stable_softmax", "softmax_basic", {"softmax_rows": softmax_rows})
    finally:
        np.allclose = original
    assert not verdict.passed and "sums to 0, not 1" in verdict.message


def _nested(depth: int) -> dict:
    value: dict = {"none": True}
    for _ in range(depth):
        value = {"tuple": [value]}
    return value


def test_malformed_results_give_a_failed_verdict_not_an_exception():
    check = grading.get_check("hw2_stable_softmax", "softmax_basic")
    cases = check.make_cases()
    assert not check.compare(cases, []).passed
    assert not check.compare(cases, ["junk"] * len(cases)).passed
    record = run_cases({"softmax_rows": lambda z: z}, cases[:1])[0]
    for bad in (
        {"array": {"dtype": "object", "shape": [1], "data": [1]}},
        {"array": {"dtype": "int8", "shape": [1], "data": [10**6]}},
        {"array": {"dtype": "float64", "shape": [-1, 5], "data": [1.0]}},
        {"number": "a string"},
        _nested(5000),
    ):
        verdict = check.compare(cases, [{**record, "value": bad}] * len(cases))
        assert not verdict.passed and "could not be read" in verdict.message, bad


# ---------------------------------------------------------------- the reference-call watch


def _flags(fn, *args) -> list[str]:
    return run_cases({"f": fn}, [make_case("f", *args, label="test")])[0]["forbidden"]


Z = np.array([[1.0, 2.0, 3.0]])
_alias = lib.softmax


def _wrapper(z):
    return _alias(z)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda z: lib.softmax(z), id="direct"),
        pytest.param(lambda z: _alias(z), id="alias"),
        pytest.param(lambda z: _wrapper(z), id="wrapper"),
        pytest.param(lib.softmax, id="the reference itself"),
        pytest.param(lambda z: __import__("sdpa_course.lib").lib.softmax(z), id="dunder import"),
        pytest.param(lambda z: np.apply_along_axis(lib.softmax, -1, z), id="through numpy"),
        pytest.param(
            types.FunctionType(
                lib.softmax.__code__, {"__name__": "learner", "np": np}, "copied", lib.softmax.__defaults__
            ),
            id="copied code object",
        ),
    ],
)
def test_the_watch_sees_the_reference_however_it_is_reached(fn):
    assert any(name.startswith("sdpa_course.lib.") for name in _flags(fn, Z))


def test_the_watch_sees_an_import_inside_the_function():
    namespace: dict = {}
    exec(
        textwrap.dedent("""
        def f(z):
            from sdpa_course.lib import softmax as s
            return s(z)
    """),
        namespace,
    )
    assert "sdpa_course.lib.softmax.softmax" in _flags(namespace["f"], Z)


def test_the_watch_sees_the_graders_themselves():
    assert any(
        n.startswith("sdpa_course.grading.") for n in _flags(lambda z: grading.hw2.check_softmax_basic(lib.softmax), Z)
    )


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """Make a stand-in package importable for one test, and forget it afterwards."""
    made = []

    def make(name: str, files: dict[str, str]) -> None:
        for rel, text in files.items():
            path = tmp_path / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        monkeypatch.syspath_prepend(str(tmp_path))
        for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            monkeypatch.delitem(sys.modules, mod)
        made.append(name)

    yield make
    for name in made:  # other tests must not import the stand-in
        for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            if str(tmp_path) in str(getattr(sys.modules[mod], "__file__", "") or ""):
                del sys.modules[mod]


def test_the_watch_sees_scipy_softmax(fake_package):
    """scipy is not installed here: a stand-in package at the same import path."""
    fake_package(
        "scipy",
        {
            "__init__.py": "",
            "special/__init__.py": """
            import numpy as np
            def softmax(x, axis=None):
                e = np.exp(x - np.max(x, axis=axis, keepdims=True))
                return e / e.sum(axis=axis, keepdims=True)
        """,
        },
    )
    namespace: dict = {}
    exec("def f(z):\n    from scipy.special import softmax\n    return softmax(z, axis=-1)\n", namespace)
    assert "scipy.special.softmax" in _flags(namespace["f"], Z)


def test_the_watch_sees_torch_functions_in_python_and_in_c(fake_package):
    fake_package(
        "torch",
        {
            "__init__.py": "from . import nn\n",
            "nn/__init__.py": "from . import functional\n",
            "nn/functional.py": """
            def scaled_dot_product_attention(q, k, v):
                return q
        """,
        },
    )
    torch = importlib.import_module("torch")  # the stand-in

    flagged = _flags(lambda z: torch.nn.functional.scaled_dot_product_attention(z, z, z), Z)
    assert flagged == ["torch.nn.functional.scaled_dot_product_attention"]
    # A C function (a 'c_call' event) is recognised by the module it names.
    c_function = types.SimpleNamespace(__module__="torch._C._nn", __name__="softmax")
    assert CallWatch()._classify_c(c_function) == "torch._C._nn.softmax"
    assert CallWatch()._classify_c(np.dot) is None


def test_the_watch_sees_work_moved_to_a_thread_or_a_process():
    def in_thread(z):
        box = []
        t = threading.Thread(target=lambda: box.append(lib.softmax(z)))
        t.start()
        t.join()
        return box[0]

    flagged = _flags(in_thread, Z)
    assert any("lib.softmax" in f for f in flagged) and any("start" in f for f in flagged)
    assert any("subprocess" in f for f in _flags(lambda z: subprocess.run(["true"]) and z, Z))


def test_the_watch_sees_being_switched_off():
    def sneaky(z):
        sys.setprofile(None)
        return lib.softmax(z)

    assert "sys.setprofile" in _flags(sneaky, Z)


def _own_softmax(z):
    top = np.max(z, axis=-1, keepdims=True)
    e = np.exp(z - top)
    return e / np.sum(e, axis=-1, keepdims=True)


def test_the_watch_does_not_misfire_on_numpy_and_the_standard_library():
    def busy(z):
        import functools
        import itertools
        import math as m

        rng = np.random.default_rng(0)
        noise = rng.standard_normal(z.shape) * 0
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            total = functools.reduce(lambda a, b: a + b, itertools.repeat(0.0, 3))
            e = np.einsum("ij->ij", z) + noise + total + m.sqrt(0.0)
            e = np.vectorize(lambda t: t)(e)
            _ = np.linalg.norm(e), np.linalg.svd(np.eye(2)), np.fft.fft(np.ones(4))
        return _own_softmax(e)

    assert _flags(busy, Z) == []


@pytest.mark.parametrize("assignment", subs.ASSIGNMENTS)
def test_no_solution_function_is_flagged(assignment):
    ns = subs.solution_namespace(assignment)
    for check in grading.checks_for(assignment):
        cases = check.make_cases(7)
        for record in run_cases(ns, cases):
            assert record["forbidden"] == [], (check.id, record["forbidden"])


# ---------------------------------------------------------------- the checks on right and wrong answers


@pytest.mark.parametrize(("assignment", "check_id"), ALL_CHECKS)
def test_the_solution_passes_every_check(assignment, check_id):
    ns = subs.solution_namespace(assignment)
    check = grading.get_check(assignment, check_id)
    for seed in (0, 1, 2) if check.hidden else (None,):
        verdict = grade(assignment, check_id, ns, seed)
        assert verdict.passed, verdict.message


def test_every_hw6_seed_has_a_query_whose_forbidden_score_lies_far_above_its_permitted_ones():
    """Where exp(permitted - forbidden maximum) underflows to 0 in float64 (below about -745), only
    masking before the softmax is right: each learner's hidden inputs must reach that situation."""
    check = grading.get_check("hw6_causal_masking", "masked_attention_hidden")
    for seed in range(40):
        gaps = []
        for case in check.make_cases(seed):
            q, k, _, mask = (decode(a) for a in case["args"])
            scores = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) / math.sqrt(q.shape[-1])
            allowed = np.broadcast_to(mask, scores.shape)
            some = allowed.any(axis=-1) & (~allowed).any(axis=-1)
            top_forbidden = np.where(allowed, -np.inf, scores).max(axis=-1)
            top_permitted = np.where(allowed, scores, -np.inf).max(axis=-1)
            gaps.append(float(np.where(some, top_forbidden - top_permitted, -np.inf).max(initial=-np.inf)))
        assert max(gaps) > 800, (seed, gaps)


def test_every_hw7_seed_splits_heads_where_their_order_and_scale_matter():
    """One head, one feature or one token reshapes the same whatever the order of the axes, and d_k = 1
    needs no scale: each learner's hidden inputs must hold a split, a merge and a multi-head case beyond those."""
    split = grading.get_check("hw7_multi_head_attention", "split_merge_hidden")
    mha = grading.get_check("hw7_multi_head_attention", "multi_head_hidden")
    for seed in range(40):
        cases = split.make_cases(seed)
        splits = [[decode(a) for a in c["args"]] for c in cases if c["call"] == "split_heads"]
        assert any(h >= 2 and x.shape[-1] // h >= 2 and x.shape[-2] >= 2 for x, h in splits), seed
        merges = [decode(c["args"][0]).shape[-3:] for c in cases if c["call"] == "merge_heads"]
        assert any(min(shape) >= 2 for shape in merges), (seed, merges)
        cases = [[decode(a) for a in c["args"]] for c in mha.make_cases(seed)]
        shapes = [(h, x.shape[-2], w_q.shape[-1] // h, w_v.shape[-1] // h) for x, w_q, _, w_v, _, h in cases]
        assert any(min(shape) >= 2 for shape in shapes), (seed, shapes)


@pytest.mark.parametrize(("assignment", "path"), subs.fixtures(), ids=lambda v: getattr(v, "stem", v))
def test_fixture_submissions_earn_what_they_say(assignment, path):
    """The learners' corpus: each fixture's points per check and the words of its messages."""
    expected, _ = subs.parse(path)
    verdicts = subs.corpus_verdicts(assignment, path)
    checks = {c.id: c for c in grading.checks_for(assignment)}
    assert set(expected.points) <= set(checks), set(expected.points) - set(checks)
    for cid, verdict in verdicts.items():
        lo, hi = expected.bounds(cid, checks[cid].points)
        got = checks[cid].score(verdict)
        assert lo - 1e-9 <= got <= hi + 1e-9, (cid, got, (lo, hi), verdict.message)
        assert verdict.passed == (got == checks[cid].points), (cid, verdict)
        # a rule that costs points is applied only where the check declares it (and so states it)
        declared = {rule.id for rule in checks[cid].rules}
        assert subs.rules_stated(verdict.message) <= declared, (cid, declared, verdict.message)
    for cid, words in expected.messages.items():
        for text in words:
            assert text in verdicts[cid].message, (cid, text, verdicts[cid].message)
    for cid, verdict in verdicts.items():
        # each usual mistake a message names is one the file makes: no hint points the wrong way
        named = {key for key, phrase in all_hints().items() if phrase in verdict.message}
        assert named == set(expected.mistakes.get(cid, [])), (cid, named, verdict.message)


def test_every_usual_mistake_a_message_can_name_is_made_by_a_corpus_file():
    declared = {key for _, path in subs.fixtures() for keys in subs.parse(path)[0].mistakes.values() for key in keys}
    assert declared == set(all_hints()), set(all_hints()) ^ declared


@pytest.mark.parametrize("assignment", subs.ASSIGNMENTS)
def test_the_corpus_has_three_correct_submissions_and_three_mistakes(assignment):
    """At least 6 ordinary submissions per assignment, 3 correct-but-different."""
    points = {c.id: c.points for c in grading.checks_for(assignment)}
    correct, mistakes = [], []
    for _, path in subs.fixtures(assignment):
        expected, _ = subs.parse(path)
        (correct if expected.full == set(points) else mistakes).append(path.stem)
    mistakes = [m for m in mistakes if m != "calls_reference"]
    assert len(correct) >= 3 and len(mistakes) >= 3, (correct, mistakes)


def test_each_assignment_has_a_fixture_that_calls_the_reference_and_earns_nothing():
    for assignment in subs.ASSIGNMENTS:
        expected, cells = subs.parse(subs.HERE / assignment / "calls_reference.py")
        assert expected.points == {} and any("lib" in src for src in cells.values())


def _message(assignment, check_id, **functions) -> str:
    verdict = grade(assignment, check_id, functions)
    assert not verdict.passed
    return verdict.message


def test_messages_name_the_shapes():
    msg = _message("hw3_queries_keys_values", "score_matrix", score_matrix=lambda q, k: q.T @ k)
    assert "Case 1 of 3" in msg and "(3, 3)" in msg and "(6, 6)" in msg  # what came back, what was expected


def test_messages_name_the_row_that_does_not_sum_to_one():
    def halved(z):
        out = _own_softmax(z)
        out[..., 1, :] /= 2
        return out

    assert "row 1 sums to 0.5, not 1" in _message("hw2_stable_softmax", "softmax_basic", softmax_rows=halved)


def test_messages_name_the_future_position_that_leaks():
    def unmasked(q, k, v, mask):
        w = _own_softmax(q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5)
        return w @ v, w

    msg = _message("hw6_causal_masking", "masked_attention", masked_attention=unmasked)
    assert all(word in msg for word in ("query 0", "key 1", "future position")), msg
    msg = _message("hw6_causal_masking", "no_future_leak", masked_attention=unmasked)
    assert all(word in msg for word in ("position 5", "output of query 1", "future position")), msg
    msg = _message("hw6_causal_masking", "causal_mask", causal_mask=lambda n_q, n_k: np.ones((n_q, n_k), bool))
    assert all(word in msg for word in ("entry (0, 1) is True", "query 0", "key 1", "future position")), msg


def test_messages_give_the_largest_difference_and_where():
    def one_entry_off(x):
        scores = x @ np.swapaxes(x, -1, -2)
        scores[..., 1, 2] += 1e-3
        return scores

    msg = _message("hw1_dot_product_scores", "scores_vectorized", scores_vectorized=one_entry_off)
    found = re.search(r"largest difference .*? is ([-+.\de]+) at index \((\d+), (\d+)\)", msg)
    assert found, msg
    assert float(found[1]) == pytest.approx(1e-3, rel=1e-3) and (found[2], found[3]) == ("1", "2")


def test_messages_name_the_dtype():
    msg = _message("hw1_dot_product_scores", "scores_loop", scores_loop=lambda x: (x @ x.T).astype(np.float64))
    assert all(word in msg for word in ("Case 3 of 3", "dtype float64", "expected float32")), msg


def test_messages_explain_overflow_and_empty_rows():
    def naive(z):
        e = np.exp(z)
        return e / e.sum(axis=-1, keepdims=True)

    assert "row 0 contains NaN" in _message("hw2_stable_softmax", "softmax_large", softmax_rows=naive)
    msg = _message("hw2_stable_softmax", "softmax_masked", softmax_rows=naive)
    assert all(word in msg for word in ("row 1", "(all -inf)", "must be all 0", "got NaN")), msg
    assert "it warned: RuntimeWarning" in msg


def test_messages_hint_at_a_missing_scale():
    def unscaled(q, k, v):
        w = _own_softmax(q @ np.swapaxes(k, -1, -2))
        return w @ v, w

    msg = _message("hw4_scaled_dot_product_attention", "attention_matrix", attention=unscaled)
    assert "without the scale 1/sqrt(d_k)" in msg
    assert grade("hw4_scaled_dot_product_attention", "attention_shapes", {"attention": unscaled}).passed


def test_messages_point_out_a_python_loop():
    def looped(x):
        return np.array([[x[i] @ x[j] for j in range(len(x))] for i in range(len(x))])

    assert "it loops over the tokens" in _message(
        "hw1_dot_product_scores", "vectorized_no_loop", scores_vectorized=looped
    )


def test_messages_say_why_a_reference_call_earns_nothing():
    msg = _message(
        "hw4_scaled_dot_product_attention",
        "attention_matrix",
        attention=lambda q, k, v: lib.scaled_dot_product_attention(q, k, v, return_weights=True),
    )
    who, _, called = msg.partition(" calls ")
    assert who == "attention" and called.startswith("sdpa_course.lib.attention.scaled_dot_product_attention"), msg
    assert "asks for your own implementation" in msg


def test_a_correct_function_that_prints_and_warns_passes_without_writing_to_stderr(capsys):
    def noisy(z):
        print("debugging", file=sys.stderr)
        warnings.warn("just saying", stacklevel=2)
        return _own_softmax(z)

    grading.hw2.check_softmax_basic(noisy)
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("passed:")


def test_a_failing_notebook_check_reports_zero_without_raising(capsys):
    """A check that earns nothing returns 0, nbgrader's partial credit of 0 points, and prints why:
    it never raises, so "Run All" goes on to the check before you submit."""
    assert grading.hw2.check_softmax_basic(lambda z: z) == 0.0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("FAILED, 0 of 2 points") and "Case 1 of 3" in out, out


def test_hidden_checks_report_their_seed_so_a_failure_can_be_replayed(capsys):
    assert grading.hw2.check_softmax(lambda z: z, hidden=True) == 0.0
    assert re.search(r"\(hidden check, seed \d+\)", capsys.readouterr().out)


def test_results_are_strict_json_even_for_strange_returns():
    cases = [make_case("f", Z, label="x")]
    for value in (np.array([np.nan, np.inf]), object(), (np.float32(np.nan), "s" * 5000), 2**80, [1] * 100):
        record = run_cases({"f": lambda z, v=value: v}, cases)[0]
        json.dumps(record, allow_nan=False)
    record = run_cases({}, cases)[0]
    assert record["error"].startswith("NameError")


# ---------------------------------------------------------------- the statistics of homework 5


@pytest.mark.parametrize("d_k", [1, 16])
def test_the_spread_that_the_variance_tolerance_assumes_is_right(d_k):
    """Var(V) = (2 d^2 + 6 d) / n for the sample variance V of n scores q . k (sdpa_course/grading/hw5.py)."""
    rng = np.random.default_rng(2024)
    n, runs = 400, 1500
    q = rng.standard_normal((runs, n, d_k))
    k = rng.standard_normal((runs, n, d_k))
    estimates = np.var(np.sum(q * k, axis=-1), axis=-1)
    predicted = math.sqrt((2 * d_k**2 + 6 * d_k) / n)
    # The standard deviation of 1500 estimates is within 10% of the prediction
    # (its own relative error is about 1/sqrt(2 * 1500) times the excess kurtosis term).
    assert estimates.std() == pytest.approx(predicted, rel=0.1)
    assert abs(estimates.mean() - d_k) < 5 * predicted / math.sqrt(runs)


def test_a_correct_variance_estimate_passes_across_many_seeds():
    ns = subs.solution_namespace("hw5_sqrt_dk_experiment")
    for seed in range(8):
        for check_id in ("sample_scores_hidden", "score_variance_hidden"):
            verdict = grade("hw5_sqrt_dk_experiment", check_id, ns, seed)
            assert verdict.passed, verdict.message


def test_the_variance_checks_catch_a_wrong_scale_and_an_ignored_generator():
    def by_dk(d_k, n, rng):
        s = np.sum(rng.standard_normal((n, d_k)) * rng.standard_normal((n, d_k)), axis=1)
        return float(s.var()), float((s / d_k).var())

    assert "it looks like S / d_k" in _message(
        "hw5_sqrt_dk_experiment", "score_variance", estimate_score_variance=by_dk
    )

    def ignores_rng(d_k, n, rng):
        return np.sum(np.random.standard_normal((n, d_k)) * np.random.standard_normal((n, d_k)), axis=1)

    assert "same seed" in _message("hw5_sqrt_dk_experiment", "sample_scores", sample_scores=ignores_rng)
    assert "different seeds" in _message(
        "hw5_sqrt_dk_experiment", "score_variance", estimate_score_variance=lambda d, n, rng: (float(d), 1.0)
    )


# ---------------------------------------------------------------- check before you submit

_ROW = re.compile(
    r"^- (?P<id>\w+) \((?P<points>[\d.]+) points?, (?P<kind>visible|hidden kind, fresh inputs)\): "
    r"(?P<outcome>passed|FAILED|partly right|not answered yet|NOT RUN)(?:, (?P<score>[\d.]+) of [\d.]+)?"
    r"(?P<rest>.*(?:\n    .*)*)",
    re.M,
)


def _before_submit(out: str) -> tuple[dict, dict[str, dict]]:
    """What "check before you submit" printed: its summary line, and one row per check
    (points, kind, outcome, the score of a partly right one, and the rest of its text)."""
    name, got, total = before_submit_points(out)
    rows = {
        m["id"]: {
            "points": float(m["points"]),
            "kind": m["kind"],
            "outcome": m["outcome"],
            "score": None if m["score"] is None else float(m["score"]),
            "rest": m["rest"],
        }
        for m in _ROW.finditer(out)
    }
    return {"name": name, "got": got, "total": total}, rows


def test_check_before_submit_says_what_passed_and_what_each_failure_means(capsys):
    ns = subs.fixture_namespace("hw2_stable_softmax", subs.HERE / "hw2_stable_softmax" / "float64_result.py")
    scores = grading.hw2.check_before_submit(ns, seed=11)
    out, err = capsys.readouterr()
    assert err == ""
    summary, rows = _before_submit(out)
    assert set(rows) == set(scores) == {c.id for c in grading.checks_for("hw2_stable_softmax")}
    assert summary == {"name": "hw2_stable_softmax", "got": sum(scores.values()), "total": 10}
    basic, hidden = rows["softmax_basic"], rows["softmax_hidden"]
    assert (basic["points"], basic["kind"], basic["outcome"], basic["score"]) == (2, "visible", "partly right", 1.5)
    assert scores["softmax_basic"] == 1.5
    wrong = basic["rest"].partition("What went wrong: ")[2]
    assert wrong.startswith("Case 3 of 3") and "dtype float64" in wrong and "expected float32" in wrong, wrong
    assert (hidden["points"], hidden["kind"], hidden["outcome"]) == (4, "hidden kind, fresh inputs", "partly right")
    assert "The hidden tests run again" in out


def test_check_before_submit_names_unanswered_and_undefined_functions(capsys):
    ns = subs.namespace(subs.release_notebook("hw4_scaled_dot_product_attention"))
    grading.hw4.check_before_submit(ns)
    summary, rows = _before_submit(capsys.readouterr().out)
    assert summary["got"] == 0 and summary["total"] == 10
    assert {r["outcome"] for r in rows.values()} == {"not answered yet"}
    assert "attend_one_query" in rows["one_query"]["rest"] and "NotImplementedError" in rows["one_query"]["rest"]
    grading.hw4.check_before_submit({})
    _, rows = _before_submit(capsys.readouterr().out)
    assert {r["outcome"] for r in rows.values()} == {"NOT RUN"}
    assert "attention is not defined" in rows["attention_matrix"]["rest"], rows["attention_matrix"]


def test_check_before_submit_degrades_without_lib_and_is_silent_while_grading(capsys, monkeypatch):
    def no_lib():
        raise ModuleNotFoundError("No module named 'sdpa_course.lib'")

    monkeypatch.setattr(grading.notebook, "reference", no_lib)
    assert grading.hw2.check_before_submit({}) == {}
    assert "cannot be imported here" in capsys.readouterr().out
    monkeypatch.undo()
    monkeypatch.setenv("GRADING_HIDDEN_SEED", "5")
    assert grading.hw2.check_before_submit({}) == {}
    assert "skipped while" in capsys.readouterr().out


def test_the_released_check_cell_degrades_where_grading_cannot_be_imported(tmp_path):
    nb = subs.release_notebook("hw2_stable_softmax")
    last = nb["cells"][-1]
    assert nbgrader_meta(last)["grade_id"] == "check_before_submit"
    source = "".join(last["source"]) if isinstance(last["source"], list) else last["source"]
    done = subprocess.run([sys.executable, "-I", "-S", "-c", source], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
    assert "install it (see Start here" in done.stdout and "Nothing was checked" in done.stdout


def test_the_released_notebook_runs_its_check_cell_in_the_course_folder():
    """As a learner would: the release as committed, answers filled in, run top to bottom in its folder."""
    from release_run import run_release

    nb = run_release("hw2_stable_softmax", "no_empty_rows")
    text = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []))
    summary, rows = _before_submit(text)
    assert summary["name"] == "hw2_stable_softmax", nb.cells[-1].get("outputs")
    assert rows["softmax_large"]["outcome"] == "passed"
    assert (rows["softmax_masked"]["outcome"], rows["softmax_masked"]["score"]) == ("partly right", 1)
    assert "(all -inf)" in rows["softmax_masked"]["rest"] and "The hidden tests run again" in text
    masked = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == "softmax_masked")
    assert masked["outputs"][-1]["output_type"] == "execute_result"  # the cell's partial score, for nbgrader
    assert masked["outputs"][-1]["data"]["text/plain"] == "1.0"


# ---------------------------------------------------------------- the points-per-mistake table


def _mistake_table() -> list[dict]:
    text = (subs.REPO / "solution_book" / "instructors.md").read_text()
    section = text[text.index("## Points in proportion to the mistake") :]
    section = section[: section.index("\n## ", 5)]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[2].startswith("`") and cells[0].startswith("hw"):
            lo, _, hi = cells[3].partition("–")
            rows.append(
                {
                    "short": cells[0],
                    "file": cells[2].strip("`"),
                    "lo": float(lo),
                    "hi": float(hi or lo),
                    "words": cells[4],
                }
            )
    return rows


def test_the_points_per_mistake_table_is_what_the_grader_gives():
    """Every row of the instructors' table: the corpus file gets those points out of 10
    (as the student named after it) and a message with those words."""
    rows = _mistake_table()
    assert len(rows) >= 3 * len(subs.ASSIGNMENTS)
    by_short = {name.split("_")[0]: name for name in subs.ASSIGNMENTS}
    for row in rows:
        assignment = by_short[row["short"]]
        checks = {c.id: c for c in grading.checks_for(assignment)}
        verdicts = subs.corpus_verdicts(assignment, subs.HERE / assignment / f"{row['file']}.py")
        total = sum(checks[cid].score(v) for cid, v in verdicts.items())
        assert row["lo"] - 0.011 <= total <= row["hi"] + 0.011, (row, total)
        assert any(row["words"] in v.message for v in verdicts.values()), (row, [v.message for v in verdicts.values()])
    named = {(r["short"], r["file"]) for r in rows}
    for assignment in subs.ASSIGNMENTS:
        for _, path in subs.fixtures(assignment):
            expected, _ = subs.parse(path)
            if path.stem != "calls_reference" and expected.full != set(c.id for c in grading.checks_for(assignment)):
                assert (assignment.split("_")[0], path.stem) in named, f"{path.stem} is missing from the table"


# ---------------------------------------------------------------- seeds


def test_seeds_are_an_hmac_of_the_secret_assignment_and_student():
    import hashlib
    import hmac

    from sdpa_course.grading.seeds import seed_for

    want = int.from_bytes(hmac.new(b"s3cret", b"hw2_stable_softmax\0ada", hashlib.sha256).digest()[:4], "big")
    assert seed_for(b"s3cret", "hw2_stable_softmax", "ada") == want & 0x7FFFFFFF
    seeds = {seed_for(b"s3cret", a, s) for a in grading.ASSIGNMENTS for s in ("ada", "alan", "grace")}
    assert len(seeds) == 3 * len(grading.ASSIGNMENTS)  # each learner their own variant
    assert seed_for(b"other", "hw2_stable_softmax", "ada") != seed_for(b"s3cret", "hw2_stable_softmax", "ada")


def test_the_course_secret_comes_from_the_file_the_config_names(tmp_path, monkeypatch):
    from sdpa_course.grading import seeds

    monkeypatch.delenv(seeds.ENV_SECRET, raising=False)
    config = tmp_path / "nbgrader_config.py"
    config.write_text('c = get_config()\nc.CourseDirectory.course_id = "demo"\n')
    with pytest.raises(seeds.SecretMissing, match="no course secret is configured"):
        seeds.course_secret(tmp_path)  # no public default: never the course id
    config.write_text(config.read_text() + 'c.CourseGrading.secret_file = "private/secret.txt"\n')
    with pytest.raises(seeds.SecretMissing, match=r"python -m sdpa_course.grading new-secret .*secret.txt"):
        seeds.course_secret(tmp_path)
    assert seeds.main(["new-secret", str(tmp_path / "private" / "secret.txt")]) == 0
    secret, where = seeds.course_secret(tmp_path)
    assert len(secret) == 64 and "secret.txt" in where
    assert (tmp_path / "private" / "secret.txt").stat().st_mode & 0o077 == 0
    assert seeds.main(["new-secret", str(tmp_path / "private" / "secret.txt")]) == 1  # never overwritten
    monkeypatch.setenv(seeds.ENV_SECRET, "from-env")
    assert seeds.course_secret(tmp_path)[0] == b"from-env"


def test_reading_the_courses_config_in_a_hidden_cell_imports_no_nbconvert():
    # Every hidden test cell under nbgrader autograde reads nbgrader_config.py
    # for the secret, inside the learner's kernel: the course's own config must
    # not import nbconvert or nbgrader there (that took ~2.7 s per notebook).
    repo = Path(__file__).resolve().parent.parent
    code = (
        "import sys; from pathlib import Path; from sdpa_course.grading import seeds; "
        f"config = seeds.read_config(Path({str(repo)!r})); seeds.secret_file_named(Path({str(repo)!r})); "
        "print(sorted(config.get('GenerateFeedback', {}).get('preprocessors', []))); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('nbconvert', 'nbgrader')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True).stdout
    preprocessors, imported = out.splitlines()
    hiding = [p for p in ast.literal_eval(preprocessors) if p.endswith("ClearHiddenTests")]
    assert hiding == ["nbgrader.preprocessors.ClearHiddenTests"]  # feedback still hides the hidden tests
    assert imported == "[]"


def test_a_hidden_cell_under_nbgrader_autograde_uses_the_students_seed(tmp_path, monkeypatch):
    from sdpa_course.grading import seeds

    monkeypatch.setenv(seeds.ENV_SECRET, "k")
    monkeypatch.delenv(seeds.ENV_SEED, raising=False)
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    folder = tmp_path / "autograded" / "ada" / "hw2_stable_softmax"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    assert seeds.autograde_location() == (tmp_path.resolve(), "ada", "hw2_stable_softmax")
    assert seeds.hidden_seed("hw2_stable_softmax") == seeds.seed_for(b"k", "hw2_stable_softmax", "ada")
    monkeypatch.setenv(seeds.ENV_SEED, "1234")
    assert seeds.hidden_seed("hw2_stable_softmax") == 1234
    monkeypatch.delenv(seeds.ENV_SEED)
    monkeypatch.chdir(tmp_path)
    assert seeds.autograde_location() is None  # a learner practising: a fresh seed each time
    assert len({seeds.hidden_seed("hw2_stable_softmax") for _ in range(5)}) > 1


@pytest.mark.parametrize("assignment", ["hw10_transformer_block", "hw12_kv_cache_gqa"])
def test_the_notebook_states_the_share_kept_for_a_carried_mistake(assignment):
    """The rule that costs a block (homework 10) or a decode (homework 12) half its points for a
    mistake of an earlier function is written in the learner's notebook with the share the checks use."""
    share = grading.ASSIGNMENTS[assignment].CARRIED_SHARE
    words = {0.5: "half", 0.25: "a quarter"}
    statement = " ".join(
        " ".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in subs.release_notebook(assignment)["cells"]
        if c["cell_type"] == "markdown"
    )
    assert f"earns {words[share]} of each case" in " ".join(statement.split())


def test_homework_12_states_the_tolerances_its_checks_use():
    """The notebook's "How close is right": about 1e-10 of the values' size in float64, from about
    1e-5 to a few times 1e-3 in float32, on the checks' own inputs (visible and hidden)."""
    from sdpa_course.grading import hw12
    from sdpa_course.grading.authoring import attention_rtol
    from sdpa_course.grading.plain import case_inputs

    tolerance = {
        "rotate": lambda a: hw12.rotate_tolerance(*a)[0],
        "grouped_query_attention": lambda a: attention_rtol(a[0], a[1]),
        "decode_with_cache": lambda a: hw12.decode_tolerance(*a[:5])[0],
    }
    found: dict[str, list[float]] = {"float64": [], "float32": []}
    for check in grading.checks_for("hw12_kv_cache_gqa"):
        for seed in range(20):
            for case in check.make_cases(seed):
                args, _ = case_inputs(case)
                found[args[0].dtype.name].append(tolerance[check.functions[0]](args))
    assert 1e-10 <= min(found["float64"]) and max(found["float64"]) < 2e-10
    assert 1e-5 <= min(found["float32"]) and max(found["float32"]) < 5e-3
