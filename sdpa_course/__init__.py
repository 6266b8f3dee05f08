"""The course's one package: everything a learner's notebook imports from the course.

- :mod:`sdpa_course.lib`: the reference implementation, written as the book writes it;
- :mod:`sdpa_course.teaching`: the chapters' figures, explorers and study widgets;
- :mod:`sdpa_course.grading`: the homework's checks.

One top-level name, and one unlikely to be a learner's own: a learner's folder
called ``lib`` or a file called ``grading.py`` beside their notebook would
otherwise be imported in its place (the notebook's folder comes first on
Python's path). Notebooks and chapters write ``from sdpa_course import lib``,
so ``lib.scaled_dot_product_attention`` reads as the book names it.
"""
