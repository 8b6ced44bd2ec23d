"""A thread with its own SQLite connection copying committed pages from the WAL into the file,
so the writer signs and writes its next batch meanwhile."""

from __future__ import annotations

import contextlib
import sqlite3
import threading


class Checkpointer:
    """A thread with its own connection running passive WAL checkpoints when poked."""

    def __init__(self, uri: str, timeout: float) -> None:
        self._uri = uri
        self._timeout = timeout
        self._wake = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._run, name="neardup-checkpoint", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._done = True
        self._wake.set()
        self._thread.join()

    def _run(self) -> None:
        db = sqlite3.connect(self._uri, uri=True, isolation_level=None, timeout=self._timeout)
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._done:
                    return
                # busy or closing: the next poke, or the last connection's close, catches up
                with contextlib.suppress(sqlite3.Error):
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            db.close()
