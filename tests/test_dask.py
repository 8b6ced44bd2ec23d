"""The Dask backend: the same kept set, clusters and pairs as one machine, on real clusters."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

distributed = pytest.importorskip("distributed")
db = pytest.importorskip("dask.bag")

from neardup import dask as nd  # noqa: E402
from neardup.cli import main  # noqa: E402
from neardup.engine import Deduplicator  # noqa: E402
from neardup.errors import NeardupError  # noqa: E402
from neardup.params import DedupParams, MinhashParams, SimhashMethodParams  # noqa: E402
from neardup.testing.synth import near_duplicate_corpus, random_documents  # noqa: E402

PARTITIONS = (1, 7, 64)


@pytest.fixture(scope="module")
def texts() -> list[str]:
    base = random_documents(150, seed=21, words=(30, 200))
    corpus = list(near_duplicate_corpus(base, 300, 0.5, seed=22, n_empty=4).texts)
    # Boilerplate: one shared template with a short distinct tail, so buckets grow big.
    template = " ".join(random_documents(1, seed=23, words=(150, 150))[0].split())
    corpus += [f"{template} tail {i} {i * 7}" for i in range(24)]
    return corpus


@pytest.fixture(scope="module", params=[1, 2, 3], ids=lambda n: f"workers{n}")
def client(request: pytest.FixtureRequest) -> Iterator[object]:
    with (
        distributed.LocalCluster(
            n_workers=request.param,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def _bag(texts: list[str], parts: int) -> object:
    """Exactly ``parts`` partitions of nearly equal size, in order."""
    import dask

    cuts = np.linspace(0, len(texts), parts + 1).astype(int)
    chunks = [texts[lo:hi] for lo, hi in itertools.pairwise(cuts.tolist())]
    return db.from_delayed([dask.delayed(c) for c in chunks])


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def assert_identical(got: Deduplicator, want: Deduplicator) -> None:
    """Every fitted array equal byte for byte (NaN scores included), and the counts."""
    for name in ("kept_", "duplicate_of_", "duplicate_score_", "clusters_", "groups_", "empty_"):
        assert _same(getattr(got, name), getattr(want, name)), name
    for x, y in zip(got.pairs_, want.pairs_, strict=True):
        assert _same(x, y)
    g, w = got.stats_.as_dict(), want.stats_.as_dict()
    for skip in ("seconds", "bytes_per_doc_in_memory"):
        g.pop(skip), w.pop(skip)
    assert g == w


@pytest.mark.parametrize("parts", PARTITIONS)
def test_bag_dedup_equals_the_local_run_byte_for_byte(
    client: object, texts: list[str], parts: int
) -> None:
    params = DedupParams(threshold=0.8, method=MinhashParams(max_bucket=8))
    want = Deduplicator(params).fit(texts)
    assert want.stats_.rechecked_pairs > 0 and want.stats_.removed > 0
    got = nd.dedup(_bag(texts, parts), params, client=client).dedup
    assert len(got.partition_lengths) == parts
    assert_identical(got, want)


def _write_jsonl(path: Path, texts: list[str]) -> None:
    rows = [{"id": f"d{i}", "text": t, "n": i} for i, t in enumerate(texts)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.parametrize("parts", PARTITIONS)
def test_cli_dask_outputs_equal_the_local_run_byte_for_byte(
    client: object, texts: list[str], parts: int, tmp_path: Path
) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src, texts)
    batch = -(-len(texts) // parts)  # one partition per batch read
    outs = {}
    for run, extra in (("local", []), ("dask", ["--dask", client.scheduler.address])):  # type: ignore[attr-defined]
        files = [tmp_path / f"{run}.{x}.jsonl" for x in ("kept", "clusters", "pairs")]
        args = ["dedup", str(src), "-o", str(files[0]), "--clusters", str(files[1])]
        args += ["--pairs", str(files[2]), "--batch-size", str(batch), "--max-bucket", "8", "-q"]
        assert main(args + extra) == 0
        outs[run] = [f.read_bytes() for f in files]
    assert outs["dask"] == outs["local"]
    assert outs["local"][1] and outs["local"][2]  # clusters and pairs were found


@pytest.mark.parametrize(
    "params",
    [
        DedupParams(threshold=0.7, verify="exact", keep="longest"),
        DedupParams(threshold=0.8, verify="sketch", removal="components"),
        DedupParams(threshold=0.8, verify="none"),
        DedupParams(method=SimhashMethodParams(max_distance=4)),
    ],
    ids=["exact-longest", "sketch-components", "none", "simhash"],
)
def test_every_method_and_verification_gives_the_local_result(
    client: object, texts: list[str], params: DedupParams
) -> None:
    if len(client.scheduler_info()["workers"]) != 2:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough for the parameter sweep")
    want = Deduplicator(params).fit(texts)
    got = nd.dedup(_bag(texts, 7), params, client=client).dedup
    assert_identical(got, want)


def test_dataframe_with_ids_and_key_writes_partitions_and_a_manifest(
    client: object, texts: list[str], tmp_path: Path
) -> None:
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    if len(client.scheduler_info()["workers"]) != 3:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough")
    rng = np.random.default_rng(5)
    quality = rng.integers(0, 50, len(texts))
    frame = pd.DataFrame({"id": [f"x{i}" for i in range(len(texts))], "text": texts, "q": quality})
    params = DedupParams(threshold=0.8, keep="field")
    want = Deduplicator(params).fit(texts, key=quality)
    out = tmp_path / "kept"
    result = nd.dedup(
        dd.from_pandas(frame, npartitions=5),
        params,
        client=client,
        key_field="q",
        output_dir=out,
        clusters=str(tmp_path / "clusters.jsonl"),
    )
    assert_identical(result.dedup, want)
    manifest = json.loads((out / nd.MANIFEST).read_text())
    assert manifest["complete"] and manifest["documents"] == len(texts)
    assert [p["documents"] for p in manifest["partitions"]] == result.dedup.partition_lengths
    kept = pd.concat([pd.read_parquet(out / p["file"]) for p in manifest["partitions"]])
    assert kept["id"].tolist() == [f"x{i}" for i in np.flatnonzero(want.kept_)]
    assert manifest["kept"] == len(kept) == int(want.kept_.sum())
    assert result.ids[0] == "x0"


def test_cli_local_cluster_prints_the_dashboard_and_matches(
    tmp_path: Path, texts: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src, texts[:120])
    assert main(["dedup", str(src), "-o", str(tmp_path / "a.jsonl"), "-q"]) == 0
    assert main(["dedup", str(src), "-o", str(tmp_path / "b.jsonl"), "--dask", "local:1"]) == 0
    assert "dashboard http" in capsys.readouterr().err
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_unreachable_scheduler_is_one_error_line_and_no_output(
    tmp_path: Path,
    texts: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nd, "CONNECT_TIMEOUT", 2.0)
    src = tmp_path / "in.jsonl"
    _write_jsonl(src, texts[:20])
    out = tmp_path / "kept.jsonl"
    assert main(["dedup", str(src), "-o", str(out), "--dask", "tcp://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("neardup: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9")
    assert "Traceback" not in err and not out.exists()


def test_a_worker_that_dies_fails_the_run_cleanly_without_output(
    tmp_path: Path, texts: list[str]
) -> None:
    import dask

    out = tmp_path / "kept"
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        # A lambda travels by value: the workers need not import this test module.
        bag = db.from_sequence(texts[:50], npartitions=2).map(lambda t: os._exit(3))
        with pytest.raises(NeardupError, match="worker died"):
            nd.dedup(bag, DedupParams(), client=c, output_dir=out)
    assert not out.exists() and not list(tmp_path.iterdir())


# -- the distributed finish: shuffles, components, removal per component partition ------------------
def _chains_corpus() -> list[str]:
    """Chains (each document overlaps the next, not the one after: keep-aware and components
    disagree), exact copies placed after their originals and before, big buckets of one template,
    and documents without tokens."""
    words = random_documents(1, seed=31, words=(2000, 2000))[0].split()
    chain = [" ".join(words[20 * i : 20 * i + 100]) for i in range(12)]
    other = [" ".join(words[1000 + 20 * i : 1000 + 20 * i + 100]) for i in range(6)]
    template = " ".join(words[1500:1650])
    boiler = [f"{template} tail {i} {i * 7}" for i in range(30)]
    corpus = [chain[5], *chain, "", *other, chain[3], "  !! ", *boiler, other[2], chain[0], "?"]
    corpus += random_documents(40, seed=32, words=(30, 120))
    return corpus


@pytest.mark.parametrize("removal", ["keep-aware", "components"])
def test_chains_groups_big_buckets_and_empty_texts_give_the_local_result(
    client: object, removal: str
) -> None:
    corpus = _chains_corpus()
    params = DedupParams(
        threshold=0.55, verify="sketch", removal=removal, method=MinhashParams(max_bucket=6)
    )
    want = Deduplicator(params).fit(corpus)
    other = "components" if removal == "keep-aware" else "keep-aware"
    assert not np.array_equal(
        want.kept_, Deduplicator(replace(params, removal=other)).fit(corpus).kept_
    )
    assert want.stats_.exact_duplicates >= 4 and want.empty_.sum() == 3
    # Keep-aware removal compares with kept leaders in buckets of any size: nothing is chained.
    assert (want.stats_.big_buckets > 0) == (removal == "components")
    for parts in (1, 7):
        got = nd.dedup(_bag(corpus, parts), params, client=client).dedup
        assert_identical(got, want)
        if removal == "components":  # the pipeline on the workers (keep-aware: in the client)
            assert "candidate keys" in got.shuffled_ and "signatures" not in got.moved_
            assert got.rounds_ >= 2  # the chains needed more than one large-star round


def test_the_number_of_shuffle_partitions_changes_nothing(client: object, texts: list[str]) -> None:
    if len(client.scheduler_info()["workers"]) != 2:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough")
    params = DedupParams(threshold=0.8, method=MinhashParams(max_bucket=8), keep="longest")
    want = Deduplicator(params).fit(texts)
    for shuffle in (1, 5):
        dd = nd.DaskDeduplicator(params, client, shuffle_partitions=shuffle)
        dd.feed_partitions(list(_bag(texts, 7).to_delayed()))
        assert_identical(dd.finish(), want)


def test_bundles_cut_to_any_size_change_nothing(client: object, texts: list[str]) -> None:
    """Each worker bundles its sources' pieces in runs of at most ``bundle_bytes``: one source
    a bundle, a few, or all of a worker's give the same answer."""
    if len(client.scheduler_info()["workers"]) != 2:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough")
    params = DedupParams(threshold=0.8, method=MinhashParams(max_bucket=8))
    want = Deduplicator(params).fit(texts)
    for budget in (1, 20_000):
        dd = nd.DaskDeduplicator(params, client, shuffle_partitions=3, bundle_bytes=budget)
        dd.feed_partitions(list(_bag(texts, 64).to_delayed()))
        assert_identical(dd.finish(), want)


def _split_of(i: int) -> object:
    from neardup.dask_shuffle import split_by

    return split_by(np.arange(8) % 2, 2, np.full(8, i, dtype=np.int64))


def test_bundles_run_on_the_worker_that_holds_their_splits(client: object) -> None:
    """A worker bundles its own sources' splits: no split crosses the network to be bundled
    (asking the scheduler by key once answered nothing, and one worker bundled everything)."""
    from neardup.dask_shuffle import Exchanges

    workers = sorted(client.scheduler_info()["workers"])  # type: ignore[attr-defined]
    if len(workers) < 2:
        pytest.skip("needs two workers")
    submit = client.submit  # type: ignore[attr-defined]
    n = 2 * len(workers)
    splits = [
        submit(_split_of, i, pure=False, workers=[workers[i % len(workers)]]) for i in range(n)
    ]
    distributed.wait(splits)
    ex = Exchanges(client, workers, bundle_bytes=1 << 20)
    bundles = ex._bundled("test", splits, 2)
    distributed.wait(bundles)
    where = client.who_has(bundles)  # type: ignore[attr-defined]
    assert sorted(w for b in bundles for w in where[b.key]) == workers
    pieces = ex.pieces("test", splits, 2)
    got = client.gather([ex.at(d, _sources, *pieces[d]) for d in range(2)])  # type: ignore[attr-defined]
    assert got == [list(range(n))] * 2


def _sources(*pieces: object) -> list[int]:
    from neardup.dask_shuffle import unbundle

    return [int(p[0][0]) for p in unbundle(pieces)]  # type: ignore[index]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 50)), max_size=40),
    st.integers(1, 120),
)
def test_bundle_runs_take_each_source_once_within_the_budget(
    sources: list[tuple[str, int]], budget: int
) -> None:
    from neardup.dask_shuffle import bundle_runs

    holders = [w for w, _ in sources]
    sizes = [s for _, s in sources]
    runs = bundle_runs(holders, sizes, budget)
    assert sorted(i for _, run in runs for i in run) == list(range(len(sources)))
    for w, run in runs:
        assert run and run == sorted(run)
        assert all(holders[i] == w for i in run)
        assert len(run) == 1 or sum(sizes[i] for i in run) <= budget
    # Greedy: a run closes only when the next source of its worker would not fit.
    for (w, run), (w2, nxt) in itertools.pairwise(runs):
        if w == w2:
            assert sum(sizes[i] for i in run) + sizes[nxt[0]] > budget


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 10**9),
    st.integers(1, 64),
    st.integers(0, 10**12),
    st.sampled_from([0, 1, 600 * 2**20, 12 * 2**30]),
)
def test_shuffle_partitions_fit_the_memory_limit_and_spread_evenly(
    n: int, workers: int, key_bytes: int, limit: int
) -> None:
    parts = nd.shuffle_partitions(n, workers, key_bytes, limit)
    assert parts >= workers and parts % workers == 0
    if limit:
        share = max(int(limit * nd.SHUFFLE_SHARE), 1)
        assert -(-key_bytes // parts) <= share  # each key partition fits its share
        assert parts == workers or -(-key_bytes // (parts - workers)) > share  # none spare
    else:
        assert -(-n // parts) <= nd.DOCS_PER_SHUFFLE_PARTITION


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abcz"), max_size=60), st.integers(1, 4))
def test_balance_keeps_partitions_home_up_to_an_even_share(holders: list[str], w: int) -> None:
    from neardup.dask_shuffle import balance

    workers = list("abcd"[:w])  # "z": a holder that is not among the workers
    where = balance(holders, workers)
    cap = -(-len(holders) // w)
    assert len(where) == len(holders) and set(where) <= set(workers)
    assert all(where.count(x) <= cap for x in workers)
    moved = sum(a != b for a, b in zip(holders, where, strict=True))
    over = sum(max(0, holders.count(x) - cap) for x in workers)
    assert moved == over + holders.count("z") + sum(h not in workers for h in holders if h != "z")


def test_dask_measures_blocks_and_records_by_their_arrays(texts: list[str]) -> None:
    """Dask's memory manager spills what it can measure: a block or a split counts its arrays
    (Dask's default for an object is ~56 bytes, whatever it holds)."""
    from dask.sizeof import sizeof

    from neardup.dask_shuffle import Edges, route, split_by
    from neardup.dask_stages import Hashes

    records = [{"text": t, "id": f"doc-{i}"} for i, t in enumerate(texts)]
    block = nd.map_block(records, DedupParams(threshold=0.8), id_field="id")
    arrays = block.canonical.nbytes + block.lengths.nbytes
    arrays += block.signatures.nbytes + block.evidence.nbytes
    assert arrays < sizeof(block) < arrays + 200 * len(texts)
    assert sizeof(Hashes(block.canonical, block.lengths)) == 16 * len(texts)
    docs = np.arange(len(texts), dtype=np.int64)
    split = split_by(route(docs, 3), 3, docs, docs)
    assert sizeof(split) == split.nbytes == 2 * docs.nbytes
    assert sizeof(Edges(docs, docs)) == 2 * docs.nbytes


def test_only_small_results_reach_the_client(client: object, texts: list[str]) -> None:
    """Per-document arrays stay on the workers; the client receives the results of documents in
    components and the pairs (the engine's own finish fetched 16 B per document and more)."""
    if len(client.scheduler_info()["workers"]) != 3:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough")
    params = DedupParams(threshold=0.8, removal="components")
    got = nd.dedup(_bag(texts, 7), params, client=client).dedup
    assert set(got.moved_) <= {"component results", "pairs", "texts"}
    in_components = int((np.bincount(got.clusters_) >= 2).sum())
    assert in_components and got.moved_["component results"] < 40 * len(texts)


class _Done:
    def __init__(self, value: object) -> None:
        self.value = value


class _SyncClient:
    """Runs each task at once in this process: the exchanges' logic without a cluster."""

    def submit(self, fn: Callable[..., object], *args: object, **_: object) -> _Done:
        return _Done(fn(*[a.value if isinstance(a, _Done) else a for a in args]))

    def gather(self, futures: list[_Done]) -> list[object]:
        return [f.value for f in futures]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=60),
    st.integers(1, 4),
    st.integers(1, 3),
)
def test_star_components_label_every_node_with_its_components_smallest(
    edges: list[tuple[int, int]], sources: int, parts: int
) -> None:
    from neardup.clusters import cluster_labels
    from neardup.dask_shuffle import Edges, Exchanges, star_components

    u = np.array([e[0] for e in edges], dtype=np.int64)
    v = np.array([e[1] for e in edges], dtype=np.int64)
    chunks = np.array_split(np.arange(len(u)), sources)
    ex = Exchanges(_SyncClient())
    stars, _ = star_components(ex, [_Done(Edges(u[c], v[c])) for c in chunks], parts)
    got = {}
    for s in stars:
        got.update(zip(s.value.nodes.tolist(), s.value.mins.tolist(), strict=True))
    want = cluster_labels(41, u, v)
    nodes = set(u.tolist()) | set(v.tolist())
    assert got == {
        x: int(want[x]) for x in nodes if (u[v == x] != x).any() or (v[u == x] != x).any()
    }
