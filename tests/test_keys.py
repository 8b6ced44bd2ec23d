"""The (column, key) fold and the destinations of 64-bit values: the kernels give, bit for bit,
the NumPy formulas they replaced (stored index files and every regrouping depend on them)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.hashing import GOLDEN, M1, M2
from neardup.dask.bundles import spread
from neardup.methods.base import column_keys

EDGES = [0, 1, 2, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1, int(GOLDEN)]
U64 = st.one_of(st.sampled_from(EDGES), st.integers(0, 2**64 - 1))
I64 = st.one_of(
    st.sampled_from([-(2**63), -2, -1, 0, 1, 2**63 - 1]), st.integers(-(2**63), 2**63 - 1)
)
#: destination counts: small, about 2**16 (where the split's sort changes), and far beyond
N_DESTS = st.one_of(
    st.integers(1, 40),
    st.integers(2**16 - 3, 2**16 + 3),
    st.integers(1, 2**63 - 1),
)


def reference_column_keys(col: np.ndarray, key: np.ndarray) -> npt.NDArray[np.uint64]:
    """The fold as NumPy computed it before the kernel (the key of stored index postings)."""
    with np.errstate(over="ignore"):
        x = key.astype(np.uint64) ^ ((col.astype(np.uint64) + np.uint64(1)) * GOLDEN)
        x = (x ^ (x >> np.uint64(33))) * M1
        x = (x ^ (x >> np.uint64(33))) * M2
        return np.asarray(x ^ (x >> np.uint64(33)), dtype=np.uint64)


def reference_spread(values: np.ndarray, n: int) -> npt.NDArray[np.int64]:
    """The destinations as NumPy computed them before the kernel."""
    with np.errstate(over="ignore"):
        x = values.astype(np.uint64) * GOLDEN
        x ^= x >> np.uint64(29)
        return (x % np.uint64(max(n, 1))).astype(np.int64)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(I64, U64), max_size=60))
def test_column_keys_equal_the_numpy_formula(rows: list[tuple[int, int]]) -> None:
    col = np.asarray([c for c, _ in rows], dtype=np.int64)
    key = np.asarray([k for _, k in rows], dtype=np.uint64)
    got = column_keys(col, key)
    assert got.dtype == np.uint64
    assert got.tolist() == reference_column_keys(col, key).tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), U64), max_size=30))
def test_column_keys_of_narrow_columns_wrap_as_astype_does(rows: list[tuple[int, int]]) -> None:
    col = np.asarray([c for c, _ in rows], dtype=np.int32)
    key = np.asarray([k for _, k in rows], dtype=np.uint64)
    assert column_keys(col, key).tolist() == reference_column_keys(col, key).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(U64, max_size=60), N_DESTS)
def test_spread_equals_the_numpy_formula(values: list[int], n: int) -> None:
    v = np.asarray(values, dtype=np.uint64)
    got = spread(v, n)
    assert got.dtype == np.int64
    assert got.tolist() == reference_spread(v, n).tolist()
    assert ((got >= 0) & (got < n)).all()


@settings(max_examples=100, deadline=None)
@given(st.lists(I64, max_size=40), st.integers(0, 2**16 + 3))
def test_spread_of_signed_values_and_no_destinations(values: list[int], n: int) -> None:
    v = np.asarray(values, dtype=np.int64)  # labels and positions come signed
    assert spread(v, n).tolist() == reference_spread(v, n).tolist()


def test_known_values_stay_as_stored_index_files_have_them() -> None:
    col = np.asarray([0, 1, -1, 7])
    key = np.asarray([0, 2**64 - 1, 12345, 2**63], dtype=np.uint64)
    assert column_keys(col, key).tolist() == [
        11286133854226296554,
        13578631402308148426,
        1716623506685013753,
        9719440390211885546,
    ]
    values = np.asarray([0, 1, 2**64 - 1, 2**63, int(GOLDEN)], dtype=np.uint64)
    assert spread(values, 9).tolist() == [0, 0, 8, 6, 8]
    assert spread(np.arange(5), 65537).tolist() == [0, 65140, 64735, 1781, 63934]


def test_empty_inputs() -> None:
    empty = np.zeros(0, dtype=np.uint64)
    assert column_keys(np.zeros(0, dtype=np.int64), empty).shape == (0,)
    assert spread(empty, 9).shape == (0,)
    assert spread(empty, 0).dtype == np.int64
