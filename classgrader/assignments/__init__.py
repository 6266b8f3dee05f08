"""What is graded: a course assignment (checks in grading), a plain nbgrader one, and the course secret."""
