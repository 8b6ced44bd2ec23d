"""Speed of the dedup path's hot kernels, each alone, on the first documents of a JSONL corpus.

    python benchmarks/bench_kernels.py /tmp/news_1m.jsonl
    python benchmarks/bench_kernels.py /tmp/news_1m.jsonl --ab ../other/src   # two checkouts

The kernels a default ``neardup dedup`` spends its pass-1 and finish time in, timed with the
same inputs a run gives them (best of ``--repeat``; compiled and loaded before timing):

- ``parse_block``: the JSON kernel over 8 MB chunks of whole lines (MB/s of JSONL);
- ``utf8_lengths``: characters per text (GB/s of UTF-8);
- ``shingle_kernel``: tokens and word 5-shingle fingerprints, the default's kernel (MB/s of text);
- ``sketch_oph``: one-permutation MinHash, t=228, densified (µs a document); and on documents
  of one shingle each (a text of at most 5 words: one filled bin), and of 2 to 32 shingles
  (a few words or characters: few filled bins, densified through the first-hit table);
- ``column_pairs``: one key column's candidate pairs after its sort (ms a column).

``--ab PATH`` times the kernels of another checkout's ``src`` too, alternating the two
(``--repeat`` rounds each), and prints both with the ratio: the way to show a kernel change.
A kernel's result is hashed (SHA-256, first 16 hex digits) so that two versions can be seen to
compute the same thing. Speed targets live here, never in unit tests.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import hashlib, json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from neardup._kernels import candidates as kc, jsonl as kj, minhash as km, shingles as ks
from neardup.io._jsonl_blocks import parse_block
from neardup.shingles import _rabin_table, encode_batch
from neardup.text import tables

corpus, docs, repeat = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
import gzip
with (gzip.open if corpus.endswith(".gz") else open)(corpus, "rb") as fh:
    lines = [fh.readline() for _ in range(docs)]
lines = [x if x.endswith(b"\n") else x + b"\n" for x in lines if x]
data = b"".join(lines)
chunks, at = [], 0
while at < len(data):
    cut = data.rfind(b"\n", at, at + (8 << 20)) + 1 or len(data)
    chunks.append(data[at:cut])
    at = cut

def digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]

def best(fn):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out

result = {}
t, blocks = best(lambda: [parse_block(c, "text", "id", 1, 0)[0] for c in chunks])
result["parse_block MB/s"] = (len(data) / t / 1e6, digest(*[b.texts.buf for b in blocks]))
texts = [s for b in blocks for s in b.texts]
buf, offsets = encode_batch(texts, False)
t, lengths = best(lambda: kj.utf8_lengths(buf, offsets))
result["utf8_lengths GB/s"] = (len(buf) / t / 1e9, digest(lengths))
is_word, fold = tables()
if hasattr(ks, "shingle_words_mixed"):  # the default's own kernel (since stop 21)
    t, sh = best(lambda: ks.shingle_words_mixed(buf, offsets, is_word, fold, 5))
else:
    args = (buf, offsets, is_word, fold, 5, False, False, _rabin_table())
    t, sh = best(lambda: ks.shingle_kernel(*args))
result["shingle_kernel MB/s"] = (len(buf) / t / 1e6, digest(sh[0], sh[1], sh[3]))
fps, fp_offsets = sh[0], sh[1]
seed = np.uint64(12345)
t, sketches = best(lambda: km.sketch_oph(fps, fp_offsets, seed, 228))
result["sketch_oph us/doc"] = (t / len(texts) * 1e6, digest(sketches))
one = np.ascontiguousarray(fps[fp_offsets[:-1][np.diff(fp_offsets) > 0]])  # a shingle each
one_offsets = np.arange(len(one) + 1, dtype=np.int64)
t, short = best(lambda: km.sketch_oph(one, one_offsets, seed, 228))
result["sketch_oph one-shingle us/doc"] = (t / len(one) * 1e6, digest(short))
sizes = np.diff(fp_offsets)
starts = fp_offsets[:-1][sizes >= 33]
few_sizes = 2 + np.arange(len(starts)) % 31  # 2..32 shingles: texts of a few words
few = np.concatenate([fps[a : a + k] for a, k in zip(starts.tolist(), few_sizes.tolist())])
few_offsets = np.concatenate([[0], np.cumsum(few_sizes)]).astype(np.int64)
t, short = best(lambda: km.sketch_oph(few, few_offsets, seed, 228))
result["sketch_oph 2-32-shingle us/doc"] = (t / len(starts) * 1e6, digest(short))
n = len(texts)
shift = max(1, (n - 1).bit_length())
low = np.uint64((1 << shift) - 1)
column = np.ascontiguousarray(sketches[:, 0] ^ sketches[:, 1])  # a band-like key column
packed = np.sort((column & ~low) | np.arange(n, dtype=np.uint64))
none = np.zeros(0, dtype=np.int64)

def pairs():
    in_big = np.zeros(n, dtype=np.bool_)
    stats = np.zeros(kc.N_STATS, dtype=np.int64)
    return kc.column_pairs(packed, column, shift, 5000, none, False, in_big, stats, True)

t, found = best(pairs)
result["column_pairs ms/column"] = (t * 1e3, digest(found[0], found[1]))
print(json.dumps({"docs": len(texts), "mb": len(data) / 1e6, "kernels": result}))
"""

FASTER_IS_LOWER = ("us/doc", "ms/column")


def _run(src: str, corpus: str, docs: int, repeat: int) -> dict[str, object]:
    """One child process timing one checkout's kernels (a fresh interpreter per checkout)."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, src, corpus, str(docs), str(repeat)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> int:
    """Time the kernels of this checkout (and of ``--ab``'s) and print one line each."""
    here = str(Path(__file__).resolve().parents[1] / "src")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", help="JSONL (or .jsonl.gz) with a 'text' field")
    ap.add_argument("--docs", type=int, default=100_000, help="first documents used [100000]")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per kernel [5]")
    ap.add_argument("--ab", metavar="SRC", help="another checkout's src folder to compare")
    ap.add_argument("--rounds", type=int, default=2, help="alternations with --ab [2]")
    args = ap.parse_args()
    if not Path(args.corpus).is_file():
        ap.error(f"{args.corpus}: no such file")
    sides = {"this": here} | ({"other": args.ab} if args.ab else {})
    best: dict[str, dict[str, tuple[float, str]]] = {name: {} for name in sides}
    info: dict[str, object] = {}
    for _ in range(args.rounds if args.ab else 1):
        for name, src in sides.items():
            got = _run(src, args.corpus, args.docs, args.repeat)
            info = {"docs": got["docs"], "mb": got["mb"]}
            for kernel, (value, digest) in dict(got["kernels"]).items():  # type: ignore[call-overload]
                old = best[name].get(kernel)
                lower = kernel.endswith(FASTER_IS_LOWER)
                if old is None or (value < old[0] if lower else value > old[0]):
                    best[name][kernel] = (value, digest)
    print(f"{info['docs']:,} documents, {info['mb']:.1f} MB of JSONL: {args.corpus}")
    for kernel, (value, digest) in best["this"].items():
        line = f"{kernel:24s} {value:9.2f}  [{digest}]"
        if "other" in best:
            o_value, o_digest = best["other"][kernel]
            lower = kernel.endswith(FASTER_IS_LOWER)
            speedup = o_value / value if lower else value / o_value
            same = "same result" if o_digest == digest else "DIFFERENT RESULT"
            line += f"   other {o_value:9.2f}  [{o_digest}]  {speedup:.2f}x, {same}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
