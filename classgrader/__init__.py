"""Grade a whole class of nbgrader submissions: parallel, sandboxed, nothing lost.

``./course grade ASSIGNMENT SUBMISSIONS`` (see :mod:`classgrader.cli`) finds
every student's notebook (:mod:`classgrader.intake`), lines its cells up with
the release (:mod:`classgrader.notebooks`), runs it in a bubblewrap sandbox
(:mod:`classgrader.sandbox`, :mod:`classgrader.driver`), scores it outside the
learner's process with :mod:`grading`'s comparisons
(:mod:`classgrader.grade`), and writes nbgrader's gradebook, feedback pages
and class reports (:mod:`classgrader.gradebook`, :mod:`classgrader.feedback`,
:mod:`classgrader.reports`), orchestrated by :mod:`classgrader.runner`.
"""
