"""keep='field' in the library ranks keys as the CLI's --keep-field does."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.engine import Deduplicator
from neardup.errors import InputError
from neardup.params import DedupParams
from neardup.priority import priority_ranks

TWINS = ["the cat sat on the mat today", "The cat sat on the mat today!"]


@pytest.mark.parametrize("prefer", ["max", "min"])
@pytest.mark.parametrize(
    "key",
    [
        np.array(["NaT", "2024-01-01"], dtype="datetime64[D]"),
        np.array([np.nan, 3.0]),
        [None, 3],
        [None, "b"],
    ],
)
def test_keep_field_prefers_a_present_key_to_a_missing_one(prefer: str, key: object) -> None:
    params = DedupParams(keep="field", keep_prefer=prefer)  # type: ignore[arg-type]
    assert Deduplicator(params).fit(TWINS, key=key).kept_.tolist() == [False, True]  # type: ignore[arg-type]


@pytest.mark.parametrize("prefer", ["max", "min"])
def test_priority_ranks_put_missing_keys_last(prefer: str) -> None:
    key = np.array([2.0, np.nan, 1.0, np.nan, 3.0])
    ranks = priority_ranks(5, "field", key=key, prefer=prefer)  # type: ignore[arg-type]
    present = [4, 0, 2] if prefer == "max" else [2, 0, 4]
    assert np.argsort(ranks).tolist() == [*present, 1, 3]


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ([9, "10"], r"key\[1\] is a string, but the first key \(key\[0\]\) is a number"),
        ((None, 9, True), r"key\[2\] is a boolean, but the first key \(key\[1\]\) is a number"),
    ],
)
def test_keep_field_refuses_keys_of_two_kinds(key: object, message: str) -> None:
    texts = [*TWINS, "another text entirely"][: len(key)]  # type: ignore[arg-type]
    with pytest.raises(InputError, match=message):
        Deduplicator(DedupParams(keep="field")).fit(texts, key=key)  # type: ignore[arg-type]


def test_keep_field_compares_mixed_ints_and_floats_as_numbers() -> None:
    kept = Deduplicator(DedupParams(keep="field")).fit(TWINS, key=[9, 10.5]).kept_
    assert kept.tolist() == [False, True]
