"""keep='field' in the library ranks keys as the CLI's --keep-field does."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

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


BIG = 2**63  # beyond int64; and 2**53: beyond what a float64 holds exactly


@pytest.mark.parametrize(
    "key",
    [[BIG, BIG + 1], [2**64, 2**64 + 1], [2**53, 2**53 + 1, 0.5], [np.int64(2**53), 2.0**53 + 2]],
)
@pytest.mark.parametrize("prefer", ["max", "min"])
def test_keep_field_ranks_large_integers_exactly_in_the_library_and_the_cli(
    tmp_path: Path, key: list[object], prefer: str
) -> None:
    # as float64 the first two keys tied, so the first document won whatever the preference
    # (and integers beyond 2**64 were refused by the library); the CLI ranked 2**63 and more so
    from neardup.cli import main

    want = [prefer == "min", prefer == "max"]  # the keys ascend
    params = DedupParams(keep="field", keep_prefer=prefer)  # type: ignore[arg-type]
    got = Deduplicator(params).fit(TWINS, key=key[:2]).kept_.tolist()
    assert got == want
    if isinstance(key[0], np.integer):
        return
    src = tmp_path / "in.jsonl"
    texts = [*TWINS, "other words here"][: len(key)]
    rows = [{"id": i, "text": t, "k": k} for i, (t, k) in enumerate(zip(texts, key, strict=True))]
    src.write_text("".join(json.dumps(row) + "\n" for row in rows))
    clusters = tmp_path / "c.jsonl"
    args = ["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--keep-field", "k",
            "--keep-prefer", prefer, "--clusters", str(clusters), "-q"]  # fmt: skip
    assert main(args) == 0
    lines = [json.loads(x) for x in clusters.read_text().splitlines()]
    assert [x["id"] for x in lines if x["kept"] and x["id"] in "01"] == [str(want.index(True))]


@pytest.mark.parametrize("delimiter", [",", "\t"])
def test_csv_cells_that_are_numbers_compare_as_numbers(
    tmp_path: Path, delimiter: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # every CSV value is text: "9" ranked above "10", and the 9 was kept
    from neardup.cli import main

    text = "hello world foo bar baz qux quux"
    rows = [["id", "text", "score"], ["a", text, "9"], ["b", text, "10"], ["c", text, " "],
            ["d", text, "-2.5e1"]]  # fmt: skip
    suffix = "csv" if delimiter == "," else "tsv"
    src = tmp_path / f"in.{suffix}"
    src.write_text("".join(delimiter.join(r) + "\n" for r in rows))
    clusters = tmp_path / "c.jsonl"
    for prefer, kept in (("max", "b"), ("min", "d")):
        args = ["dedup", str(src), "-o", str(tmp_path / f"k.{suffix}"), "--keep-field", "score",
                "--keep-prefer", prefer, "--clusters", str(clusters), "-q"]  # fmt: skip
        assert main(args) == 0
        lines = [json.loads(x) for x in clusters.read_text().splitlines()]
        assert [x["id"] for x in lines if x["kept"]] == [kept]
    src.write_text(src.read_text() + delimiter.join(["e", text, "N/A"]) + "\n")
    assert main([*args[:-1], "-q"]) == 1
    assert "row 5: field 'score' is a string, but the first key" in capsys.readouterr().err


@pytest.mark.parametrize(
    "key",
    [
        [dt.datetime(2020, 1, 1), dt.datetime(2021, 1, 1), dt.datetime(2019, 1, 1)],
        [dt.datetime(2020, 1, 1), dt.datetime(2021, 1, 1), None],
        [dt.date(2020, 1, 1), dt.date(2021, 1, 1), dt.date(2019, 1, 1)],
        [dt.date(2020, 1, 1), dt.datetime(2021, 1, 1, 12), None],
        np.array([dt.datetime(2020, 1, 1), dt.datetime(2021, 1, 1), None], dtype=object),
        [
            dt.datetime(2021, 1, 1, 9, tzinfo=dt.timezone(dt.timedelta(hours=5))),  # 04:00 UTC
            dt.datetime(2021, 1, 1, 5, tzinfo=dt.UTC),
            None,
        ],
    ],
)
def test_keep_field_accepts_python_datetimes_and_keeps_the_latest(key: object) -> None:
    texts = [*TWINS, "the cat sat on the mat today."]
    kept = Deduplicator(DedupParams(keep="field")).fit(texts, key=key).kept_  # type: ignore[arg-type]
    assert kept.tolist() == [False, True, False]


def test_keep_field_with_prefer_min_keeps_the_earliest_python_date() -> None:
    texts = [*TWINS, "the cat sat on the mat today."]
    key = [dt.date(2020, 1, 1), None, dt.date(2019, 1, 1)]
    kept = Deduplicator(DedupParams(keep="field", keep_prefer="min")).fit(texts, key=key).kept_
    assert kept.tolist() == [False, False, True]


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ([dt.datetime(2020, 1, 1), 5], r"key\[1\] is a number, but the first key .* date/time"),
        ([3.5, dt.date(2020, 1, 1)], r"key\[1\] is a date/time, but the first key .* number"),
        (
            [dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1, tzinfo=dt.UTC)],
            r"key\[1\] is a datetime with a time zone, key\[0\] one without",
        ),
    ],
)
def test_keep_field_refuses_python_datetimes_mixed_with_other_keys(
    key: object, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        Deduplicator(DedupParams(keep="field")).fit(TWINS, key=key)  # type: ignore[arg-type]
