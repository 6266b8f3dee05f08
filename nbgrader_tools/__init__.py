"""The course's tooling around nbgrader: not a check, never in a learner's kernel.

``nbgrader_tools/cells.py``
    nbgrader's cell metadata: :func:`~nbgrader_tools.cells.nbgrader_meta`
    (the one way the course reads it) and the writers of a homework source
    notebook's cells (statement, setup, answer, test, "check before you
    submit").
``nbgrader_tools/authoring.py``
    :func:`~nbgrader_tools.authoring.problems`: what is wrong with a source
    notebook in ``solutions/``, compared with the checks of :mod:`grading`.
``nbgrader_tools/scratch_course.py``
    nbgrader run in a scratch course folder: release, submit, autograde,
    feedback, the gradebook's scores, and regenerating ``exercises/``.
``nbgrader_tools/generated.py``
    The cells every source notebook shares, written from one source each:
    *Start here* (template ``solutions/start_here.md``) and *Rules that cost
    points* (from :mod:`grading.rules` and the checks' declarations).
``nbgrader_tools/kit.py``
    The learner kit (course wheel, pinned requirements, homework zip, hub
    image recipe) written into the built site: ``./course kit``.
``python -m nbgrader_tools release [ASSIGNMENT ...]``
    Regenerates ``exercises/`` from ``solutions/`` (see :mod:`nbgrader_tools.__main__`).

The homework's checks themselves are :mod:`grading`; the class grader,
:mod:`classgrader`.
"""
