"""Imported by each worker as it starts (Dask's ``preload``): Dask's DataFrame and neardup's
stages load while the client is still starting, instead of in every worker's first task.
``--dask local:N`` workers are forked from a process that imported it once (``dask_local``).

``--dask local:N`` workers import it; on a cluster you start yourself, pass
``dask worker ... --preload neardup.dask.preload``.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import threading

import dask.dataframe  # noqa: F401
import numpy as np

from .._kernels.keys import destinations
from ..dask_local import FORK_SERVER_MARK
from . import decontaminate, job  # noqa: F401


def _warm() -> None:
    """Numba's first dispatch in a process loads its registries (0.3 s and more): run one
    cached kernel while the worker registers and the client plans, not in the first task."""
    destinations(np.zeros(1, dtype=np.uint64), 1)


if os.environ.get(FORK_SERVER_MARK):  # the local workers' fork server: it forks, so no thread
    _warm()
else:
    threading.Thread(target=_warm, name="neardup-warm", daemon=True).start()


class _NotCancelled(logging.Filter):
    """Drops the warning that a task was cancelled (what Ctrl-C on the client does)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "ended with CancelledError" not in record.getMessage()


logging.getLogger("distributed.worker.state_machine").addFilter(_NotCancelled())
if threading.current_thread() is threading.main_thread():  # a restarted worker: as at start
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's to handle


def dask_teardown(worker: object) -> None:
    """As the worker closes: its process's exit then skips collecting every object it holds
    (with Dask's DataFrame loaded, about 0.4 s of a cluster's close)."""
    gc.freeze()
