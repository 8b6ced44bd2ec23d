"""What a command writes itself: its result on standard output, notes and one-line errors on
standard error, each safe against a closed stream or a broken pipe."""

from __future__ import annotations

import contextlib
import json
import os
import sys

from ..errors import OutputError
from ..io._targets import STDOUT, describe_os_error, guarded, stdout_buffer, write_all


def print_out(text: str) -> None:
    """Write a result to standard output; OutputError when it is closed or the pipe broke."""
    if sys.stdout is None:
        raise OutputError(
            "cannot write to standard output: it is closed; redirect it to a file instead"
        )
    out = sys.stdout
    if getattr(out, "buffer", None) is None:  # a text-only stream (redirect_stdout to StringIO)
        guarded(STDOUT, lambda: out.write(text))
        guarded(STDOUT, out.flush)
        return
    # Bytes written whole (``write_all``): an unbuffered text stream (PYTHONUNBUFFERED) can
    # drop the rest of a write that the pipe took only in part.
    data = text.encode(out.encoding or "utf-8", out.errors or "strict")
    guarded(STDOUT, out.flush)
    sink = stdout_buffer()
    write_all(sink, data, STDOUT)
    guarded(STDOUT, sink.flush)


def print_json(value: object) -> None:
    """``value`` as indented JSON on standard output."""
    print_out(json.dumps(value, indent=1, ensure_ascii=False) + "\n")


def warn(message: str) -> None:
    """A warning on stderr: the run goes on."""
    sys.stderr.write(f"neardup: warning: {message}\n")


def info(message: str) -> None:
    """A note on stderr."""
    sys.stderr.write(f"neardup: {message}\n")


def fail(message: str) -> int:
    """Report an error in one line (newlines in file names escaped): exit status 1."""
    line = message.replace("\r", "\\r").replace("\n", "\\n")
    line = line.encode("utf-8", "backslashreplace").decode("utf-8")  # undecodable file names
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"neardup: error: {line}\n")
        sys.stderr.flush()
    return 1


def os_error_message(exc: OSError) -> str:
    """An OSError no layer below named: which file, what went wrong, what to do."""
    name = exc.filename if exc.filename is not None else ""
    return f"{name}: {describe_os_error(exc)}" if name else describe_os_error(exc)


def quiet_stdout() -> None:
    """After a broken pipe, point standard output at /dev/null so the interpreter's final flush
    cannot print a second error."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
