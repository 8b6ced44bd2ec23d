"""Speed of raw text -> t=128 MinHash signatures: neardup against datasketch and rensa.

Run from the repository root (with the bench extras: ``pip install -e '.[bench]'``):

    python benchmarks/bench_sketch.py

Single thread by default (``--threads 1`` caps Numba, BLAS and rensa's Rayon pool before they
load). Every method gets the same raw texts. neardup goes from text to signatures itself, in
batches of ``--batch-docs`` documents; datasketch and rensa cannot shingle, so they are fed the
word 5-shingles a user would build in Python (lowercase, ``\\w+`` runs, 5 consecutive words
joined by spaces, as a set; bytes for datasketch), and the time to build those is part of their
total. Peers run on an evenly spaced sample of ``--peer-docs`` documents; MB/s rates compare.

Sections: speed on the whole corpus and on its "few KB per document" subset (2-8 KB, where the
targets are stated: at least 100 MB/s and 10x rensa for the fastest sketch kind), a batch-size
sweep with the shingling/sketching split, 64-bit fingerprint collisions for the mix and Rabin
shingle hashes, and peak-memory growth when a corpus is streamed once and four times.
``--json benchmarks/results/sketch.json`` also writes every number.
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import common

# Cap the native thread pools before NumPy, Numba or the peers load; hence the late imports.
common.limit_threads(common.threads_from_argv(sys.argv, default=1))
common.ensure_neardup()

import numpy as np  # noqa: E402  (after limit_threads)

from neardup.minhash import sketch, sketch_texts  # noqa: E402
from neardup.params import ShingleParams, SketchParams  # noqa: E402
from neardup.shingles import shingle_sequence  # noqa: E402
from neardup.text import canonical_tokens, tables  # noqa: E402

CLOCKS = common.CLOCKS

W = 5
KINDS = ("oph", "classic", "bottomk")
HASHES = ("mix", "rabin")
_WORD = re.compile(r"\w+")


# ---------------------------------------------------------------- the user-side shingling


def py_shingles(text: str) -> set[str]:
    """What a datasketch/rensa user writes: the set of word 5-shingles as strings.

    Lowercase, runs of ``\\w``, 5 consecutive words joined by a space; a document of 1-4 words
    is one shingle of all of them (as in neardup). The zip form is the fastest idiomatic Python.
    """
    words = _WORD.findall(text.lower())
    if len(words) < W:
        return {" ".join(words)} if words else set()
    return set(map(" ".join, zip(*(words[i:] for i in range(W)), strict=False)))


def py_shingles_bytes(text: str) -> set[bytes]:
    """``py_shingles`` encoded as UTF-8 bytes, the input datasketch's default hash needs."""
    return {s.encode("utf-8") for s in py_shingles(text)}


# ---------------------------------------------------------------- measurements


def row(
    method: str,
    texts: Sequence[str],
    shingle_s: float,
    sketch_s: float,
    sampled: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """One result: stage times and the rates a user sees (MB of UTF-8 text per second)."""
    mb = common.utf8_mb(texts)
    total = shingle_s + sketch_s
    return {
        "method": method + (" *" if sampled else ""),
        "docs": len(texts),
        "mb": mb,
        "shingle_s": shingle_s,
        "sketch_s": sketch_s,
        "total_s": total,
        "shingle_mbps": mb / shingle_s if shingle_s else None,
        "sketch_mbps": mb / sketch_s if sketch_s else None,
        "mbps": mb / total,
        "docs_per_s": len(texts) / total,
        "sampled": sampled,
        **extra,
    }


def time_neardup(
    texts: Sequence[str],
    sp: ShingleParams,
    kp: SketchParams,
    batch_docs: int,
    repeat: int,
    clock: Callable[[], float],
) -> tuple[float, float]:
    """(shingling s, sketching s) of the fastest of ``repeat`` passes over texts in batches."""
    batches = list(common.batched(texts, batch_docs))
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        shingle_s = sketch_s = 0.0
        for batch in batches:
            t0 = clock()
            fps, offsets = shingle_sequence(batch, sp)
            t1 = clock()
            sketch(fps, offsets, kp)
            t2 = clock()
            shingle_s += t1 - t0
            sketch_s += t2 - t1
        if shingle_s + sketch_s < sum(best):
            best = (shingle_s, sketch_s)
    return best


def warm_up(texts: Sequence[str], t: int, seed: int) -> float:
    """Load the Unicode tables and compile (or load cached) kernels for every kind and hash."""
    t0 = time.perf_counter()
    tables()
    for h in HASHES:
        for kind in KINDS:
            sketch_texts(texts[:20], ShingleParams(w=W, hash=h), SketchParams(kind, t, seed))
    return time.perf_counter() - t0


def neardup_rows(texts: Sequence[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """neardup from raw text to signatures, each kind and shingle hash, stage times split."""
    rows = []
    for h in HASHES:
        for kind in KINDS:
            sp, kp = ShingleParams(w=W, hash=h), SketchParams(kind, args.t, args.seed)
            shingle_s, sketch_s = time_neardup(
                texts, sp, kp, args.batch_docs, args.repeat, CLOCKS[args.clock]
            )
            rows.append(row(f"neardup {kind} ({h})", texts, shingle_s, sketch_s, kind=kind, hash=h))
    return rows


def peer_rows(texts: Sequence[str], args: argparse.Namespace, sampled: bool) -> list[dict]:
    """datasketch and rensa, each timed as Python shingling + their own sketching."""
    t, seed, repeat, clock = args.t, args.seed, args.repeat, CLOCKS[args.clock]
    import datasketch
    import rensa

    holder: dict[str, list[Any]] = {}

    def build(name: str, fn: Callable[[str], Any]) -> float:
        def run() -> None:
            holder[name] = [fn(text) for text in texts]

        return common.best_time(run, repeat, clock)

    str_s = build("str", py_shingles)
    bytes_s = build("bytes", py_shingles_bytes)
    sets, byte_sets = holder["str"], holder["bytes"]

    def rensa_each(cls: Any, digest: str) -> Callable[[], None]:
        def run() -> None:
            for s in sets:
                m = cls(t, seed)
                m.update(s)
                getattr(m, digest)()

        return run

    def datasketch_each() -> None:
        for s in byte_sets:
            m = datasketch.MinHash(num_perm=t, seed=seed)
            m.update_batch(s)
            m.digest()

    def timed(fn: Callable[[], object]) -> float:
        return common.best_time(fn, repeat, clock)

    out = [
        row("python 5-shingles (str set) only", texts, str_s, 0.0, sampled, peer="python"),
        row(
            "rensa RMinHash.update",
            texts,
            str_s,
            timed(rensa_each(rensa.RMinHash, "digest")),
            sampled,
            peer="rensa",
        ),
        row(
            "rensa RMinHash.digest_matrix_from_token_sets",
            texts,
            str_s,
            timed(lambda: rensa.RMinHash.digest_matrix_from_token_sets(sets, t, seed)),
            sampled,
            peer="rensa",
        ),
        row(
            "rensa CMinHash.update",
            texts,
            str_s,
            timed(rensa_each(rensa.CMinHash, "digest_u64")),
            sampled,
            peer="rensa",
        ),
        row(
            "rensa CMinHash.digests64_from_token_sets",
            texts,
            str_s,
            timed(lambda: rensa.CMinHash.digests64_from_token_sets(sets, t, seed)),
            sampled,
            peer="rensa",
        ),
        row(
            "datasketch MinHash.update_batch",
            texts,
            bytes_s,
            timed(datasketch_each),
            sampled,
            peer="datasketch",
        ),
        row(
            "datasketch MinHash.bulk",
            texts,
            bytes_s,
            timed(lambda: datasketch.MinHash.bulk(byte_sets, num_perm=t, seed=seed)),
            sampled,
            peer="datasketch",
        ),
    ]
    holder.clear()
    return out


def add_ratios(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Each row's MB/s over the fastest rensa and the fastest datasketch row -> their names."""
    refs = {}
    for peer in ("rensa", "datasketch"):
        candidates = [r for r in rows if r.get("peer") == peer]
        if not candidates:
            continue
        ref = max(candidates, key=lambda r: r["mbps"])
        refs[peer] = ref["method"]
        for r in rows:
            r[f"x_{peer}"] = r["mbps"] / ref["mbps"]
    return refs


COLUMNS = [
    ("method", "method", ""),
    ("docs", "docs", "d"),
    ("mb", "MB", ".1f"),
    ("shingle_mbps", "shingle MB/s", ".1f"),
    ("sketch_mbps", "sketch MB/s", ".1f"),
    ("mbps", "total MB/s", ".1f"),
    ("docs_per_s", "docs/s", ",.0f"),
    ("x_rensa", "x rensa", ".1f"),
    ("x_datasketch", "x datasketch", ".1f"),
]


def speed_section(title: str, texts: list[str], args: argparse.Namespace) -> dict[str, Any]:
    rows = neardup_rows(texts, args)
    if not args.no_peers:
        sample = common.spread_sample(texts, args.peer_docs)
        rows += peer_rows(sample, args, len(sample) < len(texts))
    refs = add_ratios(rows)
    common.print_table(rows, COLUMNS, title)
    if any(r["sampled"] for r in rows):
        n = next(r["docs"] for r in rows if r["sampled"])
        print(
            f"* peers ran on {n} documents evenly spaced through these {len(texts)}; rates compare."
        )
    if refs:
        print(
            "ratios are total MB/s over the fastest of each peer: "
            + "; ".join(f"{p}: {m}" for p, m in refs.items())
        )
    return {"title": title, "rows": rows, "ratio_reference": refs}


def sweep_section(texts: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Batch size vs speed for oph and classic (mix hash), with the stage split."""
    rows = []
    mb = common.utf8_mb(texts)
    sizes = sorted({s for s in (25, 100, 250, 1000, 4000) if s < len(texts)} | {len(texts)})
    for kind in ("oph", "classic"):
        sp, kp = ShingleParams(w=W), SketchParams(kind, args.t, args.seed)
        for size in sizes:
            shingle_s, sketch_s = time_neardup(texts, sp, kp, size, args.repeat, CLOCKS[args.clock])
            r = row(f"{kind} ({size} docs/call)", texts, shingle_s, sketch_s, kind=kind)
            r["batch_docs"] = size
            r["batch_mb"] = mb * size / len(texts)
            rows.append(r)
    common.print_table(
        rows,
        [
            ("method", "kind (batch)", ""),
            ("batch_mb", "MB/call", ".2f"),
            ("shingle_mbps", "shingle MB/s", ".1f"),
            ("sketch_mbps", "sketch MB/s", ".1f"),
            ("mbps", "total MB/s", ".1f"),
            ("docs_per_s", "docs/s", ",.0f"),
        ],
        f"Batch size sweep (mix hash, whole corpus, {len(texts)} docs, {mb:.1f} MB)",
    )
    return rows


def collision_section(texts: list[str]) -> list[dict[str, Any]]:
    """Distinct shingle strings sharing one 64-bit fingerprint, for each shingle hash.

    The strings come from the Python reference tokeniser, so this also checks that the kernel
    emits exactly one fingerprint per reference shingle position (``misaligned`` docs: 0).
    """
    token_lists = [canonical_tokens(t) for t in texts]
    strings = []
    for tokens in token_lists:
        if len(tokens) < W:
            strings.append([" ".join(tokens)] if tokens else [])
        else:
            strings.append([" ".join(tokens[i : i + W]) for i in range(len(tokens) - W + 1)])
    rows = []
    for h in HASHES:
        fps, offsets = shingle_sequence(texts, ShingleParams(w=W, hash=h))
        seen: dict[int, str] = {}
        collided: set[int] = set()
        misaligned = 0
        for i, doc_strings in enumerate(strings):
            doc_fps = fps[offsets[i] : offsets[i + 1]].tolist()
            if len(doc_fps) != len(doc_strings):
                misaligned += 1
                continue
            for fp, s in zip(doc_fps, doc_strings, strict=True):
                if seen.setdefault(fp, s) != s:
                    collided.add(fp)
        n = len(seen)
        rows.append(
            {
                "hash": h,
                "docs": len(texts),
                "distinct_shingles": n,
                "collisions": len(collided),
                "expected": n * (n - 1) / 2 / 2.0**64,
                "misaligned_docs": misaligned,
            }
        )
    common.print_table(
        rows,
        [
            ("hash", "shingle hash", ""),
            ("docs", "docs", "d"),
            ("distinct_shingles", "distinct shingles", ",d"),
            ("collisions", "fp collisions", "d"),
            ("expected", "expected (n^2/2^65)", ".1e"),
            ("misaligned_docs", "docs misaligned vs reference", "d"),
        ],
        "64-bit shingle fingerprint collisions (reference tokens -> strings; kernel -> fps)",
    )
    return rows


def memory_section(corpus: common.Corpus, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Peak RSS while streaming the corpus from its source 1x and 4x (sketches discarded).

    The corpus list already in memory is not used: each pass re-reads the source, as a real
    streaming job would; only one batch of texts, fingerprints and sketches is alive at a time.
    """
    sp, kp = ShingleParams(w=W), SketchParams("oph", args.t, args.seed)
    rows = []
    for passes in args.memory_passes:
        docs = 0
        mb = 0.0
        checksum = np.uint64(0)
        gc.collect()
        t0 = time.perf_counter()
        with common.PeakRSS() as peak:
            for _ in range(passes):
                for batch in common.batched(corpus.stream(), args.batch_docs):
                    sketches = sketch_texts(batch, sp, kp)
                    checksum ^= np.bitwise_xor.reduce(sketches[:, 0])
                    docs += len(batch)
                    mb += common.utf8_mb(batch)
        rows.append(
            {
                "passes": passes,
                "docs": docs,
                "mb": mb,
                "seconds": time.perf_counter() - t0,
                "rss_start_mb": peak.start_mb,
                "peak_rss_mb": peak.peak_mb,
                "peak_rss_growth_mb": peak.growth_mb,
                "sketches_if_kept_mb": docs * args.t * 8 / 1e6,
            }
        )
    common.print_table(
        rows,
        [
            ("passes", "corpus passes", "d"),
            ("docs", "docs streamed", ",d"),
            ("mb", "MB streamed", ".1f"),
            ("seconds", "s (incl. read)", ".1f"),
            ("rss_start_mb", "RSS at start MB", ".1f"),
            ("peak_rss_mb", "peak RSS MB", ".1f"),
            ("peak_rss_growth_mb", "growth MB", ".1f"),
            ("sketches_if_kept_mb", "sketches if kept MB", ".1f"),
        ],
        f"Streaming memory (oph, {args.batch_docs} docs/batch, read from the source each pass)",
    )
    return rows


def targets(section: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets on few-KB prose: fastest kind >= 100 MB/s and >= 10x rensa."""
    ours = [r for r in section["rows"] if r["method"].startswith("neardup")]
    best = max(ours, key=lambda r: r["mbps"])
    classic = max((r for r in ours if r["kind"] == "classic"), key=lambda r: r["mbps"])
    result = {"fastest": best["method"], "mbps": best["mbps"], "x_rensa": best.get("x_rensa")}
    print(f"\nTargets on {section['title']}:")
    print(
        f"  fastest neardup: {best['method']}: {best['mbps']:.1f} MB/s "
        f"(target >= 100: {'met' if best['mbps'] >= 100 else 'MISSED'})"
    )
    if best.get("x_rensa") is not None:
        x = best["x_rensa"]
        print(
            f"  vs fastest rensa: {x:.1f}x (target >= 10: {'met' if x >= 10 else 'MISSED'}); "
            f"vs fastest datasketch: {best['x_datasketch']:.1f}x"
        )
    print(
        f"  classic t-permutation sketch: {classic['method']}: {classic['mbps']:.1f} MB/s"
        + (f", {classic['x_rensa']:.1f}x rensa" if classic.get("x_rensa") else "")
    )
    return result


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--corpus",
        type=Path,
        help="JSONL(.gz) with a 'text' field "
        "(default: 20news if present, else synthetic English-like text)",
    )
    p.add_argument("--limit", type=int, help="use only the first N documents")
    p.add_argument(
        "--synthetic-docs",
        type=int,
        default=10_000,
        help="documents to generate when no corpus is found (default 10000)",
    )
    p.add_argument(
        "--synthetic", action="store_true", help="use generated English-like text, not a corpus"
    )
    p.add_argument("--threads", type=int, default=1, help="native threads (default 1)")
    p.add_argument(
        "--batch-docs",
        type=int,
        default=1000,
        help="documents per neardup call (default 1000; see the sweep)",
    )
    p.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="cpu",
        help="cpu: process CPU time (default; robust on a shared machine, equal to wall time "
        "for one thread on an idle one); wall: wall-clock time",
    )
    p.add_argument("--repeat", type=int, default=3, help="timed runs per method; best kept")
    p.add_argument(
        "--peer-docs",
        type=int,
        default=4000,
        help="documents (evenly spaced) the peers run on (default 4000)",
    )
    p.add_argument("--t", type=int, default=128, help="signature length (default 128)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--few-kb", default="2,8", help="LO,HI KB range of the few-KB subset")
    p.add_argument(
        "--collision-docs",
        type=int,
        default=4000,
        help="documents (evenly spaced) for the fingerprint collision count",
    )
    p.add_argument(
        "--memory-passes",
        default="1,4",
        type=lambda s: [int(x) for x in s.split(",")],
        help="corpus passes to stream for the memory check (default 1,4)",
    )
    p.add_argument("--no-peers", action="store_true", help="skip datasketch and rensa")
    p.add_argument("--no-sweep", action="store_true", help="skip the batch-size sweep")
    p.add_argument("--no-collisions", action="store_true", help="skip the collision count")
    p.add_argument("--no-memory", action="store_true", help="skip the streaming memory check")
    p.add_argument(
        "--json", type=Path, help="also write results here, e.g. benchmarks/results/sketch.json"
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    corpus = common.load_corpus(args.corpus, args.limit, args.synthetic_docs, args.synthetic)
    texts = corpus.texts
    lo, hi = (float(x) for x in args.few_kb.split(","))
    few_kb = common.by_size(texts, lo, hi)
    info = common.machine()
    print(
        f"neardup sketch benchmark: {info['cpu']} ({info['cpus']} cpus visible), "
        f"Python {info['python']}, threads={args.threads}, clock={args.clock}, "
        f"t={args.t}, w={W} words"
    )
    print(
        f"corpus: {corpus.name}: {len(texts)} docs, {common.utf8_mb(texts):.1f} MB; "
        f"{lo:g}-{hi:g} KB subset: {len(few_kb)} docs, {common.utf8_mb(few_kb):.1f} MB"
    )
    print(
        f"warm-up (tables + JIT/cache load): {warm_up(texts, args.t, args.seed):.2f} s, "
        "not timed below"
    )
    results: dict[str, Any] = {
        "machine": info,
        "args": {k: str(v) for k, v in vars(args).items()},
        "corpus": corpus.name,
        "sections": [],
    }
    # Memory first: later timing runs leave freed pages in the allocator, hiding growth.
    if not args.no_memory:
        results["memory"] = memory_section(corpus, args)
    results["sections"].append(speed_section(f"Speed: {corpus.name}, all documents", texts, args))
    if few_kb:
        section = speed_section(f"Speed: {corpus.name}, {lo:g}-{hi:g} KB documents", few_kb, args)
        results["sections"].append(section)
        results["targets"] = targets(section)
    if not args.no_sweep:
        results["sweep"] = sweep_section(texts, args)
    if not args.no_collisions:
        results["collisions"] = collision_section(common.spread_sample(texts, args.collision_docs))
    if args.json:
        common.write_json(args.json, results)


if __name__ == "__main__":
    main()
