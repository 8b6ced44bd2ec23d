"""Read ahead in a thread, and map over batches in threads: parsing and kernels overlap.

``prefetch`` parses the next batches while the kernels run; ``ordered_map`` runs a function
(whose kernels release the GIL) on several batches at once and yields the results in input
order, so the output never depends on the number of threads.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    from concurrent.futures import Future

T = TypeVar("T")
R = TypeVar("R")


def prefetch(items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """Yield ``items`` in order while a thread reads ahead: input parsing (which holds the GIL)
    overlaps the kernels (which release it), so a second core is put to use. Exceptions in the
    reader reach the consumer; a consumer that stops early stops the reader."""
    box: queue.Queue[tuple[str, object]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: tuple[str, object]) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for item in items:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # handed to the consumer, which re-raises it
            put(("error", exc))

    reader = threading.Thread(target=read, name="neardup-reader", daemon=True)
    reader.start()
    try:
        while True:
            kind, value = box.get()
            if kind == "end":
                return
            if kind == "error":
                raise cast(BaseException, value)
            yield cast(T, value)
    finally:
        stop.set()
        # A reader blocked on its input (an open pipe) cannot be woken; it is a daemon thread,
        # so waiting a moment and moving on never keeps the process alive.
        reader.join(timeout=2.0)


def ordered_map(fn: Callable[[T], R], items: Iterable[T], jobs: int) -> Iterator[tuple[T, R]]:
    """Yield ``(item, fn(item))`` in input order, computing up to ``jobs`` results at once.

    With ``jobs == 1`` everything runs in the calling thread. At most ``2 * jobs`` items are in
    flight, so memory stays bounded; an exception in ``fn`` reaches the consumer in order.
    """
    if jobs <= 1:
        for item in items:
            yield item, fn(item)
        return
    from concurrent.futures import ThreadPoolExecutor  # loaded when threads are first used

    pending: queue.SimpleQueue[tuple[T, Future[R]]] = queue.SimpleQueue()
    in_flight = 0
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="neardup-sign") as pool:
        try:
            for item in items:
                pending.put((item, pool.submit(fn, item)))
                in_flight += 1
                if in_flight >= 2 * jobs:
                    done, future = pending.get()
                    in_flight -= 1
                    yield done, future.result()
            while in_flight:
                done, future = pending.get()
                in_flight -= 1
                yield done, future.result()
        finally:
            while not pending.empty():  # an early stop: drop what was not consumed
                pending.get()[1].cancel()
