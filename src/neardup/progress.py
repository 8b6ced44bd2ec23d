"""Progress of a long run on stderr: one line naming the stage the run is in, with a bar,
percentage and ETA while the input is read, and the time spent in each later stage.

Reading counts input bytes (the measure both the file size and the reader report), and shows
documents read so far. The later stages (candidates and verification, writing) have no
measure of their own here, so their line shows the stage's name and its elapsed time,
refreshed twice a second. Off a terminal it stays silent unless asked for.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

#: How often (seconds) a stage without a measure refreshes its elapsed time.
TICK = 0.5


class Progress:
    """A progress line: ``update(docs, nbytes)`` with running totals while reading, then
    ``stage(name)`` for each later stage; ``close()`` removes it."""

    def __init__(
        self,
        enabled: bool,
        total_bytes: int | None = None,
        stream: TextIO | None = None,
        desc: str = "reading",
    ) -> None:
        self.enabled = enabled
        self._stream = stream or sys.stderr
        self._bar: Any = None
        self._seen = 0
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total_bytes or None,
                unit="B",
                unit_scale=True,
                unit_divisor=1000,
                desc=desc,
                file=self._stream,
                leave=False,
                dynamic_ncols=True,
                mininterval=0.2,
            )

    def update(self, docs: int, nbytes: int) -> None:
        """Running totals: documents and bytes read so far."""
        if self._bar is None:
            return
        step = nbytes - self._seen
        if step > 0:
            self._bar.update(step)
            self._seen = nbytes
        self._bar.set_postfix_str(f"{docs:,} docs", refresh=False)

    def stage(self, name: str) -> None:
        """The run moved on to stage ``name`` (e.g. "candidates and verification"): the line
        shows it and the time spent in it so far."""
        if not self.enabled:
            return
        self._end()
        from tqdm import tqdm

        self._bar = tqdm(
            desc=name,
            bar_format="{desc}: {elapsed}",
            file=self._stream,
            leave=False,
            dynamic_ncols=True,
        )
        self._stop = threading.Event()
        self._ticker = threading.Thread(
            target=self._tick, args=(self._bar, self._stop), name="neardup-progress", daemon=True
        )
        self._ticker.start()

    @staticmethod
    def _tick(bar: Any, stop: threading.Event) -> None:
        """Refresh ``bar`` (its elapsed time) until ``stop`` is set."""
        while not stop.wait(TICK):
            bar.refresh()

    def _end(self) -> None:
        """Remove the current line and stop its ticker."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def close(self) -> None:
        """Remove the line (the summary follows on a clean line)."""
        self._end()
