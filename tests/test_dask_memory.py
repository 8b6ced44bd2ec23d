"""A cluster run fits its tasks to the workers' memory limit: blocks and shuffle destinations
no larger than a share of the smallest worker's limit, the finish engine spilling past a share
of its worker's, with the same outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from neardup.cli import main  # noqa: E402
from neardup.dask import ClusterOutputs, JobOptions, connect, dedup, read_output  # noqa: E402
from neardup.dask.job import (  # noqa: E402
    MIN_DESTS,
    MIN_TASK_BYTES,
    WORKER_SHARE,
    components_budget,
    fit_to_workers,
)
from neardup.dask.stages import ENGINE_SHARE, engine_memory  # noqa: E402
from neardup.dask.worker_heap import HEAP_SHARE  # noqa: E402
from neardup.errors import ParamError  # noqa: E402
from neardup.params import DedupParams  # noqa: E402
from neardup.testing.synth import near_duplicate_corpus, random_documents  # noqa: E402


class _Cluster:
    """What ``fit_to_workers`` asks of a client: its workers' memory limits."""

    def __init__(self, *limits: int) -> None:
        self.limits = limits

    def scheduler_info(self) -> dict[str, object]:
        return {"workers": {f"w{i}": {"memory_limit": m} for i, m in enumerate(self.limits)}}


def test_blocks_and_destinations_shrink_to_the_smallest_worker_s_limit() -> None:
    options = JobOptions()
    fitted = fit_to_workers(options, _Cluster(8 << 30, 1 << 30))
    assert fitted.block_bytes == fitted.dest_bytes == int((1 << 30) * WORKER_SHARE)
    assert fitted.block_bytes < options.block_bytes and fitted.dest_bytes < options.dest_bytes
    assert fit_to_workers(options, _Cluster(64 << 30)) == options  # roomy workers: as they were
    assert fit_to_workers(options, _Cluster(0, 0)) == options  # no limit set


def test_a_worker_with_less_memory_than_a_worker_needs_is_refused() -> None:
    # workers under 1 GB paused at 80% of their limit right after loading the kernels, and
    # the run waited for ever (--memory-limit 300M and 400M, local:2, 20k documents)
    with pytest.raises(ParamError, match=r"^a worker of the cluster has a memory limit of 268 MB"):
        fit_to_workers(JobOptions(), _Cluster(8 << 30, 256 << 20))
    assert fit_to_workers(JobOptions(), _Cluster(10**9)).block_bytes == 10**9 // 64


def test_components_may_hold_the_finish_engine_s_share_of_the_smallest_worker() -> None:
    options = JobOptions()
    budget = components_budget(options, _Cluster(8 << 30, 1 << 30))
    assert budget == int((1 << 30) * ENGINE_SHARE) > options.dest_bytes
    assert components_budget(options, _Cluster(0, 0)) == options.dest_bytes  # no limit set
    small = fit_to_workers(options, _Cluster(10**9))
    assert components_budget(small, _Cluster(10**9)) == int(10**9 * ENGINE_SHARE)


def _spill_everything() -> None:
    """On a worker: the finish engine keeps nothing in memory (every block spilled)."""
    from neardup.dask import stages

    stages.ENGINE_SHARE = 1e-9


def test_small_tasks_and_a_bounded_finish_engine_give_the_local_outputs(tmp_path: Path) -> None:
    base = random_documents(120, seed=51, words=(6, 120))
    texts = near_duplicate_corpus(base, 240, 0.5, seed=52).texts
    corpus = tmp_path / "in.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    local = tmp_path / "local.jsonl"
    assert main(["dedup", str(corpus), "-o", str(local), "-q"]) == 0
    work = tmp_path / "work"
    assert engine_memory() == {}  # not on a worker: the engine as on one machine
    with connect("local:2", memory_limit=1 << 30) as client:
        got = client.submit(engine_memory, pure=False).result()  # in a task, on a worker
        assert got["memory_limit"] == int((1 << 30) * ENGINE_SHARE)
        assert Path(got["spill_dir"]).is_dir()
        client.run(_spill_everything)
        summary = dedup(
            [str(corpus)],
            DedupParams(),
            ClusterOutputs(str(tmp_path / "kept")),
            JobOptions(block_bytes=20_000, dest_bytes=8_000, work_dir=str(work)),
            client,
        )
        assert summary["blocks"] > 1 and summary["spilled_bytes"] > 0
        dests = len(list((work / "graph").glob("part-*.json")))
        assert dests > MIN_DESTS
    assert read_output(str(tmp_path / "kept")) == local.read_bytes()


def test_a_run_resumed_with_other_sizes_keeps_the_sizes_it_started_with(tmp_path: Path) -> None:
    texts = near_duplicate_corpus(
        random_documents(60, seed=61, words=(6, 60)), 120, 0.5, seed=62
    ).texts
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    work = str(tmp_path / "work")
    with connect("local:2") as client:

        def run(block_bytes: int, out: str) -> dict[str, object]:
            options = JobOptions(block_bytes=block_bytes, dest_bytes=8_000, work_dir=work)
            return dedup([str(corpus)], DedupParams(), ClusterOutputs(out), options, client)

        first = run(4_000, str(tmp_path / "a"))
        again = run(64_000, str(tmp_path / "b"))  # as on workers with more memory
    assert first["blocks"] == again["blocks"] > 1
    assert read_output(str(tmp_path / "b")) == read_output(str(tmp_path / "a"))


def test_decontaminate_fits_its_blocks_to_the_workers_limit(tmp_path: Path) -> None:
    items = random_documents(6, seed=71, words=(20, 40))
    docs = random_documents(80, seed=72, words=(10, 80))
    docs[::4] = [f"{d} {items[i % 6]}" for i, d in enumerate(docs[::4])]
    corpus, bench = tmp_path / "in.jsonl", tmp_path / "bench.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs))
    )
    bench.write_text(
        "".join(json.dumps({"id": f"q{i}", "text": t}) + "\n" for i, t in enumerate(items))
    )
    args = ["decontaminate", str(corpus), "--against", str(bench), "-q"]
    assert main([*args, "-o", str(tmp_path / "local.jsonl")]) == 0
    work = tmp_path / "work"
    limit = 1 << 30  # blocks of 16 MB, not 32
    assert main([*args, "-o", str(tmp_path / "clean"), "--dask", "local:2", "--memory-limit",
                 str(limit), "--work-dir", str(work)]) == 0  # fmt: skip
    sizes = json.loads((work / "run.json").read_text())["options"]
    assert (
        sizes["block_bytes"]
        == sizes["dest_bytes"]
        == max(MIN_TASK_BYTES, int(limit * WORKER_SHARE))
    )
    assert read_output(str(tmp_path / "clean")) == (tmp_path / "local.jsonl").read_bytes()


def _heap_allowance() -> int:
    from neardup import _heap

    return _heap._allowance


def test_workers_keep_free_heap_pages_below_half_their_limit(tmp_path: Path) -> None:
    corpus = tmp_path / "in.jsonl"
    texts = random_documents(20, seed=3, words=(6, 40))
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    with connect("local:1", memory_limit=1 << 30) as client:
        assert client.run(_heap_allowance) == {w: 0 for w in client.scheduler_info()["workers"]}
        dedup([str(corpus)], DedupParams(), ClusterOutputs(str(tmp_path / "kept")),
              JobOptions(), client)  # fmt: skip
        allowances = set(client.run(_heap_allowance).values())
    assert allowances == {int((1 << 30) * HEAP_SHARE)}
