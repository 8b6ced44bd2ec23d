"""64-bit fingerprints -> pairs within k bits, by permuted sorted tables (Manku, Jain, Das Sarma).

Pigeonhole: split the f bits into b > k blocks; two fingerprints differing in at most k bits
differ in at most k blocks, so for some choice of b-k *kept* blocks they agree exactly. One table
per choice (C(b, k) of them) groups the fingerprints by their kept blocks; only fingerprints in the
same group are compared, with a popcount. A planner picks b from a cost model and says why.
"""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from ._kernels import hamming as _kh
from .errors import InputError, ParamError

PlanMode = Literal["batch", "query"]

#: Cost-model constants, in nanoseconds, measured on the development machine (2 cores, x86-64)
#: with ``benchmarks/bench_simhash_search.py``. Only their ratios matter to the planner.
COST_PERMUTE_NS = 2.0  # permute one fingerprint's blocks into a table's order
COST_PASS_NS = 4.5  # one 8-bit counting-sort pass over one fingerprint
COST_CANDIDATE_NS = 2.0  # popcount-check one candidate pair found in a run of equal keys
COST_TABLE_QUERY_NS = 300.0  # probing one table for one query: directory jump, cache misses

#: Bytes an index table spends per fingerprint: the permuted value and the id.
TABLE_BYTES = 16

#: Largest number of blocks: the canonical-table lookup has 2**b entries.
MAX_BLOCKS = 20


@dataclass(frozen=True)
class HammingPlan:
    """A permuted-table layout for finding fingerprints within ``k`` of ``f`` bits.

    blocks: (start bit, size) of each of the b blocks, block 0 holding the most significant bits.
    tables: for each table, the blocks allowed to differ (k of them, lexicographic order); the
      other b-k blocks are the table's key and are compared exactly.
    key_bits: bits in each table's key.
    n: collection size the plan was made for; mode: what the cost model optimised.
    expected_candidates: expected pairs compared per table summed over tables, for uniformly
      random fingerprints (batch: pairs among n; query: stored fingerprints per query).
    cost_ns: the model's estimated cost (batch: whole run; query: one query), in nanoseconds.
    alternatives: (b, tables, cost_ns) of every layout the planner considered.
    """

    f: int
    k: int
    n: int
    mode: PlanMode
    blocks: tuple[tuple[int, int], ...]
    tables: tuple[tuple[int, ...], ...]
    key_bits: tuple[int, ...]
    expected_candidates: float
    cost_ns: float
    alternatives: tuple[tuple[int, int, float], ...] = ()
    _arrays: dict[str, npt.NDArray[np.int64]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def num_tables(self) -> int:
        return len(self.tables)

    def describe(self) -> str:
        """What was chosen and why, in one paragraph a person can read."""
        sizes = [s for _, s in self.blocks]
        lines = [
            f"Hamming plan ({self.mode}) for f={self.f} bits, k={self.k}, n={self.n:,}: "
            f"{self.num_blocks} blocks of {'/'.join(map(str, sizes))} bits, "
            f"{self.num_tables} tables = C({self.num_blocks},{self.k}), each keyed on "
            f"{min(self.key_bits)}-{max(self.key_bits)} bits; "
            f"expected candidates {self.expected_candidates:.3g}, "
            f"estimated cost {self.cost_ns / 1e9:.3g} s"
            + (" per query" if self.mode == "query" else ""),
        ]
        if self.alternatives:
            alts = ", ".join(f"b={b}: {t} tables {c / 1e9:.3g} s" for b, t, c in self.alternatives)
            lines.append(f"considered: {alts}")
        return "\n".join(lines)

    # -- arrays the kernels use, derived once per plan --------------------------------------
    def arrays(self) -> dict[str, npt.NDArray[np.int64]]:
        """Per-table block permutations (src, size, dst, block ids: int64[T, b]), key bits
        (int64[T]) and the canonical-table lookup (int64[2**b]: the first table whose differing
        blocks contain a block-difference mask, -1 if none)."""
        if self._arrays:
            return self._arrays
        b = self.num_blocks
        t_count = self.num_tables
        src = np.empty((t_count, b), np.int64)
        size = np.empty((t_count, b), np.int64)
        dst = np.empty((t_count, b), np.int64)
        block = np.empty((t_count, b), np.int64)
        for t, dropped in enumerate(self.tables):
            order = [j for j in range(b) if j not in dropped] + list(dropped)
            pos = 64
            for slot, j in enumerate(order):
                start, sz = self.blocks[j]
                pos -= sz
                src[t, slot], size[t, slot], dst[t, slot], block[t, slot] = start, sz, pos, j
        canon = np.full(1 << b, -1, np.int64)
        masks = [sum(1 << j for j in dropped) for dropped in self.tables]
        for m in range(1 << b):
            for t, tm in enumerate(masks):
                if m & ~tm == 0:
                    canon[m] = t
                    break
        self._arrays.update(
            src=src,
            size=size,
            dst=dst,
            block=block,
            key_bits=np.asarray(self.key_bits, np.int64),
            canon=canon,
        )
        return self._arrays


def _check_fk(k: int, f: int) -> None:
    if not isinstance(f, numbers.Integral) or isinstance(f, bool) or not 1 <= f <= 64:
        raise ParamError(f"fingerprint width f must be an integer from 1 to 64, got {f!r}")
    if (
        not isinstance(k, numbers.Integral)
        or isinstance(k, bool)
        or not 0 <= k < min(f, MAX_BLOCKS)
    ):
        raise ParamError(
            f"max distance k must be an integer from 0 to {min(f, MAX_BLOCKS) - 1}, got {k!r}; "
            "k is the largest number of differing bits that still counts as a near duplicate, "
            f"and the tables need more blocks than k (at most f={f} and {MAX_BLOCKS})"
        )


def _layout(f: int, k: int, b: int) -> tuple[tuple[tuple[int, int], ...], list[tuple[int, ...]]]:
    """Blocks of near-equal size (the larger ones first, at the top) and the C(b, k) tables."""
    base, extra = divmod(f, b)
    blocks = []
    top = f
    for j in range(b):
        sz = base + (1 if j < extra else 0)
        top -= sz
        blocks.append((top, sz))
    tables = list(itertools.combinations(range(b), k))
    return tuple(blocks), tables


def _block_counts(
    k: int, n: int, f: int, mode: PlanMode, blocks: int | None, max_tables: int, max_memory: int
) -> list[int]:
    """The block counts ``plan_tables`` prices: ``blocks`` when forced, else every b from k+1
    within ``max_tables`` tables (and, for queries, ``max_memory``)."""
    if blocks is not None:
        if not isinstance(blocks, int) or not k < blocks <= min(f, MAX_BLOCKS):
            raise ParamError(
                f"blocks must be an integer from k+1={k + 1} to {min(f, MAX_BLOCKS)}, "
                f"got {blocks!r}: the pigeonhole argument needs more blocks than k"
            )
        return [blocks]
    return [
        b
        for b in range(k + 1, min(f, MAX_BLOCKS) + 1)
        if b == k + 1
        or (
            k > 0
            and math.comb(b, k) <= max_tables
            and (mode == "batch" or math.comb(b, k) * n * TABLE_BYTES <= max_memory)
        )
    ]  # k = 0: one table keyed on every bit; more blocks would change nothing


def _price(
    f: int, k: int, n: int, mode: PlanMode, b: int
) -> tuple[float, float, tuple[int, ...], tuple, list[tuple[int, ...]]]:
    """(cost ns, expected candidates, key bits, layout, tables) of b blocks (the cost model
    of ``plan_tables``)."""
    layout, tables = _layout(f, k, b)
    key_bits = tuple(f - sum(layout[j][1] for j in dropped) for dropped in tables)
    cost = 0.0
    cand = 0.0
    for p in key_bits:
        if mode == "batch":
            c = n * (n - 1) / 2 * 2.0**-p
            cost += n * (COST_PERMUTE_NS + COST_PASS_NS * math.ceil(p / 8))
        else:
            c = n * 2.0**-p
            cost += COST_TABLE_QUERY_NS
        cost += COST_CANDIDATE_NS * c
        cand += c
    return cost, cand, key_bits, layout, tables


def plan_tables(
    k: int,
    n: int,
    f: int = 64,
    *,
    mode: PlanMode = "batch",
    blocks: int | None = None,
    max_tables: int = 256,
    max_memory: int = 8 << 30,
) -> HammingPlan:
    """Choose the number of blocks b (hence C(b, k) tables) for n fingerprints of f bits.

    Cost model (nanoseconds, random fingerprints; a table keyed on p bits puts two fingerprints
    in the same run with probability 2**-p):

    * batch: sum over tables of ``n * (COST_PERMUTE + COST_PASS * ceil(p / 16))`` (permute, then
      radix-group on the p key bits, 8 bits a pass) ``+ COST_CANDIDATE * n(n-1)/2 * 2**-p``.
    * query: sum over tables of ``COST_TABLE_QUERY + COST_CANDIDATE * n * 2**-p`` for one query
      (a prefix directory finds the run). An index holds ``TABLE_BYTES`` per fingerprint per
      table, so query plans keep ``tables * n * TABLE_BYTES <= max_memory``.

    More blocks mean longer keys (fewer candidates) but more tables: the paper's trade-off between
    tables and probes. ``blocks`` forces b; otherwise every b from k+1 with at most ``max_tables``
    tables (and, for queries, within ``max_memory``) is priced and the cheapest wins (ties: fewer
    tables). b = k+1 is always allowed: it is the fewest tables the pigeonhole argument needs.
    """
    _check_fk(k, f)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ParamError(f"collection size n (--docs) must be a non-negative integer, got {n!r}")
    if mode not in ("batch", "query"):
        raise ParamError(f"plan mode must be 'batch' or 'query', got {mode!r}")
    candidates_b = _block_counts(k, n, f, mode, blocks, max_tables, max_memory)
    priced = [(b, *_price(f, k, n, mode, b)) for b in candidates_b]
    best = min(priced, key=lambda r: (r[1], len(r[5])))
    _, cost, cand, key_bits, layout, tables = best
    return HammingPlan(
        f=f,
        k=k,
        n=n,
        mode=mode,
        blocks=layout,
        tables=tuple(tables),
        key_bits=key_bits,
        expected_candidates=cand,
        cost_ns=cost,
        alternatives=tuple((r[0], len(r[5]), r[1]) for r in priced),
    )


def as_fingerprints(fps: object, f: int = 64, name: str = "fingerprints") -> npt.NDArray[np.uint64]:
    """Validate and convert to a 1-D uint64 array whose values fit in f bits."""
    arr = np.asarray(fps)
    if arr.ndim != 1:
        raise InputError(f"{name} must be a 1-D array of 64-bit integers, got shape {arr.shape}")
    if arr.dtype != np.uint64:
        if arr.size == 0 or (arr.dtype.kind in "iu" and arr.min() >= 0):
            arr = arr.astype(np.uint64)
        elif arr.dtype.kind == "O":
            try:
                arr = np.array([int(x) for x in arr], dtype=np.uint64)
            except (OverflowError, TypeError, ValueError) as e:
                raise InputError(
                    f"{name} must hold integers from 0 to 2**64-1 ({e}); pass a uint64 array"
                ) from e
        else:
            raise InputError(
                f"{name} must be unsigned 64-bit integers (uint64), got dtype {arr.dtype}; "
                "convert with np.asarray(x, dtype=np.uint64) or view int64 as uint64"
            )
    if f < 64 and arr.size and int(arr.max()) >> f:
        raise InputError(f"{name} has values wider than f={f} bits; mask them or raise f")
    return np.ascontiguousarray(arr)


def _sort_pairs(
    a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], d: npt.NDArray[np.int8], n: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    order = np.argsort(a * np.int64(max(n, 1)) + b, kind="stable")
    return a[order], b[order], d[order].astype(np.int32)


def hamming_pairs(
    fps: npt.ArrayLike,
    k: int,
    plan: HammingPlan | None = None,
    *,
    ignore: npt.ArrayLike | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """All pairs (a, b, distance) with popcount(fps[a] ^ fps[b]) <= k, a < b, sorted by (a, b).

    Never compares all pairs: each table of the plan radix-sorts the fingerprints by its key
    blocks (only the key bits, 8 bits a pass) and popcount-checks runs of equal keys. A pair is
    reported by the first table whose key blocks it matches, so no global dedupe is needed.
    Equal fingerprints pair at distance 0 (a group of g equal ones costs g^2/2 checks per
    table; remove exact duplicates first when they are many). ``ignore`` (bool[n]) marks documents that never pair, e.g. empty documents
    whose fingerprint 0 carries no information. The plan defaults to ``plan_tables(k, n, f)``.
    """
    f = plan.f if plan is not None else 64
    _check_fk(k, f)
    x = as_fingerprints(fps, f)
    n = x.shape[0]
    if plan is None:
        plan = plan_tables(k, n, f)
    elif plan.k < k:
        raise ParamError(f"plan was made for k={plan.k} but k={k}: plan with k >= {k}")
    ids = np.arange(n, dtype=np.int64)
    if ignore is not None:
        mask = np.asarray(ignore, dtype=bool)
        if mask.shape != (n,):
            raise InputError(f"ignore must be a bool array of shape ({n},), got {mask.shape}")
        ids = ids[~mask]
    if ids.shape[0] < 2:
        e = np.empty(0, np.int64)
        return e, e.copy(), np.empty(0, np.int32)
    vals = x[ids]
    m = vals.shape[0]
    arr = plan.arrays()
    # Sort buffers reused by every table: sorted permuted values and ids, and scratch.
    sv, sid = np.empty(m, np.uint64), np.empty(m, np.int64)
    tv, tid = np.empty(m, np.uint64), np.empty(m, np.int64)
    parts_a, parts_b, parts_d = [], [], []
    for t in range(plan.num_tables):
        p = int(arr["key_bits"][t])
        pv = _kh.permute_blocks(vals, arr["src"][t], arr["size"][t], arr["dst"][t])
        _kh.radix_sort_top_into(pv, ids, p, sv, sid, tv, tid)
        ua, ub, ud = _kh.table_run_pairs(
            sv, sid, p, k, arr["dst"][t], arr["size"][t], arr["block"][t], arr["canon"], t
        )
        parts_a.append(ua)
        parts_b.append(ub)
        parts_d.append(ud)
    return _sort_pairs(np.concatenate(parts_a), np.concatenate(parts_b), np.concatenate(parts_d), n)


class HammingIndex:
    """A growable index answering "which stored fingerprints are within k bits of this one?".

    Stored fingerprints live in C(b, k) permuted tables sorted by their key blocks, with a
    directory of where each top-bits prefix starts (a query jumps to the run sharing its key
    blocks in each table) plus a small unsorted *delta* of recent additions that
    is scanned linearly. When the delta outgrows ``max(delta_min, len(main) // delta_fraction)``
    it is merged and the tables re-sorted, so additions cost O(log n) amortised re-sorts each.
    Ids are assigned in order of addition, from 0.
    """

    def __init__(
        self,
        k: int,
        plan: HammingPlan | None = None,
        *,
        f: int = 64,
        delta_min: int = 4096,
        delta_fraction: int = 8,
    ) -> None:
        if plan is not None:
            f = plan.f
            if plan.k < k:
                raise ParamError(f"plan was made for k={plan.k} but k={k}: plan with k >= {k}")
        _check_fk(k, f)
        if delta_min < 0 or delta_fraction < 1:
            raise ParamError("delta_min must be >= 0 and delta_fraction >= 1")
        self.k = k
        self.f = f
        self._fixed_plan = plan
        self.plan_: HammingPlan | None = plan
        self.delta_min = delta_min
        self.delta_fraction = delta_fraction
        self._main = np.empty(0, np.uint64)
        self._tables_v = np.empty((0, 0), np.uint64)
        self._tables_id = np.empty((0, 0), np.int64)
        self._dirs = np.zeros((0, 3), np.int64)
        self._dbits = 1
        self._delta: list[npt.NDArray[np.uint64]] = []
        self._delta_len = 0

    def __len__(self) -> int:
        return int(self._main.shape[0]) + self._delta_len

    @property
    def fingerprints(self) -> npt.NDArray[np.uint64]:
        """Every stored fingerprint, indexed by id."""
        return np.concatenate([self._main, *self._delta])

    def add(self, fps: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Store fingerprints; returns their ids (consecutive, continuing from len(self))."""
        x = as_fingerprints(fps, self.f)
        first = len(self)
        if x.shape[0]:
            self._delta.append(x.copy())
            self._delta_len += x.shape[0]
            if self._delta_len > max(self.delta_min, self._main.shape[0] // self.delta_fraction):
                self.rebuild()
        return np.arange(first, first + x.shape[0], dtype=np.int64)

    def rebuild(self) -> None:
        """Merge the delta into the sorted tables (done automatically by ``add``)."""
        self._main = self.fingerprints
        self._delta = []
        self._delta_len = 0
        n = self._main.shape[0]
        plan = self._fixed_plan or plan_tables(self.k, n, self.f, mode="query")
        self.plan_ = plan
        arr = plan.arrays()
        # directory on the top bits: about one entry per stored fingerprint, at most 2**20
        self._dbits = max(1, min(int(min(plan.key_bits)), 20, max(n, 1).bit_length()))
        tv = np.empty((plan.num_tables, n), np.uint64)
        ti = np.empty((plan.num_tables, n), np.int64)
        dirs = np.empty((plan.num_tables, (1 << self._dbits) + 1), np.int64)
        ids = np.arange(n, dtype=np.int64)
        scratch_v, scratch_i = np.empty(n, np.uint64), np.empty(n, np.int64)
        for t in range(plan.num_tables):
            pv = _kh.permute_blocks(self._main, arr["src"][t], arr["size"][t], arr["dst"][t])
            p = int(arr["key_bits"][t])
            _kh.radix_sort_top_into(pv, ids, p, tv[t], ti[t], scratch_v, scratch_i)
            dirs[t] = _kh.build_directory(tv[t], self._dbits)
        self._tables_v = tv
        self._tables_id = ti
        self._dirs = dirs

    def query_batch(
        self, fps: npt.ArrayLike
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        """For many queries: (query index, stored id, distance) for every stored fingerprint within
        k bits, sorted by (query index, id)."""
        q = as_fingerprints(fps, self.f, "queries")
        parts = []
        if self._main.shape[0] and self.plan_ is not None:
            arr = self.plan_.arrays()
            qv = np.empty((self.plan_.num_tables, q.shape[0]), np.uint64)
            for t in range(self.plan_.num_tables):
                qv[t] = _kh.permute_blocks(q, arr["src"][t], arr["size"][t], arr["dst"][t])
            parts.append(
                _kh.query_tables(
                    qv,
                    self._tables_v,
                    self._tables_id,
                    self._dirs,
                    self._dbits,
                    arr["key_bits"],
                    self.k,
                    arr["dst"],
                    arr["size"],
                    arr["block"],
                    arr["canon"],
                )
            )
        if self._delta_len:
            delta = np.concatenate(self._delta)
            self._delta = [delta]
            ids = np.arange(self._main.shape[0], len(self), dtype=np.int64)
            parts.append(_kh.scan_pairs(q, delta, ids, self.k))
        if not parts:
            e = np.empty(0, np.int64)
            return e, e.copy(), np.empty(0, np.int32)
        qi = np.concatenate([p[0] for p in parts])
        ii = np.concatenate([p[1] for p in parts])
        dd = np.concatenate([p[2] for p in parts])
        return _sort_pairs(qi, ii, dd, max(len(self), 1))

    def query(self, fp: int) -> list[tuple[int, int]]:
        """Stored (id, distance) pairs within k bits of one fingerprint, sorted by id."""
        if not isinstance(fp, int | np.integer) or isinstance(fp, bool) or not 0 <= fp < 2**64:
            raise InputError(f"a fingerprint must be an integer from 0 to 2**64-1, got {fp!r}")
        _, ids, dist = self.query_batch(np.array([int(fp)], dtype=np.uint64))
        return list(zip(ids.tolist(), dist.tolist(), strict=True))


def table_keys(fps: npt.ArrayLike, plan: HammingPlan) -> npt.NDArray[np.uint64]:
    """Lookup keys uint64[n, tables]: fingerprints within k bits share at least one (pigeonhole).

    Key t hashes the bits of table t's kept blocks with the table number: what an index stores
    in an inverted table so that "within k bits" becomes "shares a key, then popcount <= k".
    """
    x = as_fingerprints(fps, plan.f)
    masks = np.empty(plan.num_tables, dtype=np.uint64)
    for t, dropped in enumerate(plan.tables):
        mask = 0
        for j, (start, size) in enumerate(plan.blocks):
            if j not in dropped:
                mask |= ((1 << size) - 1) << start
        masks[t] = mask
    out = np.empty((x.shape[0], plan.num_tables), dtype=np.uint64)
    _kh.table_keys(x, masks, out)
    return out
