"""MinHash sketches: kernels equal the reference; empty documents; batch invariance; estimators."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ParamError
from neardup.minhash import EMPTY, estimate, estimate_pairs, sketch, sketch_texts
from neardup.params import SketchParams
from neardup.shingles import shingle_batch
from tests import reference as ref

KINDS = ["oph", "classic", "bottomk"]
REFERENCE = {"oph": ref.sketch_oph, "classic": ref.sketch_classic, "bottomk": ref.sketch_bottomk}

fingerprint_sets = st.lists(
    st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=40), min_size=1, max_size=5
)


def _pack(sets: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    fps = np.array([f for s in sets for f in s], dtype=np.uint64)
    offsets = np.cumsum([0] + [len(s) for s in sets]).astype(np.int64)
    return fps, offsets


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None)
@given(
    sets=fingerprint_sets, t=st.sampled_from([1, 2, 7, 16, 64, 228]), seed=st.integers(0, 2**63 - 1)
)
def test_sketch_kernels_equal_reference(
    kind: str, sets: list[list[int]], t: int, seed: int
) -> None:
    fps, offsets = _pack(sets)
    out = sketch(fps, offsets, SketchParams(kind=kind, t=t, seed=seed))  # type: ignore[arg-type]
    assert out.shape == (len(sets), t)
    for i, s in enumerate(sets):
        assert out[i].tolist() == REFERENCE[kind](set(s), t, seed)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40, deadline=None)
@given(sets=fingerprint_sets, seed=st.integers(0, 2**63 - 1))
def test_estimators_equal_reference(kind: str, sets: list[list[int]], seed: int) -> None:
    fps, offsets = _pack(sets + [[*s[: len(s) // 2], 7] for s in sets])
    sk = sketch(fps, offsets, SketchParams(kind=kind, t=16, seed=seed))  # type: ignore[arg-type]
    n = len(sk)
    a, b = np.triu_indices(n, k=1)
    got = estimate_pairs(sk, a, b, kind)  # type: ignore[arg-type]
    est = ref.estimate_bottomk if kind == "bottomk" else ref.estimate_positional
    want = [est(sk[i].tolist(), sk[j].tolist()) for i, j in zip(a, b, strict=True)]
    assert got.tolist() == want


@pytest.mark.parametrize("kind", KINDS)
def test_repeated_fingerprints_do_not_change_the_sketch(kind: str) -> None:
    p = SketchParams(kind=kind, t=32)  # type: ignore[arg-type]
    once = sketch(*_pack([[1, 2, 3, 99]]), p)
    repeated = sketch(*_pack([[3, 3, 1, 2, 99, 1]]), p)
    assert np.array_equal(once, repeated)


@pytest.mark.parametrize("kind", KINDS)
def test_empty_documents_get_empty_rows_and_match_nothing(kind: str) -> None:
    p = SketchParams(kind=kind, t=16)  # type: ignore[arg-type]
    sk = sketch_texts(["", "  !!  ", "some actual words here and there"], params=p)
    assert (sk[0] == EMPTY).all() and (sk[1] == EMPTY).all()
    assert not (sk[2] == EMPTY).all()
    scores = estimate_pairs(sk, np.array([0, 0]), np.array([1, 2]), kind)  # type: ignore[arg-type]
    assert scores.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("kind", KINDS)
def test_identical_texts_estimate_one_and_seed_changes_values(kind: str) -> None:
    text = "the same text with enough words to make several shingles of five words each"
    p1 = SketchParams(kind=kind, t=64, seed=1)  # type: ignore[arg-type]
    p2 = SketchParams(kind=kind, t=64, seed=2)  # type: ignore[arg-type]
    sk = sketch_texts([text, text.upper()], params=p1)
    assert estimate(sk[0], sk[1], kind) == 1.0  # type: ignore[arg-type]
    assert not np.array_equal(sk, sketch_texts([text, text.upper()], params=p2))


@settings(max_examples=25, deadline=None)
@given(docs=st.lists(st.text(max_size=200), min_size=1, max_size=20), cut=st.integers(0, 20))
def test_sketches_do_not_depend_on_batch_boundaries(docs: list[str], cut: int) -> None:
    whole = sketch_texts(docs)
    parts = np.vstack([sketch_texts(docs[:cut]).reshape(-1, 128), sketch_texts(docs[cut:])])
    assert np.array_equal(whole, parts)


def test_shingle_batch_and_sequence_give_the_same_sketch() -> None:
    docs = ["a b c d e f g a b c d e f g", "z y x w v u"]
    batch = shingle_batch(docs)
    assert np.array_equal(sketch(batch.fps, batch.offsets), sketch_texts(docs))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(1, 600))
def test_probe_table_rows_are_probe_sources_of_every_bin(seed: int, t: int) -> None:
    from neardup._kernels.minhash import PROBES, probe_source, probe_table

    table = probe_table(np.uint64(seed), t)
    for attempt in (0, 1, PROBES - 1):
        row = [probe_source(np.uint64(seed), j, attempt, t) for j in range(t)]
        assert table[attempt].tolist() == row


@settings(max_examples=30, deadline=None)
@given(
    value=st.integers(0, 2**64 - 1),
    repeats=st.integers(1, 4),
    t=st.sampled_from([1, 2, 7, 228, 256]),
    seed=st.integers(0, 2**63 - 1),
)
def test_one_fingerprint_documents_take_one_value_everywhere_as_by_probing(
    value: int, repeats: int, t: int, seed: int
) -> None:
    """One filled bin short-cuts densification (t * t probes otherwise); the same sketch."""
    fps, offsets = _pack([[value] * repeats, [value, value ^ 1]])
    out = sketch(fps, offsets, SketchParams(kind="oph", t=t, seed=seed))
    assert len(set(out[0].tolist())) == 1
    assert out[0].tolist() == ref.sketch_oph({value}, t, seed)
    assert out[1].tolist() == ref.sketch_oph({value, value ^ 1}, t, seed)


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(2, 40), min_size=1, max_size=6),
    t=st.sampled_from([3, 7, 64, 228, 300, 1024, 1030]),
    seed=st.integers(0, 2**63 - 1),
    data=st.data(),
)
def test_few_shingle_rows_densify_through_the_first_hit_table_as_by_probing(
    sizes: list[int], t: int, seed: int, data: st.DataObject
) -> None:
    """Rows of up to ``FEW_FILLED`` shingles take the table's path (more, or t past
    ``HIT_TABLE_T``, probing); either gives the reference's sketch."""
    values = st.integers(0, 2**64 - 1)
    sets = [data.draw(st.lists(values, min_size=k, max_size=k)) for k in sizes]
    fps, offsets = _pack(sets)
    out = sketch(fps, offsets, SketchParams(kind="oph", t=t, seed=seed))
    for i, s in enumerate(sets):
        assert out[i].tolist() == ref.sketch_oph(set(s), t, seed)


def test_bins_that_reach_no_filled_bin_within_the_first_hit_table_probe_on() -> None:
    """Two filled bins of 228: about one empty bin in ten reaches neither in the table's 255
    attempts and is probed past it; the sketch is still the reference's."""
    from neardup._kernels.hashing import splitmix64
    from neardup._kernels.minhash import HITS, hit_table

    t, seed = 228, 77
    table = hit_table(np.uint64(splitmix64(np.uint64(seed))), t)
    sets = [[3 * i + 1, 3 * i + 2] for i in range(40)]
    fps, offsets = _pack(sets)
    out = sketch(fps, offsets, SketchParams(kind="oph", t=t, seed=seed))
    past = 0
    for i, s in enumerate(sets):
        assert out[i].tolist() == ref.sketch_oph(set(s), t, seed)
        filled = sorted({ref.bucket(ref.fmix64(f ^ seed), t) for f in s})
        empty = np.setdiff1d(np.arange(t), filled)
        past += int((table[filled][:, empty].min(axis=0) >= HITS).sum())
    assert past > 0


@pytest.mark.parametrize("bad", [2, 10**9, -1])
def test_estimate_pairs_refuses_out_of_range_indices(bad: int) -> None:
    sk = sketch_texts(["a b c d e f g", "a b c d e f h"])
    with pytest.raises(ParamError, match=r"pair indices must lie in \[0, 2\)"):
        estimate_pairs(sk, np.array([0]), np.array([bad]))


@pytest.mark.parametrize("kind", ["oph", "classic", "bottomk"])
@pytest.mark.parametrize("offsets", [[0, 2, 1, 3], [0, 5, 3], [1, 2, 3], [0, 3, 4]])
def test_sketch_refuses_offsets_not_non_decreasing_from_zero(kind: str, offsets: list[int]) -> None:
    fps = np.array([1, 2, 3], dtype=np.uint64)
    with pytest.raises(ParamError, match="non-decreasing boundaries from 0 to len"):
        sketch(fps, np.array(offsets), SketchParams(t=4, kind=kind))  # type: ignore[arg-type]


@pytest.mark.parametrize("params", [None, "oph", {"t": 64}])
def test_sketch_refuses_params_that_are_not_sketch_params(params: object) -> None:
    batch = shingle_batch(["the cat sat on the mat today"])
    with pytest.raises(ParamError, match=r"params must be a SketchParams, got"):
        sketch(batch.fps, batch.offsets, params)  # type: ignore[arg-type]
