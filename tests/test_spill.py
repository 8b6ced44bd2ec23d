"""Blocks spilled to disk: the same answer as in memory, and read without piling up pages."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from neardup.blocks import SignedBatch, SpillBlocks
from neardup.engine import Deduplicator
from neardup.methods import Signatures, make_method
from neardup.params import (
    DedupParams,
    FeatureParams,
    MinhashParams,
    SampledParams,
    SimhashMethodParams,
)
from neardup.spill import Spill, release_pages
from neardup.testing.synth import near_duplicate_corpus, random_documents
from neardup.verify import RowEvidence


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    base = random_documents(200, seed=7, words=(30, 150))
    return list(near_duplicate_corpus(base, 360, 0.5, seed=2, n_empty=2).texts)


@pytest.mark.parametrize(
    "params",
    [
        DedupParams(threshold=0.7),
        DedupParams(threshold=0.7, verify="exact"),
        DedupParams(threshold=0.7, verify="sketch", keep="longest"),
        # components with tiny buckets: big-bucket checks read the signature rows of members
        DedupParams(threshold=0.7, removal="components", method=MinhashParams(max_bucket=2)),
        DedupParams(
            threshold=0.7,
            method=MinhashParams(features=FeatureParams(6, 14, 2), super_features=True),
        ),
        DedupParams(method=SimhashMethodParams(max_distance=4)),
        DedupParams(threshold=0.7, method=SampledParams(m=2)),
    ],
    ids=["hybrid", "exact", "sketch", "big-buckets", "megashingles", "simhash", "sampled"],
)
def test_every_method_and_verifier_answers_the_same_spilled_or_in_memory(
    corpus: list[str], params: DedupParams, tmp_path: object
) -> None:
    held = Deduplicator(params).fit(corpus, batch_size=40)
    spilled = Deduplicator(params, memory_limit=0, spill_dir=str(tmp_path)).fit(
        corpus, batch_size=40, jobs=2
    )
    assert held.stats_.spilled_bytes == 0 < spilled.stats_.spilled_bytes
    assert 0 < held.stats_.removed < len(corpus)
    if isinstance(params.method, MinhashParams) and params.method.max_bucket == 2:
        assert held.stats_.big_buckets > 0
    assert np.array_equal(held.kept_, spilled.kept_)
    assert np.array_equal(held.duplicate_of_, spilled.duplicate_of_)
    assert np.array_equal(held.duplicate_score_, spilled.duplicate_score_, equal_nan=True)
    for x, y in zip(held.pairs_, spilled.pairs_, strict=True):
        assert np.array_equal(x, y)
    assert held.stats_.bucket_checks == spilled.stats_.bucket_checks
    assert held.stats_.leader_checks == spilled.stats_.leader_checks


def test_a_block_keeps_its_memory_order_and_values_on_disk(tmp_path: object) -> None:
    spill = Spill(str(tmp_path))
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 2**63, size=(50, 7), dtype=np.uint64)
    for values in (rows, np.asfortranarray(rows), rows[:, 0].copy()):
        mapped = spill.array(values)
        assert np.array_equal(mapped, values)
        assert mapped.flags.f_contiguous == values.flags.f_contiguous
        assert mapped.flags.c_contiguous == values.flags.c_contiguous
        assert not mapped.flags.writeable
    assert spill.bytes == 2 * rows.nbytes + rows[:, 0].nbytes
    spill.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_released_pages_leave_the_resident_set_and_the_values_readable(tmp_path: object) -> None:
    def file_rss_mb() -> float:
        with open("/proc/self/status") as fh:
            line = next(x for x in fh if x.startswith("RssFile:"))
        return int(line.split()[1]) / 1024

    spill = Spill(str(tmp_path))
    values = np.arange(16 << 20, dtype=np.uint64)  # 128 MB
    mapped = spill.array(values)
    del values
    before = file_rss_mb()
    total = int(mapped.sum())  # every page read: all of them resident
    read = file_rss_mb()
    release_pages(mapped[10:])  # any view of the block releases the whole block
    released = file_rss_mb()
    assert read - before > 100
    assert read - released > 100
    assert int(mapped.sum()) == total  # read again from the file
    release_pages(np.zeros(3))  # an array in memory: nothing to release
    spill.close()


def test_key_columns_are_the_columns_of_the_representatives_keys(tmp_path: object) -> None:
    params = DedupParams(threshold=0.7)
    method = make_method(params)
    rng = np.random.default_rng(3)
    blocks = [rng.integers(0, 2**64 - 1, size=(m, 5), dtype=np.uint64) for m in (4, 0, 9, 6)]
    store = SpillBlocks(0, str(tmp_path))
    for b in blocks:
        store.append(_batch(Signatures(np.asfortranarray(b))))
    assert store.spilled == sum(b.nbytes for b in blocks)
    rows = np.array([0, 3, 5, 11, 13, 18], dtype=np.int64)
    found = store.key_columns(method, rows)
    assert found is not None
    column, k = found
    whole = np.concatenate(blocks)[rows]
    assert k == 5
    for j in range(k):
        assert np.array_equal(column(j), whole[:, j])
    assert np.array_equal(store.take_signatures(rows).data, whole)
    store.close()
    csr = SpillBlocks(0, str(tmp_path))
    csr.append(_batch(Signatures(np.arange(3, dtype=np.uint64), np.array([0, 1, 3]))))
    assert csr.key_columns(method, rows[:1]) is None  # not rows: gathered whole instead
    csr.close()


def _batch(sigs: Signatures) -> SignedBatch:
    """A batch of these signatures (hashes, lengths and evidence of the right length)."""
    n = len(sigs)
    return SignedBatch(
        np.arange(n, dtype=np.uint64),
        np.ones(n, dtype=np.int64),
        sigs,
        RowEvidence(np.zeros((n, 0), dtype=np.uint16)),
    )


def test_a_block_store_given_at_construction_holds_the_blocks(
    corpus: list[str], tmp_path: object
) -> None:
    params = DedupParams(threshold=0.7, verify="exact")
    store = SpillBlocks(0, str(tmp_path))
    given = Deduplicator(params, blocks=store, jobs=2).fit(corpus, batch_size=40)
    held = Deduplicator(params).fit(corpus, batch_size=40)
    assert given.blocks is store and given.jobs == 2
    assert given.stats_.spilled_bytes >= store.spilled > 0
    assert np.array_equal(held.kept_, given.kept_)
    assert np.array_equal(held.duplicate_of_, given.duplicate_of_)
    for x, y in zip(held.pairs_, given.pairs_, strict=True):
        assert np.array_equal(x, y)
