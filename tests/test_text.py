"""Canonical tokens: case, punctuation and formatting are ignored; the tables match Python."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import Decontaminator
from neardup.errors import ParamError, ParamTypeError
from neardup.index.checks import not_unicode
from neardup.text import (
    Utf8Texts,
    canonical_tokens,
    check_texts,
    encode_batch,
    fold_char,
    is_unicode,
    tables,
)

from .strategies import texts


def test_case_and_punctuation_are_ignored() -> None:
    assert canonical_tokens("Übermäßig, really!") == canonical_tokens("übermäßig really")
    assert canonical_tokens("Hello,   WORLD\n\t--") == ["hello", "world"]


def test_curly_quotes_dashes_and_emoji_separate_tokens() -> None:
    assert canonical_tokens("“quoted”—dash😀emoji") == ["quoted", "dash", "emoji"]


def test_final_sigma_and_capital_sigma_fold_alike() -> None:
    assert canonical_tokens("ΟΔΟΣ") == canonical_tokens("οδος")


def test_dotted_capital_i_folds_to_i_without_splitting_the_token() -> None:
    assert canonical_tokens("İstanbul") == ["istanbul"]


def test_char_mode_drops_non_word_characters() -> None:
    assert canonical_tokens("kk really rocks!", mode="char") == list("kkreallyrocks")
    assert canonical_tokens("中文, 字!", mode="char") == ["中", "文", "字"]


def test_nfkc_option_unifies_compatibility_forms() -> None:
    assert canonical_tokens("ﬁne ｆｕｌｌ", nfkc=True) == ["fine", "full"]
    assert canonical_tokens("ﬁne ｆｕｌｌ") != ["fine", "full"]


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=0x10FFFF))
def test_tables_agree_with_python_for_every_code_point(cp: int) -> None:
    import re

    is_word, fold = tables()
    c = chr(cp)
    assert bool(is_word[cp]) == bool(re.fullmatch(r"\w", c))
    assert chr(fold[cp]) == fold_char(c)


def test_tables_agree_with_python_on_all_of_latin_greek_cyrillic() -> None:
    import re

    is_word, fold = tables()
    for cp in range(0x0500):
        c = chr(cp)
        assert bool(is_word[cp]) == bool(re.fullmatch(r"\w", c)), hex(cp)
        assert chr(fold[cp]) == fold_char(c), hex(cp)


def test_encode_batch_offsets_delimit_each_document() -> None:
    docs = ["ab", "", "ß😀", "\ud800x"]
    buf, offsets = encode_batch(docs)
    assert offsets.tolist() == [0, 2, 2, 8, 12]
    parts = [bytes(buf[offsets[i] : offsets[i + 1]]) for i in range(len(docs))]
    assert [p.decode("utf-8", "surrogatepass") for p in parts] == docs
    assert buf.dtype == np.uint8


def test_disk_cache_round_trips_the_tables(tmp_path: object, monkeypatch: object) -> None:
    from pathlib import Path

    from neardup import text

    assert isinstance(tmp_path, Path)
    built = text._build_tables()
    path = tmp_path / "t.npz"
    text._save_tables(path, *built)
    loaded = text._load_tables(path)
    assert loaded is not None
    assert np.array_equal(loaded[0], built[0]) and np.array_equal(loaded[1], built[1])
    path.write_bytes(b"not a table file")
    assert text._load_tables(path) is None  # a broken cache is rebuilt, never trusted


def test_canonical_tokens_and_token_spans_refuse_an_unknown_mode() -> None:
    import pytest

    from neardup.errors import ParamError
    from neardup.text import token_spans

    with pytest.raises(ParamError, match="mode must be 'word' or 'char', got 'words'"):
        canonical_tokens("a b", "words")  # type: ignore[arg-type]
    with pytest.raises(ParamError, match="mode must be 'word' or 'char'"):
        token_spans(["a b"], "words")  # type: ignore[arg-type]


def test_check_texts_refuses_a_zero_dimensional_array_as_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"texts must be a list of strings, got a 0-d array"):
        check_texts(np.array("one text"))
    assert list(check_texts(np.array(["a", "b"]))) == ["a", "b"]


def test_check_texts_refuses_wrong_types_as_a_param_error_that_is_still_a_type_error() -> None:
    for wrong, said in (("one text", "not one str"), ([None], r"\[0\] is NoneType, not str")):
        with pytest.raises(ParamTypeError, match=said) as caught:
            Decontaminator(wrong)  # type: ignore[arg-type]
        assert isinstance(caught.value, ParamError) and isinstance(caught.value, TypeError)
    with pytest.raises(ParamTypeError, match="texts must be a list of strings, got NoneType"):
        Decontaminator(["a b c"]).contains(None)  # type: ignore[arg-type]


def test_a_dict_of_texts_is_refused_rather_than_its_keys_taken_as_the_texts() -> None:
    with pytest.raises(ParamTypeError, match=r"got a dict; pass its texts: list\(d.values\(\)\)"):
        Decontaminator({"q1": "the quick brown fox jumps"})  # type: ignore[arg-type]
    with pytest.raises(ParamTypeError, match="got a dict"):
        encode_batch({"q1": "the quick brown fox jumps"})  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.lists(texts, max_size=12), st.integers(0, 12))
def test_utf8_texts_find_the_texts_with_a_surrogate_as_encoding_each_would(
    values: list[str], start: int
) -> None:
    """``Utf8Texts.surrogate_rows`` reads the buffer; the reference encodes each text."""
    held = Utf8Texts.from_strings(values)
    assert held.surrogate_rows() == [i for i, v in enumerate(values) if not is_unicode(v)]
    assert held.surrogate_rows() == held.surrogate_rows()  # kept, and a copy each time
    tail = held[start:]
    assert tail.surrogate_rows() == [i for i, v in enumerate(values[start:]) if not is_unicode(v)]
    assert not_unicode(tail) == not_unicode(list(values[start:]))


def test_utf8_texts_read_their_buffer_once_for_surrogates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``index add`` asks a batch twice (to skip bad records, then to store it): one scan."""
    held = Utf8Texts.from_strings(["ok", "bad \ud800", "fine"])
    assert held.surrogate_rows() == [1]
    monkeypatch.setattr("neardup.text._SURROGATE_BYTES", None)  # a second scan would fail
    assert not_unicode(held) == [1]
