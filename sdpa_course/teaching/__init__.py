"""Helpers for the book's pages: figures, quizzes and flashcards.

The attention itself lives in :mod:`lib`; this package only presents it.
"""
