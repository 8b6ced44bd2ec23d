"""The corpus and option sets whose dedup outputs were pinned before the architecture change.

``python -m tests.golden.dedup_cases OUT.json [NEARDUP_ARGS...]`` recomputes the digests; the
pinned values in ``dedup_v1.json`` came from the code before issue 7 (commit f014b03) run with
the options below, so equal digests prove the restructure changed nothing for explicit options.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from neardup.testing.synth import near_duplicate_corpus, random_documents

#: name -> options (the old defaults spelled out); the new code adds ``--removal components``.
CASES: dict[str, list[str]] = {
    "minhash_sketch": ["--verify", "sketch"],
    "minhash_exact_07": ["--verify", "exact", "--threshold", "0.7"],
    "minhash_hybrid_longest": ["--verify", "hybrid", "--keep", "longest"],
    "minhash_super_none": ["--features", "6,14,2", "--super-features", "--verify", "none"],
    "simhash_k4": ["--method", "simhash", "--max-distance", "4"],
}


def write_corpus(path: Path) -> None:
    """800 documents: originals, exact, cosmetic and edited copies, two empty texts."""
    base = random_documents(400, seed=11, words=(30, 160))
    texts = near_duplicate_corpus(base, 800, 0.5, seed=12, n_empty=2).texts
    with path.open("w", encoding="utf-8") as fh:
        for i, text in enumerate(texts):
            fh.write(json.dumps({"id": f"d{i}", "text": text, "n": i}) + "\n")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cluster_rows(path: Path) -> str:
    """Digest of the (id, cluster, kept) projection of a clusters file (fields added later)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    slim = [[r["id"], r["cluster"], r["kept"]] for r in rows]
    return hashlib.sha256(json.dumps(slim).encode()).hexdigest()


def run_case(main: object, workdir: Path, name: str, extra: list[str]) -> dict[str, str]:
    corpus = workdir / "corpus.jsonl"
    if not corpus.exists():
        write_corpus(corpus)
    outs = {k: workdir / f"{name}.{k}.jsonl" for k in ("kept", "clusters", "pairs")}
    args = ["dedup", str(corpus), "-o", str(outs["kept"]), "--clusters", str(outs["clusters"])]
    args += ["--pairs", str(outs["pairs"]), "--quiet", *CASES[name], *extra]
    code = main(args)  # type: ignore[operator]
    assert code == 0, f"{name}: exit {code}"
    return {
        "kept": digest(outs["kept"]),
        "pairs": digest(outs["pairs"]),
        "clusters": cluster_rows(outs["clusters"]),
    }


if __name__ == "__main__":
    import tempfile

    from neardup.cli import main

    out, extra = Path(sys.argv[1]), sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        result = {name: run_case(main, Path(tmp), name, extra) for name in CASES}
    out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")
