"""Misuse of an index (used after close, nested ``with``, bad metadata or dates): usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from neardup import Index, IndexCorrupt, NeardupError


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
