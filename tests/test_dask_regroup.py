"""Regrouping through Dask's P2P shuffle (``bundles.regroup``) on a real LocalCluster: each
destination's take sees every source's pieces for it, and a regrouping run again after a kill
sends nothing to, and takes nothing again at, the destinations that had finished."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

distributed = pytest.importorskip("distributed")

from neardup.dask import connect  # noqa: E402
from neardup.dask.bundles import Pieces, concat_tables, regroup, routes  # noqa: E402
from neardup.dask.workdir import WorkDir  # noqa: E402

N_DESTS = 5


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    with connect("local:2") as c:
        yield c


def numbers(source: int) -> Pieces:
    """Source s holds 10s..10s+9; each number goes to destination number % N_DESTS."""
    values = np.arange(10 * source, 10 * source + 10, dtype=np.int64)
    return {d: {"n": pa.table({"n": values[values % N_DESTS == d]})} for d in range(N_DESTS)}


def total(dest: int, tables: dict[str, list[Any]], work: WorkDir) -> dict[str, Any]:
    """A destination's sum and count, its answer written last; and a note that it ran."""
    values = concat_tables(tables["n"]).column("n").to_numpy()
    work.write_json(f"ran/{dest}-{len(values)}.json", True)
    answer = {"sum": int(values.sum()), "count": len(values)}
    work.write_json(f"stage/part-{dest:05d}.json", answer)
    return answer


def test_every_destination_takes_all_its_pieces(client: object, tmp_path: Path) -> None:
    work = WorkDir(str(tmp_path))
    got = regroup(range(4), numbers, (), N_DESTS, total, (work,), "t", (work, "stage"))
    assert got == {
        d: {"sum": sum(n for n in range(40) if n % N_DESTS == d), "count": 8}
        for d in range(N_DESTS)
    }


def test_a_resumed_regrouping_skips_the_destinations_that_finished(
    client: object, tmp_path: Path
) -> None:
    work = WorkDir(str(tmp_path))
    first = regroup(range(4), numbers, (), N_DESTS, total, (work,), "t", (work, "stage"))
    # as if killed while taking: destinations 1 and 3 had not written their answers
    for d in (1, 3):
        (tmp_path / "stage" / f"part-{d:05d}.json").unlink()
    for ran in (tmp_path / "ran").iterdir():
        ran.unlink()
    again = regroup(range(4), numbers, (), N_DESTS, total, (work,), "t", (work, "stage"))
    assert again == first
    assert sorted(p.name for p in (tmp_path / "ran").iterdir()) == ["1-8.json", "3-8.json"]


@pytest.mark.parametrize("parts", [1, 2, 5, 9, 64])
def test_each_route_reaches_its_own_partition_through_dask_s_hashing(parts: int) -> None:
    import dask
    import dask.dataframe as dd
    import pandas as pd

    route = routes(parts)
    frame = pd.DataFrame({"route": pd.array(route, dtype="int64"), "want": range(parts)})
    moved = dd.from_pandas(frame, npartitions=3).shuffle(
        on="route", npartitions=parts, shuffle_method="tasks"
    )
    with dask.config.set(scheduler="sync"):
        got = [dask.compute(part)[0]["want"].tolist() for part in moved.to_delayed()]
    assert got == [[p] for p in range(parts)]


def worker_of(dest: int, tables: dict[str, list[Any]]) -> dict[str, Any]:
    return {"worker": distributed.get_worker().address}


def test_destinations_share_the_workers_evenly(client: object) -> None:
    # 9 destinations hashed by their number sat in 6 of 9 partitions: 3 and 6 per worker
    nine = 9

    def pieces(source: int) -> Pieces:
        return {d: {"n": pa.table({"n": [source]})} for d in range(nine)}

    got = regroup(range(2), pieces, (), nine, worker_of, (), "even")
    per_worker: dict[str, int] = {}
    for answer in got.values():
        per_worker[answer["worker"]] = per_worker.get(answer["worker"], 0) + 1
    assert sorted(got) == list(range(nine)) and sorted(per_worker.values()) == [4, 5]


def test_link_tables_give_back_keys_and_document_keys() -> None:
    from neardup.dask.stages import link_columns, link_table
    from neardup.dask.tables import doc_keys, from_ipc, write_ipc

    bits = 17  # blocks of up to 2**17 documents
    tables = []
    for block, n in ((3, 5), (70_000, 70_000)):
        keys = np.arange(n, dtype=np.uint64) * np.uint64(7 << 40)
        index = np.arange(n, dtype=np.uint64)[::-1]
        table = link_table((keys << np.uint64(bits)) | index, block, bits)
        sink = pa.BufferOutputStream()
        write_ipc(sink, table)
        tables.append(from_ipc(sink.getvalue()))  # as a shuffle hands it over
    key, doc = link_columns(tables)
    want_keys = [(7 << 40) * i % 2**47 for i in range(5)] + [
        (7 << 40) * i % 2**47 for i in range(70_000)
    ]
    assert key.tolist() == want_keys
    want = np.concatenate([doc_keys(3, 5)[::-1], doc_keys(70_000, 70_000)[::-1]])
    assert doc.dtype == np.int64 and doc.tolist() == want.tolist()
    with pytest.raises(ValueError, match="index bits"):
        link_columns([tables[0], link_table(np.zeros(1, np.uint64), 4, bits + 1)])
