"""The ``neardup`` command: parse arguments, call one library function, report; nothing more.

Each command runs from its own module here (``dedup.py``, ``index.py``, ...), imported once the
command line is parsed: ``--help`` and a bad command line load neither NumPy nor Numba.

Exit status: 0 success, 1 bad input or parameters, or an input or output that cannot be read
or written (one line on stderr, never a traceback), 2 bad command line, 130 interrupted (``serve`` exits 0
when SIGTERM or Ctrl-C stops it cleanly).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence

from ..errors import NeardupError, Restart
from .parser import parse

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``neardup ARGV`` and return its exit status; without ``argv`` the process is the
    command (``sys.argv``), and its start-up tricks apply (``_startup``)."""
    if sys.stderr is None:  # closed: errors have nowhere to go, the exit status still tells
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    args = parse(argv)
    args.own_process = argv is None  # the process is this command
    # Not at the top: it loads NumPy and the I/O layer, which --help and a bad command line
    # never need (parse exits first); the command's own module follows in ``_command``.
    from . import _startup

    if args.own_process:
        _startup.skip_numba_blas_probe()
    status = _run(args)
    if args.own_process and status:
        _startup.exit_at_once(status)
    return status


def _run(args: argparse.Namespace) -> int:
    """The command of ``args``, its errors one line each; its exit status."""
    from . import _startup, output

    try:
        command = _command(args)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _terminate)
        return command(args)
    except NeardupError as exc:
        return output.fail(str(exc))
    except Restart:
        return _startup.restart_compiled()
    except KeyboardInterrupt:
        sys.stderr.write("neardup: interrupted\n")
        return 130
    except SystemError as exc:  # an interrupt that arrived inside a compiled kernel
        if not _caused_by_interrupt(exc):
            raise
        sys.stderr.write("neardup: interrupted\n")
        return 130
    except OSError as exc:  # one the I/O layer did not name itself
        return output.fail(output.os_error_message(exc))
    except UnicodeError as exc:
        return output.fail(
            f"text that cannot be encoded or decoded ({exc}); check the input's encoding"
        )
    except RecursionError:
        return output.fail("input nested too deeply to process; flatten the records")
    finally:
        output.quiet_stdout()
        if args.own_process:  # the process is this command, and it ends now
            _startup.skip_final_collection()


def _command(args: argparse.Namespace) -> Callable[[argparse.Namespace], int]:
    """The ``run`` function of the module that runs the command line, imported now. The job's
    modules load before SIGTERM is ours; the engine (and Numba) load inside the job once its
    inputs are open, where an interrupt unwinds like any other."""
    module = importlib.import_module(f"{__name__}.{_module_name(args)}")
    run: Callable[[argparse.Namespace], int] = module.run
    return run


def _module_name(args: argparse.Namespace) -> str:
    """The command's module. A variant that needs library modules the command otherwise does
    not has its own module, so they never load for the others: ``dedup --unit`` (its kernels
    load on import, and must not before a small dedup has chosen how kernels run), ``plan
    --sample`` (the corpus sampler), SimHash's ``plan`` (Hamming tables, not MinHash's
    planner), ``dedup --index`` (the index), ``--dask`` (Dask), ``index add`` and ``index query`` (the
    job runner)."""
    if args.command == "dedup":
        if args.unit != "document":
            return "units"
        if args.index or args.add:
            return "dedup_index"
        return "dedup_dask" if args.dask else "dedup"
    if args.command == "decontaminate":
        return "decontaminate_dask" if args.dask else "decontaminate"
    if args.command == "plan":
        if args.sample:
            return "plan_sample"
        return "plan_tables" if args.method == "simhash" else "plan"
    if args.command == "index":
        return "index_docs" if args.index_command in ("add", "query") else "index"
    return str(args.command)


def _caused_by_interrupt(exc: BaseException | None) -> bool:
    """True when a KeyboardInterrupt is somewhere in the exception's cause chain."""
    seen = 0
    while exc is not None and seen < 50:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so partly written outputs are removed, never left behind."""
    raise KeyboardInterrupt
