"""A finish task reads borderline texts again by span from a plain file, and from a gzip file
(which cannot seek) once for the whole task, into a spool: the same texts either way."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("distributed")

from neardup.dask import refetch as refetch_module
from neardup.dask.inputs import list_inputs, plan_blocks
from neardup.dask.refetch import Refetch
from neardup.dask.scan import ReadSpec, placed_docs, read_block
from neardup.testing.synth import random_documents

TEXTS = [*random_documents(90, seed=21, words=(3, 40)), "naïve café", "日本語", "", "emoji 😀"]


@pytest.mark.parametrize("gz", [False, True])
def test_a_finish_task_reads_a_gzip_file_once_and_a_plain_file_by_span(
    gz: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    path = tmp_path / ("in.jsonl.gz" if gz else "in.jsonl")
    path.write_bytes(gzip.compress(data.encode()) if gz else data.encode())
    files = list_inputs([str(path)])
    blocks = plan_blocks(files)
    spec = ReadSpec("text", "id", many=False)
    parts, _, reader = read_block(blocks[0], files[0], spec, None)
    docs, _ = placed_docs(0, parts, 0 if reader is None else reader.first)
    layout = SimpleNamespace(blocks=blocks, files=files, spec=spec, storage_options=None)
    reads: list[int] = []
    texts_of = refetch_module.texts_of

    def counted(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        reads.append(1)
        return texts_of(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(refetch_module, "texts_of", counted)
    refetch = Refetch(layout, docs, str(tmp_path))
    asked = [np.arange(i, len(TEXTS), 7, dtype=np.int64) for i in range(7)]
    for wanted in asked:
        assert refetch(wanted) == [TEXTS[i] for i in wanted.tolist()]
    assert len(reads) == (1 if gz else len(asked))  # gzip: one pass for the whole task
    spools = [s.path for s in refetch.spools.values()]
    assert len(spools) == int(gz) and all(os.path.exists(p) for p in spools)
    refetch.close()
    assert not any(os.path.exists(p) for p in spools)


def test_a_parquet_block_s_texts_are_read_again_from_its_spool(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from neardup.dask.scan import spool_texts
    from neardup.dask.tables import Docs
    from neardup.dask.workdir import WorkDir

    path = tmp_path / "in.parquet"
    rows = [{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=20)
    files = list_inputs([str(path)])
    blocks = plan_blocks(files, 900)
    spec = ReadSpec("text", "id", many=False)
    work = WorkDir(str(tmp_path / "work"))
    placed = []
    for block in blocks:  # some blocks hold no row group: no documents
        parts, _, _ = read_block(block, files[0], spec, None)
        docs, texts = placed_docs(block.index, parts, 0)
        placed.append(spool_texts(work, block.index, docs, texts).to_arrow())
    docs = Docs.from_arrow(pa.concat_tables(placed))
    assert len(blocks) > 2 and len(docs) == len(TEXTS)
    layout = SimpleNamespace(blocks=blocks, files=files, spec=spec, storage_options=None, work=work)
    refetch = Refetch(layout, docs, str(tmp_path))
    for wanted in [np.arange(i, len(TEXTS), 5, dtype=np.int64) for i in range(5)]:
        assert refetch(wanted) == [TEXTS[i] for i in wanted.tolist()]
    last = np.arange(len(TEXTS) - 4, len(TEXTS), dtype=np.int64)  # "", and the empty text's
    assert refetch(last) == TEXTS[-4:]  # neighbours share its start: read by key, not by start


def test_a_spool_read_gathers_runs_of_texts_and_seeks_over_long_gaps(tmp_path: Path) -> None:
    from neardup.dask.scan import spool_name, spool_texts, spooled_texts
    from neardup.dask.tables import Docs
    from neardup.dask.workdir import WorkDir
    from neardup.io._jsonl_blocks import SKIP_BYTES
    from neardup.text import Utf8Texts

    filler = "x" * (SKIP_BYTES + 7)  # a gap longer than SKIP_BYTES between wanted texts
    texts = ["", "naïve", filler, "日本語", "", "emoji 😀", filler, filler, "end", ""]
    work = WorkDir(str(tmp_path / "work"))
    n = len(texts)
    none = np.zeros(n, np.int64)
    docs = Docs(none, none, Utf8Texts.from_strings([""] * n), np.zeros(n, np.bool_), none, none,
                np.zeros(n, np.uint8), none.astype(np.uint64), none, None, None)  # type: ignore[arg-type]  # fmt: skip
    placed = spool_texts(work, 3, docs, Utf8Texts.from_strings(texts))
    assert (tmp_path / "work" / spool_name(3)).stat().st_size == sum(len(t.encode()) for t in texts)
    for wanted in ([0, 1, 3, 4, 5, 8, 9], [1, 8], [9], [2, 6], list(range(n))):
        got = spooled_texts(work, 3, placed.start, placed.end, np.asarray(wanted, np.int64))
        assert list(got) == [texts[i] for i in wanted]
