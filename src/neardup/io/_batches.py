"""Pass-1 documents in batches: ``DocBatch``, and the joining of parsed blocks (``Pending``)
and single records (``Records``) into batches of a size in documents and in bytes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..text import Utf8Texts


@dataclass(frozen=True, slots=True)
class DocBatch:
    """Documents of one pass-1 batch.

    ``positions[i]`` is the global 0-based index of document i (consecutive across batches);
    ``nbytes`` is the input size these documents came from (JSONL line bytes, text-file bytes,
    Parquet text bytes), for throughput reports. ``keys`` is None unless the source was opened
    with a ``key_field``; then ``keys[i]`` is document i's key (see ``open_source``): an int,
    float, str, bool or numpy.datetime64 of one kind for the whole run, or None when missing.
    """

    ids: Sequence[str]
    texts: Sequence[str]
    positions: npt.NDArray[np.int64]
    nbytes: int
    keys: list[object] | None = None

    def __len__(self) -> int:
        return len(self.ids)


#: The largest block the JSONL parser reads at a time when batches are sized in bytes.
CHUNK_MAX = 64 << 20


class Pending:
    """Parsed blocks not yet handed on, and the batches they make: a block of at least half
    ``batch_bytes`` (or ``batch_size`` documents) goes on as it is, sliced (views) by the
    count; smaller ones wait to be joined with the next, across files."""

    def __init__(self, batch_size: int, batch_bytes: int, pos: int = 0) -> None:
        self.batch_size = batch_size
        self.batch_bytes = batch_bytes
        #: Bytes the JSONL parser reads at a time: the batch size in bytes, when one is given.
        self.chunk = min(batch_bytes, CHUNK_MAX) if batch_bytes < 1 << 62 else None
        self.pos = pos  # global position of the first pending document
        self.ids: list[Utf8Texts] = []
        self.texts: list[Utf8Texts] = []
        self.sizes: list[npt.NDArray[np.int64]] = []
        self.held = self.held_bytes = 0

    def add(
        self, ids: Utf8Texts, texts: Utf8Texts, sizes: npt.NDArray[np.int64]
    ) -> Iterator[DocBatch]:
        self.ids.append(ids)
        self.texts.append(texts)
        self.sizes.append(sizes)
        self.held += len(ids)
        self.held_bytes += int(sizes.sum())
        if self.held >= self.batch_size or self.held_bytes >= self.batch_bytes // 2:
            yield from self.flush()

    def flush(self) -> Iterator[DocBatch]:
        """Every pending document, in batches of at most ``batch_size``."""
        if not self.held:
            return
        if len(self.ids) == 1:
            ids, texts, size = self.ids[0], self.texts[0], self.sizes[0]
        else:
            ids, texts = Utf8Texts.concat(self.ids), Utf8Texts.concat(self.texts)
            size = np.concatenate(self.sizes)
        self.ids, self.texts, self.sizes = [], [], []
        self.held = self.held_bytes = 0
        for cut in range(0, len(ids), self.batch_size):
            end = min(cut + self.batch_size, len(ids))
            yield DocBatch(
                ids[cut:end], texts[cut:end], np.arange(self.pos + cut, self.pos + end),
                int(size[cut:end].sum()),
            )  # fmt: skip
        self.pos += len(ids)


class Records:
    """Documents read one record at a time, not yet handed on: ids, texts, keys (None without a
    key field) and their input bytes; ``take`` makes them a batch and starts anew."""

    def __init__(self, with_keys: bool) -> None:
        self.with_keys = with_keys
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.keys: list[object] | None = [] if with_keys else None
        self.nbytes = 0

    def take(self, end: int) -> DocBatch:
        """The held documents as a batch whose last position is ``end - 1``."""
        n = len(self.ids)
        batch = DocBatch(self.ids, self.texts, np.arange(end - n, end), self.nbytes, self.keys)
        self.ids, self.texts, self.nbytes = [], [], 0
        self.keys = [] if self.with_keys else None
        return batch
