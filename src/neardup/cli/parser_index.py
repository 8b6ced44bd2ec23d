"""The options of the standing index's commands: ``index ...`` and ``serve`` (argparse only:
nothing is run)."""

from __future__ import annotations

import argparse
from typing import Any

from .options import (
    INDEX_FORMATS,
    add_input_options,
    add_jobs,
    add_minhash_options,
    add_progress,
    add_shingle_options,
    add_simhash_options,
)


def add_index_parser(sub: Any) -> None:
    """``neardup index create|add|query|remove|retire|moved|stats|check|repair|upgrade``."""
    ix = sub.add_parser(
        "index",
        help="a standing index: add documents, ask which stored ones a new one duplicates",
        description="A standing near-duplicate index in one SQLite file.",
    )
    isub = ix.add_subparsers(dest="index_command", required=True)
    _add_create(isub)
    _add_add_and_query(isub)
    r = isub.add_parser("remove", help="remove documents by id")
    r.add_argument("path", help="the index")
    r.add_argument("ids", nargs="+", help="ids to remove (all must be present)")

    rt = isub.add_parser("retire", help="mark URLs gone (found again by moved)")
    rt.add_argument("path", help="the index")
    rt.add_argument("urls", nargs="+", help="URLs (ids) that disappeared")
    rt.add_argument(
        "--date", help="when they disappeared [none: 'gone'; a URL retired before keeps its date]"
    )

    mv = isub.add_parser("moved", help="live URLs holding near-copies of a URL's last content")
    mv.add_argument("path", help="the index")
    mv.add_argument("url", help="a URL (id) in the index")
    mv.add_argument("--limit", type=int, help="at most this many")

    for name, text in (
        ("stats", "counts, size and parameters"),
        ("check", "integrity check: every record's checksum, and the tables agree"),
        ("repair", "remove the damaged documents check names (prints their ids: add them again)"),
        ("upgrade", "give an index of schema 3 its record checksums, in place"),
        ("compact", "merge its lookup segments into one each: faster queries (one transaction)"),
    ):
        x = isub.add_parser(name, help=text)
        x.add_argument("path", help="the index")


def _add_create(isub: Any) -> None:
    """index create: the index's parameters, fixed for its life."""
    c = isub.add_parser("create", help="create an empty index with its parameters")
    c.add_argument("path", help="the index file to create (SQLite)")
    c.add_argument("--quiet", "-q", action="store_true", help="no line saying it was created")
    m = c.add_argument_group("method")
    m.add_argument(
        "--method",
        choices=["minhash", "simhash", "sampled"],
        default="minhash",
        help="minhash: resemblance; simhash: Hamming distance; sampled: containment of sampled shingles (prefixes, suffixes, quotations) [minhash]",
    )
    m.add_argument(
        "--threshold",
        type=float,
        help="resemblance threshold (containment with --method sampled) [0.8]",
    )
    m.add_argument("--sample-mod", type=int, help="sampled: keep shingles with fp %% M == 0 [2]")
    add_minhash_options(m)
    m.add_argument("--super-features", action="store_true", help="look up by megashingles")
    m.add_argument("--max-bucket", type=int, help=argparse.SUPPRESS)
    m.add_argument("--seed", type=int, default=1, help="random seed [1]")
    m.add_argument(
        "--verify",
        choices=["sketch", "hybrid", "exact", "none"],
        help="how candidates are confirmed, as for dedup [minhash: hybrid, others: none]",
    )
    add_simhash_options(m, ["binary", "count"])
    m.add_argument(
        "--store-text",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep each document's text (needed by hybrid verification) [only for hybrid]",
    )
    add_shingle_options(c)


def _add_add_and_query(isub: Any) -> None:
    """index add and index query: the commands that read documents."""
    a = isub.add_parser("add", help="add documents (an id already present is replaced)")
    a.add_argument("path", help="the index")
    a.add_argument("inputs", nargs="+", help="JSONL, Parquet, text files or folders, or -")
    add_input_options(a, INDEX_FORMATS)
    a.add_argument("--url-field", help="field holding each document's URL (used as its id)")
    a.add_argument("--date-field", help="field holding the crawl date (last seen)")
    add_jobs(
        a,
        "threads signing batches while the previous one is written; the index ends the same for any number [all cores]",
    )
    add_progress(a, "a progress line (documents added, input read)")
    a.add_argument("--quiet", "-q", action="store_true", help="no summary line (warnings stay)")

    q = isub.add_parser("query", help="one JSON line of matches per query document")
    q.add_argument("path", help="the index")
    q.add_argument("inputs", nargs="+", help="JSONL, Parquet, text files or folders, or -")
    q.add_argument("-o", "--output", help="write the JSON lines here [stdout]")
    q.add_argument("--threshold", type=float, help="ask for more than the index's threshold")
    q.add_argument("--limit", type=int, help="at most this many matches per query")
    add_jobs(
        q,
        "processes answering batches (this one and N-1 workers, each reading the index); the answers are the same for any number [all cores]",
    )
    add_input_options(q, INDEX_FORMATS)
    add_progress(q, "a progress line (queries answered, input read)")
    q.add_argument("--quiet", "-q", action="store_true", help="no summary line")


def add_serve_parser(sub: Any) -> None:
    """``neardup serve PATH``: the index as an HTTP service (FastAPI, uvicorn)."""
    s = sub.add_parser(
        "serve",
        help="serve an index over HTTP (add, query, remove, retire, moved, stats)",
        description="Serve the SQLite index at PATH over HTTP; API docs at /docs. Stop with "
        "Ctrl-C or SIGTERM: requests in flight are answered first.",
    )
    s.add_argument("path", help="the index (made by neardup index create)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on [127.0.0.1]")
    s.add_argument("--port", type=int, default=8000, help="port; 0 picks a free one [8000]")
    auth = s.add_mutually_exclusive_group()
    auth.add_argument(
        "--token",
        help="require 'Authorization: Bearer TOKEN' on every request but /health and the API docs",
    )
    auth.add_argument("--token-file", help="read the token from this file (not shown by ps)")
    s.add_argument(
        "--docs-need-token",
        action="store_true",
        help="with a token, require it for /docs, /redoc and /openapi.json too",
    )
    _add_serve_limits(s)
    s.add_argument("--access-log", action="store_true", help="log every request on stderr")


def _add_serve_limits(s: argparse.ArgumentParser) -> None:
    """What one request, one client and all clients may hold of the service."""
    s.add_argument(
        "--max-body",
        metavar="SIZE",
        default="16M",
        help="largest request body: bytes, or a size such as 512K or 64M [16M, 16 MiB]",
    )
    s.add_argument(
        "--max-batch", type=int, default=1000, help="most documents or ids per request [1000]"
    )
    s.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds for a whole request body to arrive, and to wait for the index [30]",
    )
    s.add_argument(
        "--readers",
        type=int,
        default=2,
        help="reader threads, each with its own connection; Python runs one at a time, so more "
        "help only an index that waits on the disk [2]",
    )
    s.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        help="seconds for a request's headers to arrive, else 408 and the connection closed [10]",
    )
    s.add_argument(
        "--max-client-connections",
        type=int,
        default=128,
        help="open connections per client IP; one more closes the client's oldest idle "
        "keep-alive connection, or is refused with 503 [128]",
    )
    s.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="open connections in all; one more closes the oldest not being answered of the "
        "client holding the most [what the open-file limit allows]",
    )
