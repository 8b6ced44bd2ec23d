"""Parameter objects take NumPy numbers as the Python numbers they are and keep them as such
(a NumPy integer kept as given failed later checks and the JSON of ``fingerprint``), and take
only True or False where a flag is asked for ("no" switched an option on)."""

from __future__ import annotations

import numpy as np
import pytest

from neardup import params as pm
from neardup import plan
from neardup.errors import ParamError


@pytest.mark.parametrize(
    ("given", "plain"),
    [
        (lambda: pm.ShingleParams(w=np.int64(3)), lambda: pm.ShingleParams(w=3)),
        (lambda: pm.SketchParams(t=np.int32(64), seed=np.uint8(7)), lambda: pm.SketchParams(t=64, seed=7)),
        (lambda: pm.FeatureParams(np.int64(6), np.int16(14), np.int8(2)), lambda: pm.FeatureParams(6, 14, 2)),
        (lambda: pm.MinhashParams(max_t=np.int64(128), max_bucket=np.int64(50)),
         lambda: pm.MinhashParams(max_t=128, max_bucket=50)),
        (lambda: pm.SimhashParams(q=np.int64(5), w=np.int64(2), seed=np.int64(3)),
         lambda: pm.SimhashParams(q=5, w=2, seed=3)),
        (lambda: pm.SimhashMethodParams(q=np.int64(4), max_distance=np.int64(3)),
         lambda: pm.SimhashMethodParams(q=4, max_distance=3)),
        (lambda: pm.SampledParams(m=np.int64(2)), lambda: pm.SampledParams(m=2)),
        (lambda: pm.DedupParams(threshold=np.float64(0.7), seed=np.int64(9)),
         lambda: pm.DedupParams(threshold=0.7, seed=9)),
        (lambda: pm.DecontaminateParams(containment=np.float64(0.5)),
         lambda: pm.DecontaminateParams(containment=0.5)),
    ],
)  # fmt: skip
def test_numpy_numbers_make_the_same_parameters_as_python_ones(
    given: object, plain: object
) -> None:
    a, b = given(), plain()  # type: ignore[operator]
    assert a == b and a.fingerprint() == b.fingerprint()
    for value in vars(a).values():
        assert not isinstance(value, np.generic)  # kept as Python values


def test_numpy_floats_are_taken_as_thresholds_and_containments() -> None:
    assert pm.DedupParams(threshold=np.float32(0.75)).threshold == 0.75
    assert pm.DecontaminateParams(containment=np.float32(0.5)).containment == 0.5
    assert plan(np.float32(0.75)).params == plan(0.75).params  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "make",
    [
        lambda v: pm.ShingleParams(nfkc=v),
        lambda v: pm.SimhashParams(nfkc=v),
        lambda v: pm.MinhashParams(super_features=v),
    ],
)
def test_flags_take_only_true_or_false(make: object) -> None:
    for bad in ("no", "false", 1, 0, None):
        with pytest.raises(ParamError, match=r"must be True or False, got"):
            make(bad)  # type: ignore[operator]
    assert make(np.bool_(True)) == make(True)  # type: ignore[operator]
