"""Misuse of an index (used after close, nested ``with``, bad metadata or dates): usage errors."""

from __future__ import annotations

import datetime
import random
import re
import threading
from pathlib import Path

import pytest

from neardup import Index, IndexCorrupt, InputError, NeardupError, ParamError
from neardup.params import DedupParams, SimhashMethodParams
from neardup.testing.synth import random_documents


def _where(tmp_path: Path, on_disk: bool) -> str | None:
    """A new file path for an index on disk, or None for one in memory."""
    return str(tmp_path / "g.db") if on_disk else None


@pytest.mark.parametrize("on_disk", [True, False], ids=["file", "memory"])
def test_an_index_used_after_close_says_it_is_closed_not_damaged(
    tmp_path: Path, on_disk: bool
) -> None:
    index = Index.create(_where(tmp_path, on_disk))
    index.add(["a"], ["x y z w v"])
    index.close()
    index.close()  # closing again does nothing
    uses = [
        lambda: index.add(["z"], ["x y z"]),
        lambda: index.query(["x y z"]),
        lambda: len(index),
        lambda: index.remove(["a"]),
        lambda: index.get("a"),
        index.__enter__,
    ]
    for use in uses:
        with pytest.raises(NeardupError, match="is closed") as caught:
            use()
        assert not isinstance(caught.value, IndexCorrupt)
        assert "rebuild" not in str(caught.value)
    if on_disk:
        assert len(Index.open(str(tmp_path / "g.db"))) == 1


@pytest.mark.parametrize("on_disk", [True, False], ids=["file", "memory"])
def test_entering_an_index_inside_its_own_with_block_is_a_usage_error(
    tmp_path: Path, on_disk: bool
) -> None:
    index = Index.create(_where(tmp_path, on_disk))
    with index:
        index.add(["a"], ["x y z w v"])
        with pytest.raises(NeardupError, match="already inside `with index:`") as caught:
            index.__enter__()
        assert not isinstance(caught.value, IndexCorrupt)
        index.add(["b"], ["p q r s t"])  # the outer block goes on
    assert len(index) == 2


@pytest.mark.parametrize("on_disk", [True, False], ids=["file", "memory"])
@pytest.mark.parametrize(
    ("field", "given", "said"),
    [
        ("dates", [20240101], "document 'u': its date is int 20240101, not a string"),
        ("meta", [{"when": datetime.date(2024, 1, 1)}], "document 'u': its metadata cannot be"),
        ("meta", ["hello"], "document 'u': its metadata is str 'hello', not a dict"),
    ],
    ids=["int-date", "date-in-meta", "meta-not-a-dict"],
)
def test_bad_metadata_or_dates_are_an_input_error_naming_the_document_on_every_store(
    tmp_path: Path, on_disk: bool, field: str, given: list[object], said: str
) -> None:
    index = Index.create(_where(tmp_path, on_disk))
    with pytest.raises(InputError, match=re.escape(said)):
        index.add(["u"], ["x y z"], **{field: given})  # type: ignore[arg-type]
    assert len(index) == 0


def _edited(text: str, rate: float, rng: random.Random) -> str:
    """``text`` with about ``rate`` of its words replaced."""
    words = [w if rng.random() >= rate else f"zz{rng.randrange(1000)}" for w in text.split()]
    return " ".join(words)


def test_unverified_simhash_index_takes_thresholds_down_to_its_max_distance_score() -> None:
    docs = random_documents(20, seed=3, words=(40, 60))
    params = DedupParams(method=SimhashMethodParams(max_distance=19))
    index = Index.create(None, params)
    index.add([f"d{i}" for i in range(20)], docs)
    rng = random.Random(1)
    queries = [_edited(d, 0.15, rng) for d in docs]
    found = index.query(queries)
    scores = [m.score for ms in found for m in ms]
    floor = 1 - 19 / 64  # SimHash's score of a pair max_distance bits apart
    assert min(scores) < 0.8 and min(scores) >= floor
    assert index.query(queries, threshold=floor) == found
    at_75 = index.query(queries, threshold=0.75)
    assert at_75 == [[m for m in ms if m.score >= 0.75] for ms in found]
    # scores step by 1/64: 0.7 asks for what the index finds (19 bits); it was refused, and
    # the message said to build an index of --max-distance 19, the one it is
    assert index.query(queries, threshold=0.7) == found
    said = "finds matches at 0.703125 and above; a query can ask for a threshold above 0.6875"
    with pytest.raises(ParamError, match=re.escape(said)):
        index.query(queries, threshold=1 - 20 / 64)


def test_an_index_used_from_another_thread_says_so_not_damaged(tmp_path: Path) -> None:
    path = str(tmp_path / "t.db")
    Index.create(path).close()
    index = Index.open(path)
    index.add(["a"], ["the quick brown fox jumps over the lazy dog near the river bank"])
    caught: list[BaseException] = []

    def elsewhere() -> None:
        for use in (
            lambda: index.add(["x"], ["some text here and there"]),
            lambda: index.query(["the quick brown fox"]),
            lambda: index.get("a"),
        ):
            try:
                use()
            except BaseException as exc:  # checked in the test's thread
                caught.append(exc)

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join()
    assert len(caught) == 3
    for exc in caught:
        assert isinstance(exc, NeardupError) and not isinstance(exc, IndexCorrupt)
        assert "opened in another thread" in str(exc) and "one Index per thread" in str(exc)
        assert "neardup index check" not in str(exc)
    assert len(index) == 1  # the thread that opened it goes on
    index.close()
