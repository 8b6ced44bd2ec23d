"""Every document's text written once to a temporary file and read back by position.

Formats without an index of their records (Parquet, CSV, text, HTML and WARC files) cannot read
one record again: ``Source.texts_at`` used to run pass 1 again for every call, and hybrid
verification calls it once per chunk of borderline documents (dozens of times on a corpus with
many near-copies: 98 s instead of 5 s for PyPI's summaries as Parquet). Every text is now
written to a spool once, as pass 1 reads it when the source is told texts will be read again
(``Source.keep_texts``), else by a pass 1 more at the first call; calls read their texts from it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import weakref
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from ..errors import InputError
from ..text import Utf8Texts, encode_batch
from ._targets import open_guarded


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class TextSpool:
    """Texts appended in position order (``add``), then ``seal``; ``texts(positions)`` reads
    them back, from any number of threads. The file is removed by ``close`` or when the spool
    is collected."""

    def __init__(self, folder: str | None = None) -> None:
        fd, self.path = tempfile.mkstemp(prefix="neardup-texts-", suffix=".bin", dir=folder)
        self._finalizer = weakref.finalize(self, _unlink, self.path)
        hint = "; TMPDIR chooses its folder" if folder is None else ""
        label = f"the copy of the texts kept for exact re-checks ({self.path}{hint})"
        self._out: BinaryIO | None = open_guarded(fd, label)  # a full disk: one line naming it
        self._lengths: list[npt.NDArray[np.int64]] = []
        self._offsets: npt.NDArray[np.int64] | None = None  # by position, once sealed
        self._fd: int | None = None

    def add(self, texts: Sequence[str]) -> None:
        """Append the next documents' texts (UTF-8, lone surrogates kept, as the kernels read)."""
        buf, offsets = encode_batch(texts)
        self._writer().write(buf[int(offsets[0]) : int(offsets[-1])].data)
        self._lengths.append(np.diff(offsets))

    def seal(self) -> None:
        """Every text is written: open the file for reading."""
        self._writer().close()
        self._out = None
        offsets = np.zeros(sum(len(n) for n in self._lengths) + 1, dtype=np.int64)
        if self._lengths:
            np.cumsum(np.concatenate(self._lengths), out=offsets[1:])
        self._lengths = []
        self._offsets = offsets
        self._fd = os.open(self.path, os.O_RDONLY)

    def __len__(self) -> int:
        return 0 if self._offsets is None else len(self._offsets) - 1

    def texts(self, positions: npt.NDArray[np.int64]) -> list[str]:
        """The texts of documents ``positions``, in that order, read by position (``pread``:
        any thread; only the bytes asked for are read, so the process holds no more of the
        spool than those texts, where a mapping would fault in its neighbours too)."""
        if self._offsets is None or self._fd is None:
            raise RuntimeError("the text spool is read only once sealed")
        rows = np.asarray(positions, dtype=np.int64)
        if not len(rows):
            return []
        starts, ends = self._offsets[rows], self._offsets[rows + 1]
        within = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(ends - starts, out=within[1:])
        buf = np.empty(int(within[-1]), dtype=np.uint8)
        # Runs of texts adjacent in the file (and in the order asked) are read in one call.
        cut = np.r_[0, np.flatnonzero(starts[1:] != ends[:-1]) + 1, len(rows)]
        view = buf.data
        for a, b in zip(cut[:-1].tolist(), cut[1:].tolist(), strict=True):
            at, lo, hi = int(starts[a]), int(within[a]), int(within[b])
            while lo < hi:
                n = os.preadv(self._fd, [view[lo:hi]], at)
                if n <= 0:
                    raise InputError(
                        f"the copy of the texts kept for exact re-checks "
                        f"({self.path}) was cut short: do not remove it while "
                        "neardup runs"
                    )
                lo, at = lo + n, at + n
        return list(Utf8Texts(buf, within))

    def close(self) -> None:
        """Remove the file now."""
        if self._out is not None:
            self._writer().close()
            self._out = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._offsets = None
        self._finalizer()

    def _writer(self) -> BinaryIO:
        assert self._out is not None, "the text spool is sealed"
        return self._out
