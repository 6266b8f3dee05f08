"""The error of an assignment that cannot be graded as configured, raised by every loader."""


class SetupError(RuntimeError):
    """The assignment cannot be graded as configured; the message says why."""
