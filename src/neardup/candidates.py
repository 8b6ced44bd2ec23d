"""Keys uint64[n, k] -> candidate pairs (a < b) sharing >= r keys, by sorting, never all-pairs.

Broder's phases 2-3: expand every document's keys into (key, document) records, sort them, read
off runs of equal keys ("buckets"), emit the document pairs inside each bucket, then sort the
pair codes ``a*n + b`` and run-length count how many keys each pair shares. Work and memory are
proportional to the number of records plus the pairs emitted, not to n².

Keys are compared only within their column: key j of one document only meets key j of another
(each column is sorted on its own). Broder features already hash their band number in, so this
costs nothing for them and keeps other keys (e.g. permuted-table keys) honest too.

Big buckets: a key shared by very many documents (boilerplate, templates) would make the bucket
emit a quadratic number of pairs. Buckets larger than ``max_bucket`` are linked by a chain
instead (consecutive members in document order; with ``identical`` group ids, consecutive members
of the same group only). A chain keeps the bucket connected for clustering with len-1 pairs
instead of len·(len-1)/2, but the pairs are no longer all present: counts from such buckets are
lower bounds. The stats say how often this happened.

Keep-aware removal needs more than connectivity: every big-bucket member must be compared with
the bucket's kept documents. With ``list_big_buckets=True`` the result also lists each big
bucket's members (CSR: ``big_members[big_offsets[c]:big_offsets[c+1]]``, documents ascending,
identical memberships from several columns listed once) for ``neardup.removal.
resolve_big_buckets``, which checks them in a bounded number of comparisons per member. The
pairs, counts and stats are the same with or without the listing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ._kernels import _jit
from ._kernels import candidates as _k
from ._kernels import order as _order
from ._kernels.hashing import EMPTY
from ._prefetch import ordered_map
from ._types import IntArray
from .errors import InputError, ParamError

#: Default bucket size above which a bucket is chained instead of emitting all its pairs.
DEFAULT_MAX_BUCKET = 200


@dataclass(frozen=True)
class CandidateStats:
    """What candidate generation did.

    raw_pairs: pairs emitted from buckets before merging repeats (one per shared key).
    pairs: distinct pairs kept (sharing >= r keys).
    big_buckets: buckets larger than max_bucket, handled by chaining.
    big_bucket_slots: sum of their sizes; big_bucket_docs: distinct documents in them.
    big_bucket_pairs: pairs emitted for them; big_bucket_quadratic_pairs: pairs all-pairs
    emission would have produced for them instead.
    largest_bucket: size of the largest bucket seen.
    """

    n_docs: int
    n_keys: int
    raw_pairs: int
    pairs: int
    big_buckets: int
    big_bucket_slots: int
    big_bucket_docs: int
    big_bucket_pairs: int
    big_bucket_quadratic_pairs: int
    largest_bucket: int


def _no_members() -> npt.NDArray[np.int64]:
    return np.zeros(0, dtype=np.int64)


def _no_offsets() -> npt.NDArray[np.int64]:
    return np.zeros(1, dtype=np.int64)


@dataclass(frozen=True)
class CandidateResult:
    """Candidate pairs: a < b (int64), sorted by a then b; count = keys shared (int32).

    big_members, big_offsets: the buckets larger than max_bucket as CSR (bucket c is
    ``big_members[big_offsets[c]:big_offsets[c+1]]``, documents ascending); filled only when
    asked for with ``list_big_buckets=True``, else empty (offsets ``[0]``).
    """

    a: npt.NDArray[np.int64]
    b: npt.NDArray[np.int64]
    count: npt.NDArray[np.int32]
    stats: CandidateStats
    big_members: npt.NDArray[np.int64] = field(default_factory=_no_members)
    big_offsets: npt.NDArray[np.int64] = field(default_factory=_no_offsets)

    def __len__(self) -> int:
        return int(self.a.shape[0])


def _check_features(keys: npt.ArrayLike, empty: npt.ArrayLike | None) -> npt.NDArray[np.uint64]:
    arr = np.asarray(keys)
    if arr.ndim != 2:
        raise InputError(f"keys must be a 2-D array (documents x keys), got shape {arr.shape}")
    if arr.dtype != np.uint64:
        raise InputError(f"keys must have dtype uint64, got {arr.dtype}; use neardup.features")
    if empty is not None:
        mask = np.asarray(empty)
        if mask.shape != (arr.shape[0],) or mask.dtype != np.bool_:
            raise InputError(
                f"empty must be a bool array with one entry per document ({arr.shape[0]}), "
                f"got {mask.dtype} shape {mask.shape}"
            )
        if mask.any():
            arr = arr.copy()
            arr[mask] = EMPTY
    return arr


def _check_counts(n: int, k: int, r: int, max_bucket: int) -> None:
    if not isinstance(r, int | np.integer) or isinstance(r, bool) or not 1 <= r <= max(k, 1):
        raise ParamError(f"r must be an integer from 1 to the number of keys ({k}), got {r!r}")
    if (
        not isinstance(max_bucket, int | np.integer)
        or isinstance(max_bucket, bool)
        or max_bucket < 2
    ):
        raise ParamError(f"max_bucket must be an integer >= 2, got {max_bucket!r}")
    if n >= 3_000_000_000:
        raise ParamError(f"{n} documents is too many for one call; split the collection")


def candidate_pairs(
    keys: npt.ArrayLike,
    r: int = 1,
    *,
    max_bucket: int = DEFAULT_MAX_BUCKET,
    identical: npt.ArrayLike | None = None,
    empty: npt.ArrayLike | None = None,
    list_big_buckets: bool = False,
    jobs: int = 1,
) -> CandidateResult:
    """Document pairs sharing at least r keys in the same column, by sorting.

    keys: uint64[n, k] (Broder features, band keys...); EMPTY entries are "no key".
    r: minimum number of shared keys (1 <= r <= k).
    max_bucket: buckets with more members are chained, not expanded (see the module docstring).
    identical: optional int64[n] exact-duplicate group per document (e.g. from a content hash);
      inside big buckets only documents of the same group are chained.
    empty: optional bool[n]; documents marked True get no keys.
    list_big_buckets: also return the big buckets' members (for keep-aware removal).
    jobs: columns processed at once in threads (the result does not depend on it).
    Output is deterministic: sorted by a, then b.
    """
    arr = _check_features(keys, empty)
    n, k = arr.shape
    use_ident = identical is not None
    ident = np.zeros(0, dtype=np.int64)
    if identical is not None:
        ident_arr = np.asarray(identical)
        if ident_arr.shape != (n,) or not np.issubdtype(ident_arr.dtype, np.integer):
            raise InputError(
                f"identical must be an integer array with one group id per document ({n}), "
                f"got {ident_arr.dtype} shape {ident_arr.shape}"
            )
        ident = np.ascontiguousarray(ident_arr.astype(np.int64, copy=False))

    return pairs_by_column(
        lambda j: arr[:, j],
        n,
        k,
        r,
        max_bucket=max_bucket,
        identical=ident if use_ident else None,
        list_big_buckets=list_big_buckets,
        jobs=jobs,
    )


def _add_stats(stats: npt.NDArray[np.int64], own: npt.NDArray[np.int64]) -> None:
    """Add one column's kernel statistics to ``stats`` (the largest bucket: a maximum)."""
    largest = max(int(stats[_k.LARGEST]), int(own[_k.LARGEST]))
    stats += own
    stats[_k.LARGEST] = largest  # a maximum, not a sum


def _column_stats(
    n: int, k: int, raw: int, pairs: int, stats: npt.NDArray[np.int64], big_docs: int
) -> CandidateStats:
    """The statistics of a pass over the key columns (``stats``: the kernels', summed)."""
    return CandidateStats(
        n_docs=int(n),
        n_keys=int(k),
        raw_pairs=raw,
        pairs=pairs,
        big_buckets=int(stats[_k.BIG_BUCKETS]),
        big_bucket_slots=int(stats[_k.BIG_SLOTS]),
        big_bucket_docs=big_docs,
        big_bucket_pairs=int(stats[_k.BIG_PAIRS]),
        big_bucket_quadratic_pairs=int(stats[_k.BIG_QUADRATIC]),
        largest_bucket=int(stats[_k.LARGEST]),
    )


def pairs_by_column(
    column: Callable[[int], npt.NDArray[np.uint64]],
    n: int,
    k: int,
    r: int,
    *,
    max_bucket: int = DEFAULT_MAX_BUCKET,
    identical: npt.NDArray[np.int64] | None = None,
    list_big_buckets: bool = False,
    jobs: int = 1,
) -> CandidateResult:
    """``candidate_pairs`` over key columns fetched one at a time: ``column(j)`` gives key
    column j (uint64[n]), so the whole (n, k) key matrix never needs to be in memory at once
    (at most ``jobs`` columns are; ``identical`` checked by the caller). The same result."""
    _check_counts(n, k, r, max_bucket)
    in_big = np.zeros(n, dtype=np.bool_)  # only ever set to True: columns may share it
    parts_a: list[npt.NDArray[np.int64]] = []
    parts_b: list[npt.NDArray[np.int64]] = []
    big_parts: list[npt.NDArray[np.int64]] = []
    size_parts: list[npt.NDArray[np.int64]] = []
    collect = bool(list_big_buckets)

    def one(j: int) -> tuple[tuple[np.ndarray, ...], npt.NDArray[np.int64]]:
        """One column's pairs and statistics (sorting and the kernel release the GIL)."""
        own = np.zeros(_k.N_STATS, dtype=np.int64)
        found = column_buckets(column(j), max_bucket, identical, in_big, own, collect)
        return found, own

    stats = np.zeros(_k.N_STATS, dtype=np.int64)
    for _, ((pa, pb, bm, bs), own) in ordered_map(one, range(k), jobs):
        parts_a.append(pa)
        parts_b.append(pb)
        big_parts.append(bm)
        size_parts.append(bs)
        _add_stats(stats, own)

    raw = sum(int(p.shape[0]) for p in parts_a)
    a, b, count = shared_pairs(
        np.concatenate([_no_members(), *parts_a]),
        np.concatenate([_no_members(), *parts_b]),
        n,
        int(r),
    )
    st = _column_stats(n, k, raw, int(a.shape[0]), stats, int(in_big.sum()))
    if not collect:
        return CandidateResult(a=a, b=b, count=count, stats=st)
    big_members, big_offsets = distinct_buckets(big_parts, size_parts)
    return CandidateResult(a, b, count, st, big_members, big_offsets)


def column_buckets(
    values: npt.NDArray[np.uint64],
    max_bucket: int,
    identical: npt.NDArray[np.int64] | None,
    in_big: npt.NDArray[np.bool_],
    stats: npt.NDArray[np.int64],
    collect: bool,
) -> tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]
]:
    """One key column (one value per document, EMPTY = none) -> the pairs of its buckets.

    Returns (a, b, big members, big sizes); buckets hold documents ascending, so the result is
    the same for any subset of documents that keeps every bucket whole (what lets the Dask
    backend run it on one key partition). ``in_big`` and ``stats`` are updated in place.
    """
    packed, col, shift = sorted_column(values)
    ident = np.zeros(0, dtype=np.int64) if identical is None else identical
    pa, pb, bm, bs = _k.column_pairs(
        packed, col, shift, int(max_bucket), ident, identical is not None, in_big, stats, collect
    )
    return pa, pb, bm, bs


def shared_pairs(
    a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], n: int, r: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """Pairs (a, b) (b below n) listed at least r times, once each, sorted; with counts."""
    if len(a) == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e.copy(), np.zeros(0, dtype=np.int32)
    codes = a * np.int64(n) + b
    codes.sort()
    uniq, count = _k.count_runs(codes, int(r))
    first = uniq // n
    return first, uniq - first * n, count


def distinct_buckets(
    member_parts: list[npt.NDArray[np.int64]], size_parts: list[npt.NDArray[np.int64]]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Big buckets of every column as one CSR, each distinct membership once, in first-seen order.

    One Python step per big bucket (there are at most slots / max_bucket of them), none per member.
    """
    members = np.concatenate([np.zeros(0, dtype=np.int64), *member_parts])
    sizes = np.concatenate([np.zeros(0, dtype=np.int64), *size_parts])
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    seen: set[bytes] = set()
    keep = np.zeros(len(sizes), dtype=np.bool_)
    for c in range(len(sizes)):
        key = members[offsets[c] : offsets[c + 1]].tobytes()
        if key not in seen:
            seen.add(key)
            keep[c] = True
    slot_keep = np.repeat(keep, sizes)
    out_offsets = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    np.cumsum(sizes[keep], out=out_offsets[1:])
    return members[slot_keep], out_offsets


def cross_pairs(
    query_keys: npt.ArrayLike, stored_keys: npt.ArrayLike, r: int = 1
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(query row, stored row) of every pair sharing at least r keys in the same column.

    Each stored column is sorted once and every query key looked up by binary search, so the
    work is (stored + queries) log(stored) plus the pairs found. EMPTY keys never match.
    Output sorted by query row, then stored row.
    """
    q_arr = _check_features(query_keys, None)
    s_arr = _check_features(stored_keys, None)
    if q_arr.shape[1] != s_arr.shape[1]:
        raise InputError(
            f"query keys have {q_arr.shape[1]} columns but stored keys {s_arr.shape[1]}; "
            "they must come from the same method and parameters"
        )
    nq, ns = q_arr.shape[0], s_arr.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    if nq == 0 or ns == 0:
        return empty, empty.copy()
    qs: list[npt.NDArray[np.int64]] = []
    ss: list[npt.NDArray[np.int64]] = []
    for j in range(s_arr.shape[1]):
        qcol = q_arr[:, j]
        si, qi = key_matches(s_arr[:, j], qcol)
        real = qcol[qi] != EMPTY
        qs.append(qi[real])
        ss.append(si[real])
    q, s, _ = shared_pairs(np.concatenate([empty, *qs]), np.concatenate([empty, *ss]), ns, r)
    return q, s


#: Fewer values than this are ordered by NumPy: the kernel's passes cost more than they save.
RADIX_MIN = 1 << 12


def _radix_pays(n: int) -> bool:
    """Whether the radix kernels beat NumPy's sorts on ``n`` values: many of them, compiled
    (interpreted, a kernel's loops run in Python)."""
    return n >= RADIX_MIN and _jit.mode() != "python"


def stable_order(values: np.ndarray) -> IntArray:
    """``np.argsort(values, kind="stable")`` of integers, by radix sort when they are many
    (``_kernels.order.radix_order``: about 5x faster on millions of 64-bit keys)."""
    v = np.asarray(values)
    if v.dtype.kind not in "iu":
        raise TypeError(f"stable_order needs integers, got {v.dtype}")
    if not _radix_pays(len(v)):
        return np.argsort(v, kind="stable").astype(np.int64)
    if v.dtype.kind == "u":
        keys = v.astype(np.uint64, copy=False)
    else:  # signed: the sign bit flipped, so negative values come first
        keys = v.astype(np.int64, copy=False).view(np.uint64) ^ np.uint64(1 << 63)
    return np.asarray(_order.radix_order(np.ascontiguousarray(keys)))


def sorted_column(
    values: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], int]:
    """A key column (one value per document) -> (packed, column, shift): each document's key
    with its position in the low ``shift`` bits, sorted, so a key's documents lie together in
    ascending order; the kernels read the whole keys back from ``column``."""
    n = values.shape[0]
    col = np.ascontiguousarray(values, dtype=np.uint64)
    shift = max(1, (n - 1).bit_length())
    low = np.uint64((1 << shift) - 1)
    return sort_over_positions((col & ~low) | np.arange(n, dtype=np.uint64), shift), col, shift


def sort_over_positions(packed: npt.NDArray[np.uint64], bits: int) -> npt.NDArray[np.uint64]:
    """``np.sort(packed)`` of values whose low ``bits`` bits are their positions (so ascend in
    input order): by radix sort over the bytes above when they are many
    (``_kernels.order.radix_sort``, about 3x faster on a column of a million keys)."""
    if not _radix_pays(len(packed)):
        return np.sort(packed)
    return np.asarray(_order.radix_sort(np.ascontiguousarray(packed), bits // _order.DIGIT_BITS))


def key_matches(
    keys: npt.NDArray[np.uint64], probes: npt.NDArray[np.uint64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Every (i, j) with keys[i] == probes[j], by sorting ``keys`` once and binary search: the
    work is (keys + probes) log(keys) plus the matches. Grouped by j ascending."""
    order = stable_order(keys)
    ordered = keys[order]
    lo = np.searchsorted(ordered, probes, side="left")
    counts = (np.searchsorted(ordered, probes, side="right") - lo).astype(np.int64)
    total = int(counts.sum())
    first = np.cumsum(counts) - counts
    pos = np.repeat(lo - first, counts) + np.arange(total, dtype=np.int64)
    return order[pos], np.repeat(np.arange(len(probes), dtype=np.int64), counts)


def find_sorted(values: np.ndarray, ordered: np.ndarray) -> IntArray:
    """Each value's position in the ascending ``ordered``, -1 when absent, by galloping search
    (``_kernels.candidates.find_in_sorted``): ``values`` (often far more of them) are never
    sorted, and ascending stretches of them cost a merge."""
    values, ordered = np.asarray(values), np.asarray(ordered)
    if values.dtype == ordered.dtype and values.dtype.kind in "iu":
        return np.asarray(_k.find_in_sorted(values, ordered))
    if len(ordered) == 0:  # two integer types (numpy compares them exactly)
        return np.full(len(values), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return np.where(ordered[at] == values, at, -1).astype(np.int64)


def matching(wanted: np.ndarray, keys: np.ndarray) -> IntArray:
    """Positions in the ascending ``keys`` (repeats allowed) of every key equal to one of
    ``wanted`` (best ascending: the search then gallops like a merge), wanted by wanted, each
    one's equal keys in order (``_kernels.candidates.matching_positions``); one integer type."""
    wanted, keys = np.asarray(wanted), np.asarray(keys)
    if wanted.dtype != keys.dtype or wanted.dtype.kind not in "iu":
        raise TypeError(f"matching needs one integer type, got {wanted.dtype} and {keys.dtype}")
    return np.asarray(_k.matching_positions(wanted, keys))


def in_sorted(values: np.ndarray, ordered: np.ndarray) -> npt.NDArray[np.bool_]:
    """``np.isin(values, ordered)`` for an ascending ``ordered`` (``find_sorted``)."""
    return find_sorted(values, ordered) >= 0


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` without a sort when it can: in one pass when ``values`` already
    ascend (a store's postings and lookup keys, a batch's query rows), by a table of those
    present when they are non-negative integers few against the count (document numbers)."""
    v = np.asarray(values)
    if len(v) == 0:
        return v.copy()
    if np.all(v[1:] >= v[:-1]):
        return v[np.r_[True, v[1:] != v[:-1]]]
    if _dense(v):
        present = np.zeros(int(v.max()) + 1, dtype=np.bool_)
        present[v] = True
        return np.flatnonzero(present).astype(v.dtype)
    return np.unique(v)


def _dense(v: np.ndarray) -> bool:
    """Whether ``v`` (not empty) are non-negative integers few against their count: a table of
    them costs less than a sort."""
    return v.dtype.kind in "iu" and int(v.min()) >= 0 and int(v.max()) <= 4 * len(v) + 4096


def distinct_inverse(values: npt.NDArray[np.int64]) -> tuple[IntArray, IntArray]:
    """``np.unique(values, return_inverse=True)`` for int64 values without sorting them all:
    by a table of the values present when they are few against the count (document numbers),
    else numbered by a hash table as they come (``_kernels.candidates.first_seen_ids``, 64-bit
    document keys), only the distinct values then sorted (values repeat: a document is in
    many pairs)."""
    v = np.ascontiguousarray(values, dtype=np.int64)
    if len(v) == 0:
        return v.copy(), v.copy()
    if not _dense(v):
        seen, ids = _k.first_seen_ids(v)
        order = stable_order(seen)  # distinct values: any sort gives this order
        rank = np.empty(len(seen), dtype=np.int64)
        rank[order] = np.arange(len(seen), dtype=np.int64)
        return seen[order], rank[ids]
    present = np.zeros(int(v.max()) + 1, dtype=np.bool_)
    present[v] = True
    found = np.flatnonzero(present).astype(np.int64)
    rank = np.cumsum(present, dtype=np.int64) - 1
    return found, rank[v]


def pairs_from_hits(
    row: npt.NDArray[np.int64],
    key: npt.NDArray[np.uint64],
    hit_key: npt.NDArray[np.uint64],
    hit_doc: npt.NDArray[np.int64],
    r: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(row, doc) pairs sharing at least r keys, from postings (row, key) and hits (key, doc);
    sorted by row, then doc. Each row's documents are counted in one pass over its keys' hits
    (``_kernels.candidates.shared_hits``): no list of every (row, doc) listing is built, so a
    key held by thousands of documents costs time, not memory."""
    empty = np.zeros(0, dtype=np.int64)
    if len(key) == 0 or len(hit_key) == 0:
        return empty, empty.copy()
    by_key = stable_order(hit_key)
    keys = np.asarray(hit_key, dtype=np.uint64)[by_key]
    found, docs = distinct_inverse(np.asarray(hit_doc, dtype=np.int64)[by_key])
    by_row = stable_order(row)
    lo = np.searchsorted(keys, key, side="left")  # in the postings' own (key) order: the
    hi = np.searchsorted(keys, key, side="right")  # search goes on from the previous key
    q, d = _k.shared_hits(
        np.asarray(row, dtype=np.int64)[by_row], lo[by_row], hi[by_row], docs, len(found), int(r),
    )  # fmt: skip
    return q, found[d]
