"""Misuse of an index (used after close, nested ``with``, bad metadata or dates): usage errors."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest

from neardup import Index, IndexCorrupt, InputError, NeardupError


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
