"""How ``--dask local:N`` worker processes start: their environment, what they import, and
the one process they are forked from.

Kept apart from ``neardup.dask`` (whose package imports Dask and the stages) so that the command
line can start that process before it imports them itself: the two imports then run on two
cores at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

from .errors import ParamError

#: Dask starts local workers with ``MALLOC_TRIM_THRESHOLD_`` set, which also fixes glibc's
#: mmap threshold at 128 KiB: every large array is then a fresh mmap whose pages fault in again
#: (bench_dask.py shows the cost). neardup's workers leave glibc's dynamic
#: thresholds alone and return free heap pages after each task instead (``_heap.trim``).
DROPPED_ENVIRON = ("MALLOC_TRIM_THRESHOLD_",)
#: Dask's own defaults for a worker's environment (its ``distributed.yaml``): one thread per
#: worker in the numeric libraries. The fork server can start before Dask's defaults are loaded
#: in this process, so they are named here too (Dask's configuration, when loaded, overrides).
THREAD_ENVIRON = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
#: Arrow's default pool (mimalloc) keeps what the stages free, where the system allocator gives
#: it back to ``_heap.trim``.
WORKER_ENVIRON = {"ARROW_DEFAULT_MEMORY_POOL": "system"}
#: What each local worker imports as it starts (Dask's ``preload``), while the client is still
#: starting: Dask's DataFrame and neardup's stages, or each worker's first task loads them.
WORKER_PRELOAD = "neardup.dask.preload"
#: How local workers start: forked from one server process that imported ``WORKER_PRELOAD``
#: once (Python's forkserver, started while the client imports), not each a fresh interpreter
#: importing Dask, pandas, Numba and the stages again (about 3 s of CPU a worker); spawned
#: where the platform has no forkserver (Windows).
FORK_SERVER = "forkserver"
#: Set in the fork server's environment: ``WORKER_PRELOAD`` then warms the kernels in its own
#: thread of control (a process that forks must hold no other thread).
FORK_SERVER_MARK = "NEARDUP_DASK_FORK_SERVER"


def start_method() -> str:
    """How local workers start here: ``FORK_SERVER`` where the platform has it, else spawned."""
    import multiprocessing

    return FORK_SERVER if FORK_SERVER in multiprocessing.get_all_start_methods() else "spawn"


def local_workers(spec: str) -> int:
    """N of ``"local:N"`` (the CPU count for ``"local"``), or ParamError."""
    _, _, count = spec.partition(":")
    try:
        n = int(count) if count else os.cpu_count() or 1
    except ValueError:
        n = 0
    if n < 1:
        raise ParamError(f"--dask {spec!r}: write local:N with N >= 1 worker processes")
    return n


def worker_environ() -> dict[str, str]:
    """What a local worker's environment has before it starts: Dask's ``pre-spawn-environ``
    (``THREAD_ENVIRON`` where Dask's defaults are not loaded yet), with ``WORKER_ENVIRON`` and
    without ``DROPPED_ENVIRON``."""
    import dask

    environ = {**THREAD_ENVIRON, **dask.config.get("distributed.nanny.pre-spawn-environ", {})}
    for name in DROPPED_ENVIRON:
        environ.pop(name, None)
    environ.update(WORKER_ENVIRON)
    return {name: str(value) for name, value in environ.items()}


def start_fork_server(spec: str | Any) -> None:
    """For ``local:N``: start the process local workers are forked from now (if it is not
    running), so that it imports while the client checks the job and imports Dask; nothing
    for a scheduler address or a Client, or where workers are spawned (``start_method``).

    It imports ``WORKER_PRELOAD`` and warms the kernels once, with the workers' environment (a
    forked worker has its server's, not the nanny's) and SIGINT ignored. It is Python's one
    fork server of this process: a caller's own ``forkserver`` processes come from it too.
    """
    if not isinstance(spec, str) or not spec.startswith("local") or start_method() != FORK_SERVER:
        return
    try:
        local_workers(spec)
    except ParamError:  # connect() says so, after the job's own checks
        return
    import multiprocessing
    import multiprocessing.forkserver

    multiprocessing.get_context(FORK_SERVER).set_forkserver_preload([WORKER_PRELOAD])
    # The caller's own value wins, as in Dask's nanny (its ``pre-spawn-environ`` defaults)
    wanted = {name: os.environ.get(name, value) for name, value in worker_environ().items()}
    if wanted.get("PYTHONHASHSEED") in (None, "0"):  # as Dask's nanny: one hash seed
        wanted["PYTHONHASHSEED"] = "6640"
    wanted[FORK_SERVER_MARK] = "1"
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        with no_interrupts():
            multiprocessing.forkserver.ensure_running()
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def caller_environ() -> dict[str, str]:
    """What a forked local worker sets in its environment as it starts: the caller's own
    (a forked worker has its server's, from when the server started; a spawned one had the
    caller's as it spawned). Not those Python reads as it starts (``PYTHONHASHSEED``), the
    server's mark, nor ``DROPPED_ENVIRON``; nor can it unset what the caller unset since."""
    skip = {"PYTHONHASHSEED", FORK_SERVER_MARK, *DROPPED_ENVIRON}
    return {name: value for name, value in os.environ.items() if name not in skip}


@contextlib.contextmanager
def no_interrupts() -> Iterator[None]:
    """SIGINT ignored while local workers start, so that they start ignoring it (an ignored
    signal stays ignored in a child, and Python then installs no handler): Ctrl-C reaches the
    whole process group, and a worker that took it printed its own traceback; the command
    stops them as it stops. A Ctrl-C in those two seconds is not taken (blocking it instead
    does not reach the threads Dask starts processes from). Only in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
