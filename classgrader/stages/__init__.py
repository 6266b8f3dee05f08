"""Grading one submission, in five stages (match, run, compare, record, report), each a module of its name."""
