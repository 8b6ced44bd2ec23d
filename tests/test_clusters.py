"""Union-find labels == networkx components (min index); representatives: one per cluster."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.clusters import (
    choose_representatives,
    cluster_labels,
    cluster_members,
    cluster_sizes,
)
from neardup.errors import InputError, ParamError


def nx_labels(n: int, edges: list[tuple[int, int]]) -> list[int]:
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    labels = [0] * n
    for comp in nx.connected_components(g):
        m = min(comp)
        for d in comp:
            labels[d] = m
    return labels


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    n = draw(st.integers(0, 60))
    if n == 0:
        return 0, []
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=80))
    return n, edges


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_labels_equal_networkx_components_min_index(
    graph: tuple[int, list[tuple[int, int]]],
) -> None:
    n, edges = graph
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    labels = cluster_labels(n, a, b)
    assert labels.dtype == np.int64 and labels.shape == (n,)
    assert labels.tolist() == nx_labels(n, edges)


@settings(max_examples=100, deadline=None)
@given(graphs(), st.randoms(use_true_random=False))
def test_labels_invariant_to_pair_order_direction_and_duplication(
    graph: tuple[int, list[tuple[int, int]]], rnd: object
) -> None:
    n, edges = graph
    base = cluster_labels(n, [e[0] for e in edges], [e[1] for e in edges])
    shuffled = [(y, x) if rnd.random() < 0.5 else (x, y) for x, y in edges * 2]  # type: ignore[attr-defined]
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    other = cluster_labels(n, [e[0] for e in shuffled], [e[1] for e in shuffled])
    assert (base == other).all()


def test_long_chain_is_one_cluster_labelled_zero() -> None:
    n = 200_000
    a = np.arange(n - 1, 0, -1, dtype=np.int64)  # reversed order: worst case without compression
    labels = cluster_labels(n, a, a - 1)
    assert (labels == 0).all()


def test_cluster_labels_reject_bad_pairs() -> None:
    with pytest.raises(InputError, match="outside"):
        cluster_labels(3, [0], [3])
    with pytest.raises(InputError, match="outside"):
        cluster_labels(3, [-1], [1])
    with pytest.raises(InputError, match="differ in length"):
        cluster_labels(3, [0, 1], [1])
    with pytest.raises(InputError, match="integer"):
        cluster_labels(3, [0.5], [1.0])
    with pytest.raises(ParamError):
        cluster_labels(-1, [], [])


def test_sizes_and_members() -> None:
    labels = cluster_labels(6, [0, 4, 2], [3, 5, 4])
    assert labels.tolist() == [0, 1, 2, 0, 2, 2]
    assert cluster_sizes(labels).tolist() == [2, 1, 3, 2, 3, 3]
    members, offsets = cluster_members(labels)
    groups = [members[offsets[c] : offsets[c + 1]].tolist() for c in range(len(offsets) - 1)]
    assert groups == [[0, 3], [1], [2, 4, 5]]
    m0, o0 = cluster_members(np.zeros(0, dtype=np.int64))
    assert m0.size == 0 and o0.tolist() == [0]


@settings(max_examples=100, deadline=None)
@given(graphs(), st.data())
def test_exactly_one_representative_per_cluster_and_it_is_the_preferred_one(
    graph: tuple[int, list[tuple[int, int]]], data: st.DataObject
) -> None:
    n, edges = graph
    labels = cluster_labels(n, [e[0] for e in edges], [e[1] for e in edges])
    lengths = np.array(
        data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype=np.int64
    )
    for strategy, kwargs, pick in [
        ("first", {}, lambda ms: min(ms)),
        ("longest", {"lengths": lengths}, lambda ms: min(ms, key=lambda x: (-lengths[x], x))),
        ("field", {"key": lengths}, lambda ms: min(ms, key=lambda x: (-lengths[x], x))),
        (
            "field",
            {"key": lengths, "prefer": "min"},
            lambda ms: min(ms, key=lambda x: (lengths[x], x)),
        ),
    ]:
        kept = choose_representatives(labels, strategy, **kwargs)  # type: ignore[arg-type]
        assert kept.dtype == np.bool_ and kept.shape == (n,)
        for lab in set(labels.tolist()):
            ms = [d for d in range(n) if labels[d] == lab]
            assert [d for d in ms if kept[d]] == [pick(ms)]


def test_field_strategy_accepts_strings() -> None:
    labels = np.array([0, 0, 0, 3])
    kept = choose_representatives(labels, "field", key=np.array(["b", "c", "a", "z"]), prefer="min")
    assert kept.tolist() == [False, False, True, True]


def test_choose_representatives_rejects_bad_arguments() -> None:
    labels = np.array([0, 0, 2])
    with pytest.raises(ParamError, match="lengths"):
        choose_representatives(labels, "longest")
    with pytest.raises(ParamError, match="key"):
        choose_representatives(labels, "field")
    with pytest.raises(ParamError, match="strategy"):
        choose_representatives(labels, "random")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="one value per document"):
        choose_representatives(labels, "longest", lengths=[1, 2])
