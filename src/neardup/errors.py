"""One exception hierarchy for neardup: every error a user can cause is a NeardupError."""

from __future__ import annotations


class NeardupError(Exception):
    """Base of every error neardup raises on purpose; the CLI turns it into a clean message."""


class ParamError(NeardupError, ValueError):
    """A parameter is out of range or parameters contradict each other."""


class ParamTypeError(ParamError, TypeError):
    """An argument of the wrong type (one string or a dict where a list of texts belongs); a
    TypeError too, so callers that caught the TypeError it used to be still catch it."""


class InputError(NeardupError, ValueError):
    """Input data is malformed; the message names the file, line and field where known."""


class IndexMismatchError(NeardupError):
    """Stored data (an index, a sketch file) was built with other parameters or a schema version."""


class IndexCorrupt(NeardupError):
    """A stored record of an index is damaged (its checksum fails, or SQLite finds the file
    malformed); the message names it and the commands that find and repair the damage."""


class OutputError(NeardupError):
    """An output cannot be written (disk full, closed pipe, no permission); the message names it."""


class UnknownIdError(InputError):
    """An id or URL asked for is not in the index (the service answers 404)."""


class ServiceError(NeardupError):
    """The service refused or did not answer a request (token, limits, timeout, unreachable)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Restart(BaseException):
    """Interpreted kernels ran past their time budget (``_kernels._jit.interpret``): the
    command runs again, compiled. A BaseException, so no error handler takes it for a fault."""
