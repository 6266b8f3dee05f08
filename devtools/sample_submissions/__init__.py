"""Sample submissions for the class grader, made from the committed notebooks.

:class:`~devtools.sample_submissions.builder.Builder` makes, for one assignment, the
solution submission, the blank release and every bad submission that the
class grader's tests grade (:data:`~devtools.sample_submissions.builder.EXPECTED` says
what each must earn); ``benchmarks/class_grading_speed.py`` times a class
made of the same notebooks. It lives outside ``tests/`` so that both use it.
"""

from .builder import EXPECTED, Builder

__all__ = ["EXPECTED", "Builder"]
