"""neardup.Client against the real server: the same answers and exceptions as ``Index`` for
values at the edges (lone surrogates, parameters of the wrong type, non-finite metadata)."""

from __future__ import annotations

import datetime
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import numpy as np
import pytest

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from neardup import Client, Index, IndexCorrupt, InputError, NeardupError, ParamError, errors
from neardup.errors import ServiceError, UnknownIdError

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


@pytest.mark.parametrize(
    ("threshold", "limit"), [(True, None), ("0.9", None), (None, True), (None, 2.0), (None, 0)]
)
def test_a_threshold_or_limit_of_the_wrong_type_or_range_is_param_error_as_index_raises(
    both: tuple[Index, Client], threshold: object, limit: object
) -> None:
    embedded, client = both
    for index in (embedded, client):
        with pytest.raises(ParamError, match=r"threshold|limit"):
            index.query(["the quick brown fox"], threshold, limit)  # type: ignore[arg-type]
        if limit is not None:
            with pytest.raises(ParamError, match="limit"):
                index.moved("a", limit)  # type: ignore[arg-type]
    body = {"documents": [{"text": "a b c"}], "threshold": threshold, "limit": limit}
    r = _post(client, "/query", body)
    assert (r.status_code, r.json()["error"]["type"]) == (400, "ParamError"), r.text
    assert r.json()["error"]["message"].startswith(("threshold", "the query threshold", "limit"))


def _post(client: Client, route: str, body: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return httpx.post(client.url + route, json=body, headers=headers, timeout=60)


def test_a_query_id_is_echoed_as_sent_and_any_other_value_refused_in_plain_words(
    both: tuple[Index, Client],
) -> None:
    _, client = both
    docs = [{"id": 7, "text": "a b c"}, {"id": "q", "text": "a b c"}, {"text": "a b c"}]
    r = _post(client, "/query", {"documents": docs})
    assert [a["id"] for a in r.json()["results"]] == [7, "q", None]
    for value, shown in ((True, "true"), (1.5, "the number 1.5"), ([1], "a list")):
        r = _post(client, "/query", {"documents": [{"id": value, "text": "a b c"}]})
        assert (r.status_code, r.json()["error"]["type"]) == (422, "InputError")
        message = r.json()["error"]["message"]
        assert message.startswith(
            f"documents.0.id: should be a string, a whole number or null, got {shown};"
        ), message
    r = _post(client, "/query", {"documents": [{"text": 7}]})
    assert "documents.0.text: Input should be a valid string, got the number 7" in r.text


def test_retiring_a_url_again_without_a_date_keeps_its_date_through_the_service(
    both: tuple[Index, Client],
) -> None:
    for index in both:
        index.add(["http://r/1"], ["some text about a fox and a dog by the river"])
        index.retire(["http://r/1"], date="2024-04-01")
        assert index.retire(["http://r/1"]) == 1
        doc = index.get("http://r/1")
        assert doc is not None and doc["gone"] == "2024-04-01"
        index.remove(["http://r/1"])


@pytest.mark.parametrize(
    ("value", "shown"), [("1e999", "inf"), ("NaN", "nan"), ("-Infinity", "-inf")]
)
def test_metadata_holding_nan_or_infinity_is_422_naming_the_field_as_index_refuses_it(
    both: tuple[Index, Client], value: str, shown: str
) -> None:
    """Python's JSON reader takes these; no answer could give them back (GET said null)."""
    embedded, client = both
    body = f'{{"documents": [{{"id": "m", "text": "t t t", "meta": {{"y": [{value}]}}}}]}}'
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    r = httpx.post(client.url + "/add", content=body.encode(), headers=headers)
    assert (r.status_code, r.json()["error"]["type"]) == (422, "InputError"), r.text
    assert r.json()["error"]["message"].startswith(
        f"documents.0.meta: field y.0 holds {shown}, a number JSON cannot hold;"
    )
    for index in (embedded, client):
        with pytest.raises(InputError, match=f"field y.0 holds {shown}"):
            index.add(["m"], ["t t t"], meta=[{"y": [float(value)]}])
        assert "m" not in index


def test_a_damaged_index_raises_index_corrupt_through_the_client_as_index_does(
    tmp_path: Path,
) -> None:
    path = tmp_path / "damaged.db"
    with Index.create(str(path), store_text=True) as index:
        index.add(["a", "b"], ["the quick brown fox jumps over the lazy dog", "another text"])
    db = sqlite3.connect(path)
    db.execute("UPDATE docs SET text = 'tampered' WHERE id = 'a'")  # its checksum now fails
    db.commit()
    db.close()
    embedded = Index.open(str(path))
    with pytest.raises(IndexCorrupt) as by_index:
        embedded.get("a")
    embedded.close()
    server = Server(path)
    try:
        with server.client() as client:
            with pytest.raises(IndexCorrupt) as by_client:
                client.get("a")
            assert client.get("b") is not None
    finally:
        assert server.stop() == 0
    assert str(by_client.value) == str(by_index.value)


def test_every_neardup_error_the_service_names_is_raised_again_as_that_class() -> None:
    """The service sends ``type(exc).__name__``; the client must know every class it may name."""
    classes = [
        c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, NeardupError)
    ]
    assert {errors.IndexCorrupt, errors.OutputError} <= set(classes)
    for cls in classes:

        def answer(request: httpx.Request, name: str = cls.__name__) -> httpx.Response:
            body = {"error": {"type": name, "message": "what went wrong"}}
            return httpx.Response(500, json=body)

        client = Client(transport=httpx.MockTransport(answer))
        with pytest.raises(cls, match="what went wrong") as caught:
            client.stats()
        assert type(caught.value) is cls
        if cls is errors.ServiceError:
            assert caught.value.status == 500  # type: ignore[attr-defined]


ODD_IDS = [".", "..", "x\ny", "", "a/../b", "./", "%2E", "a\r\nb", "/.", "?q#f"]


def test_ids_of_dots_slashes_and_newlines_are_read_and_removed_over_http_as_index_does(
    both: tuple[Index, Client],
) -> None:
    embedded, client = both
    texts = [f"a document with an odd id number {i} and some words" for i in range(len(ODD_IDS))]
    for index in (embedded, client):
        index.add(ODD_IDS, texts)
        for i, text in zip(ODD_IDS, texts, strict=True):
            found = index.get(i)
            assert found is not None and (found["id"], found["text"]) == (i, text), i
            assert i in index
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for i in ODD_IDS[:4]:  # DELETE /documents/{id}, the path escaped as the client does
        path = "/documents/" + quote(i, safe="").replace(".", "%2E")
        r = httpx.delete(client.url + path, headers=auth)
        assert (r.status_code, r.json()) == (200, {"removed": 1}), (i, r.text)
        assert i not in client and embedded.remove([i]) == 1
    assert client.remove(ODD_IDS[4:]) == embedded.remove(ODD_IDS[4:]) == len(ODD_IDS) - 4
    for index in (embedded, client):
        assert all(index.get(i) is None and i not in index for i in ODD_IDS)
        assert len(index) == 1


@pytest.mark.parametrize(
    ("status", "headers", "content"),
    [
        (307, {"location": "/documents"}, b""),
        (200, {"content-type": "text/html"}, b"<html>a proxy page</html>"),
        (200, {}, b""),
    ],
    ids=["redirect", "html", "empty"],
)
def test_an_answer_that_is_not_json_is_a_service_error_saying_so(
    status: int, headers: dict[str, str], content: bytes
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=headers, content=content)

    client = Client(transport=httpx.MockTransport(answer))
    for call in (client.stats, lambda: client.get("x")):
        with pytest.raises(ServiceError) as caught:
            call()
        assert caught.value.status == status
        assert "not JSON" in str(caught.value) or f"HTTP {status}" in str(caught.value)


def test_values_json_cannot_carry_raise_the_input_error_index_raises_not_a_type_error(
    both: tuple[Index, Client],
) -> None:
    day = datetime.date(2024, 1, 1)
    said = []
    for index in both:
        with pytest.raises(InputError, match="document 'm1': its metadata cannot be") as meta:
            index.add(["m1"], ["a b c"], meta=[{"d": day}])
        with pytest.raises(InputError, match="document 'm2': its date is date") as date:
            index.add(["m2"], ["a b c"], dates=[day])  # type: ignore[list-item]
        for when in (2024, day):
            with pytest.raises(InputError, match=r"the date is .* not a string") as retired:
                index.retire(["a"], when)  # type: ignore[arg-type]
        said.append((str(meta.value), str(date.value), str(retired.value)))
        assert "m1" not in index and "m2" not in index
        found = index.get("a")
        assert found is not None and found["gone"] is None
    assert said[0] == said[1]


def test_numpy_numbers_are_taken_as_threshold_and_limit_as_python_ones(
    both: tuple[Index, Client],
) -> None:
    query = ["the quick brown fox jumps over the lazy dog by the river bank!"]
    answers = []
    for index in both:
        expected = index.query(query, 0.9, 2)
        assert expected and expected[0]  # the stored document matches
        for threshold, limit in [
            (np.float32(0.9), None),
            (np.float64(0.9), np.int64(2)),
            (None, np.int32(2)),
            (np.float16(1.0), np.uint8(1)),
        ]:
            assert index.query(query, threshold, limit) == index.query(  # type: ignore[arg-type]
                query,
                None if threshold is None else float(threshold),
                None if limit is None else int(limit),
            )
        assert index.moved("a", np.int64(1)) == index.moved("a", 1)  # type: ignore[arg-type]
        with pytest.raises(ParamError, match="limit"):
            index.query(query, None, np.float64(2.0))  # type: ignore[arg-type]
        with pytest.raises(ParamError, match="threshold"):
            index.query(query, np.bool_(True), None)  # type: ignore[arg-type]
        with pytest.raises(ParamError, match="threshold"):
            index.query(query, np.float32(0.5), None)
        answers.append(expected)
    assert answers[0] == answers[1]
