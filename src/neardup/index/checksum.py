"""Stored records -> CRC-32 checksums: a document row, a postings run with its slot, a segment row.

CRC-32 (``zlib.crc32``: C, standard library) runs at about 1 GB/s, so a document row (a few
KB with its text) costs a few microseconds and a 768-byte run under one, little beside signing
the text, and every record read can be verified (BLAKE2b costs 2-3 times more; xxHash is not a
dependency). It finds every change of up to 32 consecutive bits and misses other damage with
probability 2**-32 per record: it guards against damaged disks, copies and hand edits, not
against records forged on purpose. A row's integers and the length of each field (-1: NULL)
enter first, then the fields' bytes, so a NULL and an empty value, or bytes moved between
fields, differ; a field of the wrong type (a text rewritten as a blob) gives -1, which no
stored checksum equals.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import Any

#: doc, content hash, number of keys, then the byte length of sig, ev and the six texts.
_HEAD = struct.Struct("<3q8q")
_SEGMENT = struct.Struct("<4q")
#: What a record whose fields have the wrong types checksums to (stored ones are >= 0).
DAMAGED = -1

#: The columns of a document row its checksum covers, in order (then ``crc`` itself).
DOC_FIELDS = [
    "doc", "id", "hash", "nkeys", "sig", "ev", "text", "meta", "first_seen", "last_seen", "gone"
]  # fmt: skip
#: Those columns and ``crc``, as a query selects them from ``docs d``.
DOC_COLUMNS = ", ".join(f"d.{c}" for c in [*DOC_FIELDS, "crc"])
#: A document row's insert: its columns, then ``crc``. A text given as a view of its UTF-8
#: bytes is bound as a blob and cast to text byte for byte (the index's encoding is UTF-8).
INSERT_DOC = (
    f"INSERT INTO docs ({', '.join(DOC_FIELDS)}, crc) VALUES "
    f"({', '.join('CAST(? AS TEXT)' if c == 'text' else '?' for c in DOC_FIELDS)}, ?)"
)


def doc_crc(row: Sequence[Any]) -> int:
    """The checksum of a document row (doc, id, hash, nkeys, sig, ev, text, meta, first_seen,
    last_seen, gone), texts as the UTF-8 SQLite holds (invalid bytes included; a text to store
    may be a view of its UTF-8 bytes, ``Utf8Texts.views``). Unrolled: it runs once per document
    added, so per-field calls would cost as much as the CRC itself."""
    try:
        doc, id_, hash_, nkeys, sig, ev, text, meta, first, last, gone = row
        i = id_.encode("utf-8", "surrogateescape")
        t = (
            text
            if text is None or isinstance(text, memoryview)
            else text.encode("utf-8", "surrogateescape")
        )
        m = None if meta is None else meta.encode("utf-8", "surrogateescape")
        f = None if first is None else first.encode("utf-8", "surrogateescape")
        la = None if last is None else last.encode("utf-8", "surrogateescape")
        g = None if gone is None else gone.encode("utf-8", "surrogateescape")
        crc = zlib.crc32(
            _HEAD.pack(
                doc,
                hash_,
                nkeys,
                len(sig),
                len(ev),
                len(i),
                -1 if t is None else len(t),
                -1 if m is None else len(m),
                -1 if f is None else len(f),
                -1 if la is None else len(la),
                -1 if g is None else len(g),
            )
        )
        crc = zlib.crc32(i, zlib.crc32(ev, zlib.crc32(sig, crc)))
        for x in (t, m, f, la, g):
            if x:
                crc = zlib.crc32(x, crc)
        return crc
    except (AttributeError, TypeError, ValueError, struct.error):
        return DAMAGED


def run_seed(slot: int) -> int:
    """The CRC's starting value for the run at ``slot`` (segment and run folded into 32 bits),
    so a run's bytes under another slot fail."""
    return (slot ^ (slot >> 32)) & 0xFFFFFFFF


def run_crc(slot: Any, blob: Any) -> int:
    """The checksum of a postings run: its bytes, from its slot's seed."""
    try:
        return zlib.crc32(blob, run_seed(slot))
    except TypeError:
        return DAMAGED


def segment_crc(seg: Any, tier: Any, bits: Any, postings: Any) -> int:
    """The checksum of a segment's row (number, size tier, key bits, postings held)."""
    try:
        return zlib.crc32(_SEGMENT.pack(seg, tier, bits, postings))
    except struct.error:
        return DAMAGED


def stored_text(raw: bytes) -> str:
    """SQLite text as Python text: invalid UTF-8 (a damaged record) is kept, as surrogates, so
    its checksum fails instead of the read."""
    return raw.decode("utf-8", "surrogateescape")
