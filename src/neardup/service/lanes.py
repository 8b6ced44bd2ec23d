"""Threads owning the index's connections: one writer (the only write connection, so writes
are serialised and answered once committed) and a few readers (SQLite WAL lets them read while
the writer writes). ``Lanes.call`` runs a job on one of them within the request timeout."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from starlette.exceptions import HTTPException

from ..index import Index
from .guard import Limits

T = TypeVar("T")
_Job = tuple[Future[Any], Callable[[Index], Any]]


class _Lane:
    """Threads that each open their own ``Index`` and run jobs from one queue, in order."""

    def __init__(self, path: str, threads: int, name: str) -> None:
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        opened: list[Future[None]] = []
        for i in range(threads):
            ready: Future[None] = Future()
            t = threading.Thread(
                target=self._work, args=(path, ready), name=f"neardup-{name}-{i}", daemon=True
            )
            t.start()
            self._threads.append(t)
            opened.append(ready)
        try:
            for ready in opened:
                ready.result()
        except BaseException:
            self.close()
            raise

    def _work(self, path: str, ready: Future[None]) -> None:
        try:
            index = Index.open(path)
        except BaseException as exc:
            ready.set_exception(exc)
            return
        ready.set_result(None)
        try:
            while (item := self._jobs.get()) is not None:
                fut, job = item
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    fut.set_result(job(index))
                except BaseException as exc:
                    fut.set_exception(exc)
        finally:
            index.close()

    def submit(self, job: Callable[[Index], T]) -> Future[T]:
        fut: Future[T] = Future()
        self._jobs.put((fut, job))
        return fut

    def close(self) -> None:
        """Finish the queued jobs, then close every connection."""
        for _ in self._threads:
            self._jobs.put(None)
        for t in self._threads:
            t.join()


class Lanes:
    """The writer lane and the reader lane over the index at ``path``, and the request limits."""

    def __init__(self, path: str, limits: Limits) -> None:
        self.limits = limits
        self.writer = _Lane(path, 1, "writer")
        try:
            self.reader = _Lane(path, limits.readers, "reader")
        except BaseException:
            self.writer.close()
            raise

    async def close(self) -> None:
        """Finish the queued work of both lanes, then close their connections."""
        for lane in (self.writer, self.reader):
            await asyncio.to_thread(lane.close)

    async def call(self, lane: str, job: Callable[[Index], T]) -> T:
        """Run ``job`` on a thread of the lane; a write that started is always waited for."""
        timeout = self.limits.timeout
        fut = (self.writer if lane == "writer" else self.reader).submit(job)
        waiting = asyncio.wrap_future(fut)
        try:
            return await asyncio.wait_for(asyncio.shield(waiting), timeout)
        except TimeoutError:
            if fut.cancel():
                raise HTTPException(
                    503,
                    f"the index stayed busy for {timeout:g}s and nothing was done; "
                    "try again later (or start the service with a larger --timeout)",
                ) from None
            if lane == "writer":
                return await waiting
            raise HTTPException(
                504,
                f"the query took longer than {timeout:g}s; send fewer documents per "
                "request (or start the service with a larger --timeout)",
            ) from None

    def check_batch(self, n: int, what: str) -> None:
        """413 when a request holds more documents (or ids) than ``--max-batch``."""
        if n > self.limits.max_batch:
            raise HTTPException(
                413,
                f"{n:,} {what} in one request; the limit is {self.limits.max_batch:,} "
                "(--max-batch); split them into smaller batches",
            )
