"""Permuted-table Hamming search returns exactly the pairs a brute-force popcount scan returns."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup._kernels import hamming as kh
from neardup.errors import InputError, ParamError
from neardup.hamming import (
    HammingIndex,
    hamming_pairs,
    plan_tables,
)
from neardup.testing import hamming_pairs_reference

U64 = st.integers(min_value=0, max_value=2**64 - 1)
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pure_pairs(fps: list[int], k: int) -> list[tuple[int, int, int]]:
    """The obviously-correct reference: every pair, Python's own bit count."""
    return [
        (i, j, bin(fps[i] ^ fps[j]).count("1"))
        for i, j in itertools.combinations(range(len(fps)), 2)
        if bin(fps[i] ^ fps[j]).count("1") <= k
    ]


def as_list(pairs: tuple[np.ndarray, np.ndarray, np.ndarray]) -> list[tuple[int, int, int]]:
    a, b, d = pairs
    return list(zip(a.tolist(), b.tolist(), d.tolist(), strict=True))


@st.composite
def block_pool_fps(draw: st.DrawFn) -> list[int]:
    """Adversarial: every 8-bit chunk comes from a pool of two values, so blocks repeat a lot and
    runs of equal keys are long; duplicates included."""
    pools = [draw(st.lists(st.integers(0, 255), min_size=1, max_size=2)) for _ in range(8)]
    n = draw(st.integers(0, 60))
    out = []
    for _ in range(n):
        v = 0
        for pool in pools:
            v = (v << 8) | draw(st.sampled_from(pool))
        out.append(v)
    return out


@st.composite
def flipped_fps(draw: st.DrawFn) -> list[int]:
    """Adversarial: a few bases and many copies with 0-8 random bits flipped."""
    bases = draw(st.lists(U64, min_size=1, max_size=4))
    n = draw(st.integers(0, 60))
    out = []
    for _ in range(n):
        v = draw(st.sampled_from(bases))
        for bit in draw(st.lists(st.integers(0, 63), max_size=8)):
            v ^= 1 << bit
        out.append(v)
    return out


@st.composite
def k_and_blocks(draw: st.DrawFn) -> tuple[int, int]:
    k = draw(st.integers(0, 6))
    b = draw(st.integers(k + 1, min(k + 6, 20)))
    return k, b


@SETTINGS
@given(st.lists(U64, max_size=200))
def test_popcount_kernel_equals_python_bit_count(values: list[int]) -> None:
    x = np.array(values, dtype=np.uint64)
    assert kh.popcount_array(x).tolist() == [bin(v).count("1") for v in values]


@SETTINGS
@given(st.one_of(st.lists(U64, max_size=80), block_pool_fps(), flipped_fps()), k_and_blocks())
def test_permuted_tables_find_exactly_the_brute_force_pairs(
    fps: list[int], kb: tuple[int, int]
) -> None:
    k, b = kb
    x = np.array(fps, dtype=np.uint64)
    got = hamming_pairs(x, k, plan_tables(k, len(fps), blocks=b))
    assert as_list(got) == pure_pairs(fps, k)


@SETTINGS
@given(st.one_of(block_pool_fps(), flipped_fps()), st.integers(0, 6))
def test_default_plan_and_numpy_reference_agree_with_pure_python(fps: list[int], k: int) -> None:
    x = np.array(fps, dtype=np.uint64)
    want = pure_pairs(fps, k)
    assert as_list(hamming_pairs(x, k)) == want
    assert as_list(hamming_pairs_reference(x, k)) == want


def test_large_random_collection_with_planted_near_duplicates_matches_numpy_brute_force() -> None:
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2**64, 1500, dtype=np.uint64)
    flips = np.zeros(1500, np.uint64)
    for _ in range(3):
        flips ^= np.uint64(1) << rng.integers(0, 64, 1500).astype(np.uint64)
    x = np.concatenate([base, base[:700] ^ flips[:700], base[:50]])
    for k in (0, 1, 3, 5):
        got = hamming_pairs(x, k)
        want = hamming_pairs_reference(x, k)
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    assert len(hamming_pairs(x, 3)[0]) >= 700 + 50


def test_pairs_are_sorted_with_smaller_index_first_and_typed() -> None:
    x = np.array([7, 7, 6, 2**64 - 1, 7], dtype=np.uint64)
    a, b, d = hamming_pairs(x, 1)
    assert list(zip(a.tolist(), b.tolist(), d.tolist(), strict=True)) == [
        (0, 1, 0),
        (0, 2, 1),
        (0, 4, 0),
        (1, 2, 1),
        (1, 4, 0),
        (2, 4, 1),
    ]
    assert a.dtype == np.int64 and b.dtype == np.int64 and d.dtype == np.int32


def test_ignored_documents_never_pair_even_when_equal() -> None:
    x = np.array([0, 0, 0, 5], dtype=np.uint64)
    a, b, _ = hamming_pairs(x, 2, ignore=np.array([True, True, False, False]))
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [(2, 3)]


def test_narrow_fingerprints_use_only_f_bits() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2**20, 400, dtype=np.uint64)
    plan = plan_tables(2, 400, f=20)
    assert sum(s for _, s in plan.blocks) == 20
    got = hamming_pairs(x, 2, plan)
    assert as_list(got) == as_list(hamming_pairs_reference(x, 2))
    with pytest.raises(InputError, match="wider than f=20"):
        hamming_pairs(x | np.uint64(1 << 40), 2, plan)


def test_planner_picks_four_16_bit_blocks_for_a_million_fingerprints_at_k3() -> None:
    plan = plan_tables(3, 1_000_000)
    assert plan.num_blocks == 4 and plan.num_tables == 4
    assert plan.key_bits == (16, 16, 16, 16)
    text = plan.describe()
    assert "4 blocks" in text and "4 tables" in text and "considered" in text


@pytest.mark.parametrize("k", range(0, 7))
def test_every_small_block_difference_has_exactly_one_canonical_table(k: int) -> None:
    plan = plan_tables(k, 10_000)
    arr = plan.arrays()
    b = plan.num_blocks
    assert plan.num_tables == math.comb(b, k)
    assert sum(s for _, s in plan.blocks) == 64
    for mask in range(1 << b):
        t = int(arr["canon"][mask])
        if bin(mask).count("1") <= k:
            # the table's differing blocks contain the mask, and no earlier table's do
            dropped = {j for j in plan.tables[t]}
            assert {j for j in range(b) if mask >> j & 1} <= dropped
        else:
            assert t == -1


def test_planner_prefers_more_tables_when_collections_grow() -> None:
    small = plan_tables(4, 1_000)
    large = plan_tables(4, 100_000_000)
    assert large.num_tables >= small.num_tables
    assert min(large.key_bits) > min(small.key_bits)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": -1, "n": 10}, "max distance k"),
        ({"k": 64, "n": 10}, "max distance k"),
        ({"k": 3, "n": -5}, "collection size"),
        ({"k": 3, "n": 10, "blocks": 3}, "blocks must be"),
        ({"k": 3, "n": 10, "f": 65}, "fingerprint width"),
        ({"k": 3, "n": 10, "mode": "stream"}, "plan mode"),
    ],
)
def test_planner_rejects_bad_parameters_with_a_fix(kwargs: dict, message: str) -> None:
    with pytest.raises(ParamError, match=message):
        plan_tables(**kwargs)


def test_a_plan_for_smaller_k_is_refused() -> None:
    with pytest.raises(ParamError, match="plan was made for k=1"):
        hamming_pairs(np.zeros(3, np.uint64), 2, plan_tables(1, 3))


@pytest.mark.parametrize(
    "bad",
    [np.array([1.5, 2.0]), np.array([-1, 3]), np.zeros((2, 2), np.uint64), ["x"]],
)
def test_bad_fingerprints_are_refused_with_input_error(bad: object) -> None:
    with pytest.raises(InputError):
        hamming_pairs(bad, 1)  # type: ignore[arg-type]


def test_signed_nonnegative_and_python_int_inputs_are_accepted() -> None:
    assert as_list(hamming_pairs(np.array([1, 3], np.int64), 1)) == [(0, 1, 1)]
    assert as_list(hamming_pairs(np.array([2**64 - 1, 2**64 - 2], dtype=object), 1)) == [(0, 1, 1)]


# -- the query index -----------------------------------------------------------------------


def brute_query(stored: list[int], q: int, k: int) -> list[tuple[int, int]]:
    return [(i, bin(v ^ q).count("1")) for i, v in enumerate(stored) if bin(v ^ q).count("1") <= k]


@SETTINGS
@given(
    st.lists(st.one_of(st.lists(U64, max_size=30), flipped_fps()), min_size=1, max_size=5),
    st.lists(U64, max_size=5),
    st.integers(0, 5),
    st.integers(0, 40),
)
def test_index_queries_equal_brute_force_across_additions_and_rebuilds(
    batches: list[list[int]], extra_queries: list[int], k: int, delta_min: int
) -> None:
    index = HammingIndex(k, delta_min=delta_min, delta_fraction=2)
    stored: list[int] = []
    for batch in batches:
        ids = index.add(np.array(batch, dtype=np.uint64))
        assert ids.tolist() == list(range(len(stored), len(stored) + len(batch)))
        stored.extend(batch)
        queries = stored[:5] + extra_queries + [v ^ 1 for v in stored[-3:]]
        for q in queries:
            assert index.query(q) == brute_query(stored, q, k)
        qi, ii, dd = index.query_batch(np.array(queries, dtype=np.uint64))
        want = [(n, i, d) for n, q in enumerate(queries) for i, d in brute_query(stored, q, k)]
        assert list(zip(qi.tolist(), ii.tolist(), dd.tolist(), strict=True)) == want
    assert len(index) == len(stored)
    assert index.fingerprints.tolist() == stored


def test_index_rebuilds_into_sorted_tables_and_keeps_answers() -> None:
    rng = np.random.default_rng(11)
    x = rng.integers(0, 2**64, 3000, dtype=np.uint64)
    index = HammingIndex(3, delta_min=100)
    index.add(x[:2000])  # over delta_min: merged into tables
    assert index.plan_ is not None and index._delta_len == 0
    index.add(x[2000:2050])  # small: stays in the delta
    assert index._delta_len == 50
    q = x[1990:2010] ^ np.uint64(0b101)
    qi, ii, dd = index.query_batch(q)
    assert ii.tolist() == list(range(1990, 2010)) and set(dd.tolist()) == {2}
    assert qi.tolist() == list(range(20))


def test_empty_index_answers_nothing_and_bad_queries_are_refused() -> None:
    index = HammingIndex(2)
    assert index.query(5) == []
    assert len(index) == 0
    with pytest.raises(InputError, match="from 0 to 2\\*\\*64-1"):
        index.query(-1)
    with pytest.raises(ParamError):
        HammingIndex(2, plan_tables(1, 10))


@pytest.mark.parametrize("k", [0, 2, 6])
def test_index_directory_and_binary_search_paths_agree_with_brute_force(k: int) -> None:
    # k=6 keys on 9-10 bits, covered by the prefix directory alone; k=0 keys on all 64 bits,
    # found by binary search inside a directory cell.
    rng = np.random.default_rng(k)
    base = rng.integers(0, 2**64, 1500, dtype=np.uint64)
    x = np.concatenate([base, base ^ (np.uint64(1) << np.uint64(k + 5)), base[:200]])
    index = HammingIndex(k, delta_min=0)
    index.add(x)
    flip = np.uint64((1 << min(k, 2)) - 1)  # min(k, 2) bits off: stored ones stay within k
    q = np.concatenate([base[:300] ^ flip, rng.integers(0, 2**64, 50, dtype=np.uint64)])
    qi, ii, dd = index.query_batch(q)
    want = [(n, i, d) for n, v in enumerate(q.tolist()) for i, d in brute_query(x.tolist(), v, k)]
    assert list(zip(qi.tolist(), ii.tolist(), dd.tolist(), strict=True)) == want
    assert len(want) > 300


def test_query_plans_respect_the_memory_budget_but_batch_plans_do_not_need_one() -> None:
    roomy = plan_tables(6, 1_000_000, mode="query")
    tight = plan_tables(6, 1_000_000, mode="query", max_memory=100 << 20)
    assert roomy.num_tables > 7
    assert tight.num_tables * 1_000_000 * 16 <= 100 << 20 or tight.num_blocks == 7
    assert plan_tables(6, 1_000_000, max_memory=1).num_tables == roomy.num_tables
    assert "per query" in tight.describe()


def test_max_distance_past_what_the_tables_can_split_is_refused_and_the_limit_works() -> None:
    from neardup import Deduplicator
    from neardup.hamming import MAX_BLOCKS
    from neardup.params import MAX_DISTANCE, DedupParams, SimhashMethodParams

    assert MAX_DISTANCE == MAX_BLOCKS - 1  # b > k blocks, at most MAX_BLOCKS of them
    with pytest.raises(ParamError, match="from 0 to 19"):
        plan_tables(MAX_DISTANCE + 1, 10)
    with pytest.raises(ParamError, match="--max-distance"):
        SimhashMethodParams(max_distance=MAX_DISTANCE + 1)
    assert plan_tables(MAX_DISTANCE, 10).num_blocks == MAX_BLOCKS
    texts = ["one two three four five six", "one two three four five seven", "eight nine"]
    fitted = Deduplicator(DedupParams(method=SimhashMethodParams(max_distance=MAX_DISTANCE)))
    assert fitted.fit(texts).kept_.shape == (3,)
