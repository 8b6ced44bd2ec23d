"""Golden outputs pin format version 1: a change of hash, table or layout is never silent.

If a change here is intended, bump ``neardup.params.FORMAT_VERSION``, regenerate with
``python -m tests.test_golden`` and say so in the changelog: stored sketches become incompatible.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from neardup.minhash import sketch_texts
from neardup.params import FORMAT_VERSION, ShingleParams, SketchParams
from neardup.shingles import content_hashes, shingle_sequence
from neardup.text import table_version

GOLDEN = Path(__file__).parent / "golden" / f"format_v{FORMAT_VERSION}.json"
TEXTS = [
    "The quick brown fox jumps over the lazy dog; the dog sleeps on.",
    "Übermäßig große Straßen in İstanbul — ΟΔΟΣ “quoted” 😀 中文字",
    "short",
    "",
]
SHINGLES = [ShingleParams(), ShingleParams(w=3, hash="rabin"), ShingleParams(w=4, tokens="char")]
SKETCHES = [SketchParams(kind=k, t=8, seed=42) for k in ("oph", "classic", "bottomk")]  # type: ignore[arg-type]


def label(params: ShingleParams | SketchParams) -> str:
    """The parameters' fingerprint without the Unicode version (the texts here are the same
    under every Unicode version Python 3.11+ ships)."""
    tag = f'"unicode":"{table_version()}"'
    return params.fingerprint().replace(tag + ",", "").replace("," + tag, "")


def compute() -> dict[str, object]:
    out: dict[str, object] = {}
    for sp in SHINGLES:
        fps, offsets = shingle_sequence(TEXTS, sp)
        out[label(sp)] = [fps[offsets[i] : offsets[i + 1]].tolist() for i in range(len(TEXTS))]
    for kp in SKETCHES:
        out[label(kp)] = sketch_texts(TEXTS, params=kp).tolist()
    canonical, raw = content_hashes(TEXTS)
    out["content_hashes"] = [canonical.tolist(), raw.tolist()]
    return out


def test_outputs_match_the_golden_file() -> None:
    expected = json.loads(GOLDEN.read_text())
    got = json.loads(json.dumps(compute()))
    for key, value in expected.items():
        assert got[key] == value, f"{key} changed: hash drift breaks stored sketches"
    assert set(got) == set(expected)


def test_sketch_values_are_uint64() -> None:
    assert sketch_texts(TEXTS[:1]).dtype == np.uint64


if __name__ == "__main__":
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(compute(), indent=1) + "\n")
    print(f"wrote {GOLDEN}")
