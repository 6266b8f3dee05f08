"""Grade a whole class of nbgrader submissions: parallel, sandboxed, nothing lost.

``./course grade ASSIGNMENT SUBMISSIONS`` (see :mod:`classgrader.cli`) finds
every student's notebook (:mod:`classgrader.intake`) and grades each one
(:mod:`classgrader.grade`) in five stages, each in the module of its name:

1. :mod:`classgrader.match` lines its cells up with the release
   (:mod:`classgrader.notebooks` does the reading and the lining up);
2. :mod:`classgrader.run` runs it in a bubblewrap sandbox
   (:mod:`classgrader.sandbox`, with :mod:`classgrader.driver` inside);
3. :mod:`classgrader.compare` scores it outside the learner's process with
   :mod:`grading`'s comparisons;
4. :mod:`classgrader.record` writes down what happened: the result and the
   autograded notebook;
5. :mod:`classgrader.report` makes the learner's feedback page.

What is graded comes from :mod:`classgrader.assignment`; an assignment written
the plain nbgrader way (asserts in its test cells, no checks in :mod:`grading`;
:mod:`classgrader.plain`) is graded by :mod:`classgrader.plain_grade` instead,
each test cell as ``nbgrader autograde`` scores it; the job, the events
and the result that cross between these stages are defined once in
:mod:`classgrader.records`. :mod:`classgrader.runner` grades the class with a
pool of workers and writes nbgrader's gradebook (:mod:`classgrader.gradebook`)
and the class reports (:mod:`classgrader.class_reports`,
:mod:`classgrader.item_analysis`); :mod:`classgrader.late` applies the late
policy and :mod:`classgrader.solution_book` builds the solutions book.
"""
