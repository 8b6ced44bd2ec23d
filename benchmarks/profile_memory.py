"""Where a ``neardup dedup`` run's resident memory goes: RSS at each stage boundary.

Runs the CLI's job (``neardup.run.dedup_source``) in this process with every stage wrapped: at
each stage's start and end it prints the elapsed time and the resident set from
``/proc/self/status`` (anonymous memory, mapped file pages, and the peak so far); a thread
samples it every ``--every`` seconds in between so the peak inside a stage is seen too.

    python benchmarks/profile_memory.py /tmp/news_1m.jsonl -- --memory-limit 64M
    head -n 2000000 /tmp/news_10m.jsonl > /tmp/news_2m.jsonl
    python benchmarks/profile_memory.py /tmp/news_2m.jsonl -- --memory-limit 400M

Options after ``--`` are ``neardup dedup`` options (``--memory-limit``, ``--jobs``...); the
kept file goes to a temporary folder (``-o`` to keep it).
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import common

_STARTED = time.perf_counter()
_FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")


def status() -> dict[str, float]:
    """Resident memory figures of this process in MB."""
    out: dict[str, float] = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            name, _, value = line.partition(":")
            if name in _FIELDS:
                out[name] = int(value.split()[0]) / 1024
    return out


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
            "fordblks", "keepcost",
        )
    ]  # fmt: skip


def heap_free_mb() -> float:
    """Bytes malloc holds free in its heaps (glibc ``mallinfo2().fordblks``), in MB; NaN when
    unavailable. Freed memory that stays resident shows here."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _Mallinfo2
        return float(libc.mallinfo2().fordblks) / 2**20
    except (OSError, AttributeError):
        return float("nan")


#: Documents fed to the deduplicator so far (updated by the wrapped ``append``).
_FED = [0]


def log(label: str) -> None:
    s = status()
    print(
        f"{time.perf_counter() - _STARTED:7.1f} s  {_FED[0]:>10,} docs  rss {s['VmRSS']:7.0f}"
        f"  anon {s['RssAnon']:7.0f}  file {s['RssFile']:6.0f}  heap free {heap_free_mb():6.0f}"
        f"  peak {s['VmHWM']:7.0f} MB  {label}",
        flush=True,
    )


def wrap(owner: Any, name: str, label: str | None = None) -> None:
    """Log RSS before and after every call of ``owner.name``."""
    inner: Callable[..., Any] = getattr(owner, name)
    tag = label or f"{getattr(owner, '__name__', owner)}.{name}"

    @functools.wraps(inner)
    def logged(*args: Any, **kwargs: Any) -> Any:
        log(f"> {tag}")
        try:
            return inner(*args, **kwargs)
        finally:
            log(f"< {tag}")

    setattr(owner, name, logged)


def sample(every: float, stop: threading.Event) -> None:
    """Print RSS every ``every`` seconds until ``stop``."""
    while not stop.wait(every):
        log("  .")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("corpus", help="JSONL input")
    p.add_argument("--every", type=float, default=5.0, help="seconds between samples [5]")
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    args = p.parse_args(argv[:cut])
    common.ensure_neardup()
    from neardup import blocks, cli, engine, near_pairs, run, verify
    from neardup.io import _source
    from neardup.methods import minhash

    for owner, name in [
        (engine.Deduplicator, "finish"),
        (engine, "exact_groups"),
        (blocks.MemoryBlocks, "take_signatures"),
        (blocks.MemoryBlocks, "take_evidence"),
        (near_pairs, "remove"),
        (minhash.MinHashMethod, "candidates"),
        (verify.HybridVerification, "decide"),
        (verify.HybridVerification, "recheck"),
        (_source.Source, "write_kept"),
        (run, "write_results"),
    ]:
        wrap(owner, name)
    append = engine.Deduplicator.append

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = append(self, *args, **kwargs)
        _FED[0] = self.n_docs
        return out

    engine.Deduplicator.append = counted  # type: ignore[method-assign]
    stop = threading.Event()
    threading.Thread(target=sample, args=(args.every, stop), daemon=True).start()
    extra = list(argv[cut + 1 :])  # neardup dedup options
    with tempfile.TemporaryDirectory() as tmp:
        if "-o" not in extra:
            extra += ["-o", str(Path(tmp) / "kept.jsonl")]
        log("start")
        code = cli.main(["dedup", args.corpus, "--quiet", *extra])
        log("done")
    stop.set()
    return int(code or 0)


if __name__ == "__main__":
    raise SystemExit(main())
