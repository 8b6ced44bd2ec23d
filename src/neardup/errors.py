"""One exception hierarchy for neardup: every error a user can cause is a NeardupError."""

from __future__ import annotations


class NeardupError(Exception):
    """Base of every error neardup raises on purpose; the CLI turns it into a clean message."""


class ParamError(NeardupError, ValueError):
    """A parameter is out of range or parameters contradict each other."""


class InputError(NeardupError, ValueError):
    """Input data is malformed; the message names the file, line and field where known."""


class IndexMismatchError(NeardupError):
    """Stored data (an index, a sketch file) was built with other parameters or a schema version."""


class OutputError(NeardupError):
    """An output cannot be written (disk full, closed pipe, no permission); the message names it."""
