"""Keep-aware removal == the greedy reference; its guarantees; components == networkx; buckets."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import Deduplicator, DedupParams
from neardup.candidates import EMPTY, candidate_pairs
from neardup.errors import InputError, ParamError
from neardup.removal import (
    Removal,
    components,
    keep_aware,
    priority_ranks,
    resolve_big_buckets,
)
from tests.reference import keep_aware_reference

Pairs = list[tuple[int, int, float]]


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, Pairs, list[int], list[int] | None]:
    """Small graphs: repeated pairs in both orientations, tied scores and priorities, groups."""
    n = draw(st.integers(0, 12))
    pairs: Pairs = []
    if n >= 2:
        doc = st.integers(0, n - 1)
        score = st.sampled_from([0.5, 0.75, 0.75, 0.9, 1.0])
        pairs = draw(st.lists(st.tuples(doc, doc, score), max_size=30))
    priority = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    groups: list[int] | None = None
    if draw(st.booleans()):
        groups = []
        for i in range(n):
            j = draw(st.integers(0, i))
            groups.append(i if j == i else groups[j])
    return n, pairs, priority, groups


def arrays(pairs: Pairs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    s = np.array([p[2] for p in pairs], dtype=np.float64)
    return a, b, s


def linked(pairs: Pairs, groups: list[int] | None, n: int) -> set[tuple[int, int]]:
    """Document pairs joined by a given pair or by sharing an exact-duplicate group."""
    g = list(range(n)) if groups is None else groups
    out = set()
    for x, y, _ in pairs:
        for u in range(n):
            for v in range(n):
                if g[u] == g[x] and g[v] == g[y] and u != v:
                    out |= {(u, v), (v, u)}
    out |= {(u, v) for u in range(n) for v in range(n) if u != v and g[u] == g[v]}
    return out


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_keep_aware_equals_the_greedy_reference(
    case: tuple[int, Pairs, list[int], list[int] | None],
) -> None:
    n, pairs, priority, groups = case
    a, b, s = arrays(pairs)
    got = keep_aware(n, a, b, s, np.array(priority, dtype=np.int64), groups=groups)
    kept, dup, score = keep_aware_reference(n, pairs, priority, groups)
    assert got.kept.tolist() == kept
    assert got.duplicate_of.tolist() == dup
    np.testing.assert_array_equal(got.score, np.array(score, dtype=np.float64))


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_keep_aware_guarantees_a_kept_duplicate_for_every_removal_and_no_kept_pair(
    case: tuple[int, Pairs, list[int], list[int] | None],
) -> None:
    n, pairs, priority, groups = case
    a, b, s = arrays(pairs)
    r = keep_aware(n, a, b, s, np.array(priority, dtype=np.int64), groups=groups)
    near = linked(pairs, groups, n)
    for d in np.flatnonzero(~r.kept):  # (a) a removed document's target is kept and its pair
        assert r.kept[r.duplicate_of[d]] and (int(d), int(r.duplicate_of[d])) in near
    kept = set(np.flatnonzero(r.kept).tolist())
    assert not any(u in kept and v in kept for u, v in near)  # (b)
    assert (r.duplicate_of[r.kept] == -1).all() and np.isnan(r.score[r.kept]).all()
    # Star labels: the smallest index among a kept document and its removed duplicates.
    center = np.where(r.kept, np.arange(n), r.duplicate_of)
    for c in set(center.tolist()):
        assert (r.labels[center == c] == np.flatnonzero(center == c).min()).all()


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_components_match_networkx_and_keep_the_best_member_of_each(
    case: tuple[int, Pairs, list[int], list[int] | None],
) -> None:
    n, pairs, priority, groups = case
    a, b, s = arrays(pairs)
    pr = np.array(priority, dtype=np.int64)
    r = components(n, a, b, s, pr, groups=groups)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from((x, y) for x, y, _ in pairs)
    if groups is not None:
        g.add_edges_from((i, groups[i]) for i in range(n))
    best_score: dict[tuple[int, int], float] = {}
    grp = list(range(n)) if groups is None else groups
    for x, y, sc in pairs:
        for key in ((grp[x], grp[y]), (grp[y], grp[x])):
            best_score[key] = max(sc, best_score.get(key, sc))
    for comp in nx.connected_components(g):
        members = sorted(comp)
        assert (r.labels[members] == members[0]).all()
        keeper = min(members, key=lambda d: (priority[d], d))
        assert r.kept[members].tolist() == [d == keeper for d in members]
        for d in members:
            if d == keeper:
                continue
            assert r.duplicate_of[d] == keeper
            if grp[d] == grp[keeper]:
                assert r.score[d] == 1.0
            elif (grp[d], grp[keeper]) in best_score:
                assert r.score[d] == best_score[(grp[d], grp[keeper])]
            else:
                assert np.isnan(r.score[d])


def test_chain_components_remove_c_keep_aware_keeps_it() -> None:
    a, b, s = np.array([0, 1]), np.array([1, 2]), np.array([0.9, 0.8])
    pr = priority_ranks(3)
    comp = components(3, a, b, s, pr)
    assert comp.kept.tolist() == [True, False, False]
    assert comp.duplicate_of.tolist() == [-1, 0, 0]
    assert comp.score[1] == 0.9 and np.isnan(comp.score[2])  # C has no pair with A
    ka = keep_aware(3, a, b, s, pr)
    assert ka.kept.tolist() == [True, False, True]
    assert ka.duplicate_of.tolist() == [-1, 0, -1] and ka.score[1] == 0.9
    assert ka.labels.tolist() == [0, 0, 2]


def test_removed_document_follows_its_best_scoring_kept_neighbour() -> None:
    # 0 and 1 are kept (not paired); 2 pairs with both, more strongly with 1.
    r = keep_aware(3, [2, 1, 0], [0, 2, 2], [0.8, 0.95, 0.7], priority_ranks(3))
    assert r.kept.tolist() == [True, True, False]
    assert r.duplicate_of[2] == 1 and r.score[2] == 0.95  # the repeated (0, 2) counts at 0.8
    assert r.labels.tolist() == [0, 1, 1]


def test_groups_keep_their_best_member_and_follow_the_kept_document() -> None:
    # Group {0, 2, 4} and group {1, 3}; pairs only between first members (0, 1).
    groups = np.array([0, 1, 0, 1, 0])
    lengths = np.array([5, 1, 9, 7, 3])
    pr = priority_ranks(5, "longest", lengths=lengths)
    r = keep_aware(5, [0], [1], [0.85], pr, groups=groups)
    assert r.kept.tolist() == [False, False, True, False, False]  # 2 is the longest of all
    assert r.duplicate_of.tolist() == [2, 2, -1, 2, 2]
    assert r.score.tolist()[:2] == [1.0, 0.85] and r.score[3] == 0.85 and r.score[4] == 1.0
    assert (r.labels == 0).all()
    # A pair naming a non-first member is mapped onto its group's first member.
    r2 = keep_aware(5, [2], [3], [0.85], pr, groups=groups)
    assert r2.kept.tolist() == r.kept.tolist()
    assert r2.duplicate_of.tolist() == r.duplicate_of.tolist()


def test_priority_ranks_order_by_strategy_with_ties_by_index() -> None:
    assert priority_ranks(3).tolist() == [0, 1, 2]
    assert priority_ranks(4, "longest", lengths=[3, 9, 9, 1]).tolist() == [2, 0, 1, 3]
    dates = np.array(["2024-05-01", "2020-01-01", "2020-01-01"], dtype="datetime64[D]")
    assert priority_ranks(3, "field", key=dates, prefer="min").tolist() == [2, 0, 1]
    assert priority_ranks(3, "field", key=["b", "c", "a"]).tolist() == [1, 0, 2]


def test_bad_inputs_raise_clear_errors() -> None:
    pr = priority_ranks(3)
    with pytest.raises(InputError, match="first document"):
        keep_aware(3, [0], [1], [0.9], pr, groups=[0, 0, 1])  # 1 is not a first member
    with pytest.raises(InputError, match="first document"):
        keep_aware(3, [0], [1], [0.9], pr, groups=[0, 2, 2])  # a group id after the document
    with pytest.raises(InputError, match="NaN"):
        keep_aware(3, [0], [1], [np.nan], pr)
    with pytest.raises(InputError, match="outside"):
        keep_aware(3, [0], [3], [0.9], pr)
    with pytest.raises(InputError, match="differ in length"):
        keep_aware(3, [0, 1], [1], [0.9], pr)
    with pytest.raises(InputError, match="priority"):
        keep_aware(3, [0], [1], [0.9], [0.5, 0.1, 0.2])
    with pytest.raises(ParamError, match="lengths"):
        priority_ranks(3, "longest")
    with pytest.raises(ParamError, match="strategy"):
        priority_ranks(3, "random")  # type: ignore[arg-type]
    with pytest.raises(ParamError, match="n must be"):
        priority_ranks(-1)


def test_empty_input() -> None:
    empty = np.zeros(0, dtype=np.int64)
    for policy in (keep_aware, components):
        r = policy(0, empty, empty, np.zeros(0), empty)
        assert isinstance(r, Removal) and r.kept.shape == (0,) and r.removed == 0


# -- big buckets ----------------------------------------------------------------------------------
def table_verify(sim: np.ndarray, calls: list[int]):  # type: ignore[no-untyped-def]
    def verify(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        calls.append(len(x))
        return sim[x, y]

    return verify


def test_bucket_check_that_removes_a_target_decides_its_duplicates_again() -> None:
    # 1 ~ 2 given (2 removed as 1's duplicate); the bucket {0, 1} finds 0 ~ 1; 0 !~ 2.
    sim = np.eye(3)
    sim[1, 2] = sim[2, 1] = 0.9
    sim[0, 1] = sim[1, 0] = 0.95
    pr = priority_ranks(3)
    before = keep_aware(3, [1], [2], [0.9], pr)
    assert before.kept.tolist() == [True, True, False]
    res = resolve_big_buckets(3, [1], [2], [0.9], pr, [0, 1], [0, 2], table_verify(sim, []), 0.8)
    r = res.removal
    assert r.kept.tolist() == [True, False, True]  # 2 lost its target and is kept again
    assert r.duplicate_of.tolist() == [-1, 0, -1] and r.score[1] == 0.95
    assert (res.a.tolist(), res.b.tolist(), res.score.tolist()) == ([0], [1], [0.95])
    assert res.stats.checks == 1 and res.stats.found == 1 and res.stats.starved == 0


@st.composite
def bucket_cases(
    draw: st.DrawFn,
) -> tuple[np.ndarray, Pairs, list[int], list[list[int]], int, list[int] | None]:
    """A similarity table (exact duplicates share rows), pairs found among first members, buckets."""
    n = draw(st.integers(2, 14))
    groups = list(range(n))
    if draw(st.booleans()):
        for i in range(n):
            j = draw(st.integers(0, i))
            groups[i] = i if j == i else groups[j]
    levels = st.sampled_from([0.1, 0.5, 0.85, 0.9, 1.0])
    sim = np.eye(n)
    for i in range(n):
        for j in range(i + 1, n):
            if groups[i] == groups[j]:
                sim[i, j] = sim[j, i] = 1.0
            elif i == groups[i] and j == groups[j]:
                sim[i, j] = sim[j, i] = draw(levels)
    g = np.array(groups)
    sim = sim[np.ix_(g, g)]  # every member copies its first member's row
    np.fill_diagonal(sim, 1.0)
    heads = [i for i in range(n) if groups[i] == i]
    # The given pairs: a random subset of the truly similar ones (what candidates found).
    true = [(i, j) for i in heads for j in heads if i < j and sim[i, j] >= 0.8]
    given_ = [(i, j, float(sim[i, j])) for i, j in true if draw(st.booleans())]
    priority = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    buckets = draw(st.lists(st.sets(st.sampled_from(heads), max_size=n), min_size=0, max_size=4))
    buckets = [bk for bk in buckets if len(bk) >= 2]
    max_checks = draw(st.integers(1, 20))
    return sim, given_, priority, [sorted(bk) for bk in buckets], max_checks, groups


@settings(max_examples=200, deadline=None)
@given(bucket_cases())
def test_resolved_buckets_keep_both_guarantees_and_equal_keep_aware_on_all_found_pairs(
    case: tuple[np.ndarray, Pairs, list[int], list[list[int]], int, list[int] | None],
) -> None:
    sim, given_, priority, buckets, max_checks, groups = case
    n = sim.shape[0]
    a, b, s = arrays(given_)
    members = np.array([d for bk in buckets for d in bk], dtype=np.int64)
    offsets = np.cumsum([0] + [len(bk) for bk in buckets])
    pr = np.array(priority, dtype=np.int64)
    calls: list[int] = []
    verify = table_verify(sim, calls)
    res = resolve_big_buckets(
        n, a, b, s, pr, members, offsets, verify, 0.8, groups=groups, max_checks=max_checks
    )
    r = res.removal
    assert (res.score >= 0.8).all() and (res.a < res.b).all()
    all_a, all_b = np.r_[a, res.a], np.r_[b, res.b]
    all_s = np.r_[s, res.score]
    again = keep_aware(n, all_a, all_b, all_s, pr, groups=groups)
    assert r.kept.tolist() == again.kept.tolist()
    assert r.duplicate_of.tolist() == again.duplicate_of.tolist()
    if not buckets:
        assert res.stats.checks == 0 and len(res.a) == 0
    g = np.array(groups)
    verified = set(zip(all_a.tolist(), all_b.tolist(), strict=True))
    for d in np.flatnonzero(~r.kept):  # (a) with a verified pair or an exact duplicate
        t = int(r.duplicate_of[d])
        x, y = int(g[d]), int(g[t])
        assert r.kept[t] and (x == y or (min(x, y), max(x, y)) in verified)
    group_kept = np.zeros(n, dtype=bool)
    group_kept[g[r.kept]] = True
    assert (np.bincount(g[r.kept], minlength=n) <= 1).all()  # one kept copy per group
    assert not (group_kept[all_a] & group_kept[all_b]).any()  # (b) over every verified pair
    assert res.stats.checks == sum(calls)
    assert res.stats.checks <= max_checks * len(members)
    if res.stats.starved == 0 and res.stats.pending == 0:
        for bk in buckets:  # every bucket fully resolved: no kept pair left inside it
            kept = [d for d in bk if group_kept[d]]
            assert all(sim[x, y] < 0.8 for x in kept for y in kept if x < y)


def test_boilerplate_bucket_resolves_in_linear_checks() -> None:
    n = 3000
    pr = priority_ranks(n)
    chain_a = np.arange(n - 1)
    res = resolve_big_buckets(
        n,
        chain_a,
        chain_a + 1,
        np.full(n - 1, 0.9),  # the chain candidate_pairs emits, verified similar
        pr,
        np.arange(n),
        np.array([0, n]),
        lambda x, y: np.full(len(x), 0.9),
        0.8,
        max_checks=4,
    )
    assert res.removal.kept.sum() == 1 and res.removal.kept[0]
    assert (res.removal.duplicate_of[1:] == 0).all()
    assert res.stats.checks < 2 * n and res.stats.starved == 0 and res.stats.pending == 0


def test_distinct_bucket_members_spend_their_budget_and_are_reported_starved() -> None:
    n = 500
    res = resolve_big_buckets(
        n,
        [],
        [],
        [],
        priority_ranks(n),
        np.arange(n),
        np.array([0, n]),
        lambda x, y: np.zeros(len(x)),
        0.8,
        max_checks=3,
    )
    assert res.removal.kept.all()
    assert res.stats.checks == 3 * (n - 3) + 3  # members 1, 2 compare with fewer leaders
    assert res.stats.starved == n - 4 and res.stats.rounds == 2  # 1, then 2 comparisons


def test_max_rounds_reports_pending_checks() -> None:
    res = resolve_big_buckets(
        4, [], [], [], priority_ranks(4), np.arange(4), np.array([0, 4]),
        lambda x, y: np.zeros(len(x)), 0.8, max_checks=3, max_rounds=1,
    )  # fmt: skip
    # Round 1 compares members 1, 2, 3 with leader 0; 1 + 2 comparisons were still due.
    assert res.stats.rounds == 1 and res.stats.checks == 3 and res.stats.pending == 3
    with pytest.raises(ParamError, match="max_checks"):
        resolve_big_buckets(
            2, [], [], [], priority_ranks(2), [0, 1], [0, 2], len, 0.8, max_checks=0
        )
    with pytest.raises(InputError, match="offsets"):
        resolve_big_buckets(2, [], [], [], priority_ranks(2), [0, 1], [0, 3], len, 0.8)


# -- candidate_pairs lists its big buckets --------------------------------------------------------
def brute_big_buckets(keys: np.ndarray, max_bucket: int) -> set[tuple[int, ...]]:
    out = set()
    for j in range(keys.shape[1]):
        for v in set(keys[:, j].tolist()) - {int(EMPTY)}:
            members = tuple(np.flatnonzero(keys[:, j] == v).tolist())
            if len(members) > max_bucket:
                out.add(members)
    return out


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 40),
    st.integers(1, 4),
    st.integers(2, 5),
    st.integers(0, 2**32 - 1),
)
def test_listing_big_buckets_changes_no_pair_and_lists_each_membership_once(
    n: int, k: int, max_bucket: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    values = np.array([1, 2, 3, 1 << 40, (1 << 40) + 1, int(EMPTY)], dtype=np.uint64)
    keys = values[rng.integers(0, len(values), (n, k))]
    plain = candidate_pairs(keys, r=1, max_bucket=max_bucket)
    listed = candidate_pairs(keys, r=1, max_bucket=max_bucket, list_big_buckets=True)
    assert plain.a.tobytes() == listed.a.tobytes() and plain.b.tobytes() == listed.b.tobytes()
    assert plain.count.tobytes() == listed.count.tobytes() and plain.stats == listed.stats
    assert plain.big_members.size == 0 and plain.big_offsets.tolist() == [0]
    got = [
        tuple(listed.big_members[lo:hi].tolist())
        for lo, hi in zip(listed.big_offsets[:-1], listed.big_offsets[1:], strict=True)
    ]
    assert len(got) == len(set(got)) and set(got) == brute_big_buckets(keys, max_bucket)


def test_candidates_to_removal_on_a_boilerplate_bucket() -> None:
    # 2,000 documents share one boilerplate key; families of 20 (similar inside, not across)
    # share their other keys. Family pairs come from small buckets; the big one is listed.
    n, fam = 2000, 20
    family = np.arange(n) // fam
    keys = np.empty((n, 3), dtype=np.uint64)
    keys[:, 0] = 7
    keys[:, 1] = family + 1000
    keys[:, 2] = family + 5000
    sim = lambda x, y: np.where(family[x] == family[y], 0.9, 0.2)  # noqa: E731
    found = candidate_pairs(keys, r=1, max_bucket=50, list_big_buckets=True)
    assert found.big_offsets.tolist() == [0, n] and found.big_members.tolist() == list(range(n))
    score = sim(found.a, found.b)
    ok = score >= 0.8
    res = resolve_big_buckets(
        n,
        found.a[ok],
        found.b[ok],
        score[ok],
        priority_ranks(n),
        found.big_members,
        found.big_offsets,
        sim,
        0.8,
        max_checks=8,
    )
    heads = np.arange(0, n, fam)
    assert np.flatnonzero(res.removal.kept).tolist() == heads.tolist()
    assert (res.removal.duplicate_of[~res.removal.kept] == family[~res.removal.kept] * fam).all()
    # Only the 100 kept family heads make checks, each with at most 8 better heads; the other
    # 91 heads are reported as not compared with every better head.
    assert res.stats.checks == sum(min(j, 8) for j in range(n // fam))
    assert res.stats.found == 0 and res.stats.starved == n // fam - 9


def test_deduplicator_docstring_says_components_may_remove_a_document_unlike_its_kept_one() -> None:
    words = [f"w{i}" for i in range(200)]
    a = " ".join(words)
    b = " ".join(words[:100] + ["x" + w for w in words[100:110]] + words[110:])
    c = " ".join(
        words[:100] + ["x" + w for w in words[100:110]] + ["y" + w for w in words[110:120]]
    )
    c += " " + " ".join(words[120:])
    params = DedupParams(removal="components", verify="exact")
    found = Deduplicator(params).fit([a, b, c])
    assert found.duplicate_of_.tolist() == [-1, 0, 0]  # C removed as a copy of A: A~B, B~C
    assert np.isnan(found.duplicate_score_[[0, 2]]).all()  # kept A, and C with no pair with A
    doc = " ".join((Deduplicator.__doc__ or "").split())
    assert 'under removal="components", the kept document of its component' in doc
    assert "under components for a removed one with no pair of its own" in doc
