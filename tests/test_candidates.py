"""Candidate pairs by sorting == brute-force all-pairs counting; big buckets stay bounded."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.order import radix_order, radix_sort
from neardup.candidates import (
    EMPTY,
    candidate_pairs,
    distinct,
    distinct_inverse,
    find_sorted,
    in_sorted,
    key_matches,
    matching,
    pairs_from_hits,
    sort_over_positions,
    stable_order,
)
from neardup.errors import InputError, ParamError
from tests import reference

E = int(EMPTY)


def ref_pairs(keys: list[list[int]], r: int) -> dict[tuple[int, int], int]:
    """All pairs i < j with their number of shared non-EMPTY keys in the same column, >= r."""
    out = {}
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            c = sum(1 for x, y in zip(keys[i], keys[j], strict=True) if x == y and x != E)
            if c >= r:
                out[(i, j)] = c
    return out


def as_dict(res: object) -> dict[tuple[int, int], int]:
    a, b, c = res.a, res.b, res.count  # type: ignore[attr-defined]
    return {(int(x), int(y)): int(z) for x, y, z in zip(a, b, c, strict=True)}


# Few distinct values so that sharing is common; also values differing only in low bits (which
# collide after the kernel's truncation to high bits) and EMPTY.
key_values = st.sampled_from([0, 1, 2, 3, 7, 1 << 40, (1 << 40) + 1, E - 1, E - 2, E, 12345])


@st.composite
def key_matrices(draw: st.DrawFn) -> np.ndarray:
    n = draw(st.integers(0, 30))
    k = draw(st.integers(1, 5))
    rows = draw(st.lists(st.lists(key_values, min_size=k, max_size=k), min_size=n, max_size=n))
    return np.array(rows, dtype=np.uint64).reshape(n, k)


@settings(max_examples=150, deadline=None)
@given(key_matrices(), st.integers(1, 5))
def test_candidate_pairs_equal_brute_force_counting(keys: np.ndarray, r: int) -> None:
    r = min(r, keys.shape[1])
    res = candidate_pairs(keys, r=r, max_bucket=10_000)
    want = ref_pairs([[int(v) for v in row] for row in keys], r)
    assert as_dict(res) == want
    assert res.a.dtype == np.int64 and res.b.dtype == np.int64 and res.count.dtype == np.int32
    assert (res.a < res.b).all()
    order = np.lexsort((res.b, res.a))
    assert (order == np.arange(len(res))).all()  # sorted by a, then b
    assert res.stats.big_buckets == 0 and res.stats.pairs == len(res)


def components(n: int, pairs: object) -> set[frozenset[int]]:
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(pairs)  # type: ignore[arg-type]
    return {frozenset(c) for c in nx.connected_components(g)}


@settings(max_examples=100, deadline=None)
@given(key_matrices(), st.integers(2, 4))
def test_big_bucket_chaining_keeps_r1_connectivity(keys: np.ndarray, max_bucket: int) -> None:
    n = keys.shape[0]
    res = candidate_pairs(keys, r=1, max_bucket=max_bucket)
    want = ref_pairs([[int(v) for v in row] for row in keys], 1)
    got = set(zip(res.a.tolist(), res.b.tolist(), strict=True))
    assert got <= set(want)  # chains only link documents that really share a key
    assert components(n, got) == components(n, want)


@settings(max_examples=100, deadline=None)
@given(key_matrices(), st.integers(2, 4), st.data())
def test_big_buckets_with_identical_groups_only_link_same_group(
    keys: np.ndarray, max_bucket: int, data: st.DataObject
) -> None:
    n = keys.shape[0]
    ident = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.int64)
    res = candidate_pairs(keys, r=1, max_bucket=max_bucket, identical=ident)
    small = candidate_pairs(keys, r=1, max_bucket=10_000)
    got = set(zip(res.a.tolist(), res.b.tolist(), strict=True))
    assert got <= set(zip(small.a.tolist(), small.b.tolist(), strict=True))
    if res.stats.big_buckets == 0:
        assert got == set(zip(small.a.tolist(), small.b.tolist(), strict=True))
    # Every same-group pair sharing a key stays connected.
    comps = components(n, got)
    where = {d: c for c in comps for d in c}
    for a, b in zip(small.a.tolist(), small.b.tolist(), strict=True):
        if ident[a] == ident[b]:
            assert where[a] == where[b]


def test_boilerplate_bucket_of_5000_documents_stays_linear() -> None:
    rng = np.random.default_rng(0)
    n, k = 6000, 4
    keys = rng.integers(0, 2**63, (n, k), dtype=np.int64).view(np.uint64)
    keys[:5000, 2] = np.uint64(424242)  # a boilerplate feature shared by 5,000 documents
    res = candidate_pairs(keys, r=1, max_bucket=200)
    st_ = res.stats
    assert st_.big_buckets == 1 and st_.big_bucket_docs == 5000 and st_.big_bucket_slots == 5000
    assert st_.big_bucket_pairs == 4999 and len(res) == 4999
    assert st_.big_bucket_quadratic_pairs == 5000 * 4999 // 2
    assert st_.largest_bucket == 5000
    assert (res.a[:3] == [0, 1, 2]).all() and (res.b[:3] == [1, 2, 3]).all()  # a chain
    # With exact-duplicate groups: only same-group members are chained.
    ident = np.arange(n, dtype=np.int64)
    ident[:5000] = np.arange(5000) % 10
    res2 = candidate_pairs(keys, r=1, max_bucket=200, identical=ident)
    assert res2.stats.big_bucket_pairs == 5000 - 10 and len(res2) == 4990
    assert (ident[res2.a] == ident[res2.b]).all()


def test_counts_and_threshold_r() -> None:
    keys = np.array([[1, 2, 3], [1, 2, 9], [1, 8, 9], [5, 6, 7]], dtype=np.uint64)
    r1 = candidate_pairs(keys, r=1)
    assert as_dict(r1) == {(0, 1): 2, (0, 2): 1, (1, 2): 2}
    assert as_dict(candidate_pairs(keys, r=2)) == {(0, 1): 2, (1, 2): 2}
    assert as_dict(candidate_pairs(keys, r=3)) == {}
    assert r1.stats.raw_pairs == 5


def test_keys_match_only_within_their_column() -> None:
    keys = np.array([[1, 2], [2, 1]], dtype=np.uint64)
    assert len(candidate_pairs(keys)) == 0


def test_empty_documents_get_no_pairs() -> None:
    keys = np.array([[E, E], [E, E], [3, 4], [3, 4]], dtype=np.uint64)
    assert as_dict(candidate_pairs(keys)) == {(2, 3): 2}
    mask = np.array([False, False, False, True])
    assert len(candidate_pairs(keys, empty=mask)) == 0
    assert keys[3, 0] == 3  # the caller's array is not modified


def test_output_is_deterministic_and_independent_of_document_order_up_to_relabeling() -> None:
    rng = np.random.default_rng(4)
    keys = rng.integers(0, 20, (500, 3)).astype(np.uint64)
    res = candidate_pairs(keys, r=1)
    perm = rng.permutation(500)
    res_p = candidate_pairs(keys[perm], r=1)
    back = {
        tuple(sorted((int(perm[a]), int(perm[b])))) for a, b in zip(res_p.a, res_p.b, strict=True)
    }
    assert back == set(zip(res.a.tolist(), res.b.tolist(), strict=True))
    again = candidate_pairs(keys, r=1)
    assert (
        (again.a == res.a).all() and (again.b == res.b).all() and (again.count == res.count).all()
    )


def test_candidate_pairs_reject_bad_input() -> None:
    good = np.zeros((3, 2), dtype=np.uint64)
    with pytest.raises(InputError, match="uint64"):
        candidate_pairs(np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(InputError, match="2-D"):
        candidate_pairs(np.zeros(3, dtype=np.uint64))
    with pytest.raises(ParamError, match="r must"):
        candidate_pairs(good, r=3)
    with pytest.raises(ParamError, match="max_bucket"):
        candidate_pairs(good, max_bucket=1)
    with pytest.raises(InputError, match="identical"):
        candidate_pairs(good, identical=np.zeros(2, dtype=np.int64))
    with pytest.raises(InputError, match="empty"):
        candidate_pairs(good, empty=np.zeros(3, dtype=np.int64))


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 60),
    st.integers(1, 6),
    st.integers(1, 3),
    st.integers(2, 5),
    st.integers(0, 2**32),
)
def test_threads_over_columns_change_nothing(n: int, k: int, r: int, cap: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 4, size=(n, k)).astype(np.uint64)  # few values: big buckets too
    r = min(r, k)
    one = candidate_pairs(keys, r, max_bucket=cap, list_big_buckets=True)
    for jobs in (2, 3):
        many = candidate_pairs(keys, r, max_bucket=cap, list_big_buckets=True, jobs=jobs)
        assert np.array_equal(many.a, one.a) and np.array_equal(many.b, one.b)
        assert np.array_equal(many.count, one.count) and many.stats == one.stats
        assert np.array_equal(many.big_members, one.big_members)
        assert np.array_equal(many.big_offsets, one.big_offsets)


@given(
    st.lists(st.integers(0, 6), max_size=30),
    st.lists(st.integers(0, 6), max_size=30),
)
def test_key_matches_lists_every_equal_key_pair_once(keys: list[int], probes: list[int]) -> None:
    i, j = key_matches(np.array(keys, dtype=np.uint64), np.array(probes, dtype=np.uint64))
    found = sorted(zip(i.tolist(), j.tolist(), strict=True))
    expect = sorted((a, b) for a, x in enumerate(keys) for b, y in enumerate(probes) if x == y)
    assert found == expect
    assert list(j) == sorted(j)  # grouped by probe


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.sampled_from([0, 1, 2, 2**63, 2**64 - 1])), max_size=40
    ),
    st.lists(
        st.tuples(st.sampled_from([0, 1, 2, 3, 2**63, 2**64 - 1]), st.integers(0, 2**40)),
        max_size=40,
    ),
    st.integers(1, 3),
)
def test_pairs_from_hits_count_every_listing_one_row_at_a_time_as_the_reference(
    postings: list[tuple[int, int]], hits: list[tuple[int, int]], r: int
) -> None:
    """Rows in any order, keys over the whole 64-bit range, hits repeating keys and
    documents: the pairs listed at least r times, sorted by row then document."""
    rows, keys = [p[0] for p in postings], [p[1] for p in postings]
    hit_keys, hit_docs = [h[0] for h in hits], [h[1] for h in hits]
    q, d = pairs_from_hits(
        np.array(rows, dtype=np.int64), np.array(keys, dtype=np.uint64),
        np.array(hit_keys, dtype=np.uint64), np.array(hit_docs, dtype=np.int64), r,
    )  # fmt: skip
    want = reference.pairs_from_hits(rows, keys, hit_keys, hit_docs, r)
    assert list(zip(q.tolist(), d.tolist(), strict=True)) == want
    assert q.dtype == d.dtype == np.int64


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.integers(-3, 40), max_size=30), max_size=4),
    st.sets(st.integers(-3, 40), max_size=20),
    st.sampled_from(["int64", "uint64", "mixed"]),
)
def test_membership_and_position_in_a_sorted_set_are_numpys_isin_and_searchsorted(
    stretches: list[list[int]], members: set[int], dtype: str
) -> None:
    """Values in any order, or in ascending stretches (a store's runs) where the search gallops
    on; signed, unsigned over the whole 64-bit range, or of two types (numpy's search)."""
    flat = [x for s in stretches for x in (sorted(s) if len(s) % 2 else s)]
    if dtype == "int64":
        v, ordered = np.array(flat, np.int64), np.array(sorted(members), np.int64)
    else:  # the top of the range, where a signed comparison would go wrong
        top = 2**64 - 41
        v = np.array([x % 2**64 if x < 0 else top + x for x in flat], np.uint64)
        ordered = np.array(sorted(x % 2**64 if x < 0 else top + x for x in members), np.uint64)
        if dtype == "mixed":
            v = np.array(flat, np.int64)
    assert in_sorted(v, ordered).tolist() == np.isin(v, ordered).tolist()
    at = find_sorted(v, ordered)  # the position of each one held, -1 for the others
    assert at.dtype == np.int64
    assert all(ordered[a] == x if a >= 0 else x not in ordered for a, x in zip(at, v, strict=True))


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.lists(st.integers(0, 2**64 - 1), max_size=40).map(lambda x: np.array(x, np.uint64)),
        st.lists(st.integers(0, 60), max_size=40).map(lambda x: np.array(x, np.int64)),
        st.lists(st.integers(-5, 60), max_size=40).map(lambda x: np.array(x, np.int64)),
        st.lists(st.integers(0, 60), max_size=40).map(lambda x: np.array(x, np.uint32)),
    ),
    st.booleans(),
)
def test_distinct_values_are_numpys_unique_whether_or_not_they_ascend(
    v: np.ndarray, ascending: bool
) -> None:
    """In one pass (ascending), by a table (small non-negative integers) or by a sort."""
    v = np.sort(v) if ascending else v
    got = distinct(v)
    assert got.tolist() == np.unique(v).tolist() and got.dtype == v.dtype


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(0, 50), st.integers(0, 2**62), st.integers(-(2**63), 2**63 - 1)),
        max_size=40,
    )
)
def test_distinct_inverse_is_numpys_unique_by_table_or_by_hash(values: list[int]) -> None:
    """Document numbers few against the count (a table of those present) or spread, negative
    or 64-bit keys (numbered by a hash table, the distinct ones sorted)."""
    v = np.array(values, dtype=np.int64)
    found, inverse = distinct_inverse(v)
    want, want_inverse = np.unique(v, return_inverse=True)
    assert found.tolist() == want.tolist() and inverse.tolist() == want_inverse.tolist()
    assert found.dtype == inverse.dtype == np.int64


def test_distinct_inverse_of_many_repeated_keys_colliding_in_the_table() -> None:
    rng = np.random.default_rng(11)
    keys = (rng.choice(2**20, 5000, replace=False).astype(np.int64) << 40) | 7  # spread, alike
    v = keys[rng.integers(0, len(keys), 60_000)]
    found, inverse = distinct_inverse(v)
    want, want_inverse = np.unique(v, return_inverse=True)
    assert found.tolist() == want.tolist() and inverse.tolist() == want_inverse.tolist()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 30), max_size=60),
    st.lists(st.integers(0, 30), max_size=20),
    st.booleans(),
    st.booleans(),
)
def test_matching_positions_are_every_equal_key_wanted_by_wanted(
    keys: list[int], wanted: list[int], ascending: bool, packed: bool
) -> None:
    """Keys with repeats at the top of the 64-bit range, wanted in ascending order (a lookup's
    distinct keys) or any order, keys contiguous or read in place from packed records."""
    top = 2**64 - 31
    ordered = np.array(sorted(top + k for k in keys), np.uint64)
    asked = sorted(set(wanted)) if ascending else wanted
    values = np.array([top + w for w in asked], np.uint64)
    if packed:  # a strided view, as the index's records hold keys beside documents
        records = np.zeros(len(ordered), dtype=[("key", "<u8"), ("doc", "<u4")])
        records["key"] = ordered
        ordered = records["key"]
    expected = [j for v in values.tolist() for j, k in enumerate(ordered.tolist()) if k == v]
    got = matching(values, ordered)
    assert got.dtype == np.int64 and got.tolist() == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=40),
    st.lists(st.integers(0, 39), max_size=60),
    st.integers(0, 63),
)
def test_radix_order_is_the_stable_ascending_order_of_the_keys(
    pool: list[int], picks: list[int], shift: int
) -> None:
    """Against Python's stable sort: keys with repeats, any byte the same throughout (a skipped
    pass: ``shift`` keeps only some bits), the top of the 64-bit range."""
    keys = [(pool[p % len(pool)] >> shift) << shift for p in picks] if pool else []
    expected = sorted(range(len(keys)), key=lambda i: keys[i])
    got = radix_order(np.array(keys, dtype=np.uint64))
    assert got.dtype == np.int64 and got.tolist() == expected


@pytest.mark.parametrize("dtype", [np.uint64, np.int64, np.int32, np.uint16, np.int8])
@pytest.mark.parametrize("n", [0, 7, 5000, 70000])
def test_stable_order_is_numpys_stable_argsort_for_every_integer_type(dtype: type, n: int) -> None:
    """Below and above the size the kernel takes over, negative values and repeats included."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(n)
    values = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    values[::3] = values[0] if n else values[::3]
    got = stable_order(values)
    assert got.dtype == np.int64
    assert got.tolist() == np.argsort(values, kind="stable").tolist()


def test_stable_order_refuses_what_is_not_integers() -> None:
    with pytest.raises(TypeError, match="integers"):
        stable_order(np.array([0.5, 0.25]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=60), st.integers(0, 7))
def test_radix_sort_from_the_first_digit_is_pythons_sort(values: list[int], first: int) -> None:
    """All digits: any values; from a later digit: values whose lower digits ascend in input
    order among values equal above them (here: zero)."""
    low = (1 << (8 * first)) - 1
    above = [v & ~low for v in values]
    assert radix_sort(np.array(values, np.uint64), 0).tolist() == sorted(values)
    assert radix_sort(np.array(above, np.uint64), first).tolist() == sorted(above)


@pytest.mark.parametrize("n", [0, 9, 5000, 300000])
def test_sort_over_positions_is_numpys_sort_of_keys_packed_over_positions(n: int) -> None:
    """As ``column_buckets`` packs a column: a key's high bits over each document's position,
    keys repeated and EMPTY among them, below and above the size the kernel takes over."""
    rng = np.random.default_rng(n)
    bits = max(1, (n - 1).bit_length())
    low = np.uint64((1 << bits) - 1)
    keys = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
    keys[::5] = np.uint64(E)
    keys[1::7] = keys[3] if n > 3 else keys[1::7]
    near = rng.integers(0, 1 << 12, size=n // 3, dtype=np.uint64)  # keys that differ only
    keys[2::3] = near[: len(keys[2::3])] << np.uint64(bits)  # just above the positions
    packed = (keys & ~low) | np.arange(n, dtype=np.uint64)
    assert sort_over_positions(packed, bits).tolist() == np.sort(packed).tolist()
