"""Keep-aware removal against kept leaders: equal to a pure-Python reference and to the
pair-based rule on complete candidates, linear in cluster size, exact near the threshold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from neardup import exact, leaders
from neardup._chunks import size_chunks
from neardup._kernels import leaders as _k
from neardup._kernels.hashing import EMPTY
from neardup.engine import Deduplicator
from neardup.exact import SetStore
from neardup.leaders import LeaderResult, bucket_lists, column_buckets, remove_by_leaders
from neardup.params import DedupParams, ShingleParams
from neardup.removal import keep_aware
from neardup.resemblance import pair_scores
from neardup.shingles import ShingleBatch, shingle_batch
from neardup.testing.synth import near_duplicate_corpus, random_documents
from neardup.verify import PairCheck, binomial_band, effective_sizes

MAXU = int(EMPTY)


# -- bucket records -------------------------------------------------------------------------------
def reference_buckets(col: list[int]) -> list[tuple[int, list[int]]]:
    """(key, members ascending) of every key held by two or more documents, by ascending key."""
    members: dict[int, list[int]] = {}
    for d, key in enumerate(col):
        if key != MAXU:
            members.setdefault(key, []).append(d)
    return [(key, docs) for key, docs in sorted(members.items()) if len(docs) >= 2]


# Keys that differ only in their low bits share the packed sort's high bits: the kernel must
# split such runs by full key. EMPTY shares its high bits with MAXU - 1.
KEYS = st.sampled_from([0, 1, 2, 3, 5, 2**40, 2**40 + 1, 2**63 + 7, MAXU - 1, MAXU])


@given(st.lists(KEYS, max_size=60), st.integers(0, 5))
def test_column_records_list_every_shared_key_once_with_its_members(
    col: list[int], first: int
) -> None:
    docs, buckets, made = column_buckets(np.array(col, dtype=np.uint64), first)
    want = reference_buckets(col)
    assert made == len(want)
    got: dict[int, list[int]] = {}
    for d, b in zip(docs.tolist(), buckets.tolist(), strict=True):
        got.setdefault(b, []).append(d)
    assert [got[first + i] for i in range(made)] == [m for _, m in want]


@given(st.lists(st.lists(KEYS, min_size=4, max_size=4), max_size=30), st.integers(1, 3))
def test_bucket_lists_give_each_document_its_shared_keys_in_column_order(
    rows: list[list[int]], jobs: int
) -> None:
    keys = np.array(rows, dtype=np.uint64).reshape(len(rows), 4)
    got = bucket_lists(lambda j: keys[:, j].copy(), len(rows), 4, jobs)
    seen = {}
    for i, d in enumerate(got.docs.tolist()):
        seen[d] = got.buckets[got.offsets[i] : got.offsets[i + 1]].tolist()
    for d in range(len(rows)):
        shared = [
            j
            for j in range(4)
            if keys[d, j] != EMPTY
            and sum(int(keys[e, j] == keys[d, j]) for e in range(len(rows))) >= 2
        ]
        assert len(seen.get(d, [])) == len(shared)
        assert seen.get(d, []) == sorted(seen.get(d, []))
    # two documents share a bucket id exactly when they share a key in that column
    for d in seen:
        for e in seen:
            common = len(set(seen[d]) & set(seen[e]))
            want = sum(int(keys[d, j] == keys[e, j] != EMPTY) for j in range(4))
            assert d == e or common == want


# -- the leader pass against a reference -----------------------------------------------------------
def reference_leaders(
    keys: np.ndarray,
    rank: np.ndarray,
    r: int,
    score: object,
    accept: object,
    cap: int = 2**62,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Visit by rank; a document's candidates are kept documents sharing >= r keys in the same
    column, counting only keys where the kept one is among the first ``cap`` kept with that key
    (column, key); removed as a duplicate of the accepted candidate with the best (score, rank)."""
    m = keys.shape[0]
    kept = np.zeros(m, dtype=bool)
    dup = np.full(m, -1)
    sc = np.full(m, np.nan)
    leaders: dict[tuple[int, int], list[int]] = {}
    for d in np.argsort(rank, kind="stable").tolist():
        best = None
        for x in np.flatnonzero(kept).tolist():
            c = sum(
                int(keys[d, j] != EMPTY and x in leaders.get((j, int(keys[d, j])), []))
                for j in range(keys.shape[1])
            )
            if c < r:
                continue
            s = score(d, x, c)  # type: ignore[operator]
            if not accept(s, c):  # type: ignore[operator]
                continue
            if best is None or s > best[0] or (s == best[0] and rank[x] < rank[best[1]]):
                best = (s, x)
        if best is None:
            kept[d] = True
            for j in range(keys.shape[1]):
                if keys[d, j] != EMPTY:
                    bucket = leaders.setdefault((j, int(keys[d, j])), [])
                    if len(bucket) < cap:
                        bucket.append(d)
        else:
            sc[d], dup[d] = best
    return kept, dup, sc


def _sets_of(values: list[list[int]]) -> ShingleBatch:
    sets = [np.unique(np.array(v, dtype=np.uint64)) for v in values]
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    fps = np.concatenate([np.zeros(0, dtype=np.uint64), *sets])
    return ShingleBatch(fps, offsets)


instances = st.integers(2, 24).flatmap(
    lambda m: st.tuples(
        st.lists(st.lists(st.integers(0, 3), min_size=5, max_size=5), min_size=m, max_size=m),
        st.lists(st.lists(st.integers(0, 12), min_size=1, max_size=10), min_size=m, max_size=m),
        st.permutations(list(range(m))),
        st.integers(1, 3),
        st.sampled_from([0.3, 0.5, 0.8]),
    )
)


@settings(max_examples=150)
@given(
    instances,
    st.sampled_from(["count", "exact", "sketch", "hybrid"]),
    st.sampled_from([None, 0]),
    st.sampled_from([2**62, 1, 2]),
    st.sampled_from([1, 2, 3]),
    st.sampled_from([leaders.HOLD_SHARE, 0.0, float("inf")]),
)
def test_leader_pass_equals_the_reference_in_any_number_of_threads(
    inst: tuple, verify: str, budget: int | None, cap: int, jobs: int, hold: float
) -> None:
    raw_keys, raw_sets, perm, r, t = inst
    m = len(raw_keys)
    keys = np.array(raw_keys, dtype=np.uint64)
    keys[keys == 3] = EMPTY  # "no key"
    rank = np.array(perm, dtype=np.int64)
    sets = _sets_of(raw_sets)
    # Sketch rows: each position holds the smallest member under a per-position order, so
    # equal positions estimate the sets' Jaccard (a classic MinHash of the small sets).
    width = 16
    rows = np.zeros((m, width), dtype=np.uint16)
    for d in range(m):
        members = sets.fps[sets.offsets[d] : sets.offsets[d + 1]].astype(np.int64)
        for j in range(width):
            rows[d, j] = int(min((v * (2 * j + 1) + j * 7) % 101 for v in members))
    count_ok = np.ones(6, dtype=bool)
    count_ok[5] = False  # the method may reject by count too
    count_score = np.linspace(0.0, 1.0, 6)
    jac = {
        (d, x): float(pair_scores(sets, np.array([d]), np.array([x]))[0])
        for d in range(m)
        for x in range(m)
    }

    def est(d: int, x: int) -> float:
        return float((rows[d] == rows[x]).mean())

    buckets = bucket_lists(lambda j: keys[:, j].copy(), m, 5)
    act = buckets.docs  # the kernel's rows: documents sharing a key
    act_sets = _sets_of([raw_sets[i] for i in act.tolist()])
    lo, hi = binomial_band(t, width, alpha=0.2)
    none_lo, none_hi = np.full(width + 1, 2.0), np.full(width + 1, -1.0)
    size = np.full(len(act), width, dtype=np.int64)
    empty_fps, empty_off = np.zeros(0, dtype=np.uint64), np.zeros(1, dtype=np.int64)
    no_rows = np.zeros((0, 0), dtype=np.uint16)
    if verify == "count":
        check = PairCheck(_k.BY_COUNT, t, no_rows, empty_fps, empty_off, none_lo, none_hi, size)
        score = lambda d, x, c: float(count_score[c])  # noqa: E731
        accept = lambda s, c: bool(count_ok[c])  # noqa: E731
    elif verify == "exact":
        check = PairCheck(
            _k.EXACT_SETS, t, no_rows, act_sets.fps, act_sets.offsets, none_lo, none_hi, size
        )
        score = lambda d, x, c: jac[d, x]  # noqa: E731
        accept = lambda s, c: bool(count_ok[c]) and s >= t  # noqa: E731
    else:
        band = (lo, hi) if verify == "hybrid" else (none_lo, none_hi)
        check = PairCheck(_k.SKETCH_POSITIONAL, t, rows[act], empty_fps, empty_off, *band, size)

        def score(d: int, x: int, c: int) -> float:
            s = est(d, x)
            return jac[d, x] if band[0][width] <= s <= band[1][width] else s

        accept = lambda s, c: bool(count_ok[c]) and s >= t  # noqa: E731

    # documents without a shared key are kept and compared with nothing
    local_rank = rank[buckets.docs]

    def fetch(rows_: np.ndarray) -> ShingleBatch:
        picked = [raw_sets[int(buckets.docs[i])] for i in rows_.tolist()]
        return _sets_of(picked)

    def removal(jobs: int) -> LeaderResult:
        store = SetStore(len(act), fetch, budget=budget)
        return remove_by_leaders(
            buckets, local_rank, r, count_ok, count_score, check, store, max_leaders=cap, jobs=jobs
        )

    old = leaders.PARALLEL_PASS_DOCS, leaders.HOLD_SHARE, leaders.HOLD_MIN_DOCS
    leaders.HOLD_SHARE = hold  # 0: every component waiting for a score gathers its sets
    leaders.HOLD_MIN_DOCS = 0
    try:
        res = removal(1)
        leaders.PARALLEL_PASS_DOCS = 0  # every pass cut into parts of whole components
        threaded = removal(jobs)
    finally:
        leaders.PARALLEL_PASS_DOCS, leaders.HOLD_SHARE, leaders.HOLD_MIN_DOCS = old
    for field in ("kept", "duplicate_of", "score", "a", "b", "pair_score"):
        assert np.array_equal(getattr(threaded, field), getattr(res, field), equal_nan=True)
    assert (threaded.checks, threaded.exact, threaded.rounds) == (res.checks, res.exact, res.rounds)
    kept = np.ones(m, dtype=bool)
    dup = np.full(m, -1)
    sc = np.full(m, np.nan)
    kept[buckets.docs] = res.kept
    has = res.duplicate_of >= 0
    dup[buckets.docs[has]] = buckets.docs[res.duplicate_of[has]]
    sc[buckets.docs] = res.score
    want = reference_leaders(keys, rank, r, score, accept, cap)
    assert np.array_equal(kept, want[0])
    assert np.array_equal(dup, want[1])
    assert np.array_equal(sc, want[2], equal_nan=True)
    # every accepted pair names a removed document and a better, kept one
    for a, b in zip(res.a.tolist(), res.b.tolist(), strict=True):
        assert not res.kept[a] and res.kept[b] and local_rank[b] < local_rank[a]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 50), max_size=40),
    st.integers(1, 6),
    st.integers(1, 80),
    st.booleans(),
)
def test_size_chunks_cut_rows_in_order_within_both_limits_and_greedily(
    sizes: list[int], max_rows: int, max_bytes: int, sized: bool
) -> None:
    """Chunks follow the rows' bytes: in order, none over either limit unless one row alone is,
    and each as long as the limits allow (the next row would break one)."""
    size = np.asarray(sizes, dtype=np.int64)
    rows = np.arange(len(size), dtype=np.int64)[::2]
    chunks = size_chunks(rows, size if sized else None, max_rows, max_bytes)
    assert np.array_equal(np.concatenate([rows[:0], *chunks]), rows)
    for i, c in enumerate(chunks):
        assert 1 <= len(c) <= max_rows
        if not sized:
            assert len(c) == max_rows or i == len(chunks) - 1
            continue
        assert len(c) == 1 or size[c].sum() <= max_bytes
        if i < len(chunks) - 1:
            nxt = chunks[i + 1][0]
            assert len(c) == max_rows or size[c].sum() + size[nxt] > max_bytes


# -- the engine --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def corpus() -> list[str]:
    base = random_documents(200, seed=41, words=(6, 120))
    return list(near_duplicate_corpus(base, 400, 0.5, seed=42, n_empty=2).texts)


def _complete_pairs_removal(texts: list[str], p: DedupParams) -> np.ndarray:
    """Keep-aware removal over every candidate pair (buckets never chained), exact Jaccard."""
    from neardup.candidates import candidate_pairs
    from neardup.engine import exact_groups
    from neardup.methods import make_method
    from neardup.removal import priority_ranks
    from neardup.textbatch import TextBatch

    batch = TextBatch(texts, p.shingle)
    method = make_method(p)
    keys = method.candidate_keys(method.signatures(batch))  # type: ignore[attr-defined]
    groups = exact_groups(batch.canonical)
    reps = np.flatnonzero((groups == np.arange(len(texts))) & ~batch.empty)
    found = candidate_pairs(keys[reps], method.min_shared, max_bucket=10**9)  # type: ignore[attr-defined]
    a, b = reps[found.a], reps[found.b]
    s = pair_scores(batch.sets(), a, b)
    ok = s >= p.resolved_threshold
    return keep_aware(
        len(texts), a[ok], b[ok], s[ok], priority_ranks(len(texts)), groups=groups
    ).kept


@pytest.mark.parametrize("threshold", [0.5, 0.8])
def test_engine_equals_keep_aware_removal_over_every_candidate_pair(
    corpus: list[str], threshold: float
) -> None:
    p = DedupParams(threshold=threshold, verify="exact")
    got = Deduplicator(p).fit(corpus)
    assert got.stats_.removed > 0
    assert np.array_equal(got.kept_, _complete_pairs_removal(corpus, p))


def test_a_cluster_of_near_copies_costs_one_comparison_a_copy() -> None:
    words = random_documents(1, seed=43, words=(300, 300))[0].split()
    rng = np.random.default_rng(44)
    copies = []
    for _ in range(400):
        w = list(words)
        w[int(rng.integers(len(w)))] = "changed"
        copies.append(" ".join(w))
    got = Deduplicator(DedupParams(threshold=0.8)).fit(copies)
    assert got.stats_.removed == len(copies) - 1
    # every copy met the one kept leader: about m comparisons, where all pairs are m²/2 = 80,000
    assert got.stats_.leader_checks < 2 * len(copies)


def test_short_texts_are_decided_exactly_near_the_threshold() -> None:
    # Texts of a few shingles fill a handful of one-permutation bins, so their estimates are far
    # off: 7 and 9 shingles (J = 0.78) or 2 and 3 (J = 0.67) were removed at t = 0.8 by
    # estimates above the old 3-sigma band (10 of these 1,200 pairs). Every decision is exact.
    texts = []
    for words, extra, seed in ((6, 1, 47), (11, 2, 48)):
        base = [" ".join(t.split()[:words]) for t in random_documents(600, seed, (words, words))]
        for i, t in enumerate(base):
            texts += [t, t + "".join(f" x{i}y{e}" for e in range(extra))]
    got = Deduplicator(DedupParams(threshold=0.8)).fit(texts)
    sets = shingle_batch(texts, ShingleParams())
    removed = np.flatnonzero(~got.kept_)
    assert got.stats_.exact_checks > 0
    j = pair_scores(sets, removed, got.duplicate_of_[removed])
    assert (j >= 0.8).all()  # no unjustified removal
    assert np.array_equal(got.duplicate_score_[removed], j)  # and the scores are exact


@settings(max_examples=40)
@given(st.integers(0, 228), st.sampled_from([0.3, 0.5, 0.8, 0.9, 1.0]))
def test_binomial_band_holds_the_binomial_quantiles(n: int, t: float) -> None:
    alpha = 1e-4
    lo, hi = binomial_band(t, 228, alpha)
    if n == 0:
        assert lo[0] <= 0.0 and hi[0] >= 1.0
        return
    assert lo[n] <= t <= hi[n]
    k_hi, k_lo = round(hi[n] * n), round(lo[n] * n)
    assert binom.sf(k_hi, n, t) <= alpha / 2 + 1e-12  # above the band: rarer than alpha / 2
    assert k_hi == 0 or binom.sf(k_hi - 1, n, t) > alpha / 2 - 1e-12  # the smallest such
    assert binom.cdf(k_lo - 1, n, t) <= alpha / 2 + 1e-12 if k_lo > 0 else True
    assert k_lo == n or binom.cdf(k_lo, n, t) > alpha / 2 - 1e-12  # the largest such


def test_effective_sizes_count_filled_bins_of_one_permutation_sketches() -> None:
    rows = np.array([[1, 1, 2, 2], [1, 2, 3, 4], [7, 7, 7, 7]], dtype=np.uint16)
    assert effective_sizes(rows, "oph").tolist() == [2, 4, 1]
    assert effective_sizes(rows, "classic").tolist() == [4, 4, 4]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(0, 300),
    width=st.sampled_from([0, 1, 4, 64, 228]),
    spread=st.sampled_from([3, 300, 65536]),
    seed=st.integers(0, 2**32 - 1),
)
def test_distinct_values_count_each_rows_distinct_values_few_rows_or_many(
    rows: int, width: int, spread: int, seed: int
) -> None:
    """The kernel sorts each row of a small sketch and stamps a value table for a large one;
    both count what ``len(set(row))`` counts."""
    values = np.random.default_rng(seed).integers(0, spread, (rows, width)).astype(np.uint16)
    expected = [len(set(row.tolist())) for row in values]
    assert _k.distinct_values(values).tolist() == expected


def test_hybrid_rechecks_fetched_in_byte_chunks_keep_what_one_chunk_keeps(
    corpus: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact re-check fetches texts in chunks of at most ``SET_CHUNK_BYTES`` (a long
    document alone): chunks of a few documents each give the same kept set, pairs and scores,
    and fetch more often."""
    from neardup import exact

    p = DedupParams(threshold=0.8, verify="hybrid")
    calls: list[int] = []

    def fit() -> Deduplicator:
        def fetch(docs: np.ndarray) -> list[str]:
            calls.append(len(docs))
            return [corpus[int(i)] for i in docs]

        dedup = Deduplicator(p)
        dedup.partial_fit(corpus)
        return dedup.finish(fetch_texts=fetch)

    whole = fit()
    fetched_whole = len(calls)
    calls.clear()
    monkeypatch.setattr(exact, "SET_CHUNK_BYTES", 2000)
    small = fit()
    assert fetched_whole > 0 and len(calls) > fetched_whole
    assert max(calls) < 64  # a chunk holds ~2 KB of text, whatever SET_CHUNK allows
    np.testing.assert_array_equal(small.kept_, whole.kept_)
    np.testing.assert_array_equal(small.duplicate_of_, whole.duplicate_of_)
    for got, want in zip(small.pairs_, whole.pairs_, strict=True):
        np.testing.assert_array_equal(got, want)


def _one_shared_key_decides(m: int) -> tuple[PairCheck, np.ndarray, np.ndarray]:
    """The method's own rule over m rows: one shared key accepts a pair, with score 1.0 (the
    check, ``count_ok`` and ``count_score`` that ``remove_by_leaders`` takes)."""
    none = np.zeros(0, dtype=np.uint64)
    no_band = np.full(2, 2.0), np.full(2, -1.0)
    check = PairCheck(
        _k.BY_COUNT, 0.5, np.zeros((0, 0), np.uint16), none, np.zeros(1, np.int64), *no_band,
        np.ones(m, np.int64),
    )  # fmt: skip
    return check, np.array([False, True]), np.array([0.0, 1.0])


def test_a_pass_cut_into_threads_lists_its_pairs_in_the_order_of_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # two components whose documents alternate in rank: 0, 2, 4 share one key, 1, 3, 5 another
    keys = np.full((6, 1), EMPTY, dtype=np.uint64)
    keys[[0, 2, 4], 0] = 10
    keys[[1, 3, 5], 0] = 20
    buckets = bucket_lists(lambda j: keys[:, j].copy(), 6, 1)
    check, ok, score = _one_shared_key_decides(6)
    rank = np.arange(6, dtype=np.int64)
    one = remove_by_leaders(buckets, rank, 1, ok, score, check, jobs=1)
    monkeypatch.setattr(leaders, "PARALLEL_PASS_DOCS", 0)
    two = remove_by_leaders(buckets, rank, 1, ok, score, check, jobs=2)
    assert one.a.tolist() == [2, 3, 4, 5] and one.b.tolist() == [0, 1, 0, 1]
    assert two.a.tolist() == one.a.tolist() and two.b.tolist() == one.b.tolist()


def test_a_pass_after_exact_scores_decides_again_only_what_they_can_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ten documents share one key, ranked 0..9. Sketches put every one at 1.0 of document 0
    but document 5, whose estimate (0.5) is in the band: pass 1 removes it on the estimate,
    its exact Jaccard (0.11) keeps it. Pass 2 decides 5 again and the documents after it in
    its bucket (which gained a leader), not 1-4; pass 3 only 6-9, whose pairs with the new
    leader 5 were in the band."""
    m, width = 10, 16
    keys = np.full((m, 1), 10, dtype=np.uint64)
    buckets = bucket_lists(lambda j: keys[:, j].copy(), m, 1)
    rows = np.zeros((m, width), dtype=np.uint16)
    rows[5, 8:] = 1
    sets = [list(range(10))] * m
    sets[5] = [0, 1, *range(100, 108)]
    band = np.full(width + 1, 0.4), np.full(width + 1, 0.6)
    none = np.zeros(0, dtype=np.uint64)
    check = PairCheck(
        _k.SKETCH_POSITIONAL, 0.5, rows, none, np.zeros(1, np.int64), *band,
        np.full(m, width, np.int64),
    )  # fmt: skip
    decided: list[list[int]] = []
    kernel = _k.leader_pass

    def recorded(*args: object) -> object:
        out = kernel(*args)  # type: ignore[arg-type]
        decided.append(np.flatnonzero(args[10]).tolist())  # the pass's ``redone``
        return out

    monkeypatch.setattr(_k, "leader_pass", recorded)
    store = SetStore(m, lambda r: _sets_of([sets[i] for i in r.tolist()]))
    ok, score = np.array([False, True]), np.array([0.0, 1.0])
    res = remove_by_leaders(buckets, np.arange(m), 1, ok, score, check, store)
    assert decided == [list(range(m)), [5, 6, 7, 8, 9], [6, 7, 8, 9]]
    assert np.flatnonzero(res.kept).tolist() == [0, 5]
    assert res.checks == 9 + (1 + 4 * 2) + 4 * 2  # pass 1, then only what was decided again


def test_no_document_in_a_bucket_is_an_empty_removal_in_any_number_of_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keys = np.array([[1], [2], [3]], dtype=np.uint64)  # no key shared: no bucket
    buckets = bucket_lists(lambda j: keys[:, j].copy(), 3, 1)
    check, ok, score = _one_shared_key_decides(0)
    monkeypatch.setattr(leaders, "PARALLEL_PASS_DOCS", 0)
    for jobs in (1, 2):
        res = remove_by_leaders(buckets, np.zeros(0, np.int64), 1, ok, score, check, jobs=jobs)
        assert len(res.kept) == 0 and len(res.a) == 0 and res.checks == 0


HOLD_SHARE = leaders.HOLD_SHARE  # the default, before any test sets another


def _template_removal(
    monkeypatch: pytest.MonkeyPatch, hold: float, budget: int | None = None, min_docs: int = 10
) -> tuple[LeaderResult, SetStore]:
    """Ten documents share one key, ranked 0..9, threshold 0.5. Sketches put every one at 1.0
    of document 0 but 2, 5 and 7 (at 1.0 of each other), whose estimates with the rest (0.5)
    are in the band: pass 1 removes them on the estimate, their exact Jaccard (0.11) keeps 2,
    which makes the pairs of the later documents with the new leader 2 wait for scores too."""
    m, width = 10, 16
    keys = np.full((m, 1), 10, dtype=np.uint64)
    buckets = bucket_lists(lambda j: keys[:, j].copy(), m, 1)
    rows = np.zeros((m, width), dtype=np.uint16)
    rows[[2, 5, 7], 8:] = 1
    sets = [[0, 1, *range(100, 108)] if d in (2, 5, 7) else list(range(10)) for d in range(m)]
    band = np.full(width + 1, 0.4), np.full(width + 1, 0.6)
    check = PairCheck(
        _k.SKETCH_POSITIONAL, 0.5, rows, np.zeros(0, np.uint64), np.zeros(1, np.int64), *band,
        np.full(m, width, np.int64),
    )  # fmt: skip
    monkeypatch.setattr(leaders, "HOLD_SHARE", hold)
    monkeypatch.setattr(leaders, "HOLD_MIN_DOCS", min_docs)
    store = SetStore(m, lambda r: _sets_of([sets[i] for i in r.tolist()]), budget=budget)
    ok, score = np.array([False, True]), np.array([0.0, 1.0])
    return remove_by_leaders(buckets, np.arange(m), 1, ok, score, check, store), store


def test_a_component_mostly_waiting_for_scores_holds_its_sets_and_ends_in_one_more_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held, store = _template_removal(monkeypatch, HOLD_SHARE)
    rounds, _ = _template_removal(monkeypatch, float("inf"))  # scored between passes only
    for field in ("kept", "duplicate_of", "score", "a", "b", "pair_score"):
        assert np.array_equal(getattr(held, field), getattr(rounds, field), equal_nan=True)
    assert np.flatnonzero(held.kept).tolist() == [0, 2]
    assert held.duplicate_of.tolist() == [-1, 0, -1, 0, 0, 2, 0, 2, 0, 0]
    assert held.rounds == 2 and rounds.rounds == 3  # 30% waited after pass 1: sets held
    assert store.computed == 10  # each set computed once, none again for a later round
    small, _ = _template_removal(monkeypatch, HOLD_SHARE, min_docs=11)  # too few documents
    assert small.rounds == 3 and np.array_equal(small.kept, held.kept)


def test_sets_gathered_for_a_component_stay_within_its_share_of_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(exact, "SET_CHUNK", 1)  # a set a chunk: gathered one by one while they fit
    rounds, _ = _template_removal(monkeypatch, float("inf"))
    gathered: list[int] = []
    gather = SetStore.gather

    def recorded(self: SetStore, *args: object) -> object:
        out = gather(self, *args)  # type: ignore[arg-type]
        gathered.append(len(out[0]))
        return out

    monkeypatch.setattr(SetStore, "gather", recorded)
    # sets of 80 bytes; half of 800 bytes is room for 5 of the 10 documents' sets
    held, store = _template_removal(monkeypatch, HOLD_SHARE, budget=800)
    for field in ("kept", "duplicate_of", "score", "a", "b", "pair_score"):
        assert np.array_equal(getattr(held, field), getattr(rounds, field), equal_nan=True)
    assert gathered == [5] and held.rounds == 3 and store.spilled == 0


def test_a_store_gathers_each_groups_sets_while_they_fit_its_room_whatever_the_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sets = [[1, 2, 3], [4], [5, 6], [7, 8, 9, 10], [11], [12, 13], [14]]
    group = np.array([0, 1, 0, 1, 0, 1, 0])  # rows 0, 2, 4, 6 and 1, 3, 5
    room = np.array([8 * 5, 8 * 5])  # group 0: 3 + 2 fit, 1 more does not; group 1: 1 + 4
    fetched: list[int] = []

    def fetch(r: np.ndarray) -> ShingleBatch:
        fetched.extend(r.tolist())
        return _sets_of([sets[i] for i in r.tolist()])

    def gathered(chunk: int) -> list[list[int]]:
        monkeypatch.setattr(exact, "SET_CHUNK", chunk)
        store = SetStore(7, fetch)
        store.add(np.array([2]))  # held: copied, not fetched again
        fetched.clear()
        rows, got = store.gather(np.arange(7), group, room)
        assert 2 not in fetched and len(store) == 1  # the store keeps none of them
        assert chunk > 1 or 6 not in fetched  # past its room, group 0 fetches no more
        return [rows.tolist(), [got.doc(i).tolist() for i in range(len(got))]]

    want = [[0, 1, 2, 3], [[1, 2, 3], [4], [5, 6], [7, 8, 9, 10]]]
    assert gathered(1) == gathered(4) == gathered(6) == want
    rows, _ = SetStore(7, fetch).gather(np.arange(7), group, None)
    assert rows.tolist() == list(range(7))


@pytest.mark.parametrize("budget", [None, 8 * 40])
def test_a_set_store_filled_in_many_adds_holds_each_set_as_fetched_and_earlier_views_stay_true(
    budget: int | None,
) -> None:
    # its buffer grows (doubling) as adds come; with a budget it spills midway to a file
    rng = np.random.default_rng(3)
    sets = [np.unique(rng.integers(0, 1 << 40, rng.integers(0, 30))).tolist() for _ in range(60)]
    store = SetStore(len(sets), lambda r: _sets_of([sets[i] for i in r.tolist()]), budget=budget)
    views = []
    for start in range(0, 60, 7):
        store.add(np.arange(start, min(start + 7, 60)))
        views.append((store.sets(), store.row.copy()))
    for view, row in views:  # each view still holds what it held when taken
        for d in np.flatnonzero(row >= 0).tolist():
            assert view.doc(int(row[d])).tolist() == sets[d]
    assert (store.held > 0) == (budget is None) and (store.spilled > 0) == (budget is not None)
    a, b = np.arange(59), np.arange(1, 60)
    want = [
        len(set(sets[x]) & set(sets[y])) / max(1, len(set(sets[x]) | set(sets[y])))
        for x, y in zip(a, b, strict=True)
    ]
    assert np.allclose(store.jaccard(a, b), want)
