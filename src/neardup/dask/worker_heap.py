"""How much freed memory a worker keeps: tasks end with ``_heap.trim``, which hands free heap
pages back only while the worker holds more than ``HEAP_SHARE`` of its memory limit.

Handing pages back after every task made the next task fault them in again: on ``local:2``
at 1M documents, a third of the workers' CPU time was the kernel's, mostly page faults.
Below half its limit a worker keeps them (Dask starts spilling at 60% and pauses at 80%);
above it, every task still ends by giving them back, as before.
"""

from __future__ import annotations

from typing import Any

from .. import _heap

#: Share of a worker's memory limit below which its free heap pages stay with it.
HEAP_SHARE = 0.5
#: The plugin's name on the cluster (registering it again replaces it).
PLUGIN_NAME = "neardup-heap"


def allowance(memory_limit: int | None) -> int:
    """Resident bytes a worker with ``memory_limit`` (0 or None: none) may keep free pages
    within: ``HEAP_SHARE`` of it, or any amount without a limit (nothing to stay under)."""
    return int(memory_limit * HEAP_SHARE) if memory_limit else 1 << 62


def _plugin_class() -> type:
    from distributed.diagnostics.plugin import WorkerPlugin

    class HeapAllowance(WorkerPlugin):
        """Sets each worker's ``_heap`` allowance from its memory limit, as it joins."""

        def setup(self, worker: Any) -> None:
            _heap.allow_resident(allowance(worker.memory_manager.memory_limit))

    return HeapAllowance


def keep_heap_on_workers(client: Any) -> None:
    """Register the allowance on every worker of ``client``'s cluster, present and future."""
    client.register_plugin(_plugin_class()(), name=PLUGIN_NAME)
