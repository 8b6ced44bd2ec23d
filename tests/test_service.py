"""neardup serve: the real server (uvicorn in a subprocess) spoken to over HTTP on loopback."""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from neardup import Client, Index, InputError, ParamError  # noqa: E402
from neardup.errors import ServiceError, UnknownIdError  # noqa: E402
from neardup.params import DedupParams  # noqa: E402
from neardup.testing.synth import near_duplicate_corpus, random_documents  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")
ENV = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
TOKEN = "s3cret-token"


class Server:
    """``neardup serve PATH --port 0 ...`` in a subprocess; its port read from its first line."""

    def __init__(self, path: Path, *options: str, wait: bool = True) -> None:
        self.log = path.with_name(path.name + f".{time.monotonic_ns()}.log")
        self._err = open(self.log, "wb")  # noqa: SIM115 (closed in stop)
        cmd = [sys.executable, "-m", "neardup.cli", "serve", str(path), "--port", "0", *options]
        self.proc = subprocess.Popen(cmd, stderr=self._err, env=ENV)
        self.url = ""
        if wait:
            self._wait_until_up()

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = self.log.read_text()
            if "serving" in text and not self.url:
                self.url = text.split(" at ", 1)[1].split(" ", 1)[0]
            if self.url:
                try:
                    headers = {"Authorization": f"Bearer {TOKEN}"}
                    if httpx.get(self.url + "/health", headers=headers).status_code in (200, 401):
                        return
                except httpx.TransportError:
                    pass
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.log.read_text()}")
            time.sleep(0.1)
        raise AssertionError("server did not start in 120 s")

    def client(self, token: str | None = TOKEN) -> Client:
        return Client(self.url, token)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=60)
        self._err.close()
        return code


def _texts(n: int = 120, seed: int = 5) -> list[str]:
    base = random_documents(n, seed=seed, words=(20, 120))
    return list(near_duplicate_corpus(base, n, 0.5, seed=seed + 1).texts)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    """One server with a token and small limits, over an index of generated documents."""
    path = tmp_path_factory.mktemp("service") / "idx.db"
    Index.create(str(path)).close()
    server = Server(path, "--token", TOKEN, "--max-batch", "200", "--max-body", "200000")
    yield server, path
    assert server.stop() == 0


def _post(server: Server, route: str, body: object, token: str | None = TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(server.url + route, json=body, headers=headers, timeout=60)


def test_every_endpoint_answers_as_the_embedded_index_and_the_cli_do(
    served: tuple[Server, Path], tmp_path: Path
) -> None:
    server, path = served
    texts = _texts()
    ids = [f"doc-{i}" for i in range(len(texts))]
    with server.client() as client:
        assert client.health() == {"status": "ok"}
        done = client.add(ids, texts, meta=[{"n": i} for i in range(len(texts))])
        assert (done.added, done.replaced) == (len(texts), 0)
        assert client.add(ids[:1], texts[:1]).replaced == 1
        queries = _texts(60, seed=5)  # the same generator: many copies of stored documents
        over_http = client.query(queries)
        assert len(client) == len(texts)
        assert "doc-3" in client and "nope" not in client
        assert client.get("doc-3") == {
            "id": "doc-3",
            "text": texts[3],
            "meta": {"n": 3},
            "first_seen": None,
            "last_seen": None,
            "gone": None,
        }
        assert client.stats()["documents"] == len(texts)
    embedded = Index.open(str(path))
    try:
        same = [[m.as_dict() for m in ms] for ms in embedded.query(queries)]  # 6 decimals
        assert [[m.as_dict() for m in ms] for ms in over_http] == same
    finally:
        embedded.close()
    assert sum(map(bool, over_http)) > 10  # the comparison is not between empty lists

    # POST /query answers the JSON lines of `neardup index query`, id for id
    src = tmp_path / "q.jsonl"
    src.write_text(
        "".join(json.dumps({"id": f"q{i}", "text": t}) + "\n" for i, t in enumerate(queries))
    )
    cli = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "index", "query", str(path), str(src)],
        capture_output=True, text=True, env=ENV, check=True,
    )  # fmt: skip
    lines = [json.loads(line) for line in cli.stdout.splitlines()]
    body = {"documents": [{"id": f"q{i}", "text": t} for i, t in enumerate(queries)]}
    assert _post(server, "/query", body).json()["results"] == lines


def test_post_dedup_keeps_what_neardup_dedup_index_keeps(tmp_path: Path) -> None:
    """The same documents against the same index: the same kept ids and counts, over HTTP and
    from the CLI; with ``add``, both indexes end with the same documents."""
    texts = _texts(160, seed=11)
    stored, incoming = texts[:70], texts[50:]  # overlapping: some duplicate the index
    ids = [f"new-{i}" for i in range(len(incoming))]
    paths = [tmp_path / "cli.db", tmp_path / "http.db"]
    for path in paths:
        index = Index.create(str(path))
        index.add([f"old-{i}" for i in range(len(stored))], stored)
        index.close()
    src = tmp_path / "in.jsonl"
    docs = [{"id": i, "text": t} for i, t in zip(ids, incoming, strict=True)]
    src.write_text("".join(json.dumps(d) + "\n" for d in docs))

    def cli(*extra: str) -> tuple[list[str], dict[str, object]]:
        kept, summary = tmp_path / "kept.jsonl", tmp_path / "summary.json"
        args = [str(src), "--index", str(paths[0]), "-o", str(kept), "--summary-json", str(summary)]
        subprocess.run(
            [sys.executable, "-m", "neardup.cli", "dedup", *args, "--quiet", *extra],
            env=ENV, check=True,
        )  # fmt: skip
        lines = [json.loads(line)["id"] for line in kept.read_text().splitlines()]
        return lines, json.loads(summary.read_text())

    server = Server(paths[1], "--token", TOKEN)
    try:
        for add in (False, True):
            kept_ids, summary = cli(*(["--add"] if add else []))
            answer = _post(server, "/dedup", {"documents": docs, "add": add}).json()
            assert [r["id"] for r in answer["results"]] == ids
            assert [r["id"] for r in answer["results"] if r["kept"]] == kept_ids
            counts = ("documents", "duplicates_of_index", "duplicates_in_input", "kept")
            assert {k: answer[k] for k in (*counts, "added_to_index")} == {
                k: summary[k] for k in (*counts, "added_to_index")
            }
            assert answer["duplicates_of_index"] > 0 and answer["duplicates_in_input"] > 0
        with server.client() as client:  # now every kept document is in both indexes
            again = client.dedup(ids, incoming)
            assert not again.kept.any() and again.duplicates_of_index == len(ids)
            assert len(client) == len(stored) + len(kept_ids)
    finally:
        assert server.stop() == 0
    assert len(Index.open(str(paths[0]))) == len(stored) + len(kept_ids)


def test_post_dedup_add_answers_as_one_document_at_a_time_when_an_id_is_replaced(
    served: tuple[Server, Path],
) -> None:
    """A stored id taking a new text frees its old one: a copy of it later in the same request
    is kept, as it is when the documents come one request each, and both end in the index."""
    server, _ = served
    texts = [" ".join(t.split()[:40]) for t in random_documents(4, seed=91, words=(60, 60))]
    answers = []
    for tag, (old, new), requests in (("one", texts[:2], [2]), ("each", texts[2:], [1, 1])):
        a, b = f"replaced-{tag}-a", f"replaced-{tag}-b"
        docs = [{"id": a, "text": new}, {"id": b, "text": old}]
        with server.client() as client:
            client.add([a], [old])
            results, counts = [], {"duplicates_of_index": 0, "duplicates_in_input": 0}
            for start, size in zip([0, *requests[:-1]], requests, strict=True):
                body = {"documents": docs[start : start + size], "add": True}
                answer = _post(server, "/dedup", body).json()
                results += [r["kept"] for r in answer["results"]]
                counts = {k: counts[k] + answer[k] for k in counts}
            held = [(client.get(i) or {}).get("text") for i in (a, b)]
        answers.append((results, counts, held == [new, old]))
    assert answers[0] == answers[1] == ([True, True], dict.fromkeys(counts, 0), True)


def test_documents_are_removed_retired_and_found_where_they_moved(
    served: tuple[Server, Path],
) -> None:
    server, _ = served
    text = " ".join(random_documents(1, seed=77, words=(80, 80)))
    moved_text = text.replace(".", ";", 1)
    url_a, url_b = "https://a.example/page?x=1", "https://b.example/copy"
    with server.client() as client:
        client.add([url_a], [text], dates=["2024-01-01"])
        client.add([url_b, "gone-soon"], [moved_text, "another text of a few words here"])
        assert client.retire([url_a], "2024-02-01") == 1
        assert client.get(url_a)["gone"] == "2024-02-01"  # type: ignore[index]
        found = client.moved(url_a)
        assert [m.id for m in found] == [url_b]
        assert found[0].score > 0.8
        assert [m.id for m in client.query([text])[0]] == [url_b]  # the retired URL is not live
        quoted = url_a.replace("/", "%2F").replace(":", "%3A").replace("?", "%3F")
        r = httpx.delete(
            f"{server.url}/documents/{quoted}", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert r.status_code == 200 and r.json() == {"removed": 1}
        assert client.remove(["gone-soon"]) == 1
        assert client.get(url_a) is None and client.get("gone-soon") is None


def test_unknown_ids_urls_and_routes_are_404_and_change_nothing(
    served: tuple[Server, Path],
) -> None:
    server, _ = served
    with server.client() as client:
        client.add(["kept-1"], ["a document that must survive the failed removal below"])
        with pytest.raises(UnknownIdError, match="'no-such-id'"):
            client.remove(["kept-1", "no-such-id"])
        assert "kept-1" in client
        with pytest.raises(UnknownIdError):
            client.moved("https://never.example/seen")
        with pytest.raises(UnknownIdError):
            client.retire(["https://never.example/seen"])
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for method, route in [("GET", "/documents/nope"), ("DELETE", "/documents/nope")]:
        r = httpx.request(method, server.url + route, headers=auth)
        assert r.status_code == 404
        assert r.json()["error"] == {
            "type": "UnknownIdError",
            "message": "id 'nope' is not in the index"
            if method == "GET"
            else "1 id(s) not in the index: 'nope'; nothing was changed",
        }
    r = httpx.get(server.url + "/nowhere", headers=auth)
    assert r.status_code == 404 and "/docs" in r.json()["error"]["message"]


def test_requests_without_the_token_are_refused_and_change_nothing(
    served: tuple[Server, Path],
) -> None:
    server, _ = served
    body = {"documents": [{"id": "intruder", "text": "should never be stored"}]}
    data_routes = [("/add", "POST"), ("/query", "POST"), ("/stats", "GET"), ("/documents/x", "GET")]
    for route, method in data_routes:
        r = httpx.request(method, server.url + route, json=body)
        assert r.status_code == 401, route
        assert r.headers["www-authenticate"] == "Bearer"
        assert r.json()["error"]["message"].startswith("this service needs a token: send ")
        assert "Authorization: Bearer TOKEN" in r.json()["error"]["message"]
        r = httpx.request(
            method, server.url + route, json=body, headers={"Authorization": "Bearer x"}
        )
        assert r.status_code == 401, route
        assert r.headers["www-authenticate"] == 'Bearer error="invalid_token"'
        assert r.json()["error"]["message"].startswith("wrong token: ")
    r = httpx.get(server.url + "/stats", headers={"Authorization": f"Basic {TOKEN}"})
    assert r.status_code == 401 and "uses the scheme 'Basic', not 'Bearer'" in r.text
    with pytest.raises(ServiceError, match="needs a token") as caught:
        server.client(token=None).stats()
    assert caught.value.status == 401
    with pytest.raises(ServiceError, match="wrong token") as caught:
        server.client(token="not-" + TOKEN).stats()
    assert caught.value.status == 401
    with server.client() as client:
        assert "intruder" not in client


def test_the_health_probe_and_the_api_docs_need_no_token(served: tuple[Server, Path]) -> None:
    server, _ = served
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}
    r = httpx.get(server.url + "/docs")
    assert r.status_code == 200 and "swagger" in r.text.lower()
    spec = httpx.get(server.url + "/openapi.json").json()
    assert {"/add", "/query", "/remove", "/retire", "/moved", "/stats", "/health"} <= set(
        spec["paths"]
    )
    # the schema says which need the token, so /docs' "Authorize" sends it
    assert spec["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    assert spec["paths"]["/stats"]["get"]["security"] == [{"bearer": []}]
    assert spec["paths"]["/add"]["post"]["security"] == [{"bearer": []}]
    assert "security" not in spec["paths"]["/health"]["get"]
    assert "; it and /health need no token)" in server.log.read_text().splitlines()[0]


def test_docs_need_the_token_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "closed.db"
    Index.create(str(path)).close()
    server = Server(path, "--token", TOKEN, "--docs-need-token")
    try:
        assert "(API docs at /docs, with the token)" in server.log.read_text()
        for route in ("/docs", "/openapi.json", "/redoc"):
            assert httpx.get(server.url + route).status_code == 401, route
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(server.url + "/openapi.json", headers=auth).status_code == 200
        assert httpx.get(server.url + "/health").status_code == 200
    finally:
        assert server.stop() == 0


def test_batches_and_bodies_over_the_limits_are_413_naming_the_limit(
    served: tuple[Server, Path],
) -> None:
    server, _ = served
    too_many = {"documents": [{"id": f"x{i}", "text": "short"} for i in range(201)]}
    r = _post(server, "/add", too_many)
    assert r.status_code == 413
    assert "201 documents" in r.json()["error"]["message"]
    assert "limit is 200 (--max-batch)" in r.json()["error"]["message"]
    assert _post(server, "/query", too_many).status_code == 413
    assert _post(server, "/remove", {"ids": [f"x{i}" for i in range(201)]}).status_code == 413

    big = {"documents": [{"id": "big", "text": "word " * 50_000}]}
    r = _post(server, "/add", big)  # declared Content-Length over the limit
    assert r.status_code == 413
    assert "limit of 200,000 bytes (--max-body)" in r.json()["error"]["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"documents": [{"id": "big", "text": "'
        for _ in range(100):
            yield b"word " * 1000
        yield b'"}]}'

    r = httpx.post(
        server.url + "/add",
        content=chunks(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    assert r.status_code == 413 and "--max-body" in r.json()["error"]["message"]
    with server.client() as client:
        assert "big" not in client and "x0" not in client


def test_bad_json_and_bad_fields_say_what_to_fix(served: tuple[Server, Path]) -> None:
    server, _ = served
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    r = httpx.post(server.url + "/query", content=b'{"documents": [', headers=headers)
    assert r.status_code == 400
    assert r.json()["error"]["type"] == "InputError"
    assert "not valid JSON" in r.json()["error"]["message"]
    r = httpx.post(
        server.url + "/query",
        content=b"text=hello",
        headers={**headers, "Content-Type": "text/plain"},
    )
    assert r.status_code == 400 and "Content-Type: application/json" in r.text
    r = _post(server, "/add", {"documents": [{"id": "no-text"}]})
    assert r.status_code == 422 and "documents.0.text: Field required" in r.text
    r = _post(server, "/query", {"documents": [], "treshold": 0.9})
    assert r.status_code == 422 and "treshold: unknown field" in r.text
    r = _post(server, "/add", {"documents": [{"id": "d", "text": "a b"}, {"id": "d", "text": "c"}]})
    assert r.status_code == 400 and "appears twice" in r.json()["error"]["message"]
    same = {"id": "d", "text": "a b c d e f g"}  # the second a duplicate: never added either
    r = _post(server, "/dedup", {"documents": [same, same]})
    assert r.status_code == 400 and "appears twice" in r.json()["error"]["message"]
    with server.client() as client:
        with pytest.raises(ParamError, match=r"build an index with --threshold 0\.5 for lower"):
            client.query(["some text"], threshold=0.5)
        with pytest.raises(InputError, match="appears twice"):
            client.add(["d", "d"], ["one", "two"])
        assert "d" not in client


def test_strings_that_are_not_unicode_are_refused_and_the_index_keeps_answering(
    served: tuple[Server, Path],
) -> None:
    """JSON lets a lone surrogate (\\ud800) through; what the index would keep or an answer
    would echo is refused (4xx naming it), never a 500 or a record no answer can hold."""
    server, _ = served
    odd = "abc \ud800 def"
    refused = [
        ("/add", {"documents": [{"id": "s1", "text": odd}]}),
        ("/add", {"documents": [{"id": "s2", "text": "fine words", "meta": {"k": odd}}]}),
        ("/add", {"documents": [{"id": "s3", "text": "fine words", "date": odd}]}),
        ("/query", {"documents": [{"id": odd, "text": "fine words"}]}),
        ("/dedup", {"documents": [{"id": "s4", "text": odd}], "add": True}),
        ("/retire", {"urls": ["s5"], "date": odd}),
    ]
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

    def post(route: str, body: object) -> httpx.Response:  # escaped: \\ud800 as sent by JSON
        return httpx.post(server.url + route, content=json.dumps(body), headers=headers)

    for route, body in refused:
        r = post(route, body)
        assert r.status_code in (400, 422) and "lone surrogate" in r.text, (route, r.text)
    assert post("/query", {"documents": [{"id": "q", "text": odd}]}).status_code == 200  # hashed
    for name in ("s1", "s2", "s3", "s4"):
        assert httpx.get(server.url + f"/documents/{name}", headers=headers).status_code == 404


def _raw_post(server: Server, route: str, content: bytes) -> tuple[int, dict[str, str]]:
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    r = httpx.post(server.url + route, content=content, headers=headers)
    return r.status_code, r.json()["error"]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1.5"])
def test_a_query_threshold_that_is_not_finite_or_above_1_is_400_about_the_query(
    served: tuple[Server, Path], value: str
) -> None:
    server, _ = served
    body = f'{{"documents": [{{"text": "a b c"}}], "threshold": {value}}}'.encode()
    status, error = _raw_post(server, "/query", body)
    assert status == 400 and error["type"] == "ParamError"
    assert error["message"].startswith("the query threshold must be a finite number from ")
    assert "build an index" not in error["message"]


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        (b'{"documents": [],\n  "limit": }', 400, "not valid JSON (Expecting value at line 2, column 12)"),
        (b'{"documents": [{"text": "caf\xe9"}]}', 400, "not valid utf-8 text (byte 0xe9 at position 28: invalid continuation byte"),
        (b"[" * 100_000, 400, "nests JSON lists or objects too deeply"),
        (b"[]", 422, "the request body is a list; send a JSON object with the fields documents (required), threshold, limit"),
        (b"", 422, "the request body is empty; send a JSON object with the fields documents (required)"),
        (b'{"documents": {"text": "a"}}', 422, "documents: Input should be a valid list, got an object"),
        (b'{"documents": [{"text": 7}]}', 422, "documents.0.text: Input should be a valid string, got the number 7"),
        (b'{"documents": [{"txt": "a"}]}', 422, "documents.0.txt: unknown field (check its spelling); the fields are id, text (required)"),
    ],
)  # fmt: skip
def test_a_body_that_cannot_be_read_says_where_and_what_fits(
    served: tuple[Server, Path], body: bytes, status: int, expected: str
) -> None:
    server, _ = served
    got, error = _raw_post(server, "/query", body)
    assert (got, error["type"]) == (status, "InputError")
    assert expected in error["message"]
    assert "There was an error parsing the body" not in error["message"]


def test_queries_never_fail_while_the_same_ids_are_replaced(served: tuple[Server, Path]) -> None:
    """Reads see one committed state: a replaced document never vanishes mid-query."""
    server, _ = served
    texts = _texts(40, seed=11)
    ids = [f"churn-{i}" for i in range(len(texts))]
    stop = time.monotonic() + 4
    failures: list[BaseException] = []

    def writer() -> None:
        with server.client() as client:
            while time.monotonic() < stop:
                client.add(ids, texts)

    def reader() -> None:
        with server.client() as client:
            while time.monotonic() < stop:
                try:
                    client.query(texts)
                except BaseException as exc:
                    failures.append(exc)
                    return

    threads = [
        threading.Thread(target=writer),
        *(threading.Thread(target=reader) for _ in range(3)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def _run_serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neardup.cli", "serve", *args],
        capture_output=True, text=True, env=ENV, timeout=120,
    )  # fmt: skip


def test_a_wrong_index_path_port_or_token_file_stops_at_start_up_in_one_line(
    tmp_path: Path,
) -> None:
    not_index = tmp_path / "notes.db"
    not_index.write_text("plain text, not SQLite\n" * 100)
    real = tmp_path / "real.db"
    Index.create(str(real)).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        cases = {
            "no index at": [str(tmp_path / "missing.db")],
            "is not a neardup index": [str(not_index)],
            "cannot listen on 127.0.0.1": [str(real), "--port", port],
            "cannot read --token-file": [str(real), "--token-file", str(tmp_path / "no-token")],
            "max_batch (--max-batch) must be a positive integer": [str(real), "--max-batch", "0"],
            "(--header-timeout) must be a number of seconds": [str(real), "--header-timeout", "0"],
        }
        for expected, args in cases.items():
            done = _run_serve(*args)
            assert done.returncode == 1, (expected, done.stderr)
            assert done.stderr.count("\n") == 1 and done.stderr.startswith("neardup: error: ")
            assert expected in done.stderr
    assert _run_serve(str(real), "--token", "a", "--token-file", "f").returncode == 2


def test_sigterm_answers_the_write_in_flight_commits_and_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "term.db"
    Index.create(str(path), DedupParams(verify="sketch")).close()
    server = Server(path)
    texts = random_documents(1000, seed=3, words=(100, 200))
    answers: list[object] = []

    def big_add() -> None:
        try:
            answers.append(server.client().add([f"t{i}" for i in range(1000)], texts))
        except Exception as exc:
            answers.append(exc)

    t = threading.Thread(target=big_add)
    t.start()
    time.sleep(0.3)  # the request is in flight (1000 documents take longer than this)
    assert server.stop(signal.SIGTERM) == 0
    t.join()
    assert [getattr(a, "added", a) for a in answers] == [1000]
    assert "serve stopped" in server.log.read_text()
    index = Index.open(str(path))
    assert len(index) == 1000 and index.check() == []
    index.close()


def test_every_add_answered_200_survives_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "kill.db"
    Index.create(str(path), DedupParams(verify="sketch")).close()
    server = Server(path)
    acknowledged: list[str] = []
    texts = random_documents(400, seed=9, words=(30, 80))
    stop = threading.Event()

    def stream() -> None:
        client = server.client()
        k = 0
        while not stop.is_set():
            ids = [f"b{k}-{j}" for j in range(20)]
            try:
                client.add(ids, texts[(k * 20) % 380 : (k * 20) % 380 + 20])
            except ServiceError:
                return  # the server is gone: this add was not acknowledged
            acknowledged.extend(ids)
            k += 1

    threads = [threading.Thread(target=stream) for _ in range(3)]
    for t in threads:
        t.start()
    while len(acknowledged) < 300:
        time.sleep(0.01)
    server.stop(signal.SIGKILL)
    stop.set()
    for t in threads:
        t.join()
    restarted = Server(path, "--token", TOKEN)
    try:
        with restarted.client() as client:
            stored = {d for d in acknowledged if d in client}
        assert stored == set(acknowledged)
    finally:
        restarted.stop()
    index = Index.open(str(path))
    assert index.check() == []
    index.close()


def test_the_service_page_examples_work_when_pasted(
    served: tuple[Server, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = served
    section = (Path(__file__).resolve().parents[1] / "docs" / "SERVICE.md").read_text()
    curl_block = re.findall(r"```sh\n(.*?)```", section, re.S)[1]
    python_block = re.findall(r"```py\n(.*?)```", section, re.S)[0]
    (tmp_path / "token.txt").write_text(TOKEN + "\n")
    monkeypatch.chdir(tmp_path)
    if shutil.which("curl"):
        script = "set -e\n" + curl_block.replace("http://127.0.0.1:8000", server.url)
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
        assert '{"added":1,"replaced":0}' in out.stdout
        assert '"matches":[{"id":"a1","score":1.0,"kind":"exact"}]' in out.stdout
    code = python_block.replace("http://127.0.0.1:8000", server.url)
    printed: list[object] = []
    exec(compile(code, "docs/SERVICE.md", "exec"), {"print": lambda *a: printed.extend(a)})
    assert [m.id for m in printed[0][0]] == ["a2"]  # type: ignore[index]
    assert printed[1]["id"] == "a2"  # type: ignore[index]


def test_the_listening_socket_is_tcp_so_asyncio_turns_off_nagle_on_connections() -> None:
    """A socket of proto 0 makes asyncio skip TCP_NODELAY: each answer then waits ~40 ms."""
    from neardup.cli.serve import listen

    sock = listen("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


# -- slow and surplus connections ---------------------------------------------------------------
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HEAD = b"GET /stats HTTP/1.1\r\nHost: x\r\n"  # a request's head, unfinished


def _needs_loopback_aliases() -> None:
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.2", 0))
    except OSError:
        pytest.skip("127.0.0.2 is not a loopback address here (on Linux all of 127/8 is)")


def _connect(server: Server, source: str = "127.0.0.2") -> socket.socket:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5, source_address=(source, 0))
    return sock


def _closed(sock: socket.socket, within: float) -> bytes | None:
    """Everything the server sent once it closed ``sock`` within ``within`` s; None if open."""
    got = b""
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return None
        except ConnectionResetError:
            return got
        if not data:
            return got
        got += data
    return None


@contextmanager
def _slow_clients(
    server: Server, n: int, sources: list[str], *options: str
) -> Iterator[dict[str, int]]:
    """``n`` slowloris connections from ``sources`` in a process of their own."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    cmd = [sys.executable, "-m", "neardup.testing.slow_clients", host, port, str(n)]
    cmd += ["--sources", ",".join(sources), *options]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV)
    assert proc.stdin is not None and proc.stdout is not None
    counts: dict[str, int] = {}
    try:
        assert json.loads(proc.stdout.readline()) == {"started": n}
        yield counts
    finally:
        proc.stdin.close()
        last = proc.stdout.readline()
        proc.wait(timeout=60)
    counts.update(json.loads(last))


@pytest.mark.parametrize(
    ("n", "clients"),
    [(600, 1), (3000, 1), (3000, 30)],
    ids=["600-from-one-address", "3000-from-one-address", "3000-from-30-addresses"],
)
def test_slow_clients_never_starve_an_honest_one(tmp_path: Path, n: int, clients: int) -> None:
    """Slowloris: connections that each send a header line every 2 s never make the service
    refuse or delay another client's requests (they got 503 while 512 such were open)."""
    _needs_loopback_aliases()
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < n + 500:
        pytest.skip(f"the open-file hard limit is below {n + 500}")
    path = tmp_path / "slow.db"
    Index.create(str(path)).close()
    server = Server(path, "--token", TOKEN, "--header-timeout", "30")  # held all the test long
    seconds: list[float] = []
    try:
        sources = [f"127.0.0.{2 + i}" for i in range(clients)]
        with _slow_clients(server, n, sources) as counts:
            time.sleep(2.5)  # each has sent its request's start and one more header line
            for _ in range(10):  # over ~3 s: the slow clients' sends and reconnections included
                started = time.perf_counter()
                r = httpx.get(server.url + "/stats", headers=AUTH, timeout=10)  # new connection
                seconds.append(time.perf_counter() - started)
                assert r.status_code == 200, r.text
                time.sleep(0.3)
    finally:
        assert server.stop() == 0
    assert max(seconds) < 2.0, seconds
    if clients == 1:  # one client over --max-client-connections (128): its oldest were closed
        assert counts["dropped"] >= n - 128
    else:  # 100 a client: every one held open (--header-timeout not reached)
        assert counts["dropped"] == 0
    assert "Traceback" not in server.log.read_text()


def test_a_trickling_head_or_body_is_answered_408_and_an_early_answer_closes(
    tmp_path: Path,
) -> None:
    _needs_loopback_aliases()
    path = tmp_path / "trickle.db"
    Index.create(str(path)).close()
    server = Server(path, "--token", TOKEN, "--header-timeout", "1", "--timeout", "2")
    try:
        head, silent, body, early = (_connect(server) for _ in range(4))
        head.sendall(HEAD)
        post = b"POST /add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        body.sendall(
            post + f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n{{".encode()
        )
        early.sendall(post + b"Content-Length: 100\r\n\r\n{")  # no token: 401 before the body
        started = time.monotonic()
        answers: dict[str, tuple[float, bytes]] = {}
        socks = {"head": head, "silent": silent, "body": body, "early": early}
        while len(answers) < 4 and time.monotonic() - started < 8:
            for name, sock in socks.items():
                if name in answers:
                    continue
                with suppress(OSError):  # one more header line, or one more byte of the body
                    sock.sendall(b"X-Slow: a\r\n" if name == "head" else b" " * (name != "silent"))
                got = _closed(sock, 0.05)
                if got is not None:
                    answers[name] = (time.monotonic() - started, got)
            time.sleep(0.2)
        for sock in socks.values():
            sock.close()
    finally:
        assert server.stop() == 0
    assert set(answers) == {"head", "silent", "body", "early"}
    for name in ("head", "silent"):
        took, got = answers[name]
        assert 0.9 < took < 2.5, (name, took)
        assert got.startswith(b"HTTP/1.1 408 ") and b"(--header-timeout)" in got
    took, got = answers["body"]
    assert 1.9 < took < 3.5 and got.startswith(b"HTTP/1.1 408 ") and b"(--timeout)" in got
    took, got = answers["early"]
    assert took < 1.0 and got.startswith(b"HTTP/1.1 401 ") and b"needs a token" in got


def _health_on(sock: socket.socket) -> bytes:
    """Ask GET /health on an open connection, keeping it open; the answer's status line."""
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        got += sock.recv(65536)
    head, body = got.split(b"\r\n\r\n", 1)
    length = int(re.search(rb"content-length: (\d+)", head, re.I).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        body += sock.recv(65536)
    return head.split(b"\r\n", 1)[0]


def test_a_client_over_its_cap_is_refused_unless_it_has_an_idle_connection(
    tmp_path: Path,
) -> None:
    _needs_loopback_aliases()
    path = tmp_path / "caps.db"
    Index.create(str(path)).close()
    server = Server(path, "--token", TOKEN, "--max-client-connections", "4")
    try:
        mine = [_connect(server) for _ in range(4)]
        for sock in mine[:3]:
            sock.sendall(HEAD)  # waiting for the rest of their heads
        assert _health_on(mine[3]) == b"HTTP/1.1 200 OK"  # answered, now idle (keep-alive)
        fifth = _connect(server)
        assert _closed(mine[3], 2.0) == b""  # the idle one was closed to make room
        assert all(_closed(sock, 0.2) is None for sock in [*mine[:3], fifth])
        sixth = _connect(server)  # none idle: refused
        refused = _closed(sixth, 2.0)
        assert refused is not None and refused.startswith(b"HTTP/1.1 503 ")
        assert b"127.0.0.2 already has 4 connections open (--max-client-connections 4)" in refused
        assert all(_closed(sock, 0.2) is None for sock in [*mine[:3], fifth])
        r = httpx.get(server.url + "/stats", headers=AUTH)  # another client: unaffected
        assert r.status_code == 200
        for sock in [*mine, fifth, sixth]:
            sock.close()
    finally:
        assert server.stop() == 0


def test_connections_over_the_total_close_the_busiest_clients_oldest(tmp_path: Path) -> None:
    _needs_loopback_aliases()
    path = tmp_path / "total.db"
    Index.create(str(path)).close()
    server = Server(path, "--token", TOKEN, "--max-connections", "6")
    try:
        many = [_connect(server, "127.0.0.2") for _ in range(4)]
        few = [_connect(server, "127.0.0.3") for _ in range(2)]
        for sock in many + few:
            sock.sendall(HEAD)
        assert all(_closed(sock, 0.2) is None for sock in many + few)
        r = httpx.get(server.url + "/stats", headers=AUTH)  # a 7th connection
        assert r.status_code == 200
        got = _closed(many[0], 2.0)  # 127.0.0.2 held the most: its oldest was closed
        assert got == b""
        assert all(_closed(sock, 0.2) is None for sock in many[1:] + few)
        for sock in many + few:
            sock.close()
    finally:
        assert server.stop() == 0


def test_sigterm_with_slow_clients_stops_at_once_without_tracebacks(tmp_path: Path) -> None:
    """Slow uploads are answered 503 (nothing was done) and closed, never cancelled mid-read."""
    _needs_loopback_aliases()
    path = tmp_path / "quiet.db"
    Index.create(str(path)).close()
    server = Server(path, "--token", TOKEN)
    with (
        _slow_clients(server, 100, ["127.0.0.2"], "--mode", "body", "--header", f"Authorization:Bearer {TOKEN}"),
        _slow_clients(server, 100, ["127.0.0.3"]),
    ):  # fmt: skip
        upload = _connect(server, "127.0.0.4")
        upload.sendall(
            f"POST /add HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"documents": ['.encode()
        )
        time.sleep(2.5)
        started = time.monotonic()
        assert server.stop(signal.SIGTERM) == 0
        took = time.monotonic() - started
        answer = _closed(upload, 2.0)
        upload.close()
    log = server.log.read_text()
    assert took < 5, took
    assert answer is not None and answer.startswith(b"HTTP/1.1 503 ") and b"stopping" in answer
    assert "Traceback" not in log and "Exception in ASGI" not in log, log[-2000:]
    assert "serve stopped" in log


def _nested(levels: int) -> dict[str, object]:
    """Metadata nesting ``levels`` dicts (itself the first)."""
    meta: dict[str, object] = {"x": 1}
    for _ in range(levels - 1):
        meta = {"x": meta}
    return meta


def test_metadata_nested_deeper_than_an_answer_can_give_is_refused_when_added(
    served: tuple[Server, Path],
) -> None:
    server, _ = served
    auth = {"Authorization": f"Bearer {TOKEN}"}
    r = _post(
        server, "/add", {"documents": [{"id": "deep", "text": "a b c", "meta": _nested(300)}]}
    )
    assert r.status_code == 422
    assert r.json()["error"]["type"] == "InputError"
    assert r.json()["error"]["message"].startswith(
        "documents.0.meta: nests lists or dicts more than 200 levels deep"
    )
    assert httpx.get(server.url + "/documents/deep", headers=auth).status_code == 404
    r = _post(
        server, "/add", {"documents": [{"id": "deep", "text": "a b c", "meta": _nested(200)}]}
    )
    assert r.status_code == 200
    r = httpx.get(server.url + "/documents/deep", headers=auth)
    assert r.status_code == 200 and r.json()["meta"] == _nested(200)
    client = server.client()  # the client raises what Index raises
    with client, pytest.raises(InputError, match="document 'deep2': its metadata nests"):
        client.add(["deep2"], ["a b c"], meta=[_nested(201)])
    embedded = Index.create(None)
    with pytest.raises(InputError, match=r"document 'deep2': its metadata nests .* 200 levels"):
        embedded.add(["deep2"], ["a b c"], meta=[_nested(201)])
    with pytest.raises(InputError, match="document 'deep3': its metadata nests"):
        embedded.add(["deep3"], ["a b c"], meta=[_nested(5000)])  # deeper than json.dumps goes


def test_an_internal_error_is_answered_as_json_and_its_traceback_logged_once(
    tmp_path: Path,
) -> None:
    import sqlite3

    from neardup.index.checksum import DOC_FIELDS, doc_crc

    path = tmp_path / "deep.db"
    index = Index.create(str(path))
    index.add(["deep"], ["a document whose metadata is made too deep behind the index's back"])
    index.close()
    db = sqlite3.connect(path)  # metadata no answer can give (checksum kept right)
    row = list(db.execute(f"SELECT {', '.join(DOC_FIELDS)} FROM docs").fetchone())
    row[DOC_FIELDS.index("meta")] = json.dumps(_nested(300))
    db.execute("UPDATE docs SET meta = ?, crc = ?", (row[DOC_FIELDS.index("meta")], doc_crc(row)))
    db.commit()
    db.close()
    server = Server(path)
    try:
        r = httpx.get(server.url + "/documents/deep")
        assert r.status_code == 500 and r.json()["error"]["type"] == "ServiceError"
        assert "this is a bug in neardup" in r.json()["error"]["message"]
        assert httpx.get(server.url + "/health").status_code == 200
    finally:
        assert server.stop() == 0
    log = server.log.read_text()
    assert log.count("Traceback") == 1, log
    assert "internal error answering GET /documents/deep" in log


def test_dedup_add_takes_only_true_or_false_and_anything_else_writes_nothing(
    served: tuple[Server, Path],
) -> None:
    server, _ = served
    with server.client() as client:
        before = len(client)
        for value in ("yes", "true", 1, "on", 0, None, "false"):
            doc = {"id": f"lax-{value}", "text": f"a text to deduplicate with add set to {value}"}
            r = _post(server, "/dedup", {"documents": [doc], "add": value})
            assert (r.status_code, r.json()["error"]["type"]) == (400, "ParamError"), r.text
            assert r.json()["error"]["message"].startswith("add: Input should be a valid boolean")
        assert len(client) == before
        with pytest.raises(ParamError, match="add"):
            client.dedup(["lax"], ["a text"], add="yes")  # type: ignore[arg-type]
        assert client.dedup(["strict"], ["a text added on purpose, add is true"], add=True).added
        assert len(client) == before + 1
    with pytest.raises(ParamError, match="add must be True or False, got str 'yes'"):
        Index.create(None).dedup(["lax"], ["a text"], add="yes")  # type: ignore[arg-type]


def test_a_token_no_http_header_can_carry_is_refused_by_serve_and_by_the_client(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real.db"
    Index.create(str(real)).close()
    token_file = tmp_path / "token.txt"
    token_file.write_text("clé-secrète\n", encoding="utf-8")
    for args in (
        ["--token", "clé-secrète"],
        ["--token-file", str(token_file)],
        ["--token", "a\tb"],
    ):
        done = _run_serve(str(real), *args)
        assert done.returncode == 1, done.stderr
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("neardup: error: ")
        assert "which an HTTP header cannot" in done.stderr
    assert "'é', not an ASCII character" in _run_serve(str(real), "--token", "clé").stderr
    for token in ("clé-secrète", "a\nb", " padded", ""):
        with pytest.raises(ParamError, match="the token"):
            Client("http://127.0.0.1:9", token=token)


def _raw_exchange(server: Server, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``raw`` on a new connection; (status, headers, body) of the last answer, read until
    the server closes the connection."""
    port = int(server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(raw)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    last = got[[m.start() for m in re.finditer(rb"HTTP/1\.1 \d{3} ", got)][-1] :]
    head, _, body = last.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def test_requests_that_are_not_http_are_answered_in_json_and_a_huge_length_is_413(
    served: tuple[Server, Path],
) -> None:
    server, _ = served
    post = b"POST /query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    cases = [
        (b"GARBAGE\r\n\r\n", 400, "illegal request line"),
        (post + b"Content-Length: abc\r\n\r\n{}", 400, "bad Content-Length"),
        (b"GET /health HTTP/1.1\r\n\r\n", 400, "Missing mandatory Host"),
        (b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n", 400, "not valid HTTP/1.1"),
        (post + b"Content-Length: " + b"9" * 25 + b"\r\n\r\n{}", 413, "larger than any body"),
    ]
    for raw, status, said in cases:
        got, headers, body = _raw_exchange(server, raw)
        assert (got, headers["content-type"], headers["connection"]) == (
            status,
            "application/json",
            "close",
        ), raw
        error = json.loads(body)["error"]
        assert error["type"] == "ServiceError" and said in error["message"], (raw, error)
    started = time.monotonic()  # and the server goes on answering, at once
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}
    assert time.monotonic() - started < 2


def test_a_number_too_long_to_read_is_told_as_such_not_as_python_advice(
    served: tuple[Server, Path],
) -> None:
    server, _ = served
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    big = "9" * 5000
    for route, body in [
        ("/query", f'{{"documents": [{{"id": {big}, "text": "x"}}]}}'),
        ("/add", f'{{"documents": [{{"id": "n", "text": "x", "meta": {{"n": {big}}}}}]}}'),
    ]:
        r = httpx.post(server.url + route, content=body.encode(), headers=headers)
        assert (r.status_code, r.json()["error"]["type"]) == (400, "InputError"), r.text
        message = r.json()["error"]["message"]
        assert message.startswith(
            "the request body holds a number with more than 4,300 digits (one has 5000)"
        ), message
        assert "sys." not in message and "set_int_max_str_digits" not in message


def test_head_on_the_health_probe_answers_as_get_without_a_body(
    served: tuple[Server, Path],
) -> None:
    server, _ = served
    r = httpx.head(server.url + "/health")  # no token: the probe is open
    assert (r.status_code, r.content) == (200, b"")
    assert r.headers["content-type"] == "application/json"
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}


def test_an_unknown_query_parameter_is_refused_as_an_unknown_field_is(
    served: tuple[Server, Path],
) -> None:
    server, _ = served
    auth = {"Authorization": f"Bearer {TOKEN}"}
    url = "https://unknown-params.example/a"
    with server.client() as client:
        client.add([url], ["a page about the unknown query parameters of a service"])
    r = httpx.get(server.url + "/moved", params={"url": url, "lmit": "3"}, headers=auth)
    assert (r.status_code, r.json()["error"]["type"]) == (422, "InputError"), r.text
    assert r.json()["error"]["message"] == (
        "lmit: unknown query parameter (check its spelling); the parameters are url (required), "
        "limit; see /docs for the request schema"
    )
    r = httpx.get(server.url + "/moved", params={"url": url, "limit": "3"}, headers=auth)
    assert (r.status_code, r.json()) == (200, {"url": url, "moved": []})
    r = httpx.get(server.url + "/moved", params={"url": url, "limit": "x"}, headers=auth)
    assert r.status_code == 400 and r.json()["error"]["message"].startswith("limit: ")
