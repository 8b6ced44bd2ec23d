"""Parquet inputs on LocalClusters of processes: each block reads the row groups that start in
its bytes, kept rows go to Parquet parts with the input's schema and codec, and the kept rows,
clusters, pairs, counts and bad-record messages are the single machine's."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import neardup.dask as cluster  # noqa: E402
from neardup.cli import main  # noqa: E402
from neardup.dask import ClusterOutputs, JobOptions, connect, dedup, output_parts  # noqa: E402
from neardup.errors import InputError, ParamError  # noqa: E402
from neardup.params import DecontaminateParams, DedupParams  # noqa: E402
from neardup.testing.synth import near_duplicate_corpus, random_documents  # noqa: E402

FOLDERS = ("kept", "clusters", "pairs")
#: Rows whose text is null: bad records, skipped or stopped at, as on one machine.
NULL_ROWS = (5, 400)


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    with connect("local:2") as c:
        yield c


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    """600 records with near-copies, a few empty texts, two null ones and a number column."""
    base = random_documents(400, seed=21, words=(6, 200))
    texts = list(near_duplicate_corpus(base, 600, 0.5, seed=22, n_empty=4).texts)
    out: list[dict[str, Any]] = [{"id": f"d{i}", "text": t, "n": i} for i, t in enumerate(texts)]
    for i in NULL_ROWS:
        out[i]["text"] = None
    return out


def _files(
    tmp: Path, rows: list[dict[str, Any]], ids: bool = True, codec: str = "zstd"
) -> list[str]:
    """The rows as two files of row groups of 40 and 70 rows (without the id column if not
    ``ids``: records named FILE:ROW)."""
    if not ids:
        rows = [{k: v for k, v in r.items() if k != "id"} for r in rows]
    paths = [tmp / "a.parquet", tmp / "b.parquet"]
    pq.write_table(pa.Table.from_pylist(rows[:350]), paths[0], row_group_size=40, compression=codec)
    pq.write_table(pa.Table.from_pylist(rows[350:]), paths[1], row_group_size=70, compression=codec)
    return [str(p) for p in paths]


def _local(tmp: Path, inputs: list[str], extra: list[str]) -> tuple[Any, bytes, bytes, dict]:
    """The single machine's kept table, clusters and pairs lines, and summary."""
    kept, clusters, pairs, summary = (tmp / n for n in ("l.parquet", "l.c", "l.p", "l.json"))
    args = ["dedup", *inputs, "-o", str(kept), "--clusters", str(clusters), "--pairs", str(pairs)]
    assert main([*args, "--summary-json", str(summary), "-q", "--on-error", "skip", *extra]) == 0
    return (
        pq.read_table(kept),
        clusters.read_bytes(),
        pairs.read_bytes(),
        json.loads(summary.read_text()),
    )


def _outputs(tmp: Path) -> ClusterOutputs:
    for name in FOLDERS:
        shutil.rmtree(tmp / name, ignore_errors=True)
    return ClusterOutputs(*(str(tmp / name) for name in FOLDERS))


def _table(folder: Path | str, storage: dict[str, object] | None = None) -> Any:
    """An output folder's Parquet parts as one table, in manifest order."""
    parts = output_parts(str(folder), storage)
    if storage:
        import s3fs

        fs = s3fs.S3FileSystem(**storage)  # type: ignore[arg-type]
        return pa.concat_tables([pq.read_table(p, filesystem=fs) for p in parts])
    return pa.concat_tables([pq.read_table(p) for p in parts])


@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
@pytest.mark.parametrize("block_bytes", [1 << 30, 9000, 2500])
def test_parquet_parts_hold_the_local_kept_rows_and_the_local_lines(
    client: object, rows: list[dict[str, Any]], tmp_path: Path, block_bytes: int, ids: bool
) -> None:
    inputs = _files(tmp_path, rows, ids)
    table, clusters, pairs, summary = _local(tmp_path, inputs, [])
    options = JobOptions(block_bytes=block_bytes, on_error="skip")
    got = dedup(inputs, DedupParams(), _outputs(tmp_path), options, client)
    kept = _table(tmp_path / "kept")
    assert kept.equals(table) and kept.schema.equals(table.schema, check_metadata=True)
    assert cluster.read_output(str(tmp_path / "clusters")) == clusters
    assert cluster.read_output(str(tmp_path / "pairs")) == pairs
    assert summary["removed"] > 50 and summary["skipped_records"] == len(NULL_ROWS)
    for key in ("documents", "removed", "kept", "skipped_records", "bytes_in"):
        assert got[key] == summary[key], key
    assert [e.split(": ")[0].rsplit("/", 1)[1] for e in got["problems"]["examples"]] == [
        "a.parquet row 6",
        "b.parquet row 51",
    ]
    if block_bytes == 2500:  # more blocks than row groups: some read none and write no row
        assert got["blocks"] > 9 and any(pq.read_metadata(p).num_rows == 0
                                         for p in output_parts(str(tmp_path / "kept")))  # fmt: skip


@pytest.mark.parametrize("codec", ["zstd", "gzip", "none"])
def test_kept_rows_are_compressed_as_the_input_was_locally_and_on_a_cluster(
    client: object, rows: list[dict[str, Any]], tmp_path: Path, codec: str
) -> None:
    inputs = _files(tmp_path, rows, codec=codec)
    _local(tmp_path, inputs, [])
    dedup(inputs, DedupParams(), _outputs(tmp_path), JobOptions(on_error="skip"), client)
    written = [tmp_path / "l.parquet", *output_parts(str(tmp_path / "kept"))]
    want = {"none": "UNCOMPRESSED"}.get(codec, codec.upper())
    for path in written:
        assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == want


def test_borderline_texts_are_read_again_from_the_blocks_spools(
    client: object, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    inputs = _files(tmp_path, rows)
    table, clusters, _, summary = _local(tmp_path, inputs, [])
    work = tmp_path / "work"
    options = JobOptions(block_bytes=9000, on_error="skip", work_dir=str(work))
    got = dedup(inputs, DedupParams(), _outputs(tmp_path), options, client)
    assert _table(tmp_path / "kept").equals(table)
    assert cluster.read_output(str(tmp_path / "clusters")) == clusters
    assert got["exact_sets"] == summary["exact_sets"] > 10  # texts read again
    assert len(list((work / "scan").glob("texts-*.bin"))) == got["blocks"]


def test_a_bad_row_stops_the_run_with_the_local_message(
    client: object, rows: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = _files(tmp_path, rows)
    assert main(["dedup", *inputs, "-o", str(tmp_path / "l.parquet"), "-q"]) == 1
    local = capsys.readouterr().err
    assert "a.parquet row 6: field 'text' is null" in local
    with pytest.raises(InputError) as raised:
        dedup(inputs, DedupParams(), _outputs(tmp_path), JobOptions(block_bytes=9000), client)
    assert f"neardup: error: {raised.value}\n" == local
    assert not (tmp_path / "kept" / "manifest.json").exists()


def test_a_file_of_other_columns_is_skipped_as_on_one_machine(
    client: object, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    inputs = _files(tmp_path, rows[:40])
    other = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": ["x y z w"] * 3, "other": [1, 2, 3]}), other, row_group_size=1)
    inputs = [inputs[0], str(other)]
    table, _, _, summary = _local(tmp_path, inputs, [])
    options = JobOptions(block_bytes=700, on_error="skip")
    got = dedup(inputs, DedupParams(), _outputs(tmp_path), options, client)
    assert _table(tmp_path / "kept").equals(table) and got["kept"] == summary["kept"]
    assert got["problems"]["counts"] == {"bad_schema": 1, "bad_text": 1}
    assert (
        f"{other}: its columns differ from those of {inputs[0]}" in got["problems"]["examples"][1]
    )


def test_parquet_and_jsonl_together_or_a_format_other_than_the_name_are_refused(
    rows: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = _files(tmp_path, rows[:40])
    (tmp_path / "c.jsonl").write_text('{"id": "x", "text": "a b c"}\n')
    with pytest.raises(ParamError, match=r"a\.parquet \(parquet\) and .*c\.jsonl \(jsonl\) differ"):
        dedup([inputs[0], str(tmp_path / "c.jsonl")], DedupParams(), _outputs(tmp_path),
              client=object())  # fmt: skip
    args = ["dedup", inputs[0], "--format", "jsonl", "-o", str(tmp_path / "k"), "--dask", "local:1"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--format jsonl, but a cluster run" in err


def test_decontaminate_writes_the_local_clean_rows_as_parquet_parts(
    client: object, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    inputs = _files(tmp_path, rows)
    bench = tmp_path / "bench.jsonl"
    items = [" ".join(str(r["text"]).split()[:30]) for r in rows[10:40:3] if r["text"]]
    bench.write_text("".join(json.dumps({"text": t}) + "\n" for t in items))
    clean, matches = tmp_path / "lc.parquet", tmp_path / "lm.jsonl"
    args = ["decontaminate", *inputs, "--against", str(bench), "--on-error", "skip", "-q"]
    assert main([*args, "-o", str(clean), "--matches", str(matches)]) == 0
    folders = cluster.DecontaminateFolders(str(tmp_path / "clean"), str(tmp_path / "matches"))
    options = JobOptions(block_bytes=9000, on_error="skip")
    got = cluster.decontaminate(inputs, str(bench), DecontaminateParams(), folders, options, client)
    assert got["contaminated"] >= len(items)
    assert _table(tmp_path / "clean").equals(pq.read_table(clean))
    assert cluster.read_output(str(tmp_path / "matches")) == matches.read_bytes()


def test_parquet_on_s3_gives_the_local_kept_rows(
    s3: dict[str, object], client: object, rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(**s3)  # type: ignore[arg-type]
    fs.mkdir("corpus")
    inputs = _files(tmp_path, rows)
    for path in inputs:
        fs.put_file(path, f"corpus/in/{Path(path).name}")
    table, clusters, _, _ = _local(tmp_path, inputs, [])
    outputs = ClusterOutputs("s3://corpus/out/kept", "s3://corpus/out/clusters")
    options = JobOptions(block_bytes=9000, on_error="skip", storage_options=dict(s3))
    dedup(["s3://corpus/in/*.parquet"], DedupParams(), outputs, options, client)
    assert _table("s3://corpus/out/kept", s3).equals(table)
    assert cluster.read_output("s3://corpus/out/clusters", s3) == clusters
