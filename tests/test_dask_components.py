"""Connected components in rounds of large-star and small-star on a real LocalCluster of
processes: every linked document labelled with its component's smallest document, as union-find
labels them, whatever the graph's shape; a run stopped between rounds resumes to the same labels."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

distributed = pytest.importorskip("distributed")

from neardup._types import IntArray  # noqa: E402
from neardup.dask import connect  # noqa: E402
from neardup.dask.components import connected_components, labels_file  # noqa: E402
from neardup.dask.stages import smallest_linked  # noqa: E402
from neardup.dask.workdir import WorkDir  # noqa: E402

N_GRAPH = 3
N_BLOCKS = 4


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    with connect("local:2") as c:
        yield c


def keys(positions: IntArray) -> IntArray:
    """Document keys (block << 32 | index) for positions 0, 1, ... in key order, over the
    blocks: position order is key order."""
    per_block = -(-(int(positions.max(initial=0)) + 1) // N_BLOCKS)
    return (positions // per_block << 32) + positions % per_block


def graph_folder(tmp: Path, u: IntArray, v: IntArray, seed: int = 0) -> WorkDir:
    """A work folder whose graph stage holds the edges (u, v) as (doc, root), root < doc, spread
    at random over its parts, some edges twice (the graph stage's parts repeat edges)."""
    work = WorkDir(str(tmp / "work"))
    rng = np.random.default_rng(seed)
    doc, root = np.maximum(u, v), np.minimum(u, v)
    again = rng.random(len(doc)) < 0.2
    doc, root = np.concatenate([doc, doc[again]]), np.concatenate([root, root[again]])
    part = rng.integers(0, N_GRAPH - 1, len(doc))
    for d in range(N_GRAPH - 1):  # the last part receives nothing, as a destination may
        at = part == d
        work.write_table(
            f"graph/part-{d:05d}.parquet", pa.table({"doc": doc[at], "root": root[at]})
        )
    return work


def labels_of(work: WorkDir, folder: str) -> tuple[IntArray, IntArray]:
    """Every labelled document, ascending, and its label, read block by block."""
    docs, labels = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for b in range(N_BLOCKS):
        if work.exists(labels_file(folder, b)):
            t = work.read_table(labels_file(folder, b))
            block_docs = t.column("doc").to_numpy()
            assert (block_docs >> 32 == b).all()
            docs.append(block_docs)
            labels.append(t.column("label").to_numpy())
    return np.concatenate(docs), np.concatenate(labels)


def check_components(tmp: Path, u: IntArray, v: IntArray) -> int:
    """The cluster's labels equal union-find's; returns the number of rounds run."""
    work = graph_folder(tmp, u, v)
    folder = connected_components(work, N_GRAPH, N_BLOCKS)
    docs, labels = labels_of(work, folder)
    want_docs, want_labels = smallest_linked(u, v)
    np.testing.assert_array_equal(docs, want_docs)
    np.testing.assert_array_equal(labels, want_labels)
    return int(work.read_json("components/labels.json")["rounds"])


def path(n: int) -> tuple[IntArray, IntArray]:
    """A path through n documents in key order: label propagation needs n rounds."""
    k = keys(np.arange(n, dtype=np.int64))
    return k[:-1], k[1:]


def test_a_long_chain_is_one_component_in_logarithmic_rounds(
    client: object, tmp_path: Path
) -> None:
    rounds = check_components(tmp_path, *path(2000))
    assert rounds <= 2 * math.ceil(math.log2(2000)) + 3  # each large-star halves the depth


def test_stars_around_any_document_are_components(client: object, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    nodes = keys(rng.permutation(3000).astype(np.int64))
    us, vs = [], []
    for start in range(0, 3000, 300):  # a hub anywhere in key order, its leaves on both sides
        hub, leaves = nodes[start], nodes[start + 1 : start + 300]
        us.append(np.full(len(leaves), hub))
        vs.append(leaves)
    check_components(tmp_path, np.concatenate(us), np.concatenate(vs))


@pytest.mark.parametrize("seed", [5, 6])
def test_many_small_components_equal_union_find(client: object, tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 6000
    a = rng.integers(0, n, 2500)
    b = np.clip(a + rng.integers(-40, 40, len(a)), 0, n - 1)
    linked = a != b
    check_components(tmp_path, keys(a[linked]), keys(b[linked]))


def test_a_random_graph_equals_union_find(client: object, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 4000, 3500), rng.integers(0, 4000, 3500)
    linked = a != b
    check_components(tmp_path, keys(a[linked]), keys(b[linked]))


def test_no_edges_label_nothing(client: object, tmp_path: Path) -> None:
    none = np.zeros(0, np.int64)
    check_components(tmp_path / "empty-parts", none, none)
    work = WorkDir(str(tmp_path / "no-parts"))
    folder = connected_components(work, N_GRAPH, N_BLOCKS)
    assert len(labels_of(work, folder)[0]) == 0


def test_a_run_stopped_after_a_round_resumes_to_the_same_labels(
    client: object, tmp_path: Path
) -> None:
    u, v = path(100)
    want = smallest_linked(u, v)
    work = graph_folder(tmp_path, u, v)
    with pytest.raises(RuntimeError, match="did not converge in 2 rounds"):
        connected_components(work, N_GRAPH, N_BLOCKS, max_rounds=2)
    assert work.done("components/round-0002") and not work.exists("components/round-0003")
    first = Path(work.path("components/round-0001/totals.json")).stat().st_mtime_ns
    got = labels_of(work, connected_components(work, N_GRAPH, N_BLOCKS))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert Path(work.path("components/round-0001/totals.json")).stat().st_mtime_ns == first


def test_a_round_killed_part_way_is_finished_from_its_written_parts(
    client: object, tmp_path: Path
) -> None:
    u, v = path(100)
    work = graph_folder(tmp_path, u, v)
    want = labels_of(work, connected_components(work, N_GRAPH, N_BLOCKS))
    rounds = int(work.read_json("components/labels.json")["rounds"])
    for r in range(3, rounds + 1):
        work.forget(f"components/round-{r:04d}")
    for rel in ("_SUCCESS", "labels.json", "round-0002/_SUCCESS", "round-0002/totals.json",
                "round-0002/part-00001.json", "round-0002/part-00001.parquet"):  # fmt: skip
        work.fs.rm(work.path(f"components/{rel}"))
    written = Path(work.path("components/round-0002/part-00000.json"))
    before = written.stat().st_mtime_ns
    got = labels_of(work, connected_components(work, N_GRAPH, N_BLOCKS))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert written.stat().st_mtime_ns == before  # the part written before the kill is kept
    assert work.exists("components/round-0002/part-00001.json")
