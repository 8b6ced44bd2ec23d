"""Map over batches in worker processes, results in input order: for work that holds the GIL.

``_prefetch.ordered_map`` runs batches in threads, which pays where the kernels release the
GIL. Work that holds it (SQLite rows turned into Python objects, checksums, JSON lines) runs on
one core however many threads there are; this runs it in ``jobs`` processes instead: the
calling one and ``jobs - 1`` workers. Each worker starts fresh (``spawn``: nothing is inherited
from a parent holding threads and open connections) and runs ``setup(*setup_args)`` once, e.g.
to open the index it reads; the calling process answers items while it would otherwise wait
(a worker takes about a second to start), and the results come back in input order, so the
output never depends on ``jobs``. At most ``2 * jobs`` items are in flight: memory stays
bounded.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .errors import NeardupError

if TYPE_CHECKING:
    from concurrent.futures import Future

T = TypeVar("T")
_END = object()
R = TypeVar("R")


def _start(setup: Callable[..., None], args: tuple[Any, ...]) -> None:
    """A worker process's start: Ctrl-C is the parent's to handle (it stops the pool), then
    the caller's ``setup``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    setup(*args)


class _Here:
    """An item answered in this process: its result, or the exception it raised (raised
    again when the item's turn to be yielded comes)."""

    __slots__ = ("error", "value")

    def __init__(self, here: Callable[[Any], Any], item: Any) -> None:
        self.value: Any = None
        self.error: Exception | None = None
        try:
            self.value = here(item)
        except Exception as exc:  # handed to the consumer in its turn
            self.error = exc

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


def process_map(
    fn: Callable[[Any], R],
    items: Iterable[T],
    jobs: int,
    here: Callable[[T], R],
    payload: Callable[[T], Any],
    setup: Callable[..., None],
    setup_args: tuple[Any, ...] = (),
) -> Iterator[tuple[T, R]]:
    """Yield ``(item, result)`` in input order over ``jobs`` processes: ``jobs - 1`` worker
    processes (``fn(payload(item))``; ``fn`` and ``setup``: module-level functions,
    ``payload``: what of an item is sent), each kept two items deep, and this one, which
    answers the next item itself (``here(item)``: it is started and warm already) whenever the
    item due next is still being worked on elsewhere. An exception in either reaches the
    consumer in order; a worker process that dies (out of memory, killed) is a NeardupError
    saying so."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    workers = max(1, jobs - 1)
    window: deque[tuple[T, Future[R] | _Here]] = deque()
    source = iter(items)
    more = True
    sent = 0  # items in the workers' hands
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start,
        initargs=(setup, setup_args),
    )

    def take() -> T | None:
        nonlocal more
        item = next(source, _END) if more else _END
        more = item is not _END
        return cast(T, item) if more else None

    try:
        while True:
            while sent < 2 * workers and len(window) < 2 * jobs and more:
                item = take()
                if item is not None:
                    window.append((item, pool.submit(fn, payload(item))))
                    sent += 1
            if not window:
                return
            item, work = window[0]
            if isinstance(work, _Here) or work.done() or not more or len(window) >= 2 * jobs:
                window.popleft()
                sent -= not isinstance(work, _Here)
                yield item, work.result()
                continue
            mine = take()  # the item due is not ready: answer the next one meanwhile
            if mine is not None:
                window.append((mine, _Here(here, mine)))
    except BrokenProcessPool as exc:
        raise NeardupError(
            "a worker process died (out of memory, or killed); run again, with fewer --jobs "
            "or smaller --batch-size if memory is short"
        ) from exc
    finally:
        for _, work in window:  # an early stop: drop what was not consumed
            if not isinstance(work, _Here):
                work.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
