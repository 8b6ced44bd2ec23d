"""Freed NumPy blocks go back to the system when the heap is trimmed (glibc only)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from neardup import _heap

# Run in a fresh process: what malloc keeps depends on everything allocated before.
_SCRIPT = """
import numpy as np
from neardup import _heap

def anon_mb():
    with open("/proc/self/status") as fh:
        line = next(x for x in fh if x.startswith("RssAnon:"))
    return int(line.split()[1]) / 1024

first = np.ones((4 << 20) // 8)
del first  # a freed mapping raises glibc's mmap threshold: later blocks come from the heap
blocks, small = [], []
for _ in range(100):  # 3 MB blocks with small arrays between them: holes, not a free top
    blocks.append(np.ones((3 << 20) // 8))
    small.append(np.ones(1000))
held = anon_mb()
del blocks
kept = anon_mb()
trimmed = _heap.trim()
print(held, kept, anon_mb(), trimmed)
"""


# glibc's defaults, pinned: an mmap threshold above 3 MB (the heap holds the blocks) and no
# automatic trimming. The test process's own settings must not leak in: Dask's LocalCluster
# (started by other tests) sets MALLOC_TRIM_THRESHOLD_=65536 in os.environ, which fixes the
# mmap threshold at 128 KB, so every block got its own mapping and went back when freed.
_TUNABLES = "glibc.malloc.mmap_threshold=16777216:glibc.malloc.trim_threshold=4294967295"


def _pinned_malloc_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["GLIBC_TUNABLES"] = _TUNABLES
    return env


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or _heap._malloc_trim() is None, reason="glibc only"
)
def test_trim_returns_freed_blocks_that_malloc_kept() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        env=_pinned_malloc_env(),
    ).stdout.split()
    held, kept, after = map(float, out[:3])
    assert out[3] == "True"
    assert held - kept < 50  # freeing alone kept the blocks resident ...
    assert kept - after > 200  # ... and trimming gave back most of them


class _FakeTrim:
    """malloc_trim's stand-in: counts the calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, pad: int) -> int:
        self.calls += 1
        return 1


@pytest.fixture
def fake_trim(monkeypatch: pytest.MonkeyPatch) -> _FakeTrim:
    """malloc_trim counted instead of called, with no allowance set."""
    fake = _FakeTrim()
    monkeypatch.setattr(_heap, "_malloc_trim", lambda: fake)
    monkeypatch.setattr(_heap, "_allowance", 0)
    return fake


@pytest.mark.skipif(_heap.resident_bytes() is None, reason="needs /proc/self/statm")
def test_trim_keeps_free_pages_while_the_process_is_within_its_allowance(
    fake_trim: _FakeTrim,
) -> None:
    fake = fake_trim
    held = _heap.resident_bytes()
    assert held is not None and held > 0
    assert _heap.trim() and fake.calls == 1  # no allowance: always handed back
    _heap.allow_resident(held * 4)
    assert not _heap.trim() and fake.calls == 1  # well within it: kept
    _heap.allow_resident(held // 4)
    assert _heap.trim() and fake.calls == 2  # past it: handed back


def test_trim_skips_a_stage_that_held_less_than_a_small_stage(fake_trim: _FakeTrim) -> None:
    fake = fake_trim
    assert not _heap.trim(_heap.SMALL_STAGE - 1) and fake.calls == 0
    assert _heap.trim(_heap.SMALL_STAGE) and fake.calls == 1
    assert _heap.trim() and fake.calls == 2  # no size given: as before


def test_a_small_dedup_never_walks_mallocs_arenas_and_a_large_one_does(
    fake_trim: _FakeTrim, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index batch or a service request is a small Deduplicator run: its finish trimmed the
    heap five times (0.25 ms each), more than some of its own stages took."""
    from neardup import Deduplicator, DedupParams
    from neardup.testing.synth import near_duplicate_corpus, random_documents

    fake = fake_trim
    texts = list(near_duplicate_corpus(random_documents(300, seed=1), 300, 0.3, seed=2).texts)
    small = Deduplicator(DedupParams()).fit(texts)
    assert fake.calls == 0
    monkeypatch.setattr(_heap, "SMALL_STAGE", 1)  # the same run, as if its stages were large
    large = Deduplicator(DedupParams()).fit(texts)
    assert fake.calls >= 2
    assert (small.kept_ == large.kept_).all()
