"""The paragraph rule: the split kernel and the rewrite against their references (Unicode,
CR, blank lines of spaces), run compiled and interpreted (``tests/test_interpreted.py``)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import ShingleParams
from neardup.errors import ParamError
from neardup.paragraphs import rewrite, split, split_reference

from .strategies import TRICKY, texts

LINES = st.lists(
    st.sampled_from([*TRICKY, " ", "\r", "\n", "\n", "\r\n", "\r\n", "\v", "\f"]), max_size=160
).map("".join)


def _rewrite_reference(text: str, removed: list[bool], unit: str = "paragraph") -> str:
    """The separator rule on characters: leading text, each kept unit and the separator after
    it, the last kept one followed by the trailing text."""
    spans = [(a, b) for a, b, _ in split_reference(text, unit)]  # type: ignore[arg-type]
    kept = [s for s, gone in zip(spans, removed, strict=True) if not gone]
    out = text[: spans[0][0]] if spans else text
    following = {spans[i][0]: spans[i + 1][0] for i in range(len(spans) - 1)}
    for k, (a, b) in enumerate(kept):
        out += text[a:b]
        if k + 1 < len(kept):
            out += text[b : following[a]]
    return out + (text[spans[-1][1] :] if spans else "")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LINES, texts), max_size=5), st.sampled_from(["paragraph", "line"]))
def test_the_split_kernel_finds_the_reference_units_and_token_counts(
    docs: list[str], unit: str
) -> None:
    for mode in ("word", "char"):
        found = split(docs, unit, mode)  # type: ignore[arg-type]
        got = list(found.texts())
        expected = [split_reference(t, unit, mode) for t in docs]  # type: ignore[arg-type]
        assert found.counts.tolist() == [len(e) for e in expected]
        assert got == [t[a:b] for t, e in zip(docs, expected, strict=True) for a, b, _ in e]
        assert found.tokens.tolist() == [k for e in expected for _, _, k in e]


@settings(max_examples=300, deadline=None)
@given(LINES, st.sampled_from(["paragraph", "line"]), st.randoms(use_true_random=False))
def test_a_rewrite_keeps_every_separator_of_the_kept_units(text: str, unit: str, rnd) -> None:  # type: ignore[no-untyped-def]
    n = len(split_reference(text, unit))  # type: ignore[arg-type]
    removed = [rnd.random() < 0.5 for _ in range(n)]
    assert rewrite(text, removed, unit) == _rewrite_reference(text, removed, unit)  # type: ignore[arg-type]
    assert rewrite(text, [False] * n, unit) == text  # type: ignore[arg-type]


def test_the_rule_on_an_example() -> None:
    text = "  Dear all,\nhello there\n\n \n> quoted line\r\n\r\n-- \nJo\n"
    assert list(split([text]).texts()) == ["  Dear all,\nhello there", "> quoted line", "-- \nJo"]
    assert list(split([text], "line").texts()) == [
        "  Dear all,", "hello there", "> quoted line", "-- ", "Jo",
    ]  # fmt: skip
    assert rewrite(text, [False, True, False]) == "  Dear all,\nhello there\n\n \n-- \nJo\n"
    assert rewrite(text, [False, False, True]) == "  Dear all,\nhello there\n\n \n> quoted line\n"


@pytest.mark.parametrize("unit", ["paragraph", "line"])
def test_a_crlf_line_ending_goes_with_a_removed_unit_as_a_newline_does(unit: str) -> None:
    intro, para = "intro line here with words enough to count", "a paragraph seen before"
    for end in ("\n", "\r\n"):
        text = f"{intro}{end}{end}{para}"
        assert list(split([text], unit).texts()) == [intro, para]  # type: ignore[arg-type]
        assert rewrite(text, [False, True], unit) == intro  # type: ignore[arg-type]
        assert rewrite(text, [True, False], unit) == para  # type: ignore[arg-type]
    lines = "one\r\ntwo\r\nthree\r\n"
    assert rewrite(lines, [False, True, False], "line") == "one\r\nthree\r\n"


def test_a_lone_carriage_return_stays_text() -> None:
    text = "one\rtwo\r\n\r\nthree\r"  # inside a line, and ending a document without a newline
    assert list(split([text]).texts()) == ["one\rtwo", "three\r"]
    assert split_reference(text) == [(0, 7, 2), (11, 17, 1)]


@pytest.mark.parametrize("tokens", ["chars", None, "words"])
def test_split_refuses_a_token_mode_as_shingle_params_does(tokens: object) -> None:
    # a typo or None counted words, silently
    with pytest.raises(ParamError) as expected:
        ShingleParams(tokens=tokens)  # type: ignore[arg-type]
    with pytest.raises(ParamError, match=f"^{re.escape(str(expected.value))}$"):
        split(["ab cd"], tokens=tokens)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", [None, b"a", 3])
def test_rewrite_refuses_a_text_that_is_not_a_str(text: object) -> None:
    # AttributeError: 'NoneType' object has no attribute 'encode'
    with pytest.raises(ParamError, match=rf"text must be a str \(.*\), got {type(text).__name__}"):
        rewrite(text, [False])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("removed", "got"),
    [
        ([1, 2, 0], "int64 [1 2 0]; for unit numbers pass np.isin(np.arange(3), numbers)"),
        ([0.5, 0, 0], "float64"),
        (["x", "y", "z"], "<U1"),  # every unit removed
        (None, "None"),
        ("TFF", "got str"),
        ([True], "1 flag"),
        ([[True, False, False]], "shape (1, 3)"),
    ],
)
def test_rewrite_refuses_removed_flags_that_are_not_one_bool_per_unit(
    removed: object, got: str
) -> None:
    text = "a b c\n\nd e f\n\ng h i"  # three paragraphs
    with pytest.raises(ParamError, match=r"^removed must be one True/False per unit \(3\)") as e:
        rewrite(text, removed)  # type: ignore[arg-type]
    assert got in str(e.value)
    assert rewrite(text, np.array([0, 1, 0]) == 1) == "a b c\n\ng h i"  # a bool array is one
    assert rewrite("\n\n", []) == "\n\n"  # no units, no flags
