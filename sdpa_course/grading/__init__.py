"""The homework's checks: one definition of what each exercise must do.

Every graded test cell of every homework notebook runs one *check* defined
here, and an outside grader (grading a whole class, in a sandbox) runs the
very same checks. Nothing about an exercise is written twice.

Layout
------
The files follow a check from its inputs to its score, and the process each
part runs in:

``sdpa_course/grading/plain.py``
    The plain JSON data that crosses between processes: values
    (:func:`~grading.plain.encode`, :func:`~grading.plain.decode`), input cases
    (:class:`~grading.plain.Case`, made by :func:`~grading.plain.make_case`) and
    result records (:class:`~grading.plain.ResultRecord`).
``sdpa_course/grading/watch.py``, ``sdpa_course/grading/run.py``
    The learner's process: :class:`~grading.watch.CallWatch` (catches calls
    into the reference) and :func:`~grading.run.run_cases` (calls the
    learner's functions on the cases). numpy only, never ``lib``.
``sdpa_course/grading/compare.py``
    The grader's process: :class:`~grading.compare.Mismatch`,
    :class:`~grading.compare.Partial`, :class:`~grading.compare.Verdict`,
    :func:`~grading.compare.compare_arrays` and
    :func:`~grading.compare.decide`; expected values come from ``lib``.
``sdpa_course/grading/authoring/``
    What an assignment module is written with: the inputs and judges that
    several assignments share (rows of softmax weights, attention outputs,
    tolerances for logits, the share of a case each kind of mistake earns).
``sdpa_course/grading/check.py``
    :class:`~grading.check.Check` (one graded test cell) and
    :class:`~grading.check.Assignment` (the checks of one notebook).
``sdpa_course/grading/hw1.py`` ... ``sdpa_course/grading/hw12.py``
    One module per assignment, named after its number; ``hwN.A`` is its
    ``Assignment`` (``hw1.A.name == "hw1_dot_product_scores"``) and its
    ``check_*`` functions; ``sdpa_course/grading/online_softmax_mistakes.py`` computes
    homework 8's usual mistake for its judges.
``sdpa_course/grading/registry.py``
    The one list of assignment modules (:data:`~grading.registry.MODULES`)
    and the look-ups :func:`checks_for`, :func:`get_check`, :func:`all_checks`.
``sdpa_course/grading/notebook.py``
    What a notebook's test cells call: ``check_<name>`` and
    ``check_before_submit``, all three pieces in one process.
``sdpa_course/grading/seeds.py``
    The seed of each learner's hidden tests, and the course secret it comes
    from (the class grader's other settings are in :mod:`classgrader.settings`).
``sdpa_course/grading/pictures.py``
    A failed check's wrong matrix of weights drawn beside the expected one
    (the chapters' heatmaps), for the "check before you submit" and the
    class grader's feedback; never a hidden check's inputs.

The nbgrader tooling (writing and checking homework cells, running nbgrader in
a scratch course, regenerating ``exercises/``) is not a check: it lives in
the ``nbgrader_tools`` package beside this one.

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
   input in place costs a quarter (:func:`grading.authoring.judge_each`);
   ``c.score(verdict)`` is the points, in hundredths.

Seeds
-----
Visible checks use their fixed inputs. Hidden checks use the learner's seed,
HMAC-SHA256(course secret, assignment, student) (:mod:`grading.seeds`), in
``nbgrader autograde`` and in the class grader alike; a learner practising
gets a fresh seed each time.

In a notebook the three run in one go: ``hw4.check_attention_matrix(attention)``
runs check ``attention_matrix``, and ``hw4.check_attention_matrix(attention,
hidden=True)`` runs ``attention_matrix_hidden``; a check short of full
marks prints what is wrong and returns its score (0 when nothing is right),
the cell's value, which nbgrader reads as partial credit. It never raises, so
"Run All" reaches the notebook's last cell. ``hw4.check_before_submit(globals())``
runs every check, hidden kinds on fresh inputs, and says plainly what passed
and what each failure means (the last cell of every notebook).

The registry
------------
``grading.checks_for("hw4_scaled_dot_product_attention")`` lists an
assignment's checks in notebook order. Each :class:`~grading.check.Check` has
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
at all: importing ``grading`` does not import ``lib``; only making cases and
comparing do, through :func:`grading.compare.reference`, on the grader's
side.

Adding an assignment (hwN)
--------------------------------
1. ``sdpa_course/grading/hwN.py``: ``A = Assignment("hwN_<name>", chapter="chapters/...")``;
   for each graded cell a ``cases(seed)`` function built with
   :func:`~grading.plain.make_case` (and :mod:`grading.authoring`'s inputs) and a
   ``judge(cases, results)`` that calls
   :func:`~grading.authoring.judge_each` with a per-case function raising
   :class:`~grading.compare.Mismatch` (use :func:`~grading.compare.compare_arrays`,
   a tolerance derived as in :func:`~grading.authoring.logit_rtol`, and
   :class:`~grading.compare.Partial` for a case that is right but for its edge
   case); then ``A.add(id, [function names], points=..., cases=...,
   judge=..., description=...)`` (ids ending in ``_hidden`` are hidden);
   finally the functions its notebook calls, one per check and its hidden
   twin, ``check_<id> = notebook_check(A, "<id>")``, and
   ``check_before_submit = before_submit_check(A)``
   (:func:`grading.notebook.notebook_check`; a test in
   ``tests/test_homework_grading.py`` finds any one left out). Import ``lib``
   only inside judges and cases, via :func:`~grading.compare.reference`. Partial credit per case, the
   dtype, edge and in-place shares, seeds and the check-before-you-submit
   report then apply by themselves.
2. Add ``"hwN"`` to :data:`~grading.registry.MODULES`.
3. ``solutions/hwN_<name>/hwN_<name>.ipynb``: copy an existing notebook's
   structure (see ``solution_book/instructors.md``): a locked task statement that
   links its chapter, a locked setup cell (imports), answer cells with
   ``### BEGIN SOLUTION`` / ``### END SOLUTION``, and one locked test cell per
   check whose ``grade_id`` is the check id and whose points are the check's
   points; a hidden check's call sits between ``### BEGIN HIDDEN TESTS`` and
   ``### END HIDDEN TESTS``; the notebook ends with
   ``nbgrader_tools.cells.self_check_cells("hwN")`` (the "check before
   you submit" text and cell). ``nbgrader_tools.cells`` writes such cells.
4. Add the learners' corpus under ``tests/fixtures/homework/hwN_<name>/``:
   three correct-but-different submissions and at least three usual mistakes,
   each with the points and message words it must get (see the README there),
   plus ``calls_reference.py``, which earns nothing. The files that lose points
   are the assignment's mutant catalogue: generating ``exercises/``
   (``python -m nbgrader_tools release hwN_<name>``) grades them first and
   refuses while one earns full marks, or while there is none
   (``nbgrader_tools/mutants.py``; its ``PENDING`` lists an assignment whose corpus
   is still being written). Add the mistakes to the
   points-per-mistake table of ``solution_book/instructors.md``, independent
   correct implementations to ``IMPLEMENTATIONS`` in
   ``tests/test_homework_tolerances.py``, and list the notebook in
   ``_toc.yml``. The tests in ``tests/test_homework_*.py`` and
   ``tests/test_class_grading.py`` pick the new assignment up by themselves.
"""

from .compare import Verdict
from .registry import ASSIGNMENTS, all_checks, all_hints, checks_for, get_check
from .run import run_cases

__all__ = ["ASSIGNMENTS", "Verdict", "all_checks", "all_hints", "checks_for", "get_check", "run_cases"]
