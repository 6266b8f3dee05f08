"""nbgrader settings for the course's homework.

Instructor sources live in solutions/<assignment>/, and the student versions
that `nbgrader generate_assignment` makes are committed in exercises/
(regenerate them with `./course release`: nbgrader_tools/scratch_course.py).
"""

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

c.CourseDirectory.root = "."
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.course_id = "sdpa-course"
# Only notebooks: a Markdown file in the source folder would be copied into
# the release verbatim, solutions included.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "*.md", "feedback"]
c.Execute.timeout = 120
# Once the last cell has run, the learner's kernel is stopped at once rather than
# asked to exit: about one kernel in five (ipykernel 7.4) does not exit when asked
# and is stopped anyway 2.5 s later, so asking cost that much in a class of notebooks.
c.Execute.shutdown_kernel = "immediate"
# `nbgrader export` writes every learner's score in every assignment here (nbgrader's
# default name, grades.csv, says less); ./course grade writes its own files per
# assignment into reports/<assignment>/ (student_scores.csv, canvas_import.csv, moodle_import.csv).
c.ExportPlugin.to = "nbgrader_export.csv"

# The course secret that seeds each learner's hidden tests (sdpa_course/grading/seeds.py):
# seed = HMAC-SHA256(secret, assignment + student), used alike by `nbgrader
# autograde` (the hidden test cells) and `./course grade`. There is no public
# default: with none configured, the first `./course grade` makes one in
# ~/.config/sdpa-course/<course id>/grading-secret (mode 600) and appends its
# c.CourseGrading.secret_file line at the end of this file. To choose the place
# yourself, make one with
#   python -m sdpa_course.grading new-secret ~/.config/sdpa-course/grading-secret
# and name it here (never in the repository, a release or exercises/):
# c.CourseGrading.secret_file = "~/.config/sdpa-course/grading-secret"

# Feedback must not show the hidden tests: nbgrader's feedback is made from the
# autograded notebook, where autograde has put them back, so clear them again.
# (A failing check shows only its message, never the code of the cell.)
# The preprocessors are named by their import paths, not imported here: every
# hidden test cell reads this file (for the course secret) inside the
# learner's kernel, and importing nbconvert there cost ~2.7 s per notebook.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
