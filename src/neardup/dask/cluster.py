"""Connecting to a Dask cluster, and its failures as one-line NeardupErrors."""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..dask_local import (
    FORK_SERVER,
    WORKER_PRELOAD,
    caller_environ,
    local_workers,
    no_interrupts,
    start_fork_server,
    start_method,
    worker_environ,
)
from ..errors import NeardupError, ParamError

#: Seconds to wait for a scheduler named by address before giving up.
CONNECT_TIMEOUT = 10.0
#: The least memory limit a worker may have: one holds 400-450 MB once its kernels have run
#: (docs/DASK.md) and Dask pauses it at 80% of its limit, so below this a run can wait for ever
#: on paused workers (``--memory-limit 300M`` and ``400M`` did on 20k documents, ``local:2``).
MIN_WORKER_MEMORY = 10**9
#: What the client imports while the cluster starts: the stages build DataFrame graphs.
CLIENT_IMPORTS = ("dask.dataframe",)


def import_distributed() -> Any:
    """``distributed``, or a ParamError saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ParamError(
            "running on Dask needs dask[distributed] and pandas: pip install -e '.[dask]' "
            "from a checkout (or 'neardup[dask]' from an index)"
        ) from None
    return distributed


@contextlib.contextmanager
def cluster_errors() -> Iterator[None]:
    """Turn a lost worker, scheduler or connection into a NeardupError saying what to do."""
    distributed = import_distributed()
    from distributed.comm.core import CommClosedError

    try:
        yield
    except distributed.KilledWorker as exc:
        raise NeardupError(
            f"a Dask worker died while running {exc.task!r} (and again on each retry). Check "
            "the workers' logs (out of memory? give the workers more memory or use smaller "
            f"blocks) and run again{_resume(exc)}"
        ) from exc
    except (CommClosedError, distributed.client.FutureCancelledError) as exc:
        raise NeardupError(
            f"the connection to the Dask cluster was lost ({exc}). Check that the scheduler "
            f"is still running and run again{_resume(exc)}"
        ) from exc


def _resume(exc: BaseException) -> str:
    """How the run again resumes: the work folder its finished stages are kept in (the job
    marks the failure with it), else nothing kept."""
    where = getattr(exc, "neardup_work_dir", None)
    if where is None:
        return " (nothing of this run was kept)"
    return f" with --work-dir {where}: its finished stages are kept there"


class _NotAllExit(logging.Filter):
    """Drops asyncio's log of a task whose exception is Dask's AllExit: a gather cut short by
    Ctrl-C leaves one, logged with its traceback when it is collected."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return type(exc).__name__ != "AllExit"


_NOT_ALL_EXIT = _NotAllExit()


def _importing(modules: tuple[str, ...]) -> threading.Thread:
    """A started thread importing ``modules``: on one core while the cluster starts on others
    (joined before the modules are used; an import error surfaces there, when imported again)."""

    def load() -> None:
        for name in modules:
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    thread = threading.Thread(target=load, name="neardup-imports", daemon=True)
    thread.start()
    return thread


def _local_cluster(
    distributed: Any,
    spec: str,
    info: Callable[[str], None] | None,
    memory_limit: str | int | None,
    dashboard: bool,
    ready: Callable[[], None],
) -> Iterator[Any]:
    """A Client of a LocalCluster of one-thread worker processes, closed afterwards; the
    workers start with ``WORKER_ENVIRON`` (and without ``DROPPED_ENVIRON``), importing
    ``WORKER_PRELOAD``; the dashboard (bokeh: about a second more to start) only if asked.
    The scheduler's HTTP server takes a free loopback port: two runs at once never meet on
    Dask's default 8787 (a warning on the second run's terminal).
    ``ready`` is called before the client is handed out."""
    n = local_workers(spec)
    import dask

    start_fork_server(spec)
    environ = worker_environ()
    method = start_method()
    # forked workers have the fork server's environment: the caller's is set in each as it starts
    env = caller_environ() if method == FORK_SERVER else {}
    with (
        dask.config.set(
            {
                "distributed.nanny.pre-spawn-environ": environ,
                "distributed.worker.multiprocessing-method": method,
            }
        ),
        no_interrupts(),
        _start_failures() as failures,
    ):
        try:
            cluster = distributed.LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                memory_limit=memory_limit or "auto",
                dashboard_address=":0" if dashboard else "127.0.0.1:0",  # a free port, not 8787
                scheduler_kwargs={"dashboard": dashboard},
                preload=[WORKER_PRELOAD],
                env=env,
            )
        except RuntimeError as exc:  # "Nanny failed to start.": the worker's own error says why
            cause = failures[-1] if failures else str(exc)
            raise NeardupError(
                f"the local Dask workers could not start ({cause}); check that neardup with its "
                f"Dask extra imports in a fresh Python: python -c 'import {WORKER_PRELOAD}'"
            ) from None
    with cluster, distributed.Client(cluster) as client:
        if info is not None:
            board = f"dashboard {client.dashboard_link}" if dashboard else "no dashboard"
            info(f"Dask: local cluster of {n} worker{'s' * (n != 1)}, {board}")
        ready()
        yield client


@contextlib.contextmanager
def _start_failures() -> Iterator[list[str]]:
    """The errors local workers fail to start with ("ModuleNotFoundError: ..."), collected
    from Dask's nanny log instead of printed with their tracebacks: the command says them in
    its one line."""
    failures: list[str] = []

    def collect(record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        error = record.exc_info[1] if record.exc_info else None
        failures.append(f"{type(error).__name__}: {error}" if error else record.getMessage())
        return False

    nanny = logging.getLogger("distributed.nanny")
    nanny.addFilter(collect)
    try:
        yield failures
    finally:
        nanny.removeFilter(collect)


def _scheduler(
    distributed: Any, spec: str, info: Callable[[str], None] | None, ready: Callable[[], None]
) -> Iterator[Any]:
    """A Client of the scheduler at address ``spec``, or NeardupError within
    ``CONNECT_TIMEOUT`` seconds when it cannot be reached; ``ready``: as ``_local_cluster``."""
    try:
        client = distributed.Client(spec, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise NeardupError(
            f"cannot reach the Dask scheduler at {spec} ({type(exc).__name__}: {exc}); check "
            "the address and that `dask scheduler` is running there"
        ) from exc
    with client:
        if info is not None:
            workers = len(client.scheduler_info().get("workers", {}))
            info(f"Dask: {spec}, {workers} workers, dashboard {client.dashboard_link}")
        ready()
        yield client


@contextlib.contextmanager
def connect(
    spec: str | Any,
    info: Callable[[str], None] | None = None,
    memory_limit: str | int | None = None,
    dashboard: bool = False,
) -> Iterator[Any]:
    """A Client for ``spec``: ``"local:N"`` (a LocalCluster of N one-thread worker processes,
    closed afterwards), a scheduler address (``"tcp://host:8786"``), or a Client as it is.

    ``memory_limit``: each local worker's limit (bytes or "4GB"; Dask's "auto" otherwise);
    ``dashboard``: start a local cluster's dashboard. ``info`` receives one line with the
    dashboard link. Unreachable schedulers raise NeardupError within ``CONNECT_TIMEOUT``
    seconds. Dask's DataFrame is imported meanwhile, in a thread.
    """
    distributed = import_distributed()
    # The P2P shuffle logs each shuffle's start and end as warnings: not the user's concern.
    logging.getLogger("distributed.shuffle._scheduler_plugin").setLevel(logging.ERROR)
    logging.getLogger("asyncio").addFilter(_NOT_ALL_EXIT)
    if not isinstance(spec, str):
        yield spec
        return
    if not spec.startswith("local") and "://" not in spec:
        raise ParamError(
            f"--dask {spec!r}: give local:N or a scheduler address such as tcp://host:8786"
        )
    ready = _importing(CLIENT_IMPORTS).join
    if spec.startswith("local"):
        check_memory_limit(memory_limit)
        yield from _local_cluster(distributed, spec, info, memory_limit, dashboard, ready)
    else:
        yield from _scheduler(distributed, spec, info, ready)


_TOO_LITTLE = (
    "a neardup worker needs at least 1 GB (it holds 400-450 MB once its kernels have run, and "
    "Dask pauses a worker at 80% of its limit: the run would wait for ever)"
)


def check_memory_limit(limit: str | int | None) -> None:
    """ParamError for a local worker's memory limit below ``MIN_WORKER_MEMORY`` (None, 0 and
    "auto": Dask's own choice, or none)."""
    if limit is None or limit == "auto":
        return
    from dask.utils import parse_bytes

    nbytes = parse_bytes(limit) if isinstance(limit, str) else int(limit)
    if 0 < nbytes < MIN_WORKER_MEMORY:
        raise ParamError(
            f"--memory-limit {nbytes / 1e6:,.0f} MB per worker is too little: {_TOO_LITTLE}; "
            "give --memory-limit 1G or more (it is each worker's)"
        )


def check_workers_memory(limits: list[int]) -> None:
    """ParamError when a worker's memory limit (``limits``: those that have one, bytes) is
    below ``MIN_WORKER_MEMORY``, whoever started the workers."""
    if limits and min(limits) < MIN_WORKER_MEMORY:
        raise ParamError(
            f"a worker of the cluster has a memory limit of {min(limits) / 1e6:,.0f} MB: "
            f"{_TOO_LITTLE}; start the workers with --memory-limit 1GB or more"
        )
