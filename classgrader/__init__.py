"""Grade a whole class of nbgrader submissions: parallel, sandboxed, nothing lost.

``./course grade ASSIGNMENT SUBMISSIONS`` (see :mod:`classgrader.cli`) finds
every student's notebook (:mod:`classgrader.pipeline.intake`) and grades each one
(:mod:`classgrader.stages.grade`) in five stages, each in its own module:

1. :mod:`classgrader.stages.match` lines its cells up with the release
   (:mod:`classgrader.stages.notebooks` does the reading and the lining up);
2. :mod:`classgrader.stages.sandbox_run` runs it in a bubblewrap sandbox
   (:mod:`classgrader.sandbox.session`, with :mod:`classgrader.sandbox.driver` inside);
3. :mod:`classgrader.stages.scoring` scores it outside the learner's process with
   :mod:`grading`'s comparisons;
4. :mod:`classgrader.stages.record` writes down what happened: the result and the
   autograded notebook;
5. :mod:`classgrader.stages.report` makes the learner's feedback page.

What is graded comes from :mod:`classgrader.assignments.course`; an assignment written
the plain nbgrader way (asserts in its test cells, no checks in :mod:`grading`;
:mod:`classgrader.assignments.plain_nbgrader`) goes through the same five stages, as
:mod:`classgrader.stages.plain_grade` takes them for its kind, each test cell scored as
``nbgrader autograde`` scores it; the job, the events
and the result that cross between these stages are defined once in
:mod:`classgrader.records`. :mod:`classgrader.pipeline.class_run` grades the class with a
pool of workers and writes nbgrader's gradebook (:mod:`classgrader.books.gradebook`)
and the class reports (:mod:`classgrader.books.class_reports`,
:mod:`classgrader.after_deadline.item_analysis`); :mod:`classgrader.after_deadline.late` applies the late
policy and :mod:`nbgrader_tools.solution_book` builds the solutions book.
"""
