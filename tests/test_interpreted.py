"""Interpreted kernels (NEARDUP_KERNELS=python, which small runs use to skip loading Numba) give
byte-identical outputs to compiled ones, for every method and option that changes a kernel, on
corpora of near-duplicates in tricky Unicode; and the kernels' own tests pass interpreted."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from neardup.cli import main
from neardup.testing.synth import edit
from tests.strategies import TRICKY

ROOT = Path(__file__).resolve().parent.parent

# Each changes which kernels run or how: tokens, fingerprints, sketches, verification, removal.
CONFIGS: dict[str, list[str]] = {
    "default": [],
    "exact": ["--verify", "exact", "--threshold", "0.6"],
    "char": ["--tokens", "char", "--shingle-size", "3", "--verify", "exact"],
    "rabin": ["--hash", "rabin", "--shingle-size", "2", "--nfkc"],
    "classic": ["--sketch", "classic", "--features", "8,4,1", "--verify", "sketch"],
    "simhash": ["--method", "simhash", "--shingle-size", "2"],
    "longest": ["--keep", "longest", "--shingle-size", "3", "--threshold", "0.5"],
}

_WORDS = ["alpha", "beta", "Gamma", "delta", "ÉTÉ", "straße", "naïve", "中文", "😀x", "İstanbul"]


def _text(rng: random.Random) -> str:
    """A text of words and tricky characters (combining marks, emoji, a lone surrogate...)."""
    parts = []
    for _ in range(rng.randint(0, 40)):
        if rng.random() < 0.7:
            parts.append(rng.choice(_WORDS) + str(rng.randint(0, 30)))
        else:
            parts.append("".join(rng.choice(TRICKY) for _ in range(rng.randint(1, 6))))
    return " ".join(parts)


def _corpus(path: Path, seed: int) -> Path:
    """Originals, their edited copies and exact copies, ids and records in varied JSON forms."""
    rng = random.Random(seed)
    texts = [_text(rng) for _ in range(14)]
    for i in range(20):
        base = rng.choice(texts)
        texts.append(edit(base, rng.choice([0.0, 0.05, 0.15, 0.3]), seed * 100 + i))
    rng.shuffle(texts)
    with path.open("w", encoding="utf-8") as fh:
        for i, text in enumerate(texts):
            record = {"id": i if i % 3 else f"d{i}", "text": text, "n": [i, {"x": None}]}
            lone = any("\ud800" <= ch <= "\udfff" for ch in text)  # escaped, never raw
            fh.write(json.dumps(record, ensure_ascii=bool(i % 2) or lone) + "\n")
            if i % 7 == 0:
                fh.write("  \n")
    return path


def _argvs(corpus: Path, out: Path) -> list[list[str]]:
    """One ``neardup dedup`` command line per configuration, each writing its own outputs."""
    argvs = []
    for name, extra in CONFIGS.items():
        stem = out / f"{corpus.stem}.{name}"
        argvs.append(
            [
                "dedup",
                str(corpus),
                "-o",
                f"{stem}.kept.jsonl",
                "--clusters",
                f"{stem}.clusters.jsonl",
                "--pairs",
                f"{stem}.pairs.jsonl",
                "--quiet",
                *extra,
            ]
        )
    return argvs


_RUN_ALL = """
import json, sys
from neardup._kernels import _jit
from neardup.cli import main
argvs = json.loads(sys.argv[1])
codes = [main(argv) for argv in argvs]
print(json.dumps({"mode": _jit.mode(), "codes": codes, "numba": "numba" in sys.modules}))
"""


def test_interpreted_kernels_write_the_same_bytes_as_compiled(tmp_path: Path) -> None:
    corpora = [_corpus(tmp_path / f"c{seed}.jsonl", seed) for seed in range(3)]
    (tmp_path / "compiled").mkdir()
    (tmp_path / "interpreted").mkdir()
    compiled = [a for c in corpora for a in _argvs(c, tmp_path / "compiled")]
    interpreted = [a for c in corpora for a in _argvs(c, tmp_path / "interpreted")]
    assert [main(argv) for argv in compiled] == [0] * len(compiled)
    proc = subprocess.run(
        [sys.executable, "-c", _RUN_ALL, json.dumps(interpreted)],
        env={**os.environ, "NEARDUP_KERNELS": "python"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result == {"mode": "python", "codes": [0] * len(interpreted), "numba": False}
    names = sorted(p.name for p in (tmp_path / "compiled").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "interpreted").iterdir())
    assert len(names) == 3 * len(corpora) * len(CONFIGS)
    removed = 0
    for name in names:
        want = (tmp_path / "compiled" / name).read_bytes()
        assert (tmp_path / "interpreted" / name).read_bytes() == want, name
        if name.endswith(".pairs.jsonl"):
            removed += len(want.splitlines())
    assert removed > 20  # the corpora do have near-duplicates to find


# The kernels' tests against their pure references, run interpreted.
KERNEL_TESTS = [
    "tests/test_shingles.py",
    "tests/test_minhash.py",
    "tests/test_features.py",
    "tests/test_candidates.py",
    "tests/test_removal.py",
    "tests/test_ids.py",
    "tests/test_jsonl_blocks.py",
    "tests/test_hamming.py",
    "tests/test_simhash.py",
    "tests/test_resemblance.py",
    "tests/test_clusters.py",
    "tests/test_links.py",
    "tests/test_link_split.py",
    "tests/test_keys.py",
    "tests/test_contain.py",
    "tests/test_paragraph_split.py",
]


def test_kernel_tests_pass_interpreted() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *KERNEL_TESTS],
        cwd=ROOT,
        env={**os.environ, "NEARDUP_KERNELS": "python"},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
