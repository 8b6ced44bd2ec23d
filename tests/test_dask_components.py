"""Connected components on a real LocalCluster of processes, in one task or in rounds of
large-star and small-star as the edges fit the budget: every linked document labelled with its
component's smallest document, as union-find labels them, whatever the graph's shape, in the same
files either way; a run stopped part-way resumes to the same labels."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

distributed = pytest.importorskip("distributed")

from neardup._types import IntArray  # noqa: E402
from neardup.cli import main  # noqa: E402
from neardup.dask import ClusterOutputs, JobOptions, connect, dedup, read_output  # noqa: E402
from neardup.dask import components as components_module  # noqa: E402
from neardup.dask.components import (  # noqa: E402
    BYTES_PER_EDGE,
    MAX_ROUNDS,
    SINGLE,
    connected_components,
    labels_file,
    single_labels,
    smallest_linked,
)
from neardup.dask.workdir import WorkDir  # noqa: E402
from neardup.params import DedupParams  # noqa: E402
from neardup.testing.synth import near_duplicate_corpus, random_documents  # noqa: E402

N_GRAPH = 3
N_BLOCKS = 4
ROUNDS = 0  # a budget no edge fits: components in rounds
SINGLE_TASK = 1 << 40  # a budget every test graph fits: components in one task


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
    work = WorkDir(str(tmp))
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


def edges_in(work: WorkDir) -> dict[int, int]:
    """The edges of each of the graph stage's parts, as its answers count them."""
    parts = {d: f"graph/part-{d:05d}.parquet" for d in range(N_GRAPH)}
    return {d: work.read_table(rel).num_rows for d, rel in parts.items() if work.exists(rel)}


def components(work: WorkDir, budget: int, max_rounds: int = MAX_ROUNDS) -> str:
    """The labels' folder of ``connected_components`` with the graph's edges and ``budget``."""
    return connected_components(work, N_GRAPH, N_BLOCKS, edges_in(work), budget, max_rounds)


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
    """The labels of the rounds and of the single task equal union-find's, in the same files
    byte for byte; returns the number of rounds run."""
    want_docs, want_labels = smallest_linked(u, v)
    found = {}
    for method, budget in (("rounds", ROUNDS), ("single", SINGLE_TASK)):
        work = graph_folder(tmp / method, u, v)
        folder = components(work, budget)
        summary = work.read_json("components/labels.json")
        assert summary["method"] == method
        docs, labels = labels_of(work, folder)
        np.testing.assert_array_equal(docs, want_docs)
        np.testing.assert_array_equal(labels, want_labels)
        found[method] = (work, folder, int(summary["rounds"]))
    (rounds, in_rounds, n_rounds), (single, in_single, _) = found["rounds"], found["single"]
    for b in range(N_BLOCKS):  # what finish reads is the same, whichever method wrote it
        rel = labels_file(in_rounds, b)
        assert rounds.exists(rel) == single.exists(labels_file(in_single, b))
        if rounds.exists(rel):
            assert rounds.read_bytes(rel) == single.read_bytes(labels_file(in_single, b))
    return n_rounds


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


def test_no_edges_label_nothing_in_one_task(client: object, tmp_path: Path) -> None:
    none = np.zeros(0, np.int64)
    for work in (graph_folder(tmp_path / "empty-parts", none, none),
                 WorkDir(str(tmp_path / "no-parts"))):  # fmt: skip
        assert len(labels_of(work, components(work, ROUNDS))[0]) == 0  # no edge is over budget
        assert work.read_json("components/labels.json")["method"] == "single"


@pytest.mark.parametrize(
    ("capacity", "method", "tried", "folds"),
    [
        (3 * 299, "single", True, 0),  # every edge at once
        (2 * 299, "single", True, 1),  # two parts, folded into stars, then the third
        (2 * 299 - 1, "rounds", True, None),  # the stars and one part do not fit: it gives up
        (299 - 1, "rounds", False, None),  # one part does not fit: not tried
    ],
)
def test_the_budget_chooses_one_task_or_rounds(
    client: object, tmp_path: Path, capacity: int, method: str, tried: bool, folds: int | None
) -> None:
    u, v = path(300)  # 299 edges, each in all three parts as a key shared thrice puts it
    work = WorkDir(str(tmp_path))
    for d in range(N_GRAPH):
        work.write_table(f"graph/part-{d:05d}.parquet", pa.table({"doc": v, "root": u}))
    with distributed.get_task_stream(client) as stream:  # type: ignore[arg-type]
        docs, labels = labels_of(work, components(work, capacity * BYTES_PER_EDGE))
    summary = work.read_json("components/labels.json")
    assert (summary["method"], summary["rounds"] == 0) == (method, method == "single")
    assert summary.get("folds") == folds
    assert any("neardup-components" in str(t["key"]) for t in stream.data) == tried
    assert work.exists(SINGLE) == (method == "single")  # a task that gave up wrote nothing
    want_docs, want_labels = smallest_linked(u, v)
    np.testing.assert_array_equal(docs, want_docs)
    np.testing.assert_array_equal(labels, want_labels)


def test_a_single_task_gives_up_once_its_stars_fill_half_its_budget(tmp_path: Path) -> None:
    u, v = path(301)  # 300 edges
    work = WorkDir(str(tmp_path))
    parts = [(0, 200), (0, 200), (200, 300), (0, 50)]  # edges [lo, hi) of the path in each part
    for d, (lo, hi) in enumerate(parts):
        work.write_table(
            f"graph/part-{d:05d}.parquet", pa.table({"doc": v[lo:hi], "root": u[lo:hi]})
        )
    edges = {d: hi - lo for d, (lo, hi) in enumerate(parts)}
    # 500 held, then the fourth part makes a fold: 300 star edges, more than half of 500
    assert single_labels(work, edges, 500) is None
    assert not work.exists(SINGLE)
    done = single_labels(work, edges, 550)  # all 550 at once (a budget half-filled by stars
    assert done is not None and done["documents"] == 301  # still folds: the parametrized test)


def test_a_single_task_stopped_part_way_is_done_again(client: object, tmp_path: Path) -> None:
    u, v = path(100)
    want = smallest_linked(u, v)
    work = graph_folder(tmp_path, u, v)
    stray = labels_file(SINGLE, N_BLOCKS + 2)  # a block with no linked document
    work.write_bytes(stray, b"left by a task that stopped")
    got = labels_of(work, components(work, SINGLE_TASK))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert not work.exists(stray)
    assert work.done("components")


def test_a_run_stopped_after_a_round_resumes_to_the_same_labels(
    client: object, tmp_path: Path
) -> None:
    u, v = path(100)
    want = smallest_linked(u, v)
    work = graph_folder(tmp_path, u, v)
    with pytest.raises(RuntimeError, match="did not converge in 2 rounds"):
        components(work, ROUNDS, max_rounds=2)
    assert work.done("components/round-0002") and not work.exists("components/round-0003")
    first = Path(work.path("components/round-0001/totals.json")).stat().st_mtime_ns
    got = labels_of(work, components(work, ROUNDS))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert Path(work.path("components/round-0001/totals.json")).stat().st_mtime_ns == first


def test_a_round_killed_part_way_is_finished_from_its_written_parts(
    client: object, tmp_path: Path
) -> None:
    u, v = path(100)
    work = graph_folder(tmp_path, u, v)
    want = labels_of(work, components(work, ROUNDS))
    rounds = int(work.read_json("components/labels.json")["rounds"])
    for r in range(3, rounds + 1):
        work.forget(f"components/round-{r:04d}")
    for rel in ("_SUCCESS", "labels.json", "round-0002/_SUCCESS", "round-0002/totals.json",
                "round-0002/part-00001.json", "round-0002/part-00001.parquet"):  # fmt: skip
        work.fs.rm(work.path(f"components/{rel}"))
    written = Path(work.path("components/round-0002/part-00000.json"))
    before = written.stat().st_mtime_ns
    got = labels_of(work, components(work, ROUNDS))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert written.stat().st_mtime_ns == before  # the part written before the kill is kept
    assert work.exists("components/round-0002/part-00001.json")


@pytest.mark.parametrize("method", ["single", "rounds"])
def test_a_dedup_job_gives_the_local_outputs_with_either_method(
    client: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    base = random_documents(200, seed=31, words=(6, 120))
    texts = near_duplicate_corpus(base, 400, 0.5, seed=32).texts
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in
                              enumerate(texts)))  # fmt: skip
    names = ("kept", "clusters", "pairs")
    local = [tmp_path / f"local.{name}.jsonl" for name in names]
    args = ["dedup", str(corpus), "-o", str(local[0]), "--clusters", str(local[1])]
    assert main([*args, "--pairs", str(local[2]), "-q"]) == 0
    if method == "rounds":  # the client decides: no graph's edges fit any budget
        monkeypatch.setattr(components_module, "BYTES_PER_EDGE", 1 << 60)
    outputs = ClusterOutputs(*(str(tmp_path / name) for name in names))
    work = WorkDir(str(tmp_path / "work"))
    options = JobOptions(block_bytes=5000, work_dir=work.url)
    dedup([str(corpus)], DedupParams(), outputs, options, client)
    summary = work.read_json("components/labels.json")
    assert summary["method"] == method and summary["documents"] > 0
    assert [read_output(str(tmp_path / name)) for name in names] == [p.read_bytes() for p in local]
