"""Grading a class: find the submissions, grade each through the stages, on a local pool or a Dask cluster."""
