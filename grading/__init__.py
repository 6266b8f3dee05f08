"""The homework's checks: one definition of what each exercise must do.

Every graded test cell of every homework notebook runs one *check* defined
here, and an outside grader (grading a whole class, in a sandbox) runs the
very same checks. Nothing about an exercise is written twice.

Layout
------
``grading/core.py``
    The shared machinery: plain-data encoding, :class:`~grading.core.CallWatch`
    (catches calls into the reference), :func:`~grading.core.run_cases`,
    :func:`~grading.core.compare_arrays`, the :class:`~grading.core.Check`
    record and the registry.
``grading/_common.py``
    Inputs and diagnostics that several assignments share (rows of softmax
    weights, attention outputs, tolerances for logits).
``grading/hw1.py`` ... ``grading/hw7.py``
    One module per assignment, named after its number; ``hwN.A`` is its
    :class:`~grading.core.Assignment` (``hw1.A.name == "hw1_dot_product_scores"``).

A check in three pieces
-----------------------
For a check ``c = grading.get_check(assignment, check_id)``:

1. ``cases = c.make_cases(seed)``: the input cases, a list of plain JSON
   data (arrays as dtype, shape and numbers), the same for the same seed.
   Visible checks default to a fixed seed; hidden checks get a fresh one.
2. ``results = grading.run_cases(functions, cases)``: calls the learner's
   functions (``functions`` maps the names in ``c.functions`` to callables,
   e.g. a notebook's globals) and returns what they gave back as plain JSON
   data, with any exception, warning, printed text and any call into the
   reference. It needs only numpy (never ``lib``), so it can run inside a
   sandbox in the learner's process.
3. ``verdict = c.compare(cases, results)``: a pure function of plain data
   that recomputes the expected values with ``lib`` and returns
   ``Verdict(passed, fraction, message)``. Run it outside the learner's
   process and learner code cannot reach the score. ``fraction`` is the
   share of the check's points earned: each case is an equal share, a
   result right but for its dtype earns a quarter of its case, one right but
   for its edge case (rows with nothing permitted) half, and changing an
   input in place costs a quarter (:func:`grading._common.judge_each`);
   ``c.score(verdict)`` is the points, in hundredths.

Seeds
-----
Visible checks use their fixed inputs. Hidden checks use the learner's seed,
HMAC-SHA256(course secret, assignment, student) (:mod:`grading.seeds`), in
``nbgrader autograde`` and in the class grader alike; a learner practising
gets a fresh seed each time.

In a notebook the three run in one go: ``hw4.check_attention_matrix(attention)``
runs check ``attention_matrix``, and ``hw4.check_attention_matrix(attention,
hidden=True)`` runs ``attention_matrix_hidden``; a check that earns nothing
raises :class:`~grading.core.CheckFailed` (an ``AssertionError``) whose
message says what is wrong, and Jupyter shows only that message; a partly
right check prints what is wrong and returns its score, the cell's value,
which nbgrader reads as partial credit. ``hw4.check_before_submit(globals())``
runs every check, hidden kinds on fresh inputs, and says plainly what passed
and what each failure means (the last cell of every notebook).

The registry
------------
``grading.checks_for("hw4_scaled_dot_product_attention")`` lists an
assignment's checks in notebook order. Each :class:`~grading.core.Check` has
``id`` (the nbgrader ``grade_id`` of the test cell that runs it), ``points``
(that cell's points), ``hidden``, ``functions`` (the learner functions it
calls) and the three pieces above. ``grading.all_checks()`` gives every
assignment. An outside grader does, per submission::

    seed = grading.seeds.student_seed(course, assignment, student)
    for check in grading.checks_for(assignment):
        cases = check.make_cases(seed if check.hidden else None)      # grader side
        results = run_in_sandbox(grading.run_cases, learner_namespace, cases)
        verdict = check.compare(cases, json.loads(json.dumps(results)))  # grader side
        score += check.score(verdict)

A learner function that calls ``lib``, ``grading``, torch, scipy, jax,
tensorflow or sklearn (directly, by an alias, a wrapper, ``np.vectorize``, an
import inside the function), starts a thread or process, or switches off the
call watch, fails every check that calls it, with a message saying that the
exercise asks for their own implementation. Limits, for the sandbox to
cover: the watch sees only the learner's own process and the threads it
starts during the call; source text copied from ``lib`` and ``exec``-ed is
not a call into ``lib``. The sandbox is best run without ``lib`` importable
at all (``grading`` imports ``lib`` only inside ``compare``).

Adding an assignment (e.g. hw9)
-------------------------------
1. ``grading/hw9.py``: ``A = Assignment("hw9_<name>", chapter="chapters/...")``;
   for each graded cell a ``cases(seed)`` function built with
   :func:`~grading.core.make_case` and a ``judge(cases, results)`` that calls
   :func:`~grading._common.judge_each` with a per-case function raising
   :class:`~grading.core.Mismatch` (use :func:`~grading.core.compare_arrays`,
   a tolerance derived as in :func:`~grading._common.logit_rtol`, and
   :class:`~grading.core.Partial` for a case that is right but for its edge
   case); then ``A.add(id, [function names], points=..., cases=...,
   judge=..., description=...)`` (ids ending in ``_hidden`` are hidden) and
   finally ``A.export(globals())``. Import ``lib`` only inside judges and
   cases, via :func:`~grading.core.reference`. Partial credit per case, the
   dtype, edge and in-place shares, seeds and the check-before-you-submit
   report then apply by themselves.
2. Import it below and add it to ``ASSIGNMENTS``.
3. ``solutions/hw9_<name>/hw9_<name>.ipynb``: copy an existing notebook's
   structure (see ``appendix/instructors.md``): a locked task statement that
   links its chapter, a locked setup cell (imports), answer cells with
   ``### BEGIN SOLUTION`` / ``### END SOLUTION``, and one locked test cell per
   check whose ``grade_id`` is the check id and whose points are the check's
   points; a hidden check's call sits between ``### BEGIN HIDDEN TESTS`` and
   ``### END HIDDEN TESTS``; the notebook ends with
   ``grading.authoring.self_check_cells("hw9")`` (the "check before you
   submit" text and cell). ``grading.authoring`` writes such cells.
4. Generate ``exercises/`` (``python -m grading.nbgrader_tools release
   hw9_<name>``), add the learners' corpus under
   ``tests/fixtures/homework/hw9_<name>/``: three correct-but-different
   submissions and at least three usual mistakes, each with the points and
   message words it must get (see the README there), plus
   ``calls_reference.py``, which earns nothing; add the mistakes to the
   points-per-mistake table of ``appendix/instructors.md``, independent
   correct implementations to ``IMPLEMENTATIONS`` in
   ``tests/test_homework_tolerances.py``, and list the notebook in
   ``_toc.yml``. The tests in ``tests/test_homework_*.py`` and
   ``tests/test_class_grading.py`` pick the new assignment up by themselves.
"""

from . import hw1, hw2, hw3, hw4, hw5, hw6, hw7, hw8, hw9
from .core import (
    CheckFailed,
    Verdict,
    all_checks,
    checks_for,
    get_check,
    run_cases,
)

#: Assignment name -> its module, in course order.
ASSIGNMENTS = {m.A.name: m for m in (hw1, hw2, hw3, hw4, hw5, hw6, hw7, hw8, hw9)}

__all__ = [
    "ASSIGNMENTS",
    "CheckFailed",
    "Verdict",
    "all_checks",
    "checks_for",
    "get_check",
    "hw1",
    "hw2",
    "hw3",
    "hw4",
    "hw5",
    "hw6",
    "hw7",
    "hw8",
    "hw9",
    "run_cases",
]
