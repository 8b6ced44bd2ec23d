"""Exact resemblance, containment and Dice equal their set definitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.resemblance import intersection_size
from neardup.errors import ParamError
from neardup.resemblance import containment, dice, jaccard, pair_scores
from neardup.shingles import ShingleBatch, shingle_batch

small_sets = st.sets(st.integers(min_value=0, max_value=60), max_size=30)


def _arr(s: set[int]) -> np.ndarray:
    return np.array(sorted(s), dtype=np.uint64)


@settings(max_examples=200, deadline=None)
@given(x=small_sets, y=small_sets)
def test_measures_equal_set_definitions(x: set[int], y: set[int]) -> None:
    inter = len(x & y)
    assert jaccard(_arr(x), _arr(y)) == (inter / len(x | y) if x | y else 0.0)
    assert containment(_arr(x), _arr(y)) == (inter / len(x) if x else 0.0)
    assert dice(_arr(x), _arr(y)) == (2 * inter / (len(x) + len(y)) if x or y else 0.0)


@settings(max_examples=50, deadline=None)
@given(sets=st.lists(small_sets, min_size=2, max_size=6))
def test_pair_scores_equal_pairwise_functions(sets: list[set[int]]) -> None:
    fps = np.concatenate([_arr(s) for s in sets]).astype(np.uint64)
    offsets = np.cumsum([0] + [len(s) for s in sets]).astype(np.int64)
    batch = ShingleBatch(fps, offsets)
    a, b = np.triu_indices(len(sets), k=1)
    for measure, fn in (("jaccard", jaccard), ("containment", containment), ("dice", dice)):
        got = pair_scores(batch, a, b, measure)  # type: ignore[arg-type]
        assert got.tolist() == [fn(_arr(sets[i]), _arr(sets[j])) for i, j in zip(a, b, strict=True)]


@settings(max_examples=300, deadline=None)
@given(
    x=st.sets(st.integers(min_value=0, max_value=2**64 - 1), max_size=40),
    y=st.sets(st.integers(min_value=0, max_value=2**64 - 1), max_size=40),
    shared=st.sets(st.integers(min_value=0, max_value=2**64 - 1), max_size=40),
)
def test_intersection_kernel_counts_common_fingerprints_over_the_whole_64_bit_range(
    x: set[int], y: set[int], shared: set[int]
) -> None:
    """The merge kernel against Python's set intersection, values up to 2**64 - 1 included."""
    a, b = x | shared, y | shared
    assert intersection_size(_arr(a), _arr(b)) == len(a & b)
    assert intersection_size(_arr(b), _arr(a)) == len(a & b)


def test_retweet_with_prefix_is_contained_in_the_original() -> None:
    original = "markets rallied today as the central bank held interest rates steady again"
    batch = shingle_batch([original, "RT @someone: " + original])
    assert pair_scores(batch, np.array([0]), np.array([1]), "containment")[0] == 1.0
    assert pair_scores(batch, np.array([0]), np.array([1]), "jaccard")[0] < 1.0


def test_out_of_range_pairs_are_rejected() -> None:
    batch = shingle_batch(["a b c"])
    with pytest.raises(ParamError, match="pair indices"):
        pair_scores(batch, np.array([0]), np.array([3]))


def test_pair_functions_refuse_non_integer_indices() -> None:
    from neardup.minhash import estimate_pairs, sketch_batch

    batch = shingle_batch(["a b c d", "a b c e"])
    with pytest.raises(ParamError, match="pair index array a must hold integers, got float64"):
        pair_scores(batch, np.array([0.7]), np.array([1]))
    with pytest.raises(ParamError, match="pair index array b must hold integers, got float64"):
        pair_scores(batch, [0], [1.2])
    with pytest.raises(ParamError, match="must hold integers, got bool"):
        estimate_pairs(sketch_batch(batch), [True], [False])
    assert pair_scores(batch, [], []).shape == (0,)


@pytest.mark.parametrize("fn", [jaccard, containment, dice])
def test_pair_measures_refuse_unsorted_duplicated_or_2d_sets(fn: object) -> None:
    good = np.array([1, 2, 3], dtype=np.uint64)
    for bad in (np.array([3, 1, 2]), np.array([1, 1, 2])):
        with pytest.raises(ParamError, match="x must be sorted and unique"):
            fn(bad, good)  # type: ignore[operator]
        with pytest.raises(ParamError, match="y must be sorted and unique"):
            fn(good, bad)  # type: ignore[operator]
    with pytest.raises(ParamError, match="x must be a 1-d array"):
        fn(np.array([[1, 2], [3, 4]]), good)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("x", "message"),
    [
        ([-1, 2], r"got -1"),
        (["a"], r"got <U1 values"),
        ([1.5, 2.7], r"got float 1.5"),
        (np.array([1.5, 2.7]), r"got float64 values"),
        ([True], r"got bool values"),
        ([2**64], r"got 18446744073709551616"),
        (np.array([3, None], dtype=object), r"got NoneType None"),
    ],
)
def test_jaccard_refuses_inputs_that_are_not_uint64_fingerprints(x: object, message: str) -> None:
    with pytest.raises(ParamError, match=r"x must hold integer fingerprints .*" + message):
        jaccard(x, [2])  # type: ignore[arg-type]


def test_jaccard_takes_python_ints_up_to_the_largest_uint64() -> None:
    assert jaccard([1, 2**64 - 1], [2**64 - 1]) == 0.5  # type: ignore[arg-type]
    assert jaccard(np.array([1, 2], dtype=np.int32), np.array([2], dtype=np.uint8)) == 0.5
    assert jaccard([], []) == 0.0  # type: ignore[arg-type]
