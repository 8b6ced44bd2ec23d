"""Write a near-duplicate corpus (JSONL: id, text, source, kind, edit_rate) for accuracy benchmarks.

Base texts come from JSONL files (field `text`, ids from `id`) and/or are generated (Zipf
pseudo-words, see neardup.testing.synth); when the requested size needs more distinct originals than the
files hold, generated texts fill the gap. Copies are exact, cosmetic (case/punctuation/whitespace
only) or edited at word-level rates; everything is shuffled and deterministic in --seed. Output is
streamed block by block (gzip if the path ends in .gz) and renamed into place when complete.

Examples (write corpora to /tmp or benchmarks/results/, never commit them):

    # 1,000,000 documents from 20 Newsgroups messages plus generated fill, 30% copies
    python benchmarks/make_corpus.py /tmp/news_1m.jsonl --n 1000000 \
        --base ../shared/data/20news_bydate/docs.jsonl.gz --dup-fraction 0.3

    # 20,000 generated documents, half of them copies
    python benchmarks/make_corpus.py /tmp/synth_20k.jsonl --n 20000 --dup-fraction 0.5

    # regenerate the committed sample corpus (synthetic text only)
    python benchmarks/make_corpus.py --sample examples/sample.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import numpy as np

from neardup.errors import InputError, NeardupError
from neardup.testing.synth import (
    DEFAULT_EDIT_RATES,
    KIND_NAMES,
    iter_render,
    plan_corpus,
    random_documents,
)

SAMPLE_ARGS = [
    "--n", "600", "--dup-fraction", "0.35", "--empty", "8", "--seed", "2024",
    "--exact-fraction", "0.25", "--cosmetic-fraction", "0.2",
    "--words", "8,120", "--vocab-size", "4000", "--extra", '{"lang": "en"}',
]  # fmt: skip


def _open_text(path: Path, mode: str) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, mode + "b"), encoding="utf-8")  # type: ignore[arg-type]
    return open(path, mode, encoding="utf-8")


def read_base(
    paths: Sequence[Path], text_field: str, limit: int | None
) -> tuple[list[str], list[str]]:
    """Texts and ids from JSONL files (an `id` field if present, else file:line)."""
    texts: list[str] = []
    ids: list[str] = []
    for path in paths:
        with _open_text(path, "r") as f:
            for lineno, line in enumerate(f, 1):
                if limit is not None and len(texts) >= limit:
                    return texts, ids
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise InputError(f"{path} line {lineno}: not valid JSON ({e.msg})") from e
                text = rec.get(text_field) if isinstance(rec, dict) else None
                if not isinstance(text, str):
                    raise InputError(
                        f"{path} line {lineno}: field {text_field!r} is missing or not a string; "
                        "use --text-field to name it"
                    )
                texts.append(text)
                ids.append(str(rec.get("id", f"{path.name}:{lineno}")))
    return texts, ids


def make_corpus(args: argparse.Namespace) -> dict[str, int]:
    t0 = time.perf_counter()
    lo, hi = (int(x) for x in args.words.split(","))
    rates = tuple(float(x) for x in args.edit_rates.split(","))
    texts, ids = read_base([Path(p) for p in args.base], args.text_field, args.base_limit)
    n_docs = args.n - args.empty
    n_orig = n_docs - round(args.dup_fraction * n_docs)
    missing = max(0, n_orig - len(texts))
    if missing:
        texts.extend(random_documents(missing, args.seed, (lo, hi), args.vocab_size))
        ids.extend(f"gen{j:07d}" for j in range(missing))
    plan = plan_corpus(
        len(texts),
        args.n,
        args.dup_fraction,
        args.seed,
        rates,
        args.exact_fraction,
        args.cosmetic_fraction,
        args.empty,
    )
    extra = json.loads(args.extra) if args.extra else {}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    width = max(1, len(str(max(args.n - 1, 0))))
    with _open_text(tmp, "w") as f:
        for start, block in iter_render(texts, plan, args.seed):
            lines = []
            for k, text in enumerate(block):
                i = start + k
                s = int(plan.source[i])
                rec = {
                    "id": f"d{i:0{width}d}",
                    "text": text,
                    "source": ids[s] if s >= 0 else None,
                    "kind": KIND_NAMES[plan.kind[i]],
                    "edit_rate": float(plan.edit_rate[i]),
                    **extra,
                }
                lines.append(json.dumps(rec, ensure_ascii=False))
            f.write("\n".join(lines) + "\n")
    os.replace(tmp, out)
    counts = np.bincount(plan.kind, minlength=len(KIND_NAMES))
    summary = {name: int(c) for name, c in zip(KIND_NAMES, counts, strict=True)}
    summary["base_from_files"] = len(texts) - missing
    summary["base_generated"] = missing
    summary["seconds"] = round(time.perf_counter() - t0, 1)  # type: ignore[assignment]
    return summary


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("out", nargs="?", help="output JSONL path (.gz to compress)")
    p.add_argument("--sample", metavar="PATH", help="write the committed sample corpus to PATH")
    p.add_argument("--n", type=int, default=10000, help="documents in the corpus")
    p.add_argument("--base", action="append", default=[], help="JSONL(.gz) of base texts")
    p.add_argument("--text-field", default="text", help="field holding the text in --base files")
    p.add_argument("--base-limit", type=int, default=None, help="read at most this many base texts")
    p.add_argument(
        "--dup-fraction", type=float, default=0.3, help="fraction of documents that are copies"
    )
    p.add_argument(
        "--edit-rates",
        default=",".join(str(r) for r in DEFAULT_EDIT_RATES),
        help="comma-separated word edit rates for edited copies",
    )
    p.add_argument("--exact-fraction", type=float, default=0.15, help="of copies, exact")
    p.add_argument("--cosmetic-fraction", type=float, default=0.15, help="of copies, cosmetic")
    p.add_argument("--empty", type=int, default=0, help="number of empty texts to mix in")
    p.add_argument("--words", default="20,300", help="min,max words of generated texts")
    p.add_argument("--vocab-size", type=int, default=20000, help="generated vocabulary size")
    p.add_argument("--extra", default="", help='JSON object of extra fields, e.g. {"lang": "en"}')
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if args.sample:
        args = p.parse_args([args.sample, *SAMPLE_ARGS])
    elif not args.out:
        p.error("give an output path or --sample PATH")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        summary = make_corpus(args)
    except NeardupError as e:
        print(f"make_corpus: {e}", file=sys.stderr)
        return 2
    print(json.dumps({"out": args.out, **summary}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
