"""gzip through ISA-L (``isal``): the format gzip(1) and zlib read and write, compressed 10-18
times and decompressed about twice as fast as zlib's level 6 on JSONL text, for 4-16% more bytes.

zlib's level 6 wrote 12-38 MB/s of JSONL on this project's machine: 1 GB of long documents as a
gzip input spent 76 of its 88 s writing the kept file. Every gzip input (JSONL files and
streams) and output (kept files, clusters and pairs, a cluster's part files) goes through here.
"""

from __future__ import annotations

import gzip
import io
import zlib
from typing import BinaryIO, cast

from isal import igzip, isal_zlib

#: ISA-L's level (0-3) of compressed outputs. Level 2 on the first 60 MB of three corpora
#: (MB/s and compressed share; zlib's level 6 in brackets): long synthetic documents 224 (12)
#: and 0.515 (0.493), 20news 327 (21) and 0.428 (0.389), PyPI's summaries 368 (38) and 0.297
#: (0.256). Level 3 is as small within 2% and slower; 0 and 1 are 3-8% larger.
GZIP_LEVEL = 2

#: What reading a damaged gzip stream raises besides OSError and EOFError (zlib's and ISA-L's).
GZIP_ERRORS: tuple[type[Exception], ...] = (zlib.error, cast(type[Exception], isal_zlib.error))


#: Compressed bytes read from the file at a time.
READ_SIZE = 1 << 19

#: Compressed bytes given to the decompressor at a time: an error raised in a call loses what
#: that call decompressed, so a damaged stream loses no more than this much input's lines
#: before the error (Python's own gzip reader reads 8 KB at a time).
FEED_SIZE = 1 << 13

_MAGIC = b"\x1f\x8b"


def gzip_reader(raw: BinaryIO, close_raw: bool = False) -> BinaryIO:
    """``raw``'s bytes decompressed (every member of a multi-member file); ``close_raw``:
    closing the reader closes ``raw`` too (a file opened for it, not a stream)."""
    return cast(BinaryIO, io.BufferedReader(_Members(raw, close_raw), READ_SIZE))


class _Members(io.RawIOBase):
    """gzip members decompressed by ISA-L, what they hold given out before an error is raised:
    a file cut short, damaged or with bytes after its last member reads as far as gzip(1) and
    Python's gzip read it. (ISA-L's own reader, ``igzip.IGzipFile``, decompresses ahead and
    raised with what it had decoded: a file with trailing garbage lost its last lines.) Each
    member's CRC and size are checked at its end, as zlib does."""

    def __init__(self, raw: BinaryIO, close_raw: bool) -> None:
        self._raw = raw
        self._close_raw = close_raw
        self._inflate = isal_zlib.decompressobj(wbits=31)
        self._buf = b""  # the last read from ``raw``
        self._at = 0  # bytes of ``_buf`` given to the decompressor
        self._tail = b""  # bytes to give it before ``_buf``'s next ones
        self._pos = 0  # decompressed bytes given out

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        """Seeks forward by decompressing, back by starting again: only in a file."""
        return bool(self._raw.seekable())

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """To decompressed byte ``offset`` (from the start, or the position with SEEK_CUR)."""
        if whence == io.SEEK_CUR:
            offset += self._pos
        elif whence != io.SEEK_SET:
            raise io.UnsupportedOperation("a gzip file seeks from its start or position only")
        if offset < self._pos:
            self._raw.seek(0)
            self._inflate = isal_zlib.decompressobj(wbits=31)
            self._buf, self._at, self._tail, self._pos = b"", 0, b"", 0
        while self._pos < offset and (out := self._decoded(min(offset - self._pos, READ_SIZE))):
            self._pos += len(out)
        return self._pos

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        """Up to ``len(buffer)`` decompressed bytes; 0 at the end of the last member."""
        out = self._decoded(len(buffer)) if len(buffer) else b""
        buffer[: len(out)] = out
        self._pos += len(out)
        return len(out)

    def readall(self) -> bytes:
        """Every byte left (in the decompressor's pieces, not ``RawIOBase``'s 8 KB reads)."""
        parts = []
        while out := self._decoded(0):
            parts.append(out)
            self._pos += len(out)
        return b"".join(parts)

    def _decoded(self, size: int) -> bytes:
        """The next decompressed bytes, at most ``size`` (0: no bound); b"" after the last
        member."""
        while True:
            if self._inflate.eof and not self._next_member():
                return b""
            data = self._input()
            out = self._inflate.decompress(data, size)  # b"" in: what it holds back comes out
            ended = self._inflate.eof
            self._tail = self._inflate.unused_data if ended else self._inflate.unconsumed_tail
            if out:
                return out
            if not data and not ended:
                raise EOFError("Compressed file ended before the end-of-stream marker was reached")

    def _input(self) -> bytes:
        """The next compressed bytes for the decompressor (at most ``FEED_SIZE`` of a read);
        b"" at the end of the file."""
        if self._tail:
            data, self._tail = self._tail, b""
            return data
        if self._at >= len(self._buf):
            self._buf, self._at = self._raw.read(READ_SIZE), 0
        data = self._buf[self._at : self._at + FEED_SIZE]
        self._at += len(data)
        return data

    def _next_member(self) -> bool:
        """Start the member after the one that ended; False at the end of the file (zero
        bytes after the last member are padding, as gzip(1) reads them)."""
        rest = b""
        while len(rest) < 2 and (more := self._input()):
            rest = (rest + more).lstrip(b"\0")
        if not rest:
            return False
        if rest[:2] != _MAGIC:
            raise gzip.BadGzipFile(f"Not a gzipped file ({rest[:2]!r})")
        self._inflate = isal_zlib.decompressobj(wbits=31)
        self._tail = rest
        return True

    def close(self) -> None:
        if not self.closed and self._close_raw:
            self._raw.close()
        super().close()


def gzip_writer(raw: BinaryIO) -> BinaryIO:
    """A gzip stream into ``raw``: no file name and no time in the header, so that the same
    content gives the same bytes."""
    return cast(
        BinaryIO,
        igzip.IGzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=GZIP_LEVEL),
    )


def gzip_bytes(data: bytes) -> bytes:
    """``data`` as one gzip member (no name, no time: the same bytes every run)."""
    return bytes(igzip.compress(data, GZIP_LEVEL, mtime=0))


def decompresses(handle: object) -> bool:
    """Whether ``handle`` is a gzip reader (spans then count decompressed bytes)."""
    return isinstance(getattr(handle, "raw", None), _Members)
