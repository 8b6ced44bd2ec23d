"""Cluster runs on real LocalClusters of processes: the single machine's outputs byte for byte,
workers reading and writing the files, bad input handled alike, resumable work folders."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from neardup.cli import main  # noqa: E402
from neardup.dask import ClusterOutputs, JobOptions, connect, dedup, read_output, stages  # noqa: E402
from neardup.errors import InputError, ParamError  # noqa: E402
from neardup.params import DedupParams, MinhashParams, SimhashMethodParams  # noqa: E402
from neardup.testing.synth import near_duplicate_corpus, random_documents  # noqa: E402
from tests.killing import kill_once_done, one_letter_changed, rerun_resumes  # noqa: E402

FOLDERS = ("kept", "clusters", "pairs")


@pytest.fixture(scope="module", params=[2, 1], ids=lambda n: f"workers{n}")
def client(request: pytest.FixtureRequest) -> Iterator[object]:
    with connect(f"local:{request.param}") as c:
        yield c


@pytest.fixture(scope="module")
def lines() -> list[str]:
    base = random_documents(150, seed=21, words=(6, 200))
    texts = list(near_duplicate_corpus(base, 300, 0.5, seed=22, n_empty=4).texts)
    template = " ".join(random_documents(1, seed=23, words=(150, 150))[0].split())
    texts += [f"{template} tail {i} {i * 7}" for i in range(24)]
    return [json.dumps({"id": f"d{i}", "text": t, "n": i}) + "\n" for i, t in enumerate(texts)]


def _files(tmp: Path, lines: list[str], layout: str) -> list[str]:
    """The corpus as one file, or three (the middle one gzipped), or without ids."""
    if layout == "one":
        (tmp / "in.jsonl").write_text("".join(lines))
        return [str(tmp / "in.jsonl")]
    if layout == "no-ids":
        rows = [json.dumps({"text": json.loads(x)["text"]}) + "\n" for x in lines]
        (tmp / "a.jsonl").write_text("".join(rows[:130]))
        (tmp / "b.jsonl").write_text("".join(rows[130:]))
        return [str(tmp / "a.jsonl"), str(tmp / "b.jsonl")]
    (tmp / "a.jsonl").write_text("".join(lines[:100]))
    with gzip.open(tmp / "b.jsonl.gz", "wt") as fh:
        fh.write("".join(lines[100:220]))
    (tmp / "c.jsonl").write_text("".join(lines[220:]))
    return [str(tmp / n) for n in ("a.jsonl", "b.jsonl.gz", "c.jsonl")]


def _many(lines: list[str], copies: int) -> list[str]:
    """``copies`` copies of the corpus, each record with an id of its own."""
    rows = [json.loads(x) for x in lines] * copies
    return [json.dumps({**r, "id": f"c{i}"}) + "\n" for i, r in enumerate(rows)]


def _local(tmp: Path, inputs: list[str], extra: list[str]) -> list[bytes]:
    outs = [tmp / f"local.{name}.jsonl" for name in FOLDERS]
    args = ["dedup", *inputs, "-o", str(outs[0]), "--clusters", str(outs[1])]
    assert main([*args, "--pairs", str(outs[2]), "-q", *extra]) == 0
    return [p.read_bytes() for p in outs]


def _one_file_on_two_workers(
    client: object, lines: list[str], tmp: Path
) -> tuple[list[str], list[bytes]]:
    """The corpus as one file and the local run's outputs; skipped but on two workers."""
    if len(client.scheduler_info()["workers"]) != 2:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough")
    inputs = _files(tmp, lines, "one")
    return inputs, _local(tmp, inputs, [])


def concat(folder: Path) -> bytes:
    """An output folder's parts, in the manifest's order, gzip ones decompressed."""
    return read_output(str(folder))


def _outputs(tmp: Path, all_pairs: bool = False) -> ClusterOutputs:
    for name in FOLDERS:
        shutil.rmtree(tmp / name, ignore_errors=True)
    return ClusterOutputs(*(str(tmp / name) for name in FOLDERS), all_pairs=all_pairs)


CASES = {
    "default": ([], DedupParams()),
    "exact-longest": (
        ["--verify", "exact", "--keep", "longest", "--threshold", "0.7"],
        DedupParams(verify="exact", keep="longest", threshold=0.7),
    ),
    "components": (
        ["--removal", "components", "--max-bucket", "8"],
        DedupParams(removal="components", method=MinhashParams(max_bucket=8)),
    ),
    "sketch": (
        ["--verify", "sketch", "--threshold", "0.6"],
        DedupParams(verify="sketch", threshold=0.6),
    ),
    "simhash": (
        ["--method", "simhash", "--max-distance", "4"],
        DedupParams(method=SimhashMethodParams(max_distance=4)),
    ),
}


@pytest.mark.parametrize("layout", ["one", "three", "no-ids"])
@pytest.mark.parametrize("block_bytes", [1 << 30, 5000])
def test_cluster_outputs_equal_the_local_run_byte_for_byte(
    client: object, lines: list[str], tmp_path: Path, layout: str, block_bytes: int
) -> None:
    inputs = _files(tmp_path, lines, layout)
    want = _local(tmp_path, inputs, [])
    summary = dedup(
        inputs, DedupParams(), _outputs(tmp_path), JobOptions(block_bytes=block_bytes), client
    )
    assert [concat(tmp_path / name) for name in FOLDERS] == want
    assert summary["removed"] > 0 and want[1] and want[2]
    if block_bytes == 5000:
        assert summary["blocks"] > len(inputs)  # plain files were cut into many blocks


def _case(
    client: object, lines: list[str], tmp: Path, case: str
) -> tuple[DedupParams, list[str], list[bytes]]:
    """A CASES entry's parameters, the corpus as three files and the local run's outputs;
    skipped but on two workers (one cluster size is enough for a parameter sweep)."""
    if len(client.scheduler_info()["workers"]) != 2:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough for the parameter sweep")
    extra, params = CASES[case]
    inputs = _files(tmp, lines, "three")
    return params, inputs, _local(tmp, inputs, extra)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_method_verification_and_removal_gives_the_local_outputs(
    client: object, lines: list[str], tmp_path: Path, case: str
) -> None:
    params, inputs, want = _case(client, lines, tmp_path, case)
    dedup(inputs, params, _outputs(tmp_path), JobOptions(block_bytes=7000), client)
    assert [concat(tmp_path / name) for name in FOLDERS] == want


@pytest.mark.parametrize("case", ["default", "components", "exact-longest"])
def test_links_that_keep_few_key_bits_link_more_but_change_no_output(
    client: object, lines: list[str], tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Links keep a key's top bits only (``stages.link_bits``): keys equal in those bits link
    # documents that share no key. With 8 bits kept nearly everything links, and the outputs
    # must still be the local run's: the finish pairs documents by their whole keys.
    params, inputs, want = _case(client, lines, tmp_path, case)
    edges = []
    for bits in (0, 56):
        monkeypatch.setattr(stages, "MIN_LINK_BITS", bits)  # the client computes the bits
        work = tmp_path / f"work{bits}"
        options = JobOptions(block_bytes=7000, work_dir=str(work))
        dedup(inputs, params, _outputs(tmp_path), options, client)
        assert [concat(tmp_path / name) for name in FOLDERS] == want
        edges.append(sum(json.loads(p.read_text())["edges"] for p in work.glob("graph/*.json")))
    assert edges[1] > 2 * edges[0] > 0


@pytest.mark.parametrize("given", ["d", "./d/", "d/*.jsonl"])
def test_a_relative_folder_or_glob_names_its_files_as_the_local_run(
    client: object,
    lines: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    given: str,
) -> None:
    """Records without ids are called NAME:LINE: NAME is the folder as given joined with the
    file's path inside it (``d/sub/c.jsonl``), never the absolute path the workers read."""
    rows = [json.dumps({"text": json.loads(x)["text"]}) + "\n" for x in lines]
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.jsonl").write_text("".join(rows[:120]))
    (tmp_path / "d" / "b.jsonl").write_text("".join(rows[120:240]))
    (tmp_path / "d" / "sub" / "c.jsonl").write_text("".join(rows[240:]))
    monkeypatch.chdir(tmp_path)
    local = ["d"] if "*" not in given else ["d/a.jsonl", "d/b.jsonl"]  # as the shell expands
    want = _local(tmp_path, local, [])
    dedup([given], DedupParams(), _outputs(tmp_path), JobOptions(), client)
    got = [concat(tmp_path / name) for name in FOLDERS]
    assert got == want and b'"d/a.jsonl:1' in want[1]


def test_four_workers_give_the_local_outputs(lines: list[str], tmp_path: Path) -> None:
    inputs = _files(tmp_path, lines, "three")
    want = _local(tmp_path, inputs, [])
    with connect("local:4") as c:
        dedup(inputs, DedupParams(), _outputs(tmp_path), JobOptions(block_bytes=3000), c)
    assert [concat(tmp_path / name) for name in FOLDERS] == want


def test_all_pairs_and_the_summary_match_the_local_run(
    client: object, lines: list[str], tmp_path: Path
) -> None:
    if len(client.scheduler_info()["workers"]) != 2:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough")
    inputs = _files(tmp_path, lines, "one")
    want = _local(tmp_path, inputs, ["--all-pairs", "--summary-json", str(tmp_path / "s.json")])
    got = dedup(inputs, DedupParams(), _outputs(tmp_path, all_pairs=True), JobOptions(), client)
    assert [concat(tmp_path / name) for name in FOLDERS] == want
    local = json.loads((tmp_path / "s.json").read_text())
    for key in ("documents", "empty", "removed", "kept", "clusters", "exact_duplicates",
                "accepted_pairs", "candidate_pairs", "leader_checks", "exact_checks",
                "check_rounds", "bytes_in", "joined_docs", "params", "params_fingerprint",
                "tokens", "method"):  # fmt: skip
        assert got[key] == local[key], key


def test_a_corpus_without_duplicates_prints_the_summary_with_zero_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = random_documents(40, seed=5, words=(30, 60))  # no two alike: nothing is linked
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    assert main(["dedup", str(src), "-o", str(tmp_path / "kept"), "--dask", "local:1"]) == 0
    summary = capsys.readouterr().err
    assert "exact duplicates                0" in summary, summary
    assert "documents kept                 40" in summary, summary
    assert concat(tmp_path / "kept") == src.read_bytes()


def test_a_byte_order_mark_is_copied_by_neither_the_local_nor_the_cluster_run(
    client: object, lines: list[str], tmp_path: Path
) -> None:
    if len(client.scheduler_info()["workers"]) != 2:  # type: ignore[attr-defined]
        pytest.skip("one cluster size is enough")
    bom = "\ufeff"
    (tmp_path / "a.jsonl").write_text("".join(lines[:101]))
    (tmp_path / "b.jsonl").write_text(bom + "".join(lines[101:160]) + bom + "".join(lines[160:220]))
    with gzip.open(tmp_path / "c.jsonl.gz", "wt") as fh:
        fh.write(bom + "".join(lines[220:]))
    inputs = [str(tmp_path / n) for n in ("a.jsonl", "b.jsonl", "c.jsonl.gz")]
    want = _local(tmp_path, inputs, [])
    dedup(inputs, DedupParams(), _outputs(tmp_path), JobOptions(block_bytes=5000), client)
    assert [concat(tmp_path / name) for name in FOLDERS] == want
    kept = want[0].decode().splitlines(keepends=True)
    assert {lines[101], lines[160], lines[220]} <= set(kept) <= set(lines)  # kept: no mark


def _bad(tmp: Path, lines: list[str]) -> list[str]:
    bad = list(lines)
    bad[40] = '{"id": "d3", "text": "an id an earlier record has"}\n'
    bad[77] = '{"id": "x77", "text": 5}\n'
    bad[120] = "not json\n"
    (tmp / "bad.jsonl").write_text("".join(bad))
    return [str(tmp / "bad.jsonl")]


def test_bad_records_stop_at_the_first_in_input_order_with_the_local_message(
    client: object, lines: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = _bad(tmp_path, lines)
    assert main(["dedup", *inputs, "-o", str(tmp_path / "x.jsonl"), "-q"]) == 1
    local = capsys.readouterr().err.strip().removeprefix("neardup: error: ")
    with pytest.raises(InputError) as err:
        dedup(inputs, DedupParams(), _outputs(tmp_path), JobOptions(block_bytes=6000), client)
    assert str(err.value) == local and "line 41" in local
    assert not (tmp_path / "kept").exists()  # nothing written


@pytest.mark.parametrize("order", ["named first", "named later"])
def test_an_id_equal_to_a_line_number_is_said_to_collide_with_a_record_without_id(
    client: object,
    lines: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    order: str,
) -> None:
    """A record without an id is named by its line number: the cluster run says so in the
    local run's words, whichever of the two comes first."""
    rows = [json.dumps({"text": json.loads(x)["text"]}) + "\n" for x in lines[:150]]
    at = 90 if order == "named first" else 5  # the explicit id's line
    rows[at] = json.dumps({"id": 12 if order == "named first" else 150, "text": "x"}) + "\n"
    (tmp_path / "n.jsonl").write_text("".join(rows))
    inputs = [str(tmp_path / "n.jsonl")]
    assert main(["dedup", *inputs, "-o", str(tmp_path / "x.jsonl"), "-q"]) == 1
    local = capsys.readouterr().err.strip().removeprefix("neardup: error: ")
    assert "has no id and is named by its line number" in local
    with pytest.raises(InputError) as err:
        dedup(inputs, DedupParams(), _outputs(tmp_path), JobOptions(block_bytes=6000), client)
    assert str(err.value) == local


def test_skipped_records_are_the_local_run_s(
    client: object, lines: list[str], tmp_path: Path
) -> None:
    inputs = _bad(tmp_path, lines)
    want = _local(
        tmp_path, inputs, ["--on-error", "skip", "--summary-json", str(tmp_path / "s.json")]
    )
    options = JobOptions(block_bytes=6000, on_error="skip")
    got = dedup(inputs, DedupParams(), _outputs(tmp_path), options, client)
    assert [concat(tmp_path / name) for name in FOLDERS] == want
    assert (
        got["skipped_records"]
        == json.loads((tmp_path / "s.json").read_text())["skipped_records"]
        == 3
    )


def test_an_id_field_no_record_has_is_refused_as_on_one_machine(
    client: object, lines: list[str], tmp_path: Path
) -> None:
    inputs, _ = _one_file_on_two_workers(client, lines, tmp_path)
    options = JobOptions(block_bytes=5000, id_field="uid")
    with pytest.raises(ParamError, match="no record has the field 'uid' that --id-field names"):
        dedup(inputs, DedupParams(), _outputs(tmp_path), options, client)
    assert not (tmp_path / "kept" / "manifest.json").exists()


def test_a_work_folder_resumes_and_refuses_another_run(
    client: object, lines: list[str], tmp_path: Path
) -> None:
    inputs, want = _one_file_on_two_workers(client, lines, tmp_path)
    work = str(tmp_path / "work")
    said: list[str] = []
    dedup(inputs, DedupParams(), _outputs(tmp_path), JobOptions(work_dir=work), client, said.append)
    assert (
        not any("resuming" in s for s in said)
        and (tmp_path / "work" / "write" / "_SUCCESS").exists()
    )
    said.clear()
    with distributed.get_task_stream(client) as stream:  # type: ignore[arg-type]
        dedup(inputs, DedupParams(), _outputs(tmp_path), JobOptions(work_dir=work), client,
              said.append)  # fmt: skip
    assert any("resuming" in s for s in said)
    assert not [t for t in stream.data if "neardup-scan" in str(t["key"])]  # scan was done
    assert [concat(tmp_path / name) for name in FOLDERS] == want
    with pytest.raises(InputError, match=r"parameters changed.*--restart"):
        dedup(
            inputs,
            DedupParams(threshold=0.7),
            _outputs(tmp_path),
            JobOptions(work_dir=work),
            client,
        )
    (tmp_path / "in.jsonl").write_text("".join(lines[:-1]))
    with pytest.raises(InputError, match=r"in\.jsonl changed"):
        dedup(inputs, DedupParams(), _outputs(tmp_path), JobOptions(work_dir=work), client)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="holds files neardup did not write"):
        dedup(inputs, DedupParams(), _outputs(tmp_path), JobOptions(work_dir=str(tmp_path / "mine"),
              restart=True), client)  # fmt: skip
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    restarted = JobOptions(work_dir=work, restart=True)
    dedup(inputs, DedupParams(), _outputs(tmp_path), restarted, client)
    assert concat(tmp_path / "kept") == _local(tmp_path, inputs, [])[0]


def test_clusters_and_pairs_asked_for_on_resuming_are_made_then(
    client: object, lines: list[str], tmp_path: Path
) -> None:
    inputs, want = _one_file_on_two_workers(client, lines, tmp_path)
    work = JobOptions(work_dir=str(tmp_path / "work"))
    kept_only = ClusterOutputs(str(tmp_path / "alone"))
    dedup(inputs, DedupParams(), kept_only, work, client)  # finish makes no lines
    finish = tmp_path / "work" / "finish"
    assert json.loads((finish / "lines.json").read_text()) == [False, False]
    assert concat(tmp_path / "alone") == want[0]
    dedup(inputs, DedupParams(), _outputs(tmp_path), work, client)  # now they are asked for
    assert json.loads((finish / "lines.json").read_text()) == [True, True]
    assert [concat(tmp_path / name) for name in FOLDERS] == want
    dedup(inputs, DedupParams(), kept_only, work, client)  # kept with lines: nothing redone
    assert json.loads((finish / "lines.json").read_text()) == [True, True]
    assert concat(tmp_path / "alone") == want[0]


def test_output_folders_are_checked_before_anything_is_read(
    lines: list[str], tmp_path: Path
) -> None:
    inputs = _files(tmp_path, lines, "one")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(ParamError, match="holds other files"):
        dedup(
            inputs,
            DedupParams(),
            ClusterOutputs(str(tmp_path / "busy")),
            JobOptions(),
            client=object(),
        )
    with pytest.raises(ParamError, match="is an input"):
        dedup(inputs, DedupParams(), ClusterOutputs(inputs[0]), JobOptions(), client=object())
    with pytest.raises(ParamError, match=r"--summary-json .* is an input"):
        where = ClusterOutputs(str(tmp_path / "k"), summary_json=inputs[0])
        dedup(inputs, DedupParams(), where, JobOptions(), client=object())
    with pytest.raises(ParamError, match=r"--summary-json .* is a folder"):
        where = ClusterOutputs(str(tmp_path / "k"), summary_json=str(tmp_path / "busy"))
        dedup(inputs, DedupParams(), where, JobOptions(), client=object())
    assert (tmp_path / "in.jsonl").read_text() == "".join(lines)  # untouched
    with pytest.raises(ParamError, match="same folder"):
        same = str(tmp_path / "o")
        dedup(inputs, DedupParams(), ClusterOutputs(same, same), JobOptions(), client=object())
    assert main(["dedup", *inputs, "-o", str(tmp_path / "k.jsonl"), "--work-dir", "w"]) == 1
    k = tmp_path / "k"
    nested = [  # the same command run again would stop at the folder's other files
        (ClusterOutputs(str(k), summary_json=str(k / "s.json")), {}),
        (ClusterOutputs(str(k), clusters=str(k / "c")), {}),
        (ClusterOutputs(str(k)), {"work_dir": str(k / "w")}),
        (ClusterOutputs(str(tmp_path / "w" / "k")), {"work_dir": str(tmp_path / "w")}),
    ]
    for where, options in nested:
        with pytest.raises(ParamError, match=r"is inside the (-o|--work-dir) folder"):
            dedup(inputs, DedupParams(), where, JobOptions(**options), client=object())
    assert not k.exists() and not (tmp_path / "w").exists()
    # a folder holding an input (its parts would overwrite it, or be read by the next run)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "part-00000.jsonl").write_text("".join(lines))
    inside = [str(tmp_path / "data" / "part-00000.jsonl")]
    for where, options in [
        (ClusterOutputs(str(tmp_path / "data")), {}),
        (ClusterOutputs(str(tmp_path / "k"), pairs=str(tmp_path / "data")), {}),
        (ClusterOutputs(str(tmp_path / "k")), {"work_dir": str(tmp_path / "data")}),
    ]:
        with pytest.raises(ParamError, match="is a folder holding the input"):
            dedup(inside, DedupParams(), where, JobOptions(**options), client=object())
    assert (tmp_path / "data" / "part-00000.jsonl").read_text() == "".join(lines)


def test_killing_the_job_then_running_it_again_resumes_with_the_same_outputs(
    lines: list[str], tmp_path: Path
) -> None:
    inputs = _files(tmp_path, _many(lines, 8), "one")  # enough to be killed mid-run
    want = _local(tmp_path, inputs, [])
    work = tmp_path / "work"
    args = [sys.executable, "-m", "neardup.cli", "dedup", *inputs, "-o", str(tmp_path / "kept"),
            "--clusters", str(tmp_path / "clusters"), "--pairs", str(tmp_path / "pairs"),
            "--dask", "local:2", "--work-dir", str(work)]  # fmt: skip
    kill_once_done(args, work / "graph", 120)
    assert not (tmp_path / "kept" / "manifest.json").exists()  # nothing looks whole
    with pytest.raises(InputError, match="not a finished neardup output"):
        read_output(str(tmp_path / "kept"))
    rerun_resumes(args)
    assert [concat(tmp_path / name) for name in FOLDERS] == want


def test_ctrl_c_stops_the_run_without_a_traceback_or_a_work_folder_left(
    lines: list[str], tmp_path: Path
) -> None:
    """Ctrl-C reaches the terminal's whole process group: the workers ignore it and the
    command stops them; the temporary work folder goes once no task can write into it."""
    inputs = _files(tmp_path, _many(lines, 40), "one")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    args = [sys.executable, "-m", "neardup.cli", "dedup", *inputs, "-o", str(tmp_path / "kept"),
            "--dask", "local:2"]  # fmt: skip
    job = subprocess.Popen(args, start_new_session=True, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "TMPDIR": str(scratch)})  # fmt: skip
    said = ""
    for line in job.stderr:  # type: ignore[union-attr]
        said += line
        if "scan:" in line:  # the scan's first task is running
            time.sleep(0.3)
            os.killpg(job.pid, signal.SIGINT)
            break
    said += job.stderr.read()  # type: ignore[union-attr]
    assert job.wait(timeout=120) == 130, said
    assert "Traceback" not in said and said.splitlines()[-1] == "neardup: interrupted", said
    time.sleep(1.0)  # a task still running would write now
    assert not list(scratch.glob("neardup-work-*"))
    assert not (tmp_path / "kept" / "manifest.json").exists()


def test_a_lost_worker_says_where_the_finished_stages_are_kept(tmp_path: Path) -> None:
    """Without --work-dir the message said they were kept "in the work folder", which a rerun
    does not read: it names the folder to resume from."""
    from neardup.dask.cluster import cluster_errors
    from neardup.dask.workdir import work_folder
    from neardup.errors import NeardupError

    lost = distributed.KilledWorker("neardup-scan-0", "tcp://w", 3)
    with (
        pytest.raises(NeardupError) as raised,
        cluster_errors(),
        work_folder(None, {}, None) as work,
    ):
        work.write_json("run.json", {})  # the run started: its folder is kept
        raise lost
    kept = str(raised.value).rsplit("--work-dir ", 1)[1].split(":")[0]
    assert "run again with --work-dir" in str(raised.value) and Path(kept).is_dir()
    shutil.rmtree(kept)
    with (
        pytest.raises(NeardupError, match=r"nothing of this run was kept"),
        cluster_errors(),
        work_folder(None, {}, None),  # failed before it started: nothing to keep
    ):
        raise distributed.KilledWorker("neardup-scan-0", "tcp://w", 3)


def test_a_worker_killed_mid_run_changes_nothing(lines: list[str], tmp_path: Path) -> None:
    import threading

    inputs = _files(tmp_path, _many(lines, 8), "one")
    want = _local(tmp_path, inputs, [])
    with connect("local:2") as c:
        pids = list(c.run(os.getpid).values())
        work = tmp_path / "work"
        done: list[object] = []
        runner = threading.Thread(
            target=lambda: done.append(
                dedup(
                    inputs,
                    DedupParams(),
                    _outputs(tmp_path),
                    JobOptions(work_dir=str(work), block_bytes=20000),
                    c,
                )
            )
        )
        runner.start()
        deadline = time.monotonic() + 60
        while not list((work / "scan").glob("part-*.json")) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(pids[0], signal.SIGKILL)  # the nanny starts a new worker; Dask reruns its tasks
        runner.join(timeout=300)
        assert done, "the run did not finish"
    assert [concat(tmp_path / name) for name in FOLDERS] == want


def test_inputs_and_outputs_on_s3_give_the_local_kept_records(
    s3: dict[str, object], lines: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(**s3)  # type: ignore[arg-type]
    fs.mkdir("crawl")
    inputs = _files(tmp_path, lines, "three")
    for path in inputs:
        fs.put_file(path, f"crawl/in/{Path(path).name}")
    want = _local(tmp_path, inputs, [])
    options = json.dumps(s3)
    args = ["dedup", "s3://crawl/in/", "-o", "s3://crawl/out/kept", "--clusters",
            "s3://crawl/out/clusters", "--pairs", "s3://crawl/out/pairs", "--dask", "local:2",
            "--storage-options", options]  # fmt: skip
    assert main(args) == 0
    said = capsys.readouterr()
    assert "testing" not in said.err + said.out  # no credentials in what the run says
    for name, local in zip(FOLDERS, want, strict=True):
        assert read_output(f"s3://crawl/out/{name}", s3) == local, name


def _keep_folders(tmp: Path) -> ClusterOutputs:
    """The output folders of ``_outputs``, as they are (a rerun into what a run left)."""
    return ClusterOutputs(*(str(tmp / name) for name in FOLDERS))


def test_a_rerun_writes_again_the_parts_another_run_or_a_cut_left_in_its_folders(
    client: object, lines: list[str], tmp_path: Path
) -> None:
    # a finished write stage was redone only for missing parts: another run's parts of the
    # same names (or a part cut short) got this run's manifest, and the output was wrong
    inputs, want = _one_file_on_two_workers(client, lines, tmp_path)
    options = JobOptions(block_bytes=7000, work_dir=str(tmp_path / "work"))
    dedup(inputs, DedupParams(), _outputs(tmp_path), options, client)
    other = JobOptions(block_bytes=7000, work_dir=str(tmp_path / "other"))
    dedup(inputs, DedupParams(threshold=0.5), _keep_folders(tmp_path), other, client)
    assert concat(tmp_path / "kept") != want[0]  # the other run's parts, where ours were
    dedup(inputs, DedupParams(), _keep_folders(tmp_path), options, client)
    assert [concat(tmp_path / name) for name in FOLDERS] == want
    part = sorted((tmp_path / "clusters").glob("part-*"))[1]
    part.write_bytes(part.read_bytes()[:-10])  # cut short
    dedup(inputs, DedupParams(), _keep_folders(tmp_path), options, client)
    assert [concat(tmp_path / name) for name in FOLDERS] == want


def _written_with_work_dir(
    client: object, lines: list[str], tmp_path: Path
) -> tuple[list[str], list[bytes], Path, JobOptions]:
    """One file on two workers written once with a work folder: (inputs, the outputs, the work
    folder, the options to run again with)."""
    inputs, want = _one_file_on_two_workers(client, lines, tmp_path)
    work = tmp_path / "work"
    options = JobOptions(block_bytes=7000, work_dir=str(work))
    dedup(inputs, DedupParams(), _outputs(tmp_path), options, client)
    return inputs, want, work, options


def test_a_resumed_write_stage_writes_again_the_parts_deleted_since_it_was_killed(
    client: object, lines: list[str], tmp_path: Path
) -> None:
    inputs, want, work, options = _written_with_work_dir(client, lines, tmp_path)
    (work / "write" / "_SUCCESS").unlink()  # as if killed while writing, every block's part done
    parts = sorted((tmp_path / "kept").glob("part-*"))
    assert len(parts) > 1
    parts[0].unlink()  # then the output folder lost a part (deleted, or another run's)
    (tmp_path / "kept" / "manifest.json").unlink()
    dedup(inputs, DedupParams(), _outputs(tmp_path), options, client)
    assert [concat(tmp_path / name) for name in FOLDERS] == want


@pytest.mark.parametrize("state", ["finished", "killed"])
def test_a_rerun_writes_again_a_part_replaced_by_a_file_of_the_same_size(
    client: object, lines: list[str], tmp_path: Path, state: str
) -> None:
    # a part of the same size with other bytes (another program's, another run's) passed the
    # check of the part's size and got this run's manifest: the output held its bytes
    inputs, want, work, options = _written_with_work_dir(client, lines, tmp_path)
    if state == "killed":  # as if killed while writing, every block's part done
        (work / "write" / "_SUCCESS").unlink()
        (tmp_path / "kept" / "manifest.json").unlink()
    parts = sorted((tmp_path / "kept").glob("part-*"))
    assert len(parts) > 2
    parts[1].write_bytes(one_letter_changed(parts[1].read_bytes()))
    before = {p: os.stat(p) for p in parts}
    dedup(inputs, DedupParams(), _keep_folders(tmp_path), options, client)
    assert [concat(tmp_path / name) for name in FOLDERS] == want
    if state == "killed":  # the other blocks' parts are kept as they were
        now = {p: os.stat(p) for p in parts}
        kept = [p for p in parts if (now[p].st_ino, now[p].st_mtime_ns) ==
                (before[p].st_ino, before[p].st_mtime_ns)]  # fmt: skip
        assert kept == [p for p in parts if p != parts[1]]


def test_a_work_folder_of_the_version_without_stamps_writes_its_parts_again(
    client: object, lines: list[str], tmp_path: Path
) -> None:
    # write answers that hold sizes only (an earlier version's) cannot tell a part of the same
    # size put there since from this run's: their blocks are written again, nothing refused
    inputs, want, work, options = _written_with_work_dir(client, lines, tmp_path)
    for answer in (work / "write").glob("part-*.json"):
        body = json.loads(answer.read_text())
        body.pop("part_stamps", None)
        answer.write_text(json.dumps(body))
    parts = sorted((tmp_path / "kept").glob("part-*"))
    before = {p: os.stat(p) for p in parts}
    dedup(inputs, DedupParams(), _keep_folders(tmp_path), options, client)
    assert [concat(tmp_path / name) for name in FOLDERS] == want
    now = {p: os.stat(p) for p in parts}
    assert all(now[p].st_ino != before[p].st_ino for p in parts)  # written again


def test_a_part_on_s3_replaced_by_an_object_of_the_same_size_is_written_again(
    client: object, lines: list[str], tmp_path: Path, s3: dict[str, object]
) -> None:
    import s3fs

    inputs, want = _one_file_on_two_workers(client, lines, tmp_path)
    fs = s3fs.S3FileSystem(**s3)  # type: ignore[arg-type]
    fs.mkdir("stamps")
    outs = ClusterOutputs(*(f"s3://stamps/{name}" for name in FOLDERS))
    options = JobOptions(block_bytes=7000, work_dir=str(tmp_path / "work"), storage_options=s3)
    dedup(inputs, DedupParams(), outs, options, client)
    part = sorted(fs.glob("stamps/kept/part-*"))[1]
    fs.pipe_file(part, one_letter_changed(fs.cat_file(part)))
    assert read_output("s3://stamps/kept", s3) != want[0]
    dedup(inputs, DedupParams(), outs, options, client)
    assert [read_output(f"s3://stamps/{name}", s3) for name in FOLDERS] == want


def test_a_part_s_stamp_is_its_etag_else_its_modification_time(tmp_path: Path) -> None:
    import datetime

    from fsspec.implementations.local import LocalFileSystem

    from neardup.dask.inputs import file_stamp

    when = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC)
    etag = '"9e107d9d372bb6826bd81d3542a419d6"'
    s3_like = {"name": "b/k/part-00000.jsonl", "size": 43, "type": "file", "ETag": etag,
               "LastModified": when, "StorageClass": "STANDARD"}  # fmt: skip
    assert file_stamp(s3_like) == etag
    assert file_stamp({**s3_like, "ETag": None}) == str(when)
    (tmp_path / "a").write_bytes(b"x")
    info = LocalFileSystem().info(str(tmp_path / "a"))
    assert file_stamp(info) == str(info["mtime"])
    assert file_stamp({"name": "p", "size": 1, "type": "file"}) is None  # then the size alone
    assert file_stamp({"name": "p", "size": 1, "ETag": ""}) is None


def test_a_part_counts_as_written_with_its_size_and_stamp_or_its_size_alone_without_one(
    tmp_path: Path,
) -> None:
    from fsspec.implementations.local import LocalFileSystem

    from neardup.dask.folders import _parts_lost
    from neardup.dask.inputs import file_stamp

    (tmp_path / "part-00000.jsonl").write_bytes(b"abc\n")
    stamp = file_stamp(LocalFileSystem().info(str(tmp_path / "part-00000.jsonl")))
    folders = [(str(tmp_path), "jsonl", "kept")]

    def lost(answer: dict[str, object]) -> bool:
        return _parts_lost(folders, {0: answer}, {}) == [0]  # type: ignore[arg-type]

    assert not lost({"part_bytes": {"kept": 4}, "part_stamps": {"kept": stamp}})
    assert not lost({"part_bytes": {"kept": 4}, "part_stamps": {"kept": None}})  # none reported
    assert lost({"part_bytes": {"kept": 4}, "part_stamps": {"kept": "another"}})
    assert lost({"part_bytes": {"kept": 5}, "part_stamps": {"kept": stamp}})
    assert lost({"part_bytes": {"kept": 4}})  # an earlier version's answer
