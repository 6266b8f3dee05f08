"""Mistakes drawn: a named mistake is shown as heatmaps, with alt text saying what differs.

Each mistake of the homework corpus below is drawn in the learner's "check
before you submit" (the release notebook, run in a kernel as a learner runs
it) and in the feedback page of a class graded by the class grader. The
property each alt text states is recomputed here from the fixture's own
function by plain loops. A correct answer draws nothing; a hidden input is
never drawn; drawing writes nothing to stderr, even while matplotlib builds
its font cache.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import re
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from fixtures.homework import submissions as subs
from release_run import run_release
from test_class_grading import LIMITS, needs_sandbox, quiet

from classgrader.pipeline.class_run import grade_class
from classgrader.stages.grade import Settings
from devtools.sample_submissions import Builder
from nbgrader_tools.cells import nbgrader_meta
from sdpa_course import grading
from sdpa_course.grading import pictures
from sdpa_course.grading.plain import case_inputs
from sdpa_course.grading.run import run_cases

REPO = Path(__file__).resolve().parent.parent
os.environ["COURSE_GRADING_SECRET"] = subs.TEST_SECRET

HW2, HW4, HW6 = "hw2_stable_softmax", "hw4_scaled_dot_product_attention", "hw6_causal_masking"


def _sums(w: list[list[float]]) -> tuple[list[float], list[float]]:
    """Row and column sums by plain loops."""
    rows = [sum(r) for r in w]
    cols = [sum(w[i][j] for i in range(len(w))) for j in range(len(w[0]))]
    return rows, cols


def _wrong_axis(w, **_):
    rows, cols = _sums(w)
    return all(abs(c - 1) < 1e-9 for c in cols) and any(abs(r - 1) > 1e-3 for r in rows)


def _scaled_after(w, d_k, **_):
    rows, _ = _sums(w)
    return all(abs(r - 1 / d_k**0.5) < 1e-9 for r in rows)


def _masked_after(w, mask, **_):
    rows, _ = _sums(w)
    forbidden = [w[i][j] for i in range(len(w)) for j in range(len(w[0])) if not mask[i][j]]
    return all(x == 0 for x in forbidden) and any(r < 1 - 1e-3 for r in rows)


def _future_leak(w, **_):
    return any(w[i][j] > 1e-3 for i in range(len(w)) for j in range(len(w[0])) if j > i)


# (assignment, fixture, the visible check drawn, words of the alt text, the property they state)
MISTAKES = [
    (HW2, "wrong_axis", "softmax_basic", "columns sum to 1, rows do not", _wrong_axis),
    (HW4, "scale_after_softmax", "one_query", "every row sums to 0.7071 (1/sqrt(d_k), with d_k = 2)", _scaled_after),
    (
        HW6,
        "mask_after_softmax",
        "masked_attention",
        "masked keys have weight 0 but rows sum to less than 1",
        _masked_after,
    ),
    (HW6, "mask_ignored", "masked_attention", "positions after the query have weight", _future_leak),
]
IDS = [m[1] for m in MISTAKES]


def _first_case_property(assignment: str, fixture: str, check_id: str, holds) -> None:
    """The fixture's own function on the check's first visible case has the property the alt text states."""
    ns = subs.fixture_namespace(assignment, subs.HERE / assignment / f"{fixture}.py")
    check = grading.get_check(assignment, check_id)
    case = check.make_cases()[0]
    args, _ = case_inputs(case)
    value = ns[case["call"]](*args)
    w = value if isinstance(value, np.ndarray) else value[1]
    w = np.atleast_2d(w).tolist()
    mask = args[3].tolist() if len(args) > 3 else None
    assert holds(w, d_k=args[0].shape[-1], mask=mask), (fixture, w)


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


# ---------------------------------------------------------------- check before you submit, in a kernel


@pytest.mark.parametrize("assignment, fixture, check_id, words, holds", MISTAKES, ids=IDS)
def test_check_before_submit_draws_the_named_mistake(tmp_path, assignment, fixture, check_id, words, holds):
    _first_case_property(assignment, fixture, check_id, holds)
    # An empty matplotlib folder: the kernel builds its font cache while drawing, and says nothing on stderr.
    nb = run_release(assignment, fixture, MPLCONFIGDIR=str(tmp_path / "mpl"))
    last = nb.cells[-1]
    assert nbgrader_meta(last)["grade_id"] == "check_before_submit"
    assert not [o for o in last.outputs if o.get("name") == "stderr" or o["output_type"] == "error"], last.outputs
    shown = [o for o in last.outputs if o["output_type"] == "display_data"]
    assert shown, last.outputs
    first = shown[0]
    alt = first["data"]["text/plain"]
    assert words in alt and "case 1 of" in alt
    assert first["metadata"]["image/png"]["alt"] == alt
    png = base64.b64decode(first["data"]["image/png"])
    width, height = _png_size(png)
    assert width > 2 * height  # three heatmaps side by side
    assert f'alt="{html.escape(alt, quote=True)}"' in first["data"]["text/html"]
    text = "".join(o.get("text", "") for o in last.outputs if o["output_type"] == "stream")
    assert f"Picture of {check_id}: {alt}" in text
    assert (tmp_path / "mpl").is_dir() and any((tmp_path / "mpl").glob("fontlist*.json"))


def test_a_correct_answer_draws_nothing(capsys):
    for assignment, module in ((HW2, grading.hw2), (HW4, grading.hw4), (HW6, grading.hw6)):
        module.check_before_submit(subs.solution_namespace(assignment), seed=3)
        out, err = capsys.readouterr()
        assert "passed." in out and "Picture of" not in out and err == ""


def test_one_picture_per_function_even_when_several_checks_fail(capsys):
    ns = subs.fixture_namespace(HW2, subs.HERE / HW2 / "wrong_axis.py")
    grading.hw2.check_before_submit(ns, seed=5)
    out = capsys.readouterr().out
    assert out.count("FAILED") + out.count("partly right") >= 3
    assert out.count("Picture of ") == 1 and "Picture of softmax_basic" in out


def test_drawing_outside_a_kernel_writes_nothing_to_stderr(tmp_path):
    """A fresh interpreter with an empty matplotlib folder (so the font cache is built): stdout only."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(REPO / "tests")!r})
        from fixtures.homework import submissions as subs
        from sdpa_course.grading import hw2
        ns = subs.fixture_namespace("hw2_stable_softmax", subs.HERE / "hw2_stable_softmax" / "wrong_axis.py")
        hw2.check_before_submit(ns, seed=1)
        """
    )
    env = {**os.environ, "MPLCONFIGDIR": str(tmp_path / "mpl"), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "Picture of softmax_basic:" in done.stdout and "columns sum to 1, rows do not" in done.stdout
    assert any((tmp_path / "mpl").glob("fontlist*.json"))


def test_a_softmax_that_gives_weight_to_minus_inf_is_told_in_a_softmax_s_words():
    def softmax_rows(z):  # reads -inf as 0
        z = np.where(np.isneginf(z), 0.0, z)
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    check = grading.get_check(HW2, "softmax_masked")
    cases = check.make_cases()
    picture = pictures.picture_for(check, cases, run_cases({"softmax_rows": softmax_rows}, cases))
    assert picture is not None
    # Row 0 of the first case is [0, -inf, 1], read as [0, 0, 1]: entry 1 gets 1 / (2 + e).
    told = re.search(r"row (\d+) gives ([\d.]+) to entry (\d+)", picture.alt)
    assert "-inf entries" in picture.alt and told, picture.alt
    assert (int(told[1]), int(told[3])) == (0, 1) and float(told[2]) == pytest.approx(1 / (2 + math.e), abs=0.005)
    assert picture.html().startswith('<img src="data:image/png;base64,') and 'alt="' in picture.html()


def test_the_check_and_its_picture_name_one_place_when_differences_tie():
    """Two entries of the batched case are off by the same amount (up to rounding, the later one
    by a billionth more): the check's message and the picture's caption name the same entry."""

    def softmax_rows(z):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        if a.shape == (2, 3, 4):  # each changed row still sums to 1
            d = 0.5 * min(a[0, 0, 2], a[1, 2, 3])
            a[0, 0, 1] += d
            a[0, 0, 2] -= d
            a[1, 2, 0] += d * (1 + 1e-9)
            a[1, 2, 3] -= d * (1 + 1e-9)
        return a

    check = grading.get_check(HW2, "softmax_basic")
    cases = check.make_cases()
    assert np.shape(case_inputs(cases[2])[0][0]) == (2, 3, 4), "the check's third case is no longer batched"
    results = run_cases({"softmax_rows": softmax_rows}, cases)
    message = check.compare(cases, results).message
    said = re.search(r"largest difference .*? at index \((\d+), (\d+), (\d+)\)", message)
    picture = pictures.picture_for(check, cases, results)
    assert said and picture is not None, message
    drawn = re.search(r"batch index (\d+)\b.*the largest difference is [\d.]+, at row (\d+), entry (\d+)", picture.alt)
    assert drawn, picture.alt
    assert said.groups() == drawn.groups() == ("0", "0", "1"), (message, picture.alt)


# ---------------------------------------------------------------- hidden inputs


def test_a_hidden_check_is_never_drawn_from_its_grading_inputs():
    ns = subs.fixture_namespace(HW6, subs.HERE / HW6 / "mask_ignored.py")
    check = grading.get_check(HW6, "masked_attention_hidden")
    cases = check.make_cases(subs.student_seed(HW6, "mask_ignored"))
    results = run_cases({"masked_attention": ns["masked_attention"]}, cases)
    assert not check.compare(cases, results).passed
    with pytest.raises(pictures.HiddenInput, match="hidden check"):
        pictures.picture_for(check, cases, results)
    # The same kind on inputs made afresh for the learner may be drawn.
    fresh = check.make_cases(12345)
    assert pictures.picture_for(
        check, fresh, run_cases({"masked_attention": ns["masked_attention"]}, fresh), fresh=True
    )


# ---------------------------------------------------------------- the feedback page of a graded class


@pytest.fixture(scope="module")
def feedback(tmp_path_factory) -> dict[tuple[str, str], str]:
    """Each mistake's fixture and the solution, graded by the class grader, one small class per assignment.
    Maps (assignment, student) to the feedback page; ("root", "") to the folder of the classes."""
    root = tmp_path_factory.mktemp("mistakes")
    pages = {("root", ""): str(root)}
    for assignment in (HW2, HW4, HW6):
        students = {f: f for a, f, *_ in MISTAKES if a == assignment}
        for student in [*students, "solution"]:
            folder = root / assignment / "submitted" / student / assignment
            folder.mkdir(parents=True)
            if student == "solution":
                name, data = Builder(REPO, assignment).build("solution")
            else:
                nb = subs.submission(assignment, subs.parse(subs.HERE / assignment / f"{student}.py")[1])
                name, data = f"{assignment}.ipynb", json.dumps(nb).encode()
            (folder / name).write_bytes(data)
        out = root / assignment / "out"
        _grade(assignment, root)
        for page in (out / "feedback").glob(f"*/{assignment}/*.html"):
            pages[(assignment, page.parts[-3])] = page.read_text()
    return pages


def _grade(assignment: str, root: Path) -> None:
    settings = Settings(limits=LIMITS, kernel_record=False)
    grade_class(REPO, assignment, root / assignment / "submitted", out=root / assignment / "out", workers=2,
                settings=settings, progress=False, log=quiet)  # fmt: skip


def _figures(page: str) -> list[tuple[str, str, str]]:
    """(test cell's grade_id, alt text, PNG base64) of each picture, with the graded cell it sits under."""
    found = []
    for m in re.finditer(
        r'<figure class="mistake"><img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="([^"]*)">', page
    ):
        cell = re.search(r'<div class="grade \w+"><strong>([\w]+)</strong>', page[m.end() :])
        assert cell is not None
        found.append((cell.group(1), html.unescape(m.group(2)), m.group(1)))
    return found


@needs_sandbox
@pytest.mark.parametrize("assignment, fixture, check_id, words", [m[:4] for m in MISTAKES], ids=IDS)
def test_the_feedback_page_draws_the_named_mistake(feedback, assignment, fixture, check_id, words):
    page = feedback[(assignment, fixture)]
    drawn = _figures(page)
    assert check_id in [gid for gid, _, _ in drawn], drawn
    gid, alt, png = next(d for d in drawn if d[0] == check_id)
    assert words in alt
    width, height = _png_size(base64.b64decode(png))
    assert width > 2 * height
    assert alt in [html.unescape(c) for c in re.findall(r"<figcaption>(.*?)</figcaption>", page, flags=re.S)]
    labels = [c["label"] for c in grading.get_check(assignment, gid).make_cases()]
    assert any(f"({label})" in alt for label in labels)  # a visible case, named as the learner sees it
    for gid, _, _ in drawn:
        assert not grading.get_check(assignment, gid).hidden, gid


@needs_sandbox
def test_the_feedback_page_of_a_correct_answer_has_no_picture(feedback):
    for assignment in (HW2, HW4, HW6):
        page = feedback[(assignment, "solution")]
        assert "Score:" in page and "<figure" not in page


@needs_sandbox
def test_a_feedback_page_written_again_from_the_graded_notebook_keeps_its_picture(feedback):
    """The class grader writes a missing page again from the autograded notebook, which holds the picture."""
    root = Path(feedback[("root", "")])
    page = root / HW2 / "out" / "feedback" / "wrong_axis" / HW2 / f"{HW2}.html"
    page.unlink()
    _grade(HW2, root)
    again = page.read_text()
    assert again == feedback[(HW2, "wrong_axis")]
    assert [gid for gid, _, _ in _figures(again)][:1] == ["softmax_basic"]
