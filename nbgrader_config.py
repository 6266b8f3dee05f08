"""nbgrader settings for the course's homework.

Instructor sources live in solutions/<assignment>/, and the student versions
that `nbgrader generate_assignment` makes are committed in exercises/.
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

# Feedback must not show the hidden tests: nbgrader's feedback is made from the
# autograded notebook, where autograde has put them back, so clear them again.
# (A failing check shows only its message, never the code of the cell.)
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import ClearHiddenTests, GetGrades  # noqa: E402

c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor]
