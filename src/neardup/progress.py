"""Progress of a long run on stderr: a tqdm bar with percentage and ETA when the size is known.

The bar counts input bytes (the measure both the file size and the reader report), and shows
documents read so far. Off a terminal it stays silent unless asked for.
"""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    """A progress bar over input bytes; ``update(docs, nbytes)`` with running totals."""

    def __init__(
        self,
        enabled: bool,
        total_bytes: int | None = None,
        stream: TextIO | None = None,
        desc: str = "reading",
    ) -> None:
        self.enabled = enabled
        self._bar = None
        self._seen = 0
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total_bytes or None,
                unit="B",
                unit_scale=True,
                unit_divisor=1000,
                desc=desc,
                file=stream or sys.stderr,
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

    def close(self) -> None:
        """Remove the bar (the summary follows on a clean line)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
