"""Write a duplicate-heavy corpus: every base document and copies of it with one word changed.

    python benchmarks/make_copies.py /tmp/news_x20.jsonl --copies 20 \
        --base ../shared/data/20news_bydate/docs.jsonl.gz
    python benchmarks/make_copies.py /tmp/pypi_x5.jsonl --copies 5 --limit 40000 \
        --base ../shared/data/pypi_summaries/docs.jsonl.gz
    python benchmarks/make_copies.py /tmp/template_50k.jsonl --template 50000
    python benchmarks/make_copies.py /tmp/news_large.jsonl --join 14 --copies 3 \
        --base ../shared/data/20news_bydate/docs.jsonl.gz

With ``--copies C`` each base document appears C times: itself and C-1 copies, each with one
word (a whitespace-separated token, chosen at random) replaced by a random word of the corpus,
the way a crawl holds mirrors and session-id variants. Every near-copy cluster has C members,
so candidate pairs grow with C^2 per cluster unless removal is linear. All documents are
shuffled (fixed ``--seed``); ids are ``<base id>~<copy>``. ``--join K`` first joins every K
consecutive base documents into one (blank line between them; id ``<first id>+``): the last
command writes the large-document corpus of ``floor.py`` (4,041 documents of ~27 kB, 111 MB).

``--template N`` writes N generated documents that share one long template (clauses drawn
from a small pool, as licence texts and rules pages do) around a few unique sentences: buckets
of thousands of *distinct* documents whose pairwise resemblance spreads across 0.3-0.95.

Output is JSONL (gzip when the name ends in .gz), written to a temporary name and renamed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

import common


def _base(path: Path, limit: int | None) -> tuple[list[str], list[str]]:
    ids: list[str] = []
    texts: list[str] = []
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            ids.append(str(rec.get("id", len(ids))))
            texts.append(rec["text"])
            if limit is not None and len(texts) >= limit:
                break
    return ids, texts


def joined(ids: list[str], texts: list[str], k: int) -> tuple[list[str], list[str]]:
    """Every ``k`` consecutive documents as one (a shorter last group kept)."""
    if k <= 1:
        return ids, texts
    starts = range(0, len(texts), k)
    return [ids[i] + "+" for i in starts], ["\n\n".join(texts[i : i + k]) for i in starts]


def _one_word_changed(text: str, rng: np.random.Generator, vocab: list[str]) -> str:
    words = text.split(" ")
    spots = [i for i, w in enumerate(words) if w.strip()]
    if not spots:
        return text + " " + vocab[int(rng.integers(len(vocab)))]
    i = spots[int(rng.integers(len(spots)))]
    words[i] = vocab[int(rng.integers(len(vocab)))]
    return " ".join(words)


def copies(ids: list[str], texts: list[str], n_copies: int, seed: int) -> Iterator[tuple[str, str]]:
    """(id, text) of every document and its copies, shuffled."""
    rng = np.random.default_rng(seed)
    vocab = sorted({w for t in texts[:2000] for w in t.split() if w.isalpha()}) or ["word"]
    order = rng.permutation(len(texts) * n_copies)
    for slot in order.tolist():
        base, copy = divmod(slot, n_copies)
        text = texts[base]
        if copy:
            text = _one_word_changed(text, np.random.default_rng([seed, base, copy]), vocab)
        yield f"{ids[base]}~{copy}", text


def template_docs(n: int, seed: int) -> Iterator[tuple[str, str]]:
    """N distinct documents sharing clauses of one template (see the module docstring)."""
    rng = np.random.default_rng(seed)
    words = [w for t in common.synthetic_texts(200, seed=seed, mean_words=80) for w in t.split()]
    vocab = sorted(set(words))
    clauses = [
        " ".join(vocab[int(j)] for j in rng.integers(len(vocab), size=int(rng.integers(8, 20))))
        for _ in range(40)
    ]
    for i in range(n):
        r = np.random.default_rng([seed, i])
        kept = [c for c in clauses if r.random() < 0.85]  # most clauses of the template
        unique = " ".join(
            vocab[int(j)] for j in r.integers(len(vocab), size=int(r.integers(5, 40)))
        )
        at = int(r.integers(len(kept) + 1))
        body = [*kept[:at], unique, *kept[at:]]
        yield f"t{i}", ". ".join(body) + "."


def _write(path: Path, records: Iterator[tuple[str, str]]) -> int:
    tmp = path.with_name(path.name + ".tmp")
    opener = gzip.open if path.suffix == ".gz" else open
    count = 0
    f: IO[str]
    with opener(tmp, "wt", encoding="utf-8") as f:  # type: ignore[operator]
        for rid, text in records:
            f.write(json.dumps({"id": rid, "text": text}, ensure_ascii=False) + "\n")
            count += 1
    os.replace(tmp, path)
    return count


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("out", type=Path)
    ap.add_argument("--base", type=Path, help="JSONL(.gz) with id and text fields")
    ap.add_argument("--limit", type=int, help="first N base documents")
    ap.add_argument("--copies", type=int, default=1, help="documents per base document [1]")
    ap.add_argument("--join", type=int, default=1, help="join K base documents into one [1]")
    ap.add_argument("--template", type=int, help="write N template documents instead")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if args.template:
        n = _write(args.out, template_docs(args.template, args.seed))
    else:
        if args.base is None:
            ap.error("--base is needed unless --template is given")
        ids, texts = joined(*_base(args.base, args.limit), args.join)
        n = _write(args.out, copies(ids, texts, args.copies, args.seed))
    print(f"{args.out}: {n} documents, {args.out.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
