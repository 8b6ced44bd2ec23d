"""Benchmark: sampled-shingle containment (``SampledParams``) on retweets and on Clough-Stevenson.

Run (a minute or two):

    python benchmarks/bench_containment.py

1. Retweet-style copies of real short posts (15-40 words cut from 20 Newsgroups posts): "RT
   @user: " in front, a comment after, both, or the last 15% cut off. Each stored post is queried
   with its copy at containment 0.8; recall, matches to other posts, and postings per document
   for m = 1, 2, 4, 8, 16. This is how the default m was chosen.
2. Clough-Stevenson short answers (``cut``, ``light``, ``heavy`` rewrites of a Wikipedia source
   and ``non`` answers written independently): the five sources are indexed and every answer is
   queried; how many find their source, and how many ``non`` answers match anything.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import gzip
import json
import random
from pathlib import Path

import numpy as np

import common

common.ensure_neardup()

from neardup import DedupParams, Index, SampledParams, ShingleParams  # noqa: E402

DATA = Path("/work/shared/data")


def short_posts(n: int) -> list[str]:
    """Distinct tweet-sized passages (15 to 40 words) of 20 Newsgroups posts."""
    posts: list[str] = []
    with gzip.open(DATA / "20news_bydate/docs.jsonl.gz", "rt") as f:
        for line in f:
            words = json.loads(line)["text"].split()
            for s in range(0, len(words) - 40, 200):
                posts.append(" ".join(words[s : s + 15 + (s // 200 * 7) % 26]))
            if len(posts) > 1.5 * n:
                break
    random.Random(1).shuffle(posts)
    return list(dict.fromkeys(posts))[:n]


def retweet(text: str, i: int) -> str:
    kind = i % 4
    if kind == 0:
        return f"RT @user{i}: {text}"
    if kind == 1:
        return f"{text} so true, had to share this"
    if kind == 2:
        return f"RT @user{i}: {text} wow"
    words = text.split()
    return " ".join(words[: int(len(words) * 0.85)])


def retweets(n: int, probes: int) -> list[dict[str, object]]:
    posts = short_posts(n)
    queries = [retweet(t, i) for i, t in enumerate(posts[:probes])]
    rows = []
    for m in (1, 2, 4, 8, 16):
        index = Index.create(None, DedupParams(method=SampledParams(m=m), threshold=0.8))
        index.add([str(i) for i in range(len(posts))], posts)
        found = index.query(queries)
        hit = np.mean([any(x.id == str(i) for x in ms) for i, ms in enumerate(found)])
        other = sum(1 for i, ms in enumerate(found) for x in ms if x.id != str(i))
        rows.append(
            {
                "m": m,
                "recall": round(float(hit), 4),
                "other_matches": other,
                "postings_per_doc": round(index.stats()["postings"] / len(posts), 1),
            }
        )
    return rows


def clough_stevenson(m: int, w: int, threshold: float) -> dict[str, object]:
    folder = DATA / "clough_stevenson"
    docs = [json.loads(x) for x in (folder / "docs.jsonl").open()]
    pairs = [json.loads(x) for x in (folder / "pairs.jsonl").open()]
    text = {d["id"]: d["text"] for d in docs}
    sources = [d["id"] for d in docs if d["id"].startswith("orig_")]
    params = DedupParams(method=SampledParams(m=m), threshold=threshold, shingle=ShingleParams(w=w))
    index = Index.create(None, params)
    index.add(sources, [text[s] for s in sources])
    row: dict[str, object] = {"m": m, "w": w, "containment": threshold}
    found = index.query([text[p["a"]] for p in pairs])
    for rel in ("cut", "light", "heavy", "non"):
        sel = [(p, ms) for p, ms in zip(pairs, found, strict=True) if p["relation"] == rel]
        if rel == "non":
            row[rel] = f"{sum(bool(ms) for _, ms in sel)}/{len(sel)} match"
        else:
            row[rel] = f"{sum(any(x.id == p['b'] for x in ms) for p, ms in sel)}/{len(sel)}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=20000)
    parser.add_argument("--probes", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rt = retweets(args.posts, args.probes)
    common.print_table(
        rt,
        [(k, k, "") for k in ("m", "recall", "other_matches", "postings_per_doc")],
        "retweets of 15-40-word posts at containment 0.8",
    )
    cs = [clough_stevenson(m, w, t) for w in (3, 5) for m in (2, 4) for t in (0.3, 0.5)]
    common.print_table(
        cs,
        [(k, k, "") for k in ("w", "m", "containment", "cut", "light", "heavy", "non")],
        "Clough-Stevenson: answers that find their source (non: answers matching anything)",
    )
    if args.json:
        common.write_json(args.json, {"retweets": rt, "clough_stevenson": cs})


if __name__ == "__main__":
    main()
