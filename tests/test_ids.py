"""Unique ids in pass 1: the kernel's claims are a dict's, whatever the blocks and hashes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels import ids as k
from neardup._kernels.shingles import raw_hash_kernel
from neardup.io._ids import IdRegistry
from neardup.text import Utf8Texts

from . import reference

# Few distinct ids (so many repeats), any Unicode, lone surrogates included.
id_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=6)
id_lists = st.lists(st.sampled_from(["", "a", "b", "ab", "é", "\ud800", "x" * 40]) | id_text)


@settings(max_examples=200, deadline=None)
@given(id_lists)
def test_id_hashes_are_the_raw_text_hash_of_any_unicode_id(ids: list[str]) -> None:
    texts = Utf8Texts.from_strings(ids)
    got = raw_hash_kernel(texts.buf, texts.offsets).tolist()
    assert got == [reference.raw_hash(x) for x in ids]


@settings(max_examples=200, deadline=None)
@given(id_lists, st.lists(st.integers(1, 9), min_size=1))
def test_claims_in_any_blocks_equal_a_dicts_setdefault(ids: list[str], cuts: list[int]) -> None:
    registry = IdRegistry()
    seen: dict[str, int] = {}
    keys = [1000 + 3 * i for i in range(len(ids))]  # any distinct keys
    at = 0
    for size in cuts * (len(ids) + 1):
        if at >= len(ids):
            break
        block, block_keys = ids[at : at + size], keys[at : at + size]
        got = registry.claim(Utf8Texts.from_strings(block), np.array(block_keys, dtype=np.int64))
        assert got.tolist() == reference.claim_ids(seen, block, block_keys)
        at += size
    assert list(registry.close()) == list(seen)  # every new id, in claim order


@settings(max_examples=100, deadline=None)
@given(id_lists)
def test_equal_hashes_never_make_different_ids_the_same(ids: list[str]) -> None:
    texts = Utf8Texts.from_strings(ids)
    n = len(ids)
    table = np.full(1 << max(1, (2 * n + 1).bit_length()), -1, dtype=np.int64)
    buf = np.zeros(int(texts.offsets[-1]), dtype=np.uint8)
    offsets = np.zeros(n + 1, dtype=np.int64)
    hashes = np.zeros(n, dtype=np.uint64)
    keys = np.zeros(n, dtype=np.int64)
    same = np.zeros(n, dtype=np.uint64)  # every id hashes alike: only the bytes tell them apart
    earlier, count = k.claim_ids(
        table, hashes, buf, offsets, keys, 0, texts.buf, texts.offsets, same, np.arange(n)
    )
    first_key = np.where(earlier >= 0, keys[np.maximum(earlier, 0)], -1)  # numbers -> keys
    assert first_key.tolist() == reference.claim_ids({}, ids, list(range(n)))
    assert count == len(set(ids))


def test_the_table_grows_and_keeps_every_claim() -> None:
    registry = IdRegistry()
    ids = [f"doc-{i}" for i in range(20_000)]
    for lo in range(0, len(ids), 3_000):
        chunk = ids[lo : lo + 3_000]
        got = registry.claim(Utf8Texts.from_strings(chunk), np.arange(lo, lo + len(chunk)))
        assert (got == -1).all()
    again = registry.claim(Utf8Texts.from_strings(ids[::997]), np.full(len(ids[::997]), -5))
    assert again.tolist() == list(range(0, len(ids), 997))  # each first claimer's key
    assert list(registry.close()) == ids


def test_records_claimed_one_by_one_and_blocks_see_each_others_ids() -> None:
    from neardup.io._ids import Claims as _Claims

    claims = _Claims()
    assert claims.one("a", 1) == -1 and claims.one("b", 2) == -1 and claims.one("a", 3) == 1
    got = claims.block(Utf8Texts.from_strings(["c", "b", "d"]), np.array([4, 5, 6]))
    assert got.tolist() == [-1, 2, -1]
    assert claims.one("d", 7) == 6 and claims.one("e", 8) == -1 and claims.one("e", 9) == 8
    assert list(claims.close()) == ["a", "b", "c", "d", "e"]
