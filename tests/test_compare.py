"""neardup.compare: the LCS kernel equals its reference, and every measure equals brute force."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.lcs import lcs_alignment, lcs_length
from neardup.cli import main
from neardup.compare import compare, format_comparison, word_spans
from neardup.minhash import estimate, sketch
from neardup.params import ShingleParams, SketchParams
from neardup.simhash import simhash
from neardup.text import canonical_tokens, fold_char

from .strategies import texts, tricky_text


def lcs_reference(a: list[object], b: list[object]) -> int:
    """Textbook O(m n) table: L[i][j] = LCS of a[:i] and b[:j]."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
            )
    return table[len(a)][len(b)]


def shingle_set(tokens: list[str], w: int) -> set[tuple[str, ...]]:
    """Broder's w-shingles as tuples of tokens; a short document is one shingle."""
    if not tokens:
        return set()
    if len(tokens) < w:
        return {tuple(tokens)}
    return {tuple(tokens[i : i + w]) for i in range(len(tokens) - w + 1)}


def _ratio(inter: int, denom: int) -> float:
    return inter / denom if denom else 0.0


small_seqs = st.lists(st.integers(0, 4), max_size=40)


@settings(max_examples=300, deadline=None)
@given(a=small_seqs, b=small_seqs)
def test_lcs_kernel_equals_the_table_reference(a: list[int], b: list[int]) -> None:
    x, y = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    want = lcs_reference(a, b)
    assert lcs_length(x, y) == want
    ia, ib = lcs_alignment(x, y)
    assert len(ia) == len(ib) == want
    # a valid common subsequence: strictly increasing positions holding equal values
    assert all(np.diff(ia) > 0) and all(np.diff(ib) > 0)
    assert [a[i] for i in ia] == [b[j] for j in ib]


@settings(max_examples=40, deadline=None)
@given(
    a=st.lists(st.integers(0, 3), min_size=60, max_size=300),
    b=st.lists(st.integers(0, 3), min_size=60, max_size=300),
)
def test_lcs_kernel_equals_the_reference_across_many_words(a: list[int], b: list[int]) -> None:
    # more than 64 positions: the bit-parallel rows carry across 64-bit words
    x, y = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    want = lcs_reference(a, b)
    assert lcs_length(x, y) == lcs_length(y, x) == want
    ia, ib = lcs_alignment(x, y)
    assert len(ia) == want and [a[i] for i in ia] == [b[j] for j in ib]
    assert all(np.diff(ia) > 0) and all(np.diff(ib) > 0)


@settings(max_examples=150, deadline=None)
@given(a=texts, b=texts)
def test_measures_equal_brute_force_on_unicode(a: str, b: str) -> None:
    c = compare(a, b, ShingleParams(w=3))
    ta, tb = canonical_tokens(a), canonical_tokens(b)
    assert (c.tokens_a, c.tokens_b) == (len(ta), len(tb))
    sa, sb = shingle_set(ta, 3), shingle_set(tb, 3)
    inter = len(sa & sb)
    assert (c.shingles_a, c.shingles_b) == (len(sa), len(sb))
    assert c.resemblance == pytest.approx(_ratio(inter, len(sa | sb)) if sa and sb else 0.0)
    assert c.containment_a_in_b == pytest.approx(_ratio(inter, len(sa)))
    assert c.containment_b_in_a == pytest.approx(_ratio(inter, len(sb)))
    assert c.dice == pytest.approx(_ratio(2 * inter, len(sa) + len(sb)))
    ba, bb = set(ta), set(tb)
    assert c.bag_of_words_jaccard == pytest.approx(
        _ratio(len(ba & bb), len(ba | bb)) if ba and bb else 0.0
    )
    lcs = lcs_reference(ta, tb)  # type: ignore[arg-type]
    assert c.lcs_length == lcs
    assert c.edit_distance == len(ta) + len(tb) - 2 * lcs
    assert c.lcs_similarity == pytest.approx(_ratio(2 * lcs, len(ta) + len(tb)))


@settings(max_examples=100, deadline=None)
@given(a=tricky_text, b=tricky_text)
def test_diff_replays_both_word_sequences(a: str, b: str) -> None:
    c = compare(a, b)

    def fold(words: list[str]) -> list[str]:  # equal runs show B's spelling of A's words
        return ["".join(map(fold_char, w)) for w in words]

    left = [w for op, words in c.diff if op in "=-" for w in words]
    right = [w for op, words in c.diff if op in "=+" for w in words]
    assert fold(left) == fold([a[s:e] for s, e in word_spans(a)])
    assert right == [b[s:e] for s, e in word_spans(b)]
    assert sum(len(words) for op, words in c.diff if op == "=") == c.lcs_length


def test_minhash_and_simhash_equal_the_stage_functions() -> None:
    a = "the quick brown fox jumps over the lazy dog near the river bank today " * 3
    b = a.replace("lazy", "sleepy").replace("river", "sea")
    sp = SketchParams(kind="classic", t=64, seed=7)
    c = compare(a, b, ShingleParams(w=4), sp)
    rows = sketch(*_sets([a, b], ShingleParams(w=4)), sp)
    assert c.minhash_estimate == estimate(rows[0], rows[1], "classic")
    fa, fb = simhash([a, b])
    assert c.simhash_distance == bin(int(fa) ^ int(fb)).count("1")
    assert (
        0 < c.resemblance < 1
        and abs(c.minhash_estimate - c.resemblance) < 4 * c.minhash_stderr + 1e-9
    )


def _sets(texts: list[str], params: ShingleParams) -> tuple[np.ndarray, np.ndarray]:
    from neardup.shingles import shingle_batch

    batch = shingle_batch(texts, params)
    return batch.fps, batch.offsets


def test_identical_and_disjoint_texts_score_one_and_zero() -> None:
    same = compare("Alpha beta gamma delta epsilon zeta.", "alpha, BETA gamma delta epsilon zeta")
    assert same.resemblance == same.lcs_similarity == same.bag_of_words_jaccard == 1.0
    assert same.edit_distance == 0 and same.simhash_distance == 0
    other = compare("alpha beta gamma delta epsilon", "one two three four five six")
    assert other.resemblance == other.lcs_length == other.bag_of_words_jaccard == 0.0
    assert other.edit_distance == 11


def test_report_marks_removed_and_added_words() -> None:
    text = format_comparison(compare("a b c d e f", "a b x d e f"))
    assert "[-c-] {+x+}" in text and "resemblance" in text and "LCS similarity" in text


def test_cli_compare_prints_json_for_files_and_stdin(
    tmp_path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    a = tmp_path / "a.txt"
    a.write_text("one two three four five six seven eight nine ten", encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"one two three four five six")))
    assert main(["compare", str(a), "-", "--json", "-w", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["containment_b_in_a"] == 1.0 and out["lcs_length"] == 6 and out["edit_distance"] == 4
    assert out["diff"] == [["=", "one two three four five six"], ["-", "seven eight nine ten"]]


def test_cli_compare_missing_file_is_one_line_error(tmp_path, capsys) -> None:
    assert main(["compare", str(tmp_path / "nope.txt"), str(tmp_path / "nope2.txt")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("neardup: error:") and "nope.txt" in err and err.count("\n") == 1
