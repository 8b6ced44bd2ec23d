"""Read ahead in a thread: an iterator of batches -> the same batches, parsed while the kernels run."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar, cast

T = TypeVar("T")


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
