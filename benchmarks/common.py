"""Shared helpers for the benchmark scripts: corpora, thread limits, timing, peak memory, tables.

Stdlib only at import time, so a script can call ``limit_threads`` before NumPy or Numba load.
Import it from a script in this folder with ``import common`` (the script's folder is on sys.path).
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import random
import re
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"

#: Real corpora looked for, first found wins; otherwise scripts fall back to ``synthetic_texts``.
CORPUS_CANDIDATES = (Path("/work/shared/data/20news_bydate/docs.jsonl.gz"),)

_THREAD_VARS = (
    "NUMBA_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "RAYON_NUM_THREADS",  # rensa's Rust thread pool
)


# ---------------------------------------------------------------- threads and imports


def threads_from_argv(argv: Sequence[str], default: int = 1) -> int:
    """The value of ``--threads N`` / ``--threads=N`` in argv, read before argparse runs."""
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if arg.startswith("--threads="):
            return int(arg.split("=", 1)[1])
    return default


def limit_threads(n: int) -> None:
    """Cap every native thread pool (Numba, OpenMP, BLAS, Rayon) at n threads.

    Must run before numpy, numba or the peers are imported: the pools read these at start-up.
    """
    loaded = [m for m in ("numpy", "numba", "rensa") if m in sys.modules]
    if loaded:
        raise RuntimeError(f"limit_threads must run before importing {', '.join(loaded)}")
    for var in _THREAD_VARS:
        os.environ[var] = str(n)


def ensure_neardup() -> None:
    """Make ``import neardup`` work from a plain checkout (no ``pip install -e .``)."""
    try:
        import neardup  # noqa: F401  (only probing importability)
    except ImportError:
        sys.path.insert(0, str(REPO / "src"))


# ---------------------------------------------------------------- corpora


def default_corpus() -> Path | None:
    """The first real corpus present on this machine, or None (use ``synthetic_texts``)."""
    return next((p for p in CORPUS_CANDIDATES if p.exists()), None)


def iter_texts(path: Path, field: str = "text", limit: int | None = None) -> Iterator[str]:
    """Stream the ``field`` of each line of a JSONL file (``.gz`` read transparently)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f):
            if limit is not None and n >= limit:
                return
            record = json.loads(line)
            if field not in record:
                raise SystemExit(f"{path} line {n + 1}: field {field!r} is missing")
            yield record[field]


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ou")]
    words = {"".join(rng.choices(syllables, k=rng.choice((1, 2, 2, 3, 3, 4)))) for _ in range(size)}
    return sorted(words)


def iter_synthetic(n_docs: int, seed: int = 0, mean_words: int = 500) -> Iterator[str]:
    """Deterministic English-like documents: Zipf(1.1) words in sentences and paragraphs.

    Document lengths are log-normal around ``mean_words`` words (a few KB), like newsgroup posts.
    """
    rng = random.Random(seed)
    vocab = _vocabulary(rng, 20_000)
    rng.shuffle(vocab)
    cumulative: list[float] = []
    total = 0.0
    for rank in range(1, len(vocab) + 1):
        total += rank**-1.1
        cumulative.append(total)
    for _ in range(n_docs):
        n_words = max(5, int(rng.lognormvariate(0, 0.6) * mean_words))
        words = rng.choices(vocab, cum_weights=cumulative, k=n_words)
        parts: list[str] = []
        i = 0
        while i < n_words:
            k = rng.randint(5, 25)
            sentence = " ".join(words[i : i + k])
            parts.append(sentence[:1].upper() + sentence[1:] + rng.choice(".....?!"))
            if rng.random() < 0.15:
                parts.append("\n\n")
            i += k
        yield " ".join(parts)


def synthetic_texts(n_docs: int, seed: int = 0, mean_words: int = 500) -> list[str]:
    """``iter_synthetic`` as a list."""
    return list(iter_synthetic(n_docs, seed, mean_words))


@dataclass(frozen=True)
class Corpus:
    """A benchmark corpus: its name, its texts and how to stream it again (for memory runs)."""

    name: str
    texts: list[str]
    stream: Callable[[], Iterator[str]] = field(repr=False)


def load_corpus(
    path: Path | None,
    limit: int | None = None,
    synthetic_docs: int = 10_000,
    synthetic: bool = False,
) -> Corpus:
    """The corpus at ``path`` (JSONL), else the default real corpus, else synthetic text.

    ``synthetic=True`` forces generated text (``limit`` or ``synthetic_docs`` documents).
    """
    path = None if synthetic else path or default_corpus()
    if path is None:
        n = limit or synthetic_docs
        return Corpus(f"synthetic ({n} docs)", synthetic_texts(n), lambda: iter_synthetic(n))
    if not path.exists():
        raise SystemExit(f"corpus {path} does not exist; pass --corpus PATH to a JSONL file")
    name = path.parent.name if path.name.startswith("docs.") else path.stem
    texts = list(iter_texts(path, limit=limit))
    return Corpus(name, texts, lambda: iter_texts(path, limit=limit))


def utf8_mb(texts: Iterable[str]) -> float:
    """Total UTF-8 size in MB (10^6 bytes): the unit of every MB/s figure."""
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6


def by_size(texts: Sequence[str], lo_kb: float, hi_kb: float) -> list[str]:
    """The texts whose UTF-8 size is in [lo_kb, hi_kb) KB (10^3 bytes)."""
    return [
        t for t in texts if lo_kb * 1e3 <= len(t.encode("utf-8", "surrogatepass")) < hi_kb * 1e3
    ]


def spread_sample(items: Sequence[T], n: int) -> list[T]:
    """n items evenly spaced through ``items`` (all of them when n >= len): representative."""
    if n >= len(items):
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of ``size`` items (the last may be shorter)."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


# ---------------------------------------------------------------- timing and memory


#: Timing clocks. "cpu" is this process's CPU time over all its threads: for a single-threaded
#: run it equals wall time on an idle machine, and unlike wall time it is not inflated when other
#: processes share the cores (the usual state of a CI runner or a busy workstation).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def best_time(
    fn: Callable[[], object], repeat: int = 3, clock: Callable[[], float] = time.perf_counter
) -> float:
    """The fastest of ``repeat`` runs of fn(), in seconds of ``clock`` (the least disturbed)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def _status_kb(key: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    m = re.search(rf"^{key}:\s+(\d+) kB", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def rss_mb() -> float:
    """Current resident set size of this process in MB."""
    kb = _status_kb("VmRSS")
    if kb is not None:
        return kb / 1e3
    import psutil

    return float(psutil.Process().memory_info().rss) / 1e6


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB (VmHWM: unlike ru_maxrss, which Linux carries
    over exec from the parent that forked it, it counts this program only)."""
    kb = _status_kb("VmHWM")
    if kb is not None:
        return kb / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def release_memory() -> None:
    """Collect garbage and hand freed heap pages back to the OS (glibc ``malloc_trim``).

    Call before a ``PeakRSS`` block: otherwise memory freed by an earlier run stays resident and
    is reused, and the block's growth reads near zero.
    """
    import contextlib
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: growth may be understated
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class PeakRSS:
    """Context manager: ``growth_mb`` = peak RSS inside the block minus RSS on entry.

    ``start_mb`` and ``peak_mb`` hold the absolute figures.

    On Linux the kernel's high-water mark is reset on entry (/proc/self/clear_refs) and read on
    exit, so short spikes count; elsewhere a thread polls the RSS every 2 ms.
    """

    def __init__(self) -> None:
        self.growth_mb = 0.0
        self.start_mb = 0.0
        self.peak_mb = 0.0
        self._peak = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._kernel = False

    def __enter__(self) -> PeakRSS:
        self.start_mb = rss_mb()
        try:
            Path("/proc/self/clear_refs").write_text("5")
            self._kernel = _status_kb("VmHWM") is not None
        except OSError:
            self._kernel = False
        if not self._kernel:
            self._peak = self.start_mb
            self._thread = threading.Thread(target=self._poll, daemon=True)
            self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._peak = max(self._peak, rss_mb())
            time.sleep(0.002)

    def __exit__(self, *exc: object) -> None:
        if self._kernel:
            self._peak = (_status_kb("VmHWM") or 0) / 1e3
        else:
            self._stop.set()
            if self._thread is not None:
                self._thread.join()
        self.peak_mb = max(self._peak, self.start_mb)
        self.growth_mb = self.peak_mb - self.start_mb


# ---------------------------------------------------------------- output


def machine() -> dict[str, str]:
    """Where the numbers come from: CPU model, Python, OS."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpus": str(os.cpu_count()),
        "python": platform.python_version(),
        "os": platform.platform(terse=True),
    }


def fmt(value: Any, spec: str = "") -> str:
    """Format a table cell; None prints as '-'."""
    if value is None:
        return "-"
    return format(value, spec) if spec else str(value)


def print_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str, str]], title: str = ""
) -> None:
    """Print rows as an aligned text table; columns are (key, header, format spec)."""
    cells = [[fmt(row.get(key), spec) for key, _, spec in columns] for row in rows]
    headers = [header for _, header, _ in columns]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]
    if title:
        print(f"\n{title}")
    print(
        "  ".join(
            h.ljust(w) if i == 0 else h.rjust(w)
            for i, (h, w) in enumerate(zip(headers, widths, strict=True))
        )
    )
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print(
            "  ".join(
                v.ljust(w) if i == 0 else v.rjust(w)
                for i, (v, w) in enumerate(zip(c, widths, strict=True))
            )
        )


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write results as indented JSON, creating the folder (benchmarks/results/ is gitignored)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    print(f"\nresults written to {path}")
