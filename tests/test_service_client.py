"""neardup.Client against the real server: the same answers and exceptions as ``Index`` for
values at the edges (lone surrogates, parameters of the wrong type, non-finite metadata)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from neardup import Client, Index, InputError
from neardup.errors import UnknownIdError

from .test_service import TOKEN, Server

ODD = "hello \ud800 world"  # a lone surrogate: JSON can carry it escaped, UTF-8 cannot


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Index, Client]]:
    """An embedded index and a client of a server over a copy of it (one stored document)."""
    folder = tmp_path_factory.mktemp("client")
    embedded = Index.create(str(folder / "embedded.db"), store_text=True)
    served = Index.create(str(folder / "served.db"), store_text=True)
    for index in (embedded, served):
        index.add(["a"], ["the quick brown fox jumps over the lazy dog by the river bank"])
    served.close()
    server = Server(folder / "served.db", "--token", TOKEN)
    with server.client() as client:
        yield embedded, client
    embedded.close()
    assert server.stop() == 0


def test_a_lone_surrogate_gets_the_client_the_answer_or_error_index_gives(
    both: tuple[Index, Client],
) -> None:
    embedded, client = both
    for index in (embedded, client):
        assert index.query([ODD]) == [[]]
        with pytest.raises(InputError, match="lone surrogate"):
            index.add(["x"], [ODD])
        with pytest.raises(InputError, match="lone surrogate"):
            index.add([ODD], ["some words"])
        with pytest.raises(InputError, match="lone surrogate"):
            index.add(["x"], ["some words"], meta=[{"k": ODD}])
        with pytest.raises(InputError, match="lone surrogate"):
            index.dedup([ODD], ["some words"])
        with pytest.raises(InputError, match="lone surrogate"):
            index.remove([ODD])
        with pytest.raises(InputError, match="lone surrogate"):
            index.retire(["a"], date=ODD)
        with pytest.raises(UnknownIdError, match="is not in the index"):
            index.moved(ODD)
        assert index.get(ODD) is None and ODD not in index
        assert len(index) == 1 and "x" not in index
