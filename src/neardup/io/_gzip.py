"""gzip through ISA-L (``isal``): the format gzip(1) and zlib read and write, compressed 10-18
times and decompressed about twice as fast as zlib's level 6 on JSONL text, for 4-16% more bytes.

zlib's level 6 wrote 12-38 MB/s of JSONL on this project's machine: 1 GB of long documents as a
gzip input spent 76 of its 88 s writing the kept file. Every gzip input (JSONL files and
streams) and output (kept files, clusters and pairs, a cluster's part files) goes through here.
"""

from __future__ import annotations

import gzip
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


def gzip_reader(raw: BinaryIO) -> BinaryIO:
    """``raw``'s bytes decompressed (every member of a multi-member file)."""
    return cast(BinaryIO, igzip.IGzipFile(fileobj=raw, mode="rb"))


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
    return isinstance(handle, gzip.GzipFile)
