"""Documents -> paragraphs (or lines) with their separators; kept paragraphs -> a rewritten text.

The rule (``_kernels/paragraphs.py``): a line ends at a newline or a CR LF (a lone CR is
text); a line holding only ASCII whitespace (space, tab, CR, VT, FF) is blank; a paragraph is a
maximal run of non-blank lines, from the first character of its first line to the last
character of its last line (its final line ending excluded). In ``line`` mode every non-blank
line is a unit of its own. Everything outside the units (line endings, blank lines, the text
before the first unit and after the last) is a separator, kept byte for byte: a document is
rewritten as its leading text, then each kept unit followed by the separator that followed it,
the last kept unit followed by the document's trailing text instead. With every unit kept that
is the document itself.

Units are held as byte spans of the documents' UTF-8 buffer (``Units``); their texts are
gathered into one new buffer (``Utf8Texts``) for the engine, never a Python string each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from ._kernels.paragraphs import split_units
from ._kernels.ranges import gather_ranges
from ._types import IntArray
from .errors import ParamError, ParamTypeError
from .params import TokenMode, _choice
from .text import Utf8Texts, canonical_tokens, encode_batch, tables

Unit = Literal["paragraph", "line"]
UNITS: tuple[Unit, ...] = ("paragraph", "line")

_BLANK = frozenset(" \t\r\v\f")


def check_unit(unit: str) -> Unit:
    """``unit`` if it is "paragraph" or "line", else ParamError."""
    if unit not in UNITS:
        raise ParamError(f"unit must be 'paragraph' or 'line' (or 'document'), got {unit!r}")
    return unit


@dataclass(frozen=True)
class Units:
    """The units of a batch of documents: ``counts[i]`` units of document i, in order; unit j
    is ``buf[starts[j]:ends[j]]`` and has ``tokens[j]`` canonical tokens."""

    buf: npt.NDArray[np.uint8]
    counts: IntArray
    starts: IntArray
    ends: IntArray
    tokens: IntArray

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def texts(self, rows: IntArray | None = None) -> Utf8Texts:
        """The texts of units ``rows`` (sorted indices; all when None) in one new buffer."""
        s = self.starts if rows is None else self.starts[rows]
        e = self.ends if rows is None else self.ends[rows]
        offsets = np.zeros(len(s) + 1, dtype=np.int64)
        np.cumsum(e - s, out=offsets[1:])
        out = np.empty(int(offsets[-1]), dtype=np.uint8)
        gather_ranges(self.buf, s, e, out)
        return Utf8Texts(out, offsets)


def split(texts: Sequence[str], unit: Unit = "paragraph", tokens: TokenMode = "word") -> Units:
    """The paragraphs (or lines) of each text, with their canonical token counts."""
    check_unit(unit)
    _choice("tokens", tokens, ("word", "char"))  # as ShingleParams: "chars" counted words
    buf, offsets = encode_batch(texts)
    is_word, _ = tables()
    counts, starts, ends, ntokens = split_units(
        buf, offsets, is_word, unit == "line", tokens == "char"
    )
    return Units(buf, counts, starts, ends, ntokens)


def rewrite(text: str, removed: npt.ArrayLike, unit: Unit = "paragraph") -> str:
    """``text`` without the units flagged in ``removed`` (one flag per unit of ``text``), the
    separators kept as the module docstring says."""
    check_unit(unit)
    if not isinstance(text, str):
        raise ParamTypeError(
            f"text must be a str (decode bytes first: data.decode('utf-8')), got "
            f"{type(text).__name__}"
        )
    data = text.encode("utf-8", "surrogatepass")
    is_word, _ = tables()
    bounds = np.array([0, len(data)], dtype=np.int64)  # one call, no batch encoding
    _, starts_a, ends_a, _ = split_units(
        np.frombuffer(data, dtype=np.uint8), bounds, is_word, unit == "line", False
    )
    flags = _flags(removed, len(starts_a))
    if not flags.any():
        return text
    starts, ends = starts_a.tolist(), ends_a.tolist()
    pieces = [data[: starts[0]]]
    kept = np.flatnonzero(~flags).tolist()
    for i, j in enumerate(kept):
        pieces.append(data[starts[j] : ends[j]])
        if i + 1 < len(kept):  # the separator that followed it
            pieces.append(data[ends[j] : starts[j + 1]])
    pieces.append(data[ends[-1] :])
    return b"".join(pieces).decode("utf-8", "surrogatepass")


def _flags(removed: npt.ArrayLike, n: int) -> npt.NDArray[np.bool_]:
    """``removed`` as one bool per unit (``n``); ParamError for anything else: unit numbers,
    0/1 or strings were read as flags (``[1, 2, 0]`` removed two units, strings every one)."""
    wanted = f"removed must be one True/False per unit ({n}) of the text"
    if removed is None:
        raise ParamError(f"{wanted}, got None")
    try:
        flags = np.asarray(removed)
    except (TypeError, ValueError) as exc:  # a ragged list
        raise ParamError(f"{wanted}, got {type(removed).__name__} ({exc})") from None
    if flags.ndim != 1:
        shape = f"shape {flags.shape}" if flags.ndim else type(removed).__name__
        raise ParamError(f"{wanted}, got {shape}")
    if flags.size and flags.dtype != np.bool_:
        numbers = np.issubdtype(flags.dtype, np.integer)
        hint = f"; for unit numbers pass np.isin(np.arange({n}), numbers)" if numbers else ""
        raise ParamError(f"{wanted}, got {flags.dtype} {np.array2string(flags, threshold=8)}{hint}")
    if flags.size != n:
        raise ParamError(f"{wanted}, got {flags.size} flag{'s' * (flags.size != 1)}")
    return flags.astype(np.bool_, copy=False)


def split_reference(
    text: str, unit: Unit = "paragraph", tokens: TokenMode = "word"
) -> list[tuple[int, int, int]]:
    """Reference of ``split`` on one text: (start, end, tokens) per unit, in characters."""
    spans: list[tuple[int, int]] = []
    open_unit = False
    start = 0
    lines = text.split("\n")
    for k, line in enumerate(lines):
        end = start + len(line)
        stop = end - (k + 1 < len(lines) and line.endswith("\r"))  # CR LF ends it as LF does
        if all(c in _BLANK for c in line):
            open_unit = False
        elif open_unit and unit == "paragraph":
            spans[-1] = (spans[-1][0], stop)
        else:
            spans.append((start, stop))
            open_unit = True
        start = end + 1
    return [(a, b, len(canonical_tokens(text[a:b], tokens))) for a, b in spans]
