"""The standing index: agreement with batch dedup, containment, removal, lost and found, safety."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from neardup import Deduplicator, Index, IndexMismatchError, InputError, NeardupError, ParamError
from neardup.cli import main
from neardup.errors import UnknownIdError
from neardup.index import SCHEMA_VERSION
from neardup.params import DedupParams, SampledParams, SimhashMethodParams
from neardup.testing.synth import near_duplicate_corpus, random_documents
from neardup.text import Utf8Texts

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _corpus(n: int = 500, seed: int = 2) -> list[str]:
    base = random_documents(n, seed=seed, words=(20, 150))
    return list(near_duplicate_corpus(base, n, 0.5, seed=seed + 1, n_empty=3).texts)


def _streamed(index: Index, texts: list[str]) -> np.ndarray:
    """Query; keep if no match; add: one document at a time."""
    kept = np.zeros(len(texts), dtype=bool)
    for i, text in enumerate(texts):
        if not index.query([text])[0]:
            kept[i] = True
            index.add([str(i)], [text])
    return kept


PARAMS = {
    "minhash-hybrid": DedupParams(),
    "minhash-exact": DedupParams(threshold=0.7, verify="exact"),
    "simhash": DedupParams(method=SimhashMethodParams(max_distance=4)),
    "sampled": DedupParams(method=SampledParams(m=4), threshold=0.9),
}


@pytest.mark.parametrize("name", sorted(PARAMS))
@pytest.mark.parametrize("on_disk", [False, True])
def test_streaming_query_then_add_keeps_what_batch_dedup_keeps(
    name: str, on_disk: bool, tmp_path: Path
) -> None:
    params = PARAMS[name]
    texts = _corpus(400)
    index = Index.create(str(tmp_path / "i.db") if on_disk else None, params)
    kept = _streamed(index, texts)
    batch = Deduplicator(params).fit(texts)
    assert batch.kept_.sum() < len(texts)  # the corpus has duplicates to remove
    np.testing.assert_array_equal(kept, batch.kept_)
    assert index.check() == []


@pytest.mark.parametrize("name", ["minhash-hybrid", "simhash"])
def test_dedup_keeps_what_query_then_add_keeps_whatever_the_batches(name: str) -> None:
    """``Index.dedup``: a document is kept unless a stored or an earlier kept one resembles it,
    so the kept set is that of "query; keep if no match; add" and no batch boundary moves it."""
    params = PARAMS[name]
    texts = _corpus(300)
    stored, incoming = texts[:120], texts[100:]
    ids = [f"n{i}" for i in range(len(incoming))]
    expect_index = Index.create(None, params)
    expect_index.add([f"o{i}" for i in range(len(stored))], stored)
    expected = _streamed(expect_index, incoming)
    index = Index.create(None, params)
    index.add([f"o{i}" for i in range(len(stored))], stored)
    whole = index.dedup(ids, incoming)
    np.testing.assert_array_equal(whole.kept, expected)
    assert whole.duplicates_of_index > 0 and whole.duplicates_in_input > 0
    assert whole.summary() == {
        "documents": len(incoming),
        "duplicates_of_index": whole.duplicates_of_index,
        "duplicates_in_input": len(incoming) - whole.duplicates_of_index - int(expected.sum()),
        "kept": int(expected.sum()),
        "added_to_index": 0,
    }
    assert len(index) == len(stored)  # without add the index is unchanged
    for size in (1, 7, 64):
        cut = [(ids[s : s + size], incoming[s : s + size]) for s in range(0, len(ids), size)]
        done = index.dedup_stream(cut)
        np.testing.assert_array_equal(done.kept, whole.kept)
        assert done.summary() == whole.summary()  # the counts do not move with the batches
    added = index.dedup_stream(
        [(ids[s : s + 50], incoming[s : s + 50]) for s in range(0, len(ids), 50)], add=True
    )
    np.testing.assert_array_equal(added.kept, expected)
    assert added.duplicates_of_index == whole.duplicates_of_index
    assert added.duplicates_in_input == whole.duplicates_in_input
    assert added.added == int(expected.sum()) == len(index) - len(stored)
    again = index.dedup(ids, incoming)  # every kept document is stored now
    assert all(not incoming[i].split() for i in np.flatnonzero(again.kept))  # no tokens: unmatched
    assert index.check() == []


T = "the quick brown fox jumps over the lazy dog near the quiet river bank at dawn every day"
T2 = T + " again"  # a near copy of T
U = "a completely different post about the weather and the long walk home tonight under stars"
V = "seven green parrots argued loudly about breakfast while the old harbour clock struck nine"
W = "our library opens late on thursdays so the reading group meets in the cafe across the road"


def _one_at_a_time(index: Index, ids: list[str], texts: list[str]) -> list[bool]:
    return [bool(index.dedup([i], [t], add=True).kept[0]) for i, t in zip(ids, texts, strict=True)]


def _contents(index: Index, ids: set[str]) -> dict[str, str | None]:
    held = {i: (index.get(i) or {}).get("text") for i in sorted(ids)}
    assert len(index) == sum(t is not None for t in held.values())
    return {i: t for i, t in held.items() if t is not None}


# (stored, batch, kept one at a time): an id of the batch already stored takes a new text
REPLACED = {
    "old text after its id took a new one": ([("a", T)], [("a", U), ("b", T)], [True, True]),
    "old text before its id takes a new one": ([("a", T)], [("b", T), ("a", U)], [False, True]),
    "a near copy of the old text": ([("a", T)], [("a", U), ("b", T2)], [True, True]),
    "the new text a duplicate": ([("a", T), ("c", U)], [("a", U), ("b", T)], [False, False]),
    "two ids replaced": (
        [("a", T), ("c", V)],
        [("a", U), ("b", T), ("c", W), ("d", V)],
        [True, True, True, True],
    ),
    "the freed text then removes the next copy": (
        [("a", T)],
        [("a", U), ("b", T), ("c", T2)],
        [True, True, False],
    ),
    "the freed text removes a replacement, whose id keeps its text": (
        [("a", T), ("c", V)],
        [("a", U), ("b", T), ("c", T2), ("d", V)],
        [True, True, False, False],
    ),
}


@pytest.mark.parametrize("case", sorted(REPLACED))
def test_dedup_add_batch_answers_as_one_document_at_a_time_when_an_id_is_replaced(
    case: str,
) -> None:
    """A stored document whose id an earlier kept document of the batch took over no longer
    holds its old text, so it removes nothing after it: the batch keeps (and stores) what the
    same documents one at a time keep, and counts them alike."""
    stored, batch, expected = REPLACED[case]
    ids, texts = [i for i, _ in batch], [t for _, t in batch]
    every = {i for i, _ in stored} | set(ids)
    indexes = []
    for _ in range(2):
        index = Index.create(None, store_text=True)
        index.add([i for i, _ in stored], [t for _, t in stored])
        indexes.append(index)
    assert _one_at_a_time(indexes[0], ids, texts) == expected
    done = indexes[1].dedup(ids, texts, add=True)
    assert done.kept.tolist() == expected
    assert _contents(indexes[1], every) == _contents(indexes[0], every)
    assert done.added == sum(expected)
    assert indexes[1].check() == []


def test_dedup_add_counts_a_copy_of_a_replaced_text_as_a_duplicate_of_the_input() -> None:
    """The old text freed by a replacement is no longer the index's: a later copy of it kept
    removes the next one as a duplicate of the input, not of the index."""
    index = Index.create(None)
    index.add(["a"], [T])
    done = index.dedup(["a", "b", "c"], [U, T, T2], add=True)
    assert done.summary() == {
        "documents": 3,
        "duplicates_of_index": 0,
        "duplicates_in_input": 1,
        "kept": 2,
        "added_to_index": 2,
    }


def test_dedup_add_stream_keeps_the_same_whatever_the_batches_when_stored_ids_are_replaced() -> (
    None
):
    """Stored ids taking new texts while copies of their old texts come later: the kept flags,
    counts and the index do not depend on where the batches end (size 1: one at a time)."""
    texts = _corpus(240, seed=5)
    stored = texts[:80]
    incoming = texts[60:]
    ids = [f"n{i}" for i in range(len(incoming))]
    for k in range(0, 60, 4):  # stored ids whose old texts may come again later in the input
        ids[k + 20] = f"o{k}"
    answers = []
    for size in (1, 5, 32, len(ids)):
        index = Index.create(None, store_text=True)
        index.add([f"o{i}" for i in range(len(stored))], stored)
        cut = [(ids[s : s + size], incoming[s : s + size]) for s in range(0, len(ids), size)]
        done = index.dedup_stream(cut, add=True)
        every = {f"o{i}" for i in range(len(stored))} | set(ids)
        answers.append((done.kept.tolist(), done.summary(), _contents(index, every)))
        assert index.check() == []
    assert all(a == answers[0] for a in answers[1:])
    assert answers[0][1]["duplicates_of_index"] > 0 and answers[0][1]["duplicates_in_input"] > 0


def test_dedup_add_settles_each_document_once_however_many_stored_ids_a_batch_replaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every fifth document takes over a stored id and a copy of that id's old text follows it
    in the batch: the batch still keeps what one document at a time keeps, matches each
    document against the index once and runs keep-first over each document once (not once
    more for every id taken over: that made a batch cost grow with its square)."""
    from neardup.index import deduping

    texts = _corpus(240, seed=8)
    stored, incoming = texts[:60], list(texts[60:])
    ids = [f"n{i}" for i in range(len(incoming))]
    for k in range(0, 150, 5):
        ids[k] = f"o{k // 5}"
        incoming[k + 3] = stored[k // 5]  # the old text, after its id took a new one
    expected = Index.create(None, store_text=True)
    expected.add([f"o{i}" for i in range(len(stored))], stored)
    one_by_one = _one_at_a_time(expected, ids, incoming)
    settled: list[int] = []
    asked: list[int] = []

    class Counting(Deduplicator):
        def finish(self, *args: object, **kwargs: object) -> Counting:
            settled.append(self.n_docs)
            return super().finish(*args, **kwargs)  # type: ignore[arg-type]

    index = Index.create(None, store_text=True)
    index.add([f"o{i}" for i in range(len(stored))], stored)
    answer = index._answer

    def counted(signed: tuple[object, object, object, list[str]], *rest: object) -> object:
        asked.append(len(signed[3]))
        return answer(signed, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(deduping, "Deduplicator", Counting)
    monkeypatch.setattr(index, "_answer", counted)
    done = index.dedup(ids, incoming, add=True)
    assert done.kept.tolist() == one_by_one
    assert sum(one_by_one[3:150:5]) > 15  # most copies kept: their old ids were freed
    assert len(settled) > 10 and sum(settled) <= len(incoming)
    assert sum(asked) == len(incoming)


@pytest.mark.parametrize("add", [False, True])
def test_dedup_stream_keeps_the_same_whatever_the_batches_when_an_id_comes_again(
    add: bool,
) -> None:
    """An id kept in one batch and again, with another text, in a later one holds its new
    text from then on (in the index with ``add``, in the documents held apart without): a
    copy of its first text after it is kept, wherever the batches end."""
    one_by_one = [(["c"], [T]), (["c"], [U]), (["d"], [T])]
    two = [(["c"], [T]), (["c", "d"], [U, T])]  # not c, c in one batch: refused (ids unique)
    answers = []
    for batches in (one_by_one, two):
        index = Index.create(None, store_text=True)
        done = index.dedup_stream(batches, add=add)
        answers.append((done.kept.tolist(), done.summary(), _contents(index, {"c", "d"})))
    assert answers[0][0] == [True, True, True]
    assert answers[1] == answers[0]


def test_answers_do_not_depend_on_how_documents_were_added(tmp_path: Path) -> None:
    texts = _corpus(300)
    ids = [f"d{i}" for i in range(len(texts))]
    one = Index.create(None)
    one.add(ids, texts)
    many = Index.create(str(tmp_path / "m.db"))
    for s in range(0, len(texts), 37):
        many.add(ids[s : s + 37], texts[s : s + 37])
    queries = _corpus(120, seed=9) + texts[:50]
    assert one.query(queries) == many.query(queries)
    assert [many.query([q])[0] for q in queries[:40]] == one.query(queries[:40])


def test_query_finds_exact_copies_first_and_respects_threshold_and_limit() -> None:
    texts = random_documents(50, seed=4, words=(60, 80))
    index = Index.create(None)
    index.add(["orig", "copy"], [texts[0], texts[0].upper()])  # same canonical tokens
    edited = texts[0] + " and one more closing sentence"
    found = index.query([texts[0], edited, texts[1]])
    assert [m.kind for m in found[0]] == ["exact", "exact"]
    assert {m.id for m in found[1]} == {"orig", "copy"} and found[1][0].kind == "near"
    assert found[2] == []
    assert len(index.query([texts[0]], limit=1)[0]) == 1
    assert index.query([edited], threshold=0.999)[0] == []
    with pytest.raises(ParamError, match=r"from 0\.8 to 1"):
        index.query([edited], threshold=0.5)
    for bad in (float("nan"), float("inf"), 1.5):  # about the query's value, not the index's
        with pytest.raises(ParamError, match=r"query threshold must be a finite number from 0\.8"):
            index.query([edited], threshold=bad)


def _retweets(texts: list[str], seed: int) -> tuple[list[str], list[str]]:
    """Retweet-style copies: prefix, suffix, both, truncation (kinds in turn)."""
    rng = np.random.default_rng(seed)
    out, kinds = [], []
    for i, t in enumerate(texts):
        words = t.split()
        kind = ("prefix", "suffix", "both", "truncated")[i % 4]
        user = f"RT @user{rng.integers(1000)}:"
        if kind == "prefix":
            out.append(f"{user} {t}")
        elif kind == "suffix":
            out.append(f"{t} so true, had to share this one")
        elif kind == "both":
            out.append(f"{user} {t} wow")
        else:
            out.append(" ".join(words[: int(len(words) * 0.85)]))
        kinds.append(kind)
    return out, kinds


def test_sampled_containment_finds_retweets_and_quotations_that_resemblance_misses() -> None:
    posts = random_documents(400, seed=11, words=(25, 60))
    rts, _ = _retweets(posts[:200], seed=1)
    params = DedupParams(method=SampledParams(m=4), threshold=0.8)
    index = Index.create(None, params)
    index.add([f"p{i}" for i in range(len(posts))], posts)
    found = index.query(rts)
    hits = [any(m.id == f"p{i}" for m in ms) for i, ms in enumerate(found)]
    assert np.mean(hits) >= 0.99
    false = [m for i, ms in enumerate(found) for m in ms if m.id != f"p{i}"]
    assert false == []
    assert all(m.kind == "contained" and max(m.scores.values()) >= 0.8 for ms in found for m in ms)
    never = index.query(random_documents(50, seed=99, words=(25, 60)))
    assert all(ms == [] for ms in never)
    # a passage quoted inside a longer document
    quote = " ".join(posts[5].split()[5:20])
    long = posts[300] + " As they wrote: " + quote + ". " + posts[301]
    index.add(["long"], [long])
    assert "long" in {m.id for m in index.query([quote])[0]}
    resemblance = Index.create(None, DedupParams(threshold=0.8))
    resemblance.add([*(f"p{i}" for i in range(len(posts))), "long"], [*posts, long])
    assert "long" not in {m.id for m in resemblance.query([quote])[0]}


def test_removed_documents_are_no_longer_found_and_unknown_ids_change_nothing(
    tmp_path: Path,
) -> None:
    texts = random_documents(20, seed=3, words=(40, 60))
    index = Index.create(str(tmp_path / "r.db"))
    index.add([f"d{i}" for i in range(20)], texts)
    with pytest.raises(InputError, match="not in the index: 'nope'"):
        index.remove(["d1", "nope"])
    assert len(index) == 20 and index.query([texts[1]])[0][0].id == "d1"
    assert index.remove(["d1", "d2"]) == 2
    assert index.query([texts[1], texts[2]]) == [[], []]
    assert "d1" not in index and index.get("d1") is None
    assert index.check() == []
    index.add(["d1"], [texts[1]])
    assert index.query([texts[1]])[0][0].id == "d1"


def test_with_block_commits_on_success_and_rolls_back_on_error(tmp_path: Path) -> None:
    texts = random_documents(6, seed=8, words=(30, 40))
    index = Index.create(str(tmp_path / "t.db"))
    with index:
        index.add(["a", "b"], texts[:2])
        index.add(["c"], texts[2:3])
    with pytest.raises(RuntimeError), index:
        index.add(["d"], texts[3:4])
        raise RuntimeError("boom")
    assert len(index) == 3 and "d" not in index
    assert len(Index.open(str(tmp_path / "t.db"))) == 3


def test_lost_and_found_updates_urls_retires_them_and_finds_where_content_moved(
    tmp_path: Path,
) -> None:
    texts = random_documents(10, seed=21, words=(60, 90))
    index = Index.create(str(tmp_path / "lf.db"))
    index.add(["http://a/1", "http://a/2"], texts[:2], dates=["2024-01-01", "2024-01-01"])
    index.add(["http://a/1"], [texts[2]], dates=["2024-02-01"])  # new content, seen again
    doc = index.get("http://a/1")
    assert doc is not None
    assert (doc["first_seen"], doc["last_seen"]) == ("2024-01-01", "2024-02-01")
    assert index.query([texts[0]])[0] == []  # the old content is gone
    index.add(
        ["http://b/moved", "http://c/copy"],
        [texts[2] + " new footer", texts[2]],
        dates=["2024-03-05", "2024-03-01"],
    )
    index.retire(["http://a/1"], "2024-03-01")
    assert all(m.id != "http://a/1" for m in index.query([texts[2]])[0])  # retired: not live
    moved = index.moved("http://a/1")
    assert [m.id for m in moved] == ["http://c/copy", "http://b/moved"]
    assert moved[0].last_seen == "2024-03-01"
    with pytest.raises(InputError, match="not in the index"):
        index.moved("http://never/seen")
    with pytest.raises(InputError, match="not in the index"):
        index.retire(["http://never/seen"])


@pytest.mark.parametrize("on_disk", [False, True])
def test_retiring_a_url_again_without_a_date_keeps_the_date_it_was_retired_with(
    on_disk: bool, tmp_path: Path
) -> None:
    index = Index.create(str(tmp_path / "lf.db") if on_disk else None)
    index.add(["http://a/1", "http://a/2"], random_documents(2, seed=4), dates=["2024-01-01"] * 2)
    index.retire(["http://a/1"], date="2024-04-01")
    assert index.retire(["http://a/1", "http://a/2"]) == 2  # a/2 had no date: it has none now
    assert [_gone(index, u) for u in ("http://a/1", "http://a/2")] == ["2024-04-01", "gone"]
    index.retire(["http://a/1"], date="2024-05-01")  # a date given is the date recorded
    assert _gone(index, "http://a/1") == "2024-05-01"


def _gone(index: Index, url: str) -> object:
    doc = index.get(url)
    assert doc is not None
    return doc["gone"]


def _seen(index: Index, url: str) -> object:
    doc = index.get(url)
    assert doc is not None
    return doc["last_seen"]


def _url_index(tmp_path: Path, n: int) -> tuple[str, Path]:
    """An index of the first ``n`` of two dated URLs, added from a JSONL file (also returned)."""
    path, src = str(tmp_path / "lf.db"), tmp_path / "c.jsonl"
    lines = [
        '{"url": "http://a/1", "date": "2024-01-01", "text": "some text about a fox and a dog"}\n',
        '{"url": "http://a/2", "date": "2024-01-02", "text": "other words on rain and a walk"}\n',
    ]
    src.write_text("".join(lines[:n]))
    assert main(["index", "create", path]) == 0
    assert main(["index", "add", path, str(src), "--url-field", "url", "--date-field", "date"]) == 0
    return path, src


def test_index_retire_again_without_date_keeps_the_recorded_date(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = _url_index(tmp_path, 1)
    assert main(["index", "retire", path, "http://a/1", "--date", "2024-04-01"]) == 0
    assert main(["index", "retire", path, "http://a/1"]) == 0
    assert "retired 1 URL\n" in capsys.readouterr().err
    with Index.open(path) as index:
        assert _gone(index, "http://a/1") == "2024-04-01"


def test_a_url_added_again_without_a_date_keeps_its_date_and_a_misspelt_field_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, src = _url_index(tmp_path, 2)
    capsys.readouterr()
    assert main(["index", "add", path, str(src), "--url-field", "url", "--date-field", "dat"]) == 0
    err = capsys.readouterr().err
    assert "warning: no record had the field 'dat' that --date-field names" in err
    with Index.open(path) as index:  # the stored dates were erased
        assert [_seen(index, u) for u in ("http://a/1", "http://a/2")] == [
            "2024-01-01",
            "2024-01-02",
        ]
        index.add(["http://a/1"], ["some text about a fox and a dog"], dates=["2024-03-01"])
        assert _seen(index, "http://a/1") == "2024-03-01"
    assert main(["index", "add", path, str(src), "--url-field", "nourl"]) == 1
    assert "none of the first 2 records has the field 'nourl' that --url-field names" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("batch", ["1", "2"])
def test_a_misspelt_url_field_is_refused_before_any_batch_is_added(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], batch: str
) -> None:
    # index add commits batch by batch: the refusal came at the end of the input, after every
    # batch had been added under line-number ids ("1", "2", ...) that later adds replace
    path, src = str(tmp_path / "u.db"), tmp_path / "u.jsonl"
    words = ["fox", "dog", "rain", "walk", "sun", "tree", "lake", "hill"]
    src.write_text(
        "".join(
            f'{{"url": "http://a/{i}", "text": "{w} a b c d e"}}\n' for i, w in enumerate(words)
        )
    )
    assert main(["index", "create", path]) == 0
    args = ["index", "add", path, str(src), "--url-field", "nourl", "--batch-size", batch]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"none of the first {batch} records has the field 'nourl' that --url-field" in err
    assert "nothing was added" in err
    with Index.open(path) as index:
        assert len(index) == 0
    # a record of the first batch with the field is enough: the others are named by line
    src.write_text('{"text": "no url here a b c d e"}\n{"url": "http://a/9", "text": "x y z"}\n')
    assert main(["index", "add", path, str(src), "--url-field", "url", "--batch-size", "2"]) == 0
    with Index.open(path) as index:
        assert len(index) == 2


def test_dates_that_are_no_iso_dates_are_refused_or_skipped_as_bad_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # moved orders ties by the date strings: "2020-13-45" or "notadate" were stored as given
    index = Index.create(None)
    with pytest.raises(InputError, match=r"document 'a': its date '2020-13-45' is not an ISO"):
        index.add(["a"], ["some words"], dates=["2020-13-45"])
    with pytest.raises(InputError, match=r"the date 'notadate' is not an ISO date"):
        index.retire(["a"], "notadate")
    path, src = _url_index(tmp_path, 2)
    src.write_text(src.read_text().replace("2024-01-02", "January 2nd"))
    capsys.readouterr()
    assert main(["index", "add", path, str(src), "--url-field", "url", "--date-field", "date"]) == 1
    assert "document 'http://a/2': its date 'January 2nd' is not an ISO date" in (
        capsys.readouterr().err
    )
    args = ["--url-field", "url", "--date-field", "date", "--on-error", "skip"]
    assert main(["index", "add", path, str(src), *args]) == 0
    assert "skipped 1 bad record" in capsys.readouterr().err
    with Index.open(path) as index:
        assert _seen(index, "http://a/2") == "2024-01-02"  # as added before


def test_moved_for_an_unknown_url_says_it_is_not_in_the_index_without_nothing_was_changed(
    tmp_path: Path,
) -> None:
    index = Index.create(str(tmp_path / "m.db"))
    index.add(["http://a/1"], random_documents(1, seed=2, words=(30, 40)))
    with pytest.raises(UnknownIdError) as info:
        index.moved("http://nope.com")
    assert str(info.value) == "URL 'http://nope.com' is not in the index"  # a query changes nothing
    with pytest.raises(UnknownIdError, match=r"; nothing was changed$"):
        index.retire(["http://nope.com"])  # a change refused says so


def test_bad_paths_versions_parameters_and_writers_give_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no index at"):
        Index.open(str(tmp_path / "missing.db"))
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all, just text\n" * 100)
    with pytest.raises(IndexMismatchError, match="not a neardup index"):
        Index.open(str(junk))
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("CREATE TABLE x(a)").connection.commit()
    with pytest.raises(IndexMismatchError, match="not a neardup index"):
        Index.open(str(plain))
    path = str(tmp_path / "i.db")
    Index.create(path).add(["a"], ["some words to index here and there"])
    with pytest.raises(InputError, match="already exists"):
        Index.create(path)
    with pytest.raises(IndexMismatchError, match="not the requested"):
        Index.open(path, DedupParams(threshold=0.9))
    old = tmp_path / "old.db"
    Index.create(str(old)).close()
    db = sqlite3.connect(old)
    db.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(
        IndexMismatchError, match=f"schema version 0; this neardup reads version {SCHEMA_VERSION}"
    ):
        Index.open(str(old))
    # a second writer waits, then gets a clear error; the first writer's work is intact
    first = Index.open(path, timeout=0.2)
    second = Index.open(path, timeout=0.2)
    with first:
        first.add(["b"], ["another document with words"])
        with pytest.raises(NeardupError, match="being written by another process"):
            second.add(["c"], ["a third document"])
        assert len(second) == 1  # readers go on during the write
    assert len(second) == 2 and "c" not in second
    first.close()
    second.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write to read-only files")
def test_a_read_only_index_answers_queries_and_refuses_writes(tmp_path: Path) -> None:
    path = str(tmp_path / "ro.db")
    Index.create(path).add(["a"], ["some words to index here and there"])
    os.chmod(path, stat.S_IRUSR)
    try:
        ro = Index.open(path)
        assert ro.query(["some words to index here and there"])[0][0].id == "a"
        with pytest.raises(InputError, match="read-only"):
            ro.add(["z"], ["text"])
        assert len(ro) == 1
        ro.close()
    finally:
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


def test_an_index_cannot_use_idf_weighting() -> None:
    with pytest.raises(ParamError, match="IDF"):
        Index.create(None, DedupParams(method=SimhashMethodParams(weighting="idf")))


_WRITER = textwrap.dedent(
    """
    import sys
    from neardup import Index
    from neardup.testing.synth import random_documents
    index = Index.open(sys.argv[1])
    texts = random_documents(400, seed=1, words=(30, 60))
    for b in range(1000):
        index.add([f"b{b}-{i}" for i in range(400)], texts)
        print(b, flush=True)
    """
)


def test_sigkill_during_add_keeps_committed_batches_and_nothing_of_the_interrupted_one(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "crash.db")
    Index.create(path, DedupParams(verify="sketch")).close()
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, path], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    committed = -1
    for line in proc.stdout:
        committed = int(line)
        if committed >= 3:
            break
    time.sleep(0.05)  # into the middle of the next batch
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    index = Index.open(path)
    assert index.check() == []
    batches = {}
    db = sqlite3.connect(path)
    for (doc_id,) in db.execute("SELECT id FROM docs"):
        b = int(doc_id[1:].split("-")[0])
        batches[b] = batches.get(b, 0) + 1
    assert set(range(committed + 1)) <= set(batches)  # every batch reported committed
    assert set(batches.values()) == {400}  # whole batches only
    assert sorted(batches) == list(range(len(batches)))
    assert main(["index", "check", path]) == 0


def test_cli_index_commands_and_dedup_against_an_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = _corpus(300)
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text(
        "".join(json.dumps({"id": f"o{i}", "text": t}) + "\n" for i, t in enumerate(texts[:150]))
    )
    new.write_text(
        "".join(json.dumps({"id": f"n{i}", "text": t}) + "\n" for i, t in enumerate(texts[150:]))
    )
    idx = str(tmp_path / "idx.db")
    assert main(["index", "create", idx]) == 0
    assert main(["dedup", str(old), "--index", idx, "--add"]) == 0  # the kept old documents
    out = tmp_path / "q.jsonl"
    assert main(["index", "query", idx, str(new), "-o", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == [f"n{i}" for i in range(150)]
    assert any(x["matches"] for x in lines)
    capsys.readouterr()
    shown = tmp_path / "q-progress.jsonl"
    assert main(["index", "query", idx, str(new), "-o", str(shown), "--progress"]) == 0
    assert "querying" in capsys.readouterr().err and shown.read_bytes() == out.read_bytes()
    kept = tmp_path / "kept.jsonl"
    assert main(["dedup", str(new), "-o", str(kept), "--index", idx, "--add"]) == 0
    # same as deduplicating everything in order and keeping what came from the new file
    both = Deduplicator(DedupParams()).fit(texts)
    expect = [f"n{i}" for i in range(150) if both.kept_[150 + i]]
    assert [json.loads(x)["id"] for x in kept.read_text().splitlines()] == expect
    capsys.readouterr()
    assert main(["index", "stats", idx]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["documents"] == int(both.kept_.sum())
    assert main(["index", "check", idx]) == 0
    # ids present are replaced, not doubled, whatever the threads signing batches
    assert main(["index", "add", idx, str(old), "--jobs", "2", "--batch-size", "7"]) == 0
    assert len(Index.open(idx)) == 150 + len(expect)
    assert main(["index", "check", idx]) == 0
    assert main(["index", "remove", idx, "o0", "missing"]) == 1
    assert "not in the index: 'missing'" in capsys.readouterr().err
    assert main(["index", "moved", idx, "missing"]) == 1
    junk = tmp_path / "junk.db"
    junk.write_text("x" * 5000)
    assert main(["index", "stats", str(junk)]) == 1
    assert "is not a neardup index" in capsys.readouterr().err
    assert main(["dedup", str(new), "--index", idx, "--threshold", "0.5"]) == 1
    capsys.readouterr()
    for given, named in [(["--tokens", "char"], "--tokens"), (["-w", "3"], "--shingle-size"),
                         (["--nfkc"], "--nfkc"), (["--hash", "rabin"], "--hash"),
                         (["--seed", "7"], "--seed"), (["--removal", "components"], "--removal")]:  # fmt: skip
        # the index's own shingling, seed and removal decide: refused, never silently ignored
        assert (
            main(["dedup", str(new), "-o", str(tmp_path / "x.jsonl"), "--index", idx, *given]) == 1
        )
        assert f"drop {named}" in capsys.readouterr().err
    for given, says in [(["--dask", "local:2"], "runs on this machine"),
                        (["--work-dir", str(tmp_path / "w")], "--work-dir goes with --dask")]:  # fmt: skip
        # a cluster run's options with --index: refused (it ran on one machine, silently)
        assert main(["dedup", str(new), "-o", str(tmp_path / "y"), "--index", idx, *given]) == 1
        assert says in capsys.readouterr().err
    assert not (tmp_path / "y").exists() and not (tmp_path / "w").exists()


def test_a_text_that_is_not_unicode_stops_add_naming_it_or_is_skipped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON lets a lone surrogate through (\\ud800); SQLite keeps UTF-8 only."""
    path = str(tmp_path / "idx.db")
    Index.create(path).close()
    src = tmp_path / "in.jsonl"
    src.write_text(
        '{"id": "odd", "text": "abc \\ud800 def"}\n'
        '{"id": "fine", "text": "a fine text of enough words to sign"}\n'
    )
    assert main(["index", "add", path, str(src)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'odd'" in err[0] and "lone surrogate" in err[0], err
    src.write_text(src.read_text() + "not json\n")
    assert main(["index", "add", path, str(src), "--on-error", "skip"]) == 0
    assert "added 1, replaced 0" in (err := capsys.readouterr().err)
    assert "skipped 2 bad records" in err
    ids = tmp_path / "ids.jsonl"
    ids.write_text('{"id": "odd \\udc80", "text": "another text of enough words to sign"}\n')
    assert main(["index", "add", path, str(ids)]) == 1  # an id too: stops, or is skipped
    assert "its id holds a lone surrogate" in capsys.readouterr().err
    assert main(["index", "add", path, str(ids), "--on-error", "skip"]) == 0
    assert "skipped 1 bad record" in capsys.readouterr().err
    assert main(["index", "query", path, str(src), "--on-error", "skip", "-o", os.devnull]) == 0
    assert "2 queries, 1 with matches; skipped 1 bad record" in capsys.readouterr().err
    with Index.open(path) as index:
        assert "fine" in index and "odd" not in index
        with pytest.raises(InputError, match=r"'m'.*metadata holds a lone surrogate"):
            index.add(["m"], ["fine words"], meta=[{"k": "\ud800"}])
        with pytest.raises(InputError, match="date holds a lone surrogate"):
            index.retire(["fine"], date="\ud800")
    Index.create(None).add(["odd"], ["abc \ud800 def"])  # in memory: nothing to encode


@pytest.mark.parametrize("on_disk", [False, True])
def test_metadata_holding_nan_or_infinity_is_refused_naming_the_field(
    on_disk: bool, tmp_path: Path
) -> None:
    """JSON has no such number: ``get`` and the service's answers could not give it back."""
    index = Index.create(str(tmp_path / "m.db") if on_disk else None)
    for meta, field in (({"x": float("inf")}, "x"), ({"y": [1, {"z": float("nan")}]}, "y.1.z")):
        with pytest.raises(InputError, match=rf"'m': its metadata field {field} holds (inf|nan)"):
            index.add(["ok", "m"], ["fine words", "more words"], meta=[{"n": 1}, meta])
    assert len(index) == 0
    index.add(["m"], ["fine words"], meta=[{"x": 1e308, "s": "NaN and Infinity"}])
    doc = index.get("m")
    assert doc is not None and doc["meta"] == {"x": 1e308, "s": "NaN and Infinity"}


def test_a_match_limit_below_1_is_refused_as_the_service_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "idx.db")
    with Index.create(path, store_text=True) as index:
        index.add(["u1"], ["the quick brown fox jumps over the lazy dog near the river bank"])
        for limit in (0, -1):
            with pytest.raises(ParamError, match=f"limit {limit}: give at least 1"):
                index.query(["the quick brown fox jumps over the lazy dog"], limit=limit)
            with pytest.raises(ParamError, match="give at least 1"):
                index.moved("u1", limit=limit)
    src = tmp_path / "q.jsonl"
    src.write_text('{"id": "q", "text": "the quick brown fox jumps over the lazy dog"}\n')
    out = tmp_path / "answers.jsonl"
    assert main(["index", "query", path, str(src), "--limit", "-1", "-o", str(out)]) == 1
    assert "give at least 1" in capsys.readouterr().err and not out.exists()


def test_an_output_named_as_the_index_s_own_sqlite_files_is_refused(tmp_path: Path) -> None:
    """SQLite removes a closed index's log: an answer written there would vanish."""
    path = str(tmp_path / "idx.db")
    Index.create(path).close()
    src = tmp_path / "q.jsonl"
    src.write_text('{"id": "q", "text": "some words to look up in the index"}\n')
    for suffix in ("-wal", "-shm", "-journal"):
        assert main(["index", "query", path, str(src), "-o", path + suffix]) == 1
        assert main(["dedup", str(src), "--index", path, "-o", path + suffix]) == 1
        assert not os.path.exists(path + suffix)


def test_outputs_named_as_the_sqlite_files_beside_a_symlinked_index_s_target_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SQLite opens link.db at real.db and keeps its log beside that: real.db-wal is the log."""
    real = tmp_path / "real.db"
    with Index.create(str(real)) as index:
        index.add(["u1"], ["some words to look up in the index and then some more"])
    link = tmp_path / "link.db"
    link.symlink_to(real.name)
    src = tmp_path / "q.jsonl"
    src.write_text('{"id": "q", "text": "some words to look up in the index"}\n')
    kept = str(tmp_path / "k.jsonl")
    for suffix in ("-wal", "-shm", "-journal"):
        side = str(real) + suffix
        assert main(["index", "query", str(link), str(src), "-o", side]) == 1
        assert "is a file SQLite keeps beside the index" in capsys.readouterr().err
        assert (
            main(["dedup", str(src), "--index", str(link), "-o", kept, "--summary-json", side]) == 1
        )
        assert "is a file SQLite keeps beside the index" in capsys.readouterr().err
        assert not os.path.exists(kept)
    with Index.open(str(link)) as index:
        assert "u1" in index


def test_a_truncated_index_is_called_damaged_and_to_be_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "idx.db"
    with Index.create(str(path)) as index:
        index.add([f"d{i}" for i in range(300)], random_documents(300, seed=3, words=(30, 60)))
    cut = tmp_path / "copy.db"  # the file alone, as copied elsewhere: no log beside it
    cut.write_bytes(path.read_bytes()[:4096])  # cut short: SQLite finds it malformed
    path = cut
    src = tmp_path / "q.jsonl"
    src.write_text('{"id": "q", "text": "some words to look up in the index"}\n')
    assert main(["index", "query", str(path), str(src), "-o", os.devnull]) == 1
    err = capsys.readouterr().err
    assert "the file itself is damaged" in err and "rebuild the index from its corpus" in err, err


_KILLED_BEFORE_OUTPUT = textwrap.dedent(
    """
    import sys, time
    from neardup.index import jobs
    from neardup.run import ReadOptions
    def stalled(*args, **kwargs):  # every batch deduplicated and added; the outputs not written
        print("outputs", flush=True)
        time.sleep(600)
    jobs._write_deduplicated = stalled
    jobs.dedup_source(sys.argv[1], sys.argv[2], sys.argv[3], ReadOptions(batch_size=50), add=True)
    """
)


def _lone_surrogate_corpus(path: Path, n: int, bad_at: int | None, bad_field: str = "text") -> None:
    """``n`` near-copy-rich records as JSONL; record ``bad_at`` gets a lone surrogate."""
    texts = _corpus(n, seed=4)
    with open(path, "w", encoding="utf-8") as fh:
        for i, text in enumerate(texts):
            rec = {"id": f"d{i}", "text": text}
            if i == bad_at:
                rec[bad_field] = rec[bad_field] + " \\ud800"
            fh.write(json.dumps(rec).replace("\\\\ud800", "\\ud800") + "\n")


def test_dedup_index_add_killed_before_its_outputs_leaves_the_index_as_it_was(
    tmp_path: Path,
) -> None:
    src, idx, kept = tmp_path / "in.jsonl", str(tmp_path / "idx.db"), tmp_path / "kept.jsonl"
    _lone_surrogate_corpus(src, 300, None)
    assert main(["index", "create", idx]) == 0
    env = {**os.environ, "PYTHONPATH": SRC}
    args = [sys.executable, "-c", _KILLED_BEFORE_OUTPUT, str(src), idx, str(kept)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline() == "outputs\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(Index.open(idx)) == 0  # not the kept documents of a kept file never written
    assert not kept.exists()
    assert main(["dedup", str(src), "--index", idx, "--add", "-o", str(kept), "-q"]) == 0
    alone = Deduplicator(DedupParams()).fit([json.loads(x)["text"] for x in src.open()])
    assert len(kept.read_text().splitlines()) == int(alone.kept_.sum()) == len(Index.open(idx))


@pytest.mark.parametrize("field", ["text", "id"])
def test_dedup_index_add_stops_before_adding_anything_or_skips_a_record_not_unicode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str
) -> None:
    src, idx, kept = tmp_path / "in.jsonl", str(tmp_path / "idx.db"), tmp_path / "kept.jsonl"
    _lone_surrogate_corpus(src, 300, 250, field)
    assert main(["index", "create", idx]) == 0
    args = ["dedup", str(src), "--index", idx, "--add", "-o", str(kept), "--batch-size", "50"]
    capsys.readouterr()
    assert main(args) == 1  # stops at batch 6, after five batches that were kept and added
    assert "lone surrogate" in capsys.readouterr().err
    assert len(Index.open(idx)) == 0 and not kept.exists()
    assert main([*args, "--on-error", "skip"]) == 0
    assert "skipped 1 problem (" in capsys.readouterr().err
    kept_ids = [json.loads(line.replace("\\ud800", ""))["id"] for line in kept.open()]
    assert "d250" not in kept_ids and not any("\ud800" in i for i in kept_ids)
    assert len(kept_ids) == len(Index.open(idx))


def test_index_add_warns_when_records_are_stored_under_their_line_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, src = str(tmp_path / "idx.db"), tmp_path / "in.jsonl"
    assert main(["index", "create", path]) == 0
    src.write_text('{"text": "alpha beta gamma delta"}\n{"id": "b", "text": "one two three"}\n')
    capsys.readouterr()
    assert main(["index", "add", path, str(src)]) == 0
    err = capsys.readouterr().err
    assert "warning: 1 record had no 'id' field and was stored under its line number" in err
    src.write_text('{"id": "a", "text": "alpha beta gamma delta"}\n')
    assert main(["index", "add", path, str(src)]) == 0
    assert "warning" not in capsys.readouterr().err


def test_index_create_add_and_query_take_quiet_as_dedup_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `neardup index add x.db in.jsonl -q` was "unrecognized arguments: -q"
    path, src = str(tmp_path / "idx.db"), tmp_path / "in.jsonl"
    src.write_text('{"text": "alpha beta gamma delta"}\n{"id": "b", "text": "one two three"}\n')
    out = str(tmp_path / "q.jsonl")
    for command in (
        ["create", path],
        ["add", path, str(src)],
        ["query", path, str(src), "-o", out],
    ):
        capsys.readouterr()
        assert main(["index", *command]) == 0
        assert capsys.readouterr().err.startswith("neardup: ")
        if command[0] == "create":
            Path(path).unlink()
        assert main(["index", *command, "-q"]) == 0
        err = capsys.readouterr().err
        if command[0] == "add":  # a warning is no summary: it stays
            assert err.startswith("neardup: warning: 1 record had no 'id' field")
            assert "added" not in err
        else:
            assert err == ""


@pytest.mark.parametrize("on_disk", [True, False])
def test_texts_read_as_utf8_bytes_are_stored_as_the_same_strings_would_be(
    tmp_path: Path, on_disk: bool
) -> None:
    """Texts from JSONL (``Utf8Texts``) are written as views of their bytes, never decoded:
    the index holds what the same texts as strings give, byte for byte, checksums included."""
    texts = [*random_documents(4, seed=3, words=(30, 40)), "nul\x00inside é😀 中文", "", "x"]
    ids = [f"d{i}" for i in range(len(texts))]
    paths = [str(tmp_path / f"{name}.db") if on_disk else None for name in ("s", "u")]
    as_str = Index.create(paths[0], store_text=True)
    as_bytes = Index.create(paths[1], store_text=True)
    with as_str:
        as_str.add(ids, texts)
    with as_bytes:
        as_bytes.add(ids, Utf8Texts.from_strings(texts))
    for i, text in zip(ids, texts, strict=True):
        got = as_bytes.get(i)
        assert got is not None and got["text"] == text
    assert as_bytes.check() == [] and as_str.check() == []
    if on_disk:
        dumps = [list(sqlite3.connect(str(p)).iterdump()) for p in paths]
        assert dumps[0] == dumps[1]
