"""Every document's text written once to a temporary file and read back by position.

Formats without an index of their records (Parquet, CSV, text, HTML and WARC files) cannot read
one record again: ``Source.texts_at`` used to run pass 1 again for every call, and hybrid
verification calls it once per chunk of borderline documents (dozens of times on a corpus with
many near-copies: 98 s instead of 5 s for PyPI's summaries as Parquet). The first call now runs
pass 1 once more, writing every text to a spool; later calls gather their texts from it.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
import weakref
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

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
        self._texts: Utf8Texts | None = None
        self._map: mmap.mmap | None = None

    def add(self, texts: Sequence[str]) -> None:
        """Append the next documents' texts (UTF-8, lone surrogates kept, as the kernels read)."""
        buf, offsets = encode_batch(texts)
        self._writer().write(buf[int(offsets[0]) : int(offsets[-1])].data)
        self._lengths.append(np.diff(offsets))

    def seal(self) -> None:
        """Every text is written: map the file for reading."""
        self._writer().close()
        self._out = None
        offsets = np.zeros(sum(len(n) for n in self._lengths) + 1, dtype=np.int64)
        if self._lengths:
            np.cumsum(np.concatenate(self._lengths), out=offsets[1:])
        self._lengths = []
        if offsets[-1]:
            with open(self.path, "rb") as fh:
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            buf = np.frombuffer(self._map, dtype=np.uint8)
        else:
            buf = np.zeros(0, dtype=np.uint8)
        self._texts = Utf8Texts(buf, offsets)

    def __len__(self) -> int:
        return 0 if self._texts is None else len(self._texts)

    def texts(self, positions: npt.NDArray[np.int64]) -> list[str]:
        """The texts of documents ``positions``, in that order (their pages then leave this
        process's resident set: the spool never holds more than the texts asked for)."""
        if self._texts is None:
            raise RuntimeError("the text spool is read only once sealed")
        got = list(self._texts.take(positions))
        if self._map is not None:
            self._map.madvise(mmap.MADV_DONTNEED)
        return got

    def close(self) -> None:
        """Remove the file now."""
        if self._out is not None:
            self._writer().close()
            self._out = None
        self._texts = self._map = None  # the mapping goes with its last reader
        self._finalizer()

    def _writer(self) -> BinaryIO:
        assert self._out is not None, "the text spool is sealed"
        return self._out
