"""Grading one submission, in five stages (match, run, compare, record, report), each in its own module."""
