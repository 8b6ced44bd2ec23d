"""decontaminate on LocalClusters of processes: the single machine's -o and --matches byte for
byte (blocks, gzip, missing ids, bad records, repeated ids), resumable work folders, refusals."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from neardup.cli import main  # noqa: E402
from neardup.dask import (  # noqa: E402
    DecontaminateFolders,
    JobOptions,
    connect,
    decontaminate,
    read_output,
)
from neardup.errors import InputError, ParamError  # noqa: E402
from neardup.params import DecontaminateParams  # noqa: E402
from neardup.testing.synth import random_documents  # noqa: E402
from tests.killing import kill_once_done, one_letter_changed, rerun_resumes  # noqa: E402

PARAMS = DecontaminateParams()


@pytest.fixture(scope="module", params=[2, 1], ids=lambda n: f"workers{n}")
def client(request: pytest.FixtureRequest) -> Iterator[object]:
    with connect(f"local:{request.param}") as c:
        yield c


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A benchmark of 12 items and 240 training records, a third holding (part of) an item."""
    rng = random.Random(5)
    items = random_documents(12, seed=31, words=(20, 60))
    docs = random_documents(240, seed=32, words=(10, 150))
    for d in range(0, len(docs), 3):
        words = items[rng.randrange(len(items))].split()
        keep = words[: max(1, int(len(words) * rng.uniform(0.3, 1.0)))]
        docs[d] = f"{docs[d]} {' '.join(keep).upper()}. {docs[d][:40]}"
    folder = tmp_path_factory.mktemp("bench")
    bench = folder / "bench.jsonl"
    bench.write_text(
        "".join(json.dumps({"id": f"q{i}", "q": t}) + "\n" for i, t in enumerate(items))
    )
    return bench, docs


def _files(tmp: Path, docs: list[str], extra: list[str] | None = None) -> list[str]:
    """Three files: plain, gzipped, and one whose records have no id (named FILE:LINE)."""
    rows = [json.dumps({"id": f"d{i}", "text": t, "n": i}) + "\n" for i, t in enumerate(docs)]
    (tmp / "a.jsonl").write_text("".join(rows[:100]))
    with gzip.open(tmp / "b.jsonl.gz", "wt") as fh:
        fh.write("".join(rows[100:160]))
    bare = [json.dumps({"text": t}) + "\n" for t in docs[160:]]
    (tmp / "c.jsonl").write_text("".join(bare + (extra or [])))
    return [str(tmp / n) for n in ("a.jsonl", "b.jsonl.gz", "c.jsonl")]


def _local(tmp: Path, inputs: list[str], bench: Path, extra: list[str]) -> tuple[bytes, bytes]:
    clean, matches = tmp / "local.clean.jsonl", tmp / "local.matches.jsonl"
    args = ["decontaminate", *inputs, "--against", str(bench), "--against-text-field", "q"]
    assert main([*args, "-o", str(clean), "--matches", str(matches), "-q", *extra]) == 0
    return clean.read_bytes(), matches.read_bytes()


def _on_two_workers(
    client: object, corpus: tuple[Path, list[str]], tmp: Path
) -> tuple[Path, list[str], tuple[bytes, bytes]]:
    """Skipped on a one-worker cluster (one size is enough), else the benchmark, the corpus's
    three files and the local run's outputs."""
    if len(client.scheduler_info()["workers"]) != 2:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough")
    bench, docs = corpus
    inputs = _files(tmp, docs)
    return bench, inputs, _local(tmp, inputs, bench, [])


def _folders(tmp: Path) -> DecontaminateFolders:
    for name in ("clean", "matches"):
        shutil.rmtree(tmp / name, ignore_errors=True)
    return DecontaminateFolders(str(tmp / "clean"), str(tmp / "matches"))


def _run(tmp: Path, inputs: list[str], bench: Path, client: object, **options: object) -> dict:
    from neardup.run import ReadOptions

    return decontaminate(
        inputs, str(bench), PARAMS, _folders(tmp), JobOptions(**options), client,  # type: ignore[arg-type]
        against_read=ReadOptions(text_field="q", on_error=options.get("on_error", "stop")),  # type: ignore[arg-type]
    )  # fmt: skip


def _outputs(tmp: Path) -> tuple[bytes, bytes]:
    return read_output(str(tmp / "clean")), read_output(str(tmp / "matches"))


@pytest.mark.parametrize("block_bytes", [1 << 30, 3000])
def test_cluster_outputs_equal_the_local_run_byte_for_byte(
    client: object, corpus: tuple[Path, list[str]], tmp_path: Path, block_bytes: int
) -> None:
    bench, docs = corpus
    inputs = _files(tmp_path, docs)
    want = _local(tmp_path, inputs, bench, [])
    summary = _run(tmp_path, inputs, bench, client, block_bytes=block_bytes)
    assert _outputs(tmp_path) == want
    assert want[1].count(b"\n") == summary["matches"] > 40
    assert summary["contaminated"] + summary["kept"] == summary["documents"] == len(docs)
    assert b"c.jsonl:" in want[1]  # missing ids are named by file and line
    assert (tmp_path / "clean" / "part-00000.jsonl").exists()
    if block_bytes == 3000:
        assert summary["blocks"] > 10  # the plain files were cut into many blocks


def test_bad_records_and_repeated_ids_are_the_local_run_s(
    client: object, corpus: tuple[Path, list[str]], tmp_path: Path
) -> None:
    if len(client.scheduler_info()["workers"]) != 2:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough")
    bench, docs = corpus
    bad = ['{"text": "broken\n', json.dumps({"id": "d3", "text": docs[3]}) + "\n"]
    inputs = _files(tmp_path, docs, bad)
    want = _local(tmp_path, inputs, bench, ["--on-error", "skip"])
    summary = _run(tmp_path, inputs, bench, client, on_error="skip", block_bytes=4000)
    assert _outputs(tmp_path) == want
    assert summary["skipped_records"] == 2 and summary["documents"] == len(docs)
    assert main(["decontaminate", *inputs, "--against", str(bench), "--against-text-field", "q",
                 "-o", str(tmp_path / "x.jsonl"), "-q"]) == 1  # fmt: skip
    with pytest.raises(InputError, match=r"c\.jsonl line 81: .*not valid JSON"):
        _run(tmp_path, inputs, bench, client, block_bytes=4000)


def _piece_sizes(pairs: int, rows: int) -> tuple[int, int]:
    """On a worker: the pairs a scan piece holds and the pairs written at a time, set; returns
    the sizes before."""
    import importlib

    import neardup.decontaminate as finder

    on_cluster = importlib.import_module("neardup.dask.decontaminate")  # the package's function

    before = (finder.MAX_PAIRS, on_cluster.MATCH_ROWS)
    finder.MAX_PAIRS, on_cluster.MATCH_ROWS = pairs, rows
    return before


def test_a_block_s_matches_are_found_and_written_in_pieces_with_the_same_bytes(
    client: object, corpus: tuple[Path, list[str]], tmp_path: Path
) -> None:
    # a block's matches and their lines were all held at once: items sharing a template at a
    # low containment make many times the block's text
    import pyarrow.parquet as pq

    if len(client.scheduler_info()["workers"]) != 2:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough")
    bench, docs = corpus
    bad = [json.dumps({"id": "d3", "text": docs[3]}) + "\n"]  # a repeated id: left out
    inputs = _files(tmp_path, docs, bad)
    want = _local(tmp_path, inputs, bench, ["--on-error", "skip"])
    before = client.run(_piece_sizes, 3, 5)  # type: ignore[attr-defined]
    try:
        work = tmp_path / "work"
        _run(tmp_path, inputs, bench, client, on_error="skip", work_dir=str(work))
    finally:
        client.run(_piece_sizes, *next(iter(before.values())))  # type: ignore[attr-defined]
    assert _outputs(tmp_path) == want
    assert pq.ParquetFile(work / "scan" / "matches-00000.parquet").num_row_groups > 5


def _written_with_work_dir(
    client: object, corpus: tuple[Path, list[str]], tmp_path: Path
) -> tuple[Path, list[str], tuple[bytes, bytes], Path]:
    """The corpus on two workers decontaminated once with a work folder: (benchmark, inputs,
    the outputs, the work folder)."""
    bench, inputs, want = _on_two_workers(client, corpus, tmp_path)
    work = tmp_path / "work"
    _run(tmp_path, inputs, bench, client, work_dir=str(work), block_bytes=4000)
    return bench, inputs, want, work


def test_a_rerun_resumes_writing_only_the_unfinished_blocks(
    client: object, corpus: tuple[Path, list[str]], tmp_path: Path
) -> None:
    bench, inputs, want, work = _written_with_work_dir(client, corpus, tmp_path)
    # As if killed while writing: block 1's part and record gone, no manifest, stage unfinished.
    for gone in ("write/_SUCCESS", "write/part-00001.json", "scan/_SUCCESS"):
        (work / gone).unlink()
    (tmp_path / "clean" / "part-00001.jsonl").unlink()
    (tmp_path / "clean" / "manifest.json").unlink()
    before = os.stat(tmp_path / "clean" / "part-00002.jsonl")
    said: list[str] = []
    from neardup.run import ReadOptions

    again = DecontaminateFolders(str(tmp_path / "clean"), str(tmp_path / "matches"))
    decontaminate(inputs, str(bench), PARAMS, again, JobOptions(work_dir=str(work), block_bytes=4000),
                  client, said.append, ReadOptions(text_field="q"))  # fmt: skip
    assert any("resuming" in s for s in said)
    after = os.stat(tmp_path / "clean" / "part-00002.jsonl")
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not redone
    assert _outputs(tmp_path) == want
    with pytest.raises(InputError, match=r"parameters changed.*--restart"):
        decontaminate(inputs, str(bench), DecontaminateParams(containment=0.8), again,
                      JobOptions(work_dir=str(work), block_bytes=4000), client,
                      against_read=ReadOptions(text_field="q"))  # fmt: skip
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "z", "q": "a different benchmark item entirely"}) + "\n")
    with pytest.raises(InputError, match=r"the benchmark changed"):
        decontaminate(inputs, str(other), PARAMS, again,
                      JobOptions(work_dir=str(work), block_bytes=4000), client,
                      against_read=ReadOptions(text_field="q"))  # fmt: skip


def test_what_a_cluster_cannot_read_or_write_is_refused_in_one_line(
    corpus: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench, docs = corpus
    inputs = _files(tmp_path, docs)
    (tmp_path / "t.txt").write_text("plain text")
    base = ["decontaminate", "--against", str(bench), "--against-text-field", "q", "-q"]
    cases = {
        "a cluster run reads JSONL files": [str(tmp_path / "t.txt"), "-o", str(tmp_path / "o")],
        "--format parquet, but a cluster run tells": [*inputs, "--format", "parquet", "-o", "o"],
        "--matches .* is an input": [*inputs, "--matches", str(bench)],
        "is a file; with --dask outputs are folders": [*inputs, "-o", inputs[0] + ".x"],
        "standard input cannot be read by the workers": ["-", "-o", str(tmp_path / "o")],
    }
    Path(inputs[0] + ".x").write_text("")
    for message, args in cases.items():
        assert main([*base, *args, "--dask", "local:1"]) == 1
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and __import__("re").search(message, err), err
    assert main([*base, *inputs, "-o", str(tmp_path / "k.jsonl"), "--work-dir", "w"]) == 1
    assert "--work-dir goes with --dask" in capsys.readouterr().err
    with pytest.raises(ParamError, match="name an output"):
        decontaminate(inputs, str(bench), PARAMS, DecontaminateFolders(), client=object())


def test_killing_the_command_then_running_it_again_resumes_with_the_same_outputs(
    corpus: tuple[Path, list[str]], tmp_path: Path
) -> None:
    bench, docs = corpus
    inputs = _files(tmp_path, docs * 8)  # repeated ids: the ids stage has work to do
    want = _local(tmp_path, inputs, bench, ["--on-error", "skip"])
    work = tmp_path / "work"
    args = [sys.executable, "-m", "neardup.cli", "decontaminate", *inputs, "--against", str(bench),
            "--against-text-field", "q", "-o", str(tmp_path / "clean"), "--matches",
            str(tmp_path / "matches"), "--on-error", "skip", "--dask", "local:2", "--work-dir",
            str(work)]  # fmt: skip
    kill_once_done(args, work / "scan", 180)
    assert not (tmp_path / "clean" / "manifest.json").exists()  # nothing looks whole
    rerun_resumes(args)
    assert _outputs(tmp_path) == want


def test_inputs_outputs_and_work_folder_on_s3_give_the_local_run_s_bytes(
    client: object,
    corpus: tuple[Path, list[str]],
    tmp_path: Path,
    s3: dict[str, object],
) -> None:
    # the matches part and the scan's matches file are written as they go: on an object store
    # through a local spool uploaded whole
    import s3fs

    bench, inputs, want = _on_two_workers(client, corpus, tmp_path)
    fs = s3fs.S3FileSystem(**s3)  # type: ignore[arg-type]
    fs.mkdir("decon")
    for path in inputs:
        fs.put_file(path, f"decon/in/{Path(path).name}")
    folders = DecontaminateFolders("s3://decon/out/clean", "s3://decon/out/matches")
    options = JobOptions(work_dir="s3://decon/work", storage_options=s3, block_bytes=4000)
    from neardup.run import ReadOptions

    decontaminate(
        ["s3://decon/in/"], str(bench), PARAMS, folders, options, client,
        against_read=ReadOptions(text_field="q"),
    )  # fmt: skip
    got = tuple(read_output(f"s3://decon/out/{name}", s3) for name in ("clean", "matches"))
    # records without an id are named by their file as given, here its URL
    local_names = want[1].replace(str(tmp_path).encode(), b"s3://decon/in")
    assert got == (want[0], local_names)
    assert fs.find("decon/work/scan", prefix="matches-")  # kept for a rerun


def test_a_rerun_writes_again_the_parts_another_run_left_in_its_folders(
    client: object, corpus: tuple[Path, list[str]], tmp_path: Path
) -> None:
    # the parts of another run (another containment, its own work folder) written over this
    # run's were kept by this run's rerun and given its manifest
    from neardup.run import ReadOptions

    bench, inputs, want = _on_two_workers(client, corpus, tmp_path)
    folders = _folders(tmp_path)
    read = ReadOptions(text_field="q")

    def run(params: DecontaminateParams, work: str) -> None:
        options = JobOptions(work_dir=str(tmp_path / work), block_bytes=4000)
        decontaminate(inputs, str(bench), params, folders, options, client, against_read=read)

    run(PARAMS, "work")
    run(DecontaminateParams(containment=0.9), "other")
    assert _outputs(tmp_path) != want
    run(PARAMS, "work")
    assert _outputs(tmp_path) == want


def test_a_rerun_writes_again_the_parts_replaced_by_files_of_the_same_size(
    client: object, corpus: tuple[Path, list[str]], tmp_path: Path
) -> None:
    # a clean part and a matches part (written as it goes) of the same size with other bytes
    # passed the check of their sizes and got this run's manifest
    bench, inputs, want, work = _written_with_work_dir(client, corpus, tmp_path)
    (work / "write" / "_SUCCESS").unlink()  # as if killed while writing, every block's part done
    (tmp_path / "clean" / "manifest.json").unlink()
    (tmp_path / "matches" / "manifest.json").unlink()
    clean = tmp_path / "clean" / "part-00001.jsonl"
    matches = max((tmp_path / "matches").glob("part-*"), key=lambda p: p.stat().st_size)
    for part in (clean, matches):
        part.write_bytes(one_letter_changed(part.read_bytes()))
    from neardup.run import ReadOptions

    again = DecontaminateFolders(str(tmp_path / "clean"), str(tmp_path / "matches"))
    decontaminate(inputs, str(bench), PARAMS, again, JobOptions(work_dir=str(work), block_bytes=4000),
                  client, against_read=ReadOptions(text_field="q"))  # fmt: skip
    assert _outputs(tmp_path) == want
