"""Texts -> one batch's ``SignedBatch``, signed in slices whose working arrays fit a budget.

A batch is sized by its text bytes, but signing it makes arrays that also grow with its
document count: a uint64 MinHash sketch of t values per document (1.8 KB at the default
t=228), next to one shingle fingerprint per token (8 bytes per character under character
shingles). 4 MB of one-line texts is about 31,000 documents and a 57 MB sketch; 4 MB of long
documents is a few hundred and a sketch under 1 MB. Signing slice by slice keeps what one
batch holds at once near ``SIGN_WORK_BYTES`` whatever the document lengths. Documents are
signed independently, so the rows are the same for any slicing.

The engine, the index and the Dask scan all sign through ``sign_texts``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from .blocks import SignedBatch
from .methods import Method
from .params import DedupParams
from .planner import sketch_for
from .text import Utf8Texts
from .textbatch import TextBatch
from .verify import Verifier

#: Bytes of working arrays (fingerprints, sketches) one signing call may build at once.
SIGN_WORK_BYTES = 16 << 20
#: Working bytes per text byte: at most one 8-byte fingerprint per character.
PER_TEXT_BYTE = 8


def work_slices(
    texts: Sequence[str], per_byte: int, per_doc: int, budget: int
) -> list[tuple[int, int]]:
    """[lo, hi) ranges covering ``texts`` in order, each costing at most ``budget`` at
    ``per_byte`` a text byte (characters for ``str`` texts) and ``per_doc`` a document, or
    one document when a single one costs more. No texts: one empty range."""
    n = len(texts)
    if isinstance(texts, Utf8Texts):
        sizes = np.diff(texts.offsets)
    else:
        sizes = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    work = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes * per_byte + per_doc, out=work[1:])
    if work[-1] <= budget:
        return [(0, n)]
    bounds = [0]
    while bounds[-1] < n:
        lo = bounds[-1]
        hi = int(np.searchsorted(work, work[lo] + budget, side="right")) - 1
        bounds.append(max(hi, lo + 1))
    return list(itertools.pairwise(bounds))


def per_doc_bytes(params: DedupParams) -> int:
    """Working bytes a document adds to a signing call: its uint64 sketch (and its evidence)."""
    return 10 * sketch_for(params).t


def sign_texts(
    params: DedupParams, method: Method, verifier: Verifier, texts: Sequence[str]
) -> SignedBatch:
    """Content hashes, lengths, method signatures and verification evidence of ``texts`` (as
    ``check_texts`` returns them), ``SIGN_WORK_BYTES`` of working arrays at a time (the same
    rows as in one call)."""
    ranges = work_slices(texts, PER_TEXT_BYTE, per_doc_bytes(params), SIGN_WORK_BYTES)
    parts = [_signed(params, method, verifier, texts[lo:hi]) for lo, hi in ranges]
    return parts[0] if len(parts) == 1 else SignedBatch.concat(parts)


def _signed(
    params: DedupParams, method: Method, verifier: Verifier, texts: Sequence[str]
) -> SignedBatch:
    batch = TextBatch(texts, params.shingle)
    return SignedBatch(
        canonical=batch.canonical,
        lengths=batch.lengths,
        signatures=method.signatures(batch),
        evidence=verifier.evidence(batch),
    )
