"""Map over batches in worker processes, results in input order: for work that holds the GIL.

``_prefetch.ordered_map`` runs batches in threads, which pays where the kernels release the
GIL. Work that holds it (SQLite rows turned into Python objects, checksums, JSON lines) runs on
one core however many threads there are; this runs it in ``jobs`` processes instead: the
calling one and ``jobs - 1`` workers. Each worker starts fresh (``spawn``: nothing is inherited
from a parent holding threads and open connections) and runs ``setup(*setup_args)`` once, e.g.
to open the index it reads; a worker gets its next item as it finishes one, the calling
process answers items while it would otherwise wait (a worker takes about a second to start),
and the results come back in input order, so the output never depends on ``jobs``. At most
``2 * jobs`` items are in flight: memory stays bounded.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from .errors import NeardupError

T = TypeVar("T")
R = TypeVar("R")


def _start(setup: Callable[..., None], args: tuple[Any, ...]) -> None:
    """A worker process's start: Ctrl-C is the parent's to handle (it stops the pool), a
    parent that dies takes the worker with it, then the caller's ``setup``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent()
    setup(*args)


def _exit_with_parent() -> None:
    """Exit when the parent process is gone (killed: SIGKILL, out of memory), instead of
    waiting for work forever: a worker holds the pool's queues open itself, so it never sees
    them close."""
    import multiprocessing
    import multiprocessing.connection

    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="neardup-parent", daemon=True).start()


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


class _Dealer:
    """Items dealt in order to whoever asks (the feeder for a worker, or this process), at most
    ``limit`` taken and not yet handed back; results kept by number until their turn."""

    def __init__(self, items: Iterable[Any], limit: int) -> None:
        self.source = iter(items)
        self.limit = limit
        self.cv = threading.Condition()
        self.reading = threading.Lock()  # one thread reads the items at a time, in order
        self.taken = 0
        self.given = 0
        self.ready: dict[int, tuple[Any, Any]] = {}  # number -> (item, future or _Here)
        self.ended = False
        self.stopped = False
        self.error: Exception | None = None

    def take(self, wait: bool) -> tuple[int, Any] | None:
        """The next item and its number; None at the end, when stopped, or (``wait`` False)
        when ``limit`` items are out or another thread is reading. The items are read outside
        the lock the results are kept under: a stalled input never holds up the results."""
        if not self.reading.acquire(blocking=wait):
            return None
        try:
            with self.cv:
                while self.taken - self.given >= self.limit and not self.stopped and not self.ended:
                    if not wait:
                        return None
                    self.cv.wait()
                if self.stopped or self.ended:
                    return None
            try:
                item = next(self.source)
            except StopIteration:
                self._end(None)
                return None
            except Exception as exc:  # the reader's error: raised in the consumer's turn
                self._end(exc)
                return None
            with self.cv:
                self.taken += 1
                return self.taken - 1, item
        finally:
            self.reading.release()

    def _end(self, error: Exception | None) -> None:
        with self.cv:
            self.error, self.ended = error, True
            self.cv.notify_all()

    def put(self, number: int, item: Any, work: Any) -> None:
        with self.cv:
            self.ready[number] = (item, work)
            self.cv.notify_all()

    def hand_back(self) -> None:
        """One item fewer out: room for the next."""
        with self.cv:
            self.given += 1
            self.cv.notify_all()

    def stop(self) -> None:
        """No more items for anyone (the consumer stopped)."""
        with self.cv:
            self.stopped = True
            self.cv.notify_all()


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
    processes, each handed its next item by a feeder thread as it finishes one
    (``fn(payload(item))``; ``fn`` and ``setup``: module-level functions, ``payload``: what of
    an item is sent), and this one, which answers the next item itself (``here(item)``: it is
    started and warm already) whenever the item due is not ready. An exception in either, or in
    reading ``items``, reaches the consumer in order; a worker process that dies (out of
    memory, killed) is a NeardupError saying so."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    workers = max(1, jobs - 1)
    deal = _Dealer(items, 2 * jobs)
    free = threading.Semaphore(workers)  # one item in each worker's hands
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start,
        initargs=(setup, setup_args),
    )

    feeder = threading.Thread(
        target=_feed, args=(deal, free, pool, fn, payload), name="neardup-feeder", daemon=True
    )
    feeder.start()
    try:
        yield from _in_order(deal, here)
    except BrokenProcessPool as exc:
        raise NeardupError(
            "a worker process died (out of memory, or killed); run again, with fewer --jobs "
            "or smaller --batch-size if memory is short"
        ) from exc
    finally:
        deal.stop()
        free.release()
        feeder.join(timeout=2.0)  # a daemon blocked on a stalled input is left behind
        pool.shutdown(wait=True, cancel_futures=True)


def _feed(
    deal: _Dealer, free: threading.Semaphore, pool: Any, fn: Callable[[Any], Any], payload: Any
) -> None:
    """The feeder thread: each worker's next item, sent as the worker frees its place."""
    while True:
        free.acquire()
        got = deal.take(wait=True)
        if got is None:
            return
        number, item = got
        try:
            work = pool.submit(fn, payload(item))
        except Exception as exc:  # a payload that cannot be made, or a closed pool
            deal.put(number, item, _Failed(exc))
            return
        work.add_done_callback(_returned(deal, free, number, item))


def _in_order(deal: _Dealer, here: Callable[[Any], Any]) -> Iterator[tuple[Any, Any]]:
    """The items and their results in input order; while the one due is not ready, this
    process answers the next one itself."""
    number = 0
    while True:
        with deal.cv:
            due = deal.ready.pop(number, None)
            if due is None and deal.ended and number >= deal.taken:
                if deal.error is not None:
                    raise deal.error
                return
        if due is not None:
            deal.hand_back()
            number += 1
            yield due[0], due[1].result()
            continue
        mine = deal.take(wait=False)
        if mine is not None:
            deal.put(mine[0], mine[1], _Here(here, mine[1]))
            continue
        with deal.cv:  # every item is out: wait for the one due
            while number not in deal.ready and not (deal.ended and number >= deal.taken):
                deal.cv.wait()


def _returned(
    deal: _Dealer, free: threading.Semaphore, number: int, item: Any
) -> Callable[[Any], None]:
    """A worker's result kept for its turn, and the worker's place freed for the next item."""

    def done(work: Any) -> None:
        deal.put(number, item, work)
        free.release()

    return done


class _Failed:
    """An item that could not be sent: its error, raised in its turn."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def result(self) -> Any:
        raise self.error
