"""neardup serve's options: refusals name the flag; --max-body takes a size as the other size
options do (a refused value stops before anything listens, so most run in this process)."""

from __future__ import annotations

from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from neardup import Index  # noqa: E402
from neardup.cli import main  # noqa: E402

from .test_service import TOKEN, Server  # noqa: E402


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--max-connections", "0", "total (--max-connections) must be a positive integer, got 0"),
        ("--max-client-connections", "0", "per_client (--max-client-connections) must be a positive integer, got 0"),
        ("--max-batch", "0", "max_batch (--max-batch) must be a positive integer, got 0"),
        ("--max-body", "0", "max_body (--max-body) must be a positive integer, got 0"),
        ("--max-body", "lots", "--max-body: a size must look like 800M, 4G or 1000000, got 'lots'"),
        ("--readers", "0", "readers (--readers) must be a positive integer, got 0"),
        ("--timeout", "0", "timeout (--timeout) must be a number of seconds above 0"),
        ("--header-timeout", "0", "header_timeout (--header-timeout) must be a number of seconds"),
    ],
)  # fmt: skip
def test_a_refused_serve_option_is_named_by_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, expected: str
) -> None:
    path = str(tmp_path / "idx.db")
    Index.create(path).close()
    assert main(["serve", path, "--port", "0", flag, value]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"neardup: error: {expected}") and err.count("\n") == 1, err


def test_max_body_takes_a_size_such_as_1k(tmp_path: Path) -> None:
    path = tmp_path / "idx.db"
    Index.create(str(path)).close()
    server = Server(path, "--token", TOKEN, "--max-body", "1K")
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        big = {"documents": [{"id": "a", "text": "word " * 300}]}
        r = httpx.post(server.url + "/add", json=big, headers=headers, timeout=60)
        assert r.status_code == 413 and "limit of 1,024 bytes (--max-body)" in r.text, r.text
        small = {"documents": [{"id": "a", "text": "word " * 100}]}
        assert httpx.post(server.url + "/add", json=small, headers=headers).status_code == 200
    finally:
        assert server.stop() == 0
