"""What a cluster run checks before any cluster starts: storage that cannot be reached, and
local outputs that cannot be written, are said in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from neardup.cli import main
from neardup.dask import ClusterOutputs, JobOptions, dedup
from neardup.errors import ParamError
from neardup.params import DedupParams


def _corpus(tmp: Path) -> str:
    path = tmp / "in.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": f"doc {i}"}) + "\n" for i in range(5)))
    return str(path)


def _refused(inputs: list[str], outputs: ClusterOutputs, **options: object) -> str:
    """The ParamError's message a cluster run gives before it needs a cluster."""
    with pytest.raises(ParamError) as caught:
        dedup(inputs, DedupParams(), outputs, JobOptions(**options), client=object())  # type: ignore[arg-type]
    return str(caught.value)


def test_storage_options_a_filesystem_refuses_are_one_line_naming_the_path(
    s3: dict[str, object], tmp_path: Path
) -> None:
    bad = {**s3, "bogus_opt": 1}
    said = _refused(["s3://bkt/in/chain.jsonl"], ClusterOutputs(str(tmp_path / "k")),
                    storage_options=bad)  # fmt: skip
    assert said.startswith("s3://bkt/in/chain.jsonl: cannot reach it (TypeError: ")
    assert "bogus_opt" in said and "--storage-options keys" in said
    assert "testing" not in said and str(s3["endpoint_url"]) not in said  # no option's value
    said = _refused([_corpus(tmp_path)], ClusterOutputs("s3://bkt/out/k"), storage_options=bad)
    assert said.startswith("s3://bkt/out/k: cannot reach it (TypeError: ")
    work = ClusterOutputs(str(tmp_path / "k"))
    said = _refused([_corpus(tmp_path)], work, work_dir="s3://bkt/w", storage_options=bad)
    assert said.startswith("s3://bkt/w: cannot reach it (TypeError: ")


def test_an_endpoint_that_does_not_answer_is_one_line_in_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = json.dumps({"client_kwargs": {"endpoint_url": "http://127.0.0.1:1"},
                          "key": "k3y", "secret": "s3cret", "config_kwargs":
                          {"retries": {"max_attempts": 1}}})  # fmt: skip
    args = ["dedup", "s3://bkt/in/chain.jsonl", "-o", str(tmp_path / "k"), "--dask", "local:2",
            "--storage-options", options]  # fmt: skip
    assert main(args) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "s3://bkt/in/chain.jsonl: cannot reach it (EndpointConnectionError: " in err
    assert "127.0.0.1:1" not in err and "s3cret" not in err and "k3y" not in err


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux's /proc")
def test_local_outputs_that_cannot_be_written_are_refused_before_the_cluster_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = _corpus(tmp_path)
    kept = str(tmp_path / "k")
    cases = [
        (["-o", "/proc/o"], "cannot create /proc/o in folder /proc: "),
        (["-o", kept, "--clusters", "/proc/c"], "cannot create /proc/c in folder /proc: "),
        (["-o", kept, "--pairs", f"{inputs}/p"], f"cannot write {inputs}/p: a part of the path"),
        (["-o", kept, "--work-dir", "/proc/w"], "cannot create /proc/w in folder /proc: "),
        (["-o", kept, "--summary-json", "/proc/s.json"],
         "cannot create /proc/s.json in folder /proc: "),
        (["-o", "/dev/null"], "-o /dev/null is a device or pipe; with --dask outputs are "),
        (["-o", kept, "--summary-json", str(tmp_path / "nodir" / "s.json")],
         f"cannot write {tmp_path}/nodir/s.json: folder {tmp_path}/nodir does not exist; "
         "create it first"),
    ]  # fmt: skip
    for extra, said in cases:
        assert main(["dedup", inputs, *extra, "--dask", "local:2", "-q"]) == 1, extra
        err = capsys.readouterr().err
        assert err == f"neardup: error: {said}" + err.split(said, 1)[-1], err
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]  # nothing made


def test_new_local_output_folders_under_new_folders_are_made(tmp_path: Path) -> None:
    inputs = _corpus(tmp_path)
    deep = tmp_path / "a" / "b"
    args = ["dedup", inputs, "-o", str(deep / "k"), "--work-dir", str(deep / "w"),
            "--summary-json", str(tmp_path / "s.json"), "--dask", "local:1", "-q"]  # fmt: skip
    assert main(args) == 0
    assert (deep / "k" / "manifest.json").exists() and (tmp_path / "s.json").exists()


def test_a_local_folder_that_cannot_be_read_is_one_line_before_the_cluster_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # fsspec's walk passed over it: the run listed no file and failed in Dask with a traceback
    if Path("/proc/1/map_files").exists() and not _listable(Path("/proc/1/map_files")):
        folder = Path("/proc/1/map_files")
    else:
        folder = tmp_path / "locked"
        folder.mkdir()
        folder.chmod(0)
        if _listable(folder):
            pytest.skip("no folder here is unreadable to this user")
    args = ["dedup", str(folder), "-o", str(tmp_path / "k"), "--dask", "local:1", "-q"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"neardup: error: {folder}: cannot read the folder (")
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "k").exists()


def _listable(folder: Path) -> bool:
    try:
        list(folder.iterdir())
    except OSError:
        return False
    return True


def test_a_folder_without_files_gives_empty_outputs_as_one_machine_does(tmp_path: Path) -> None:
    # Dask's from_map refused an empty list of blocks: a ValueError traceback
    (tmp_path / "in").mkdir()
    outs = ["-o", str(tmp_path / "k"), "--clusters", str(tmp_path / "c"),
            "--summary-json", str(tmp_path / "s.json")]  # fmt: skip
    assert main(["dedup", str(tmp_path / "in"), *outs, "--dask", "local:1", "-q"]) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert (summary["documents"], summary["kept"], summary["removed"]) == (0, 0, 0)
    for folder in ("k", "c"):
        manifest = json.loads((tmp_path / folder / "manifest.json").read_text())
        assert manifest["parts"] == []


def test_one_file_given_twice_is_refused_before_the_cluster_starts(tmp_path: Path) -> None:
    inputs = _corpus(tmp_path)
    said = _refused([inputs, inputs], ClusterOutputs(str(tmp_path / "k")))
    assert said == f"the input {inputs} is given twice; give each input once"


def test_a_local_worker_memory_limit_too_small_to_run_is_refused_before_the_cluster_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the workers paused at 80% of 300 MB right after loading the kernels: the run hung
    inputs = _corpus(tmp_path)
    for command in (["dedup", inputs], ["decontaminate", inputs, "--against", inputs]):
        args = [*command, "-o", str(tmp_path / "k"), "--dask", "local:2", "--memory-limit", "300M"]
        assert main(args) == 1
        err = capsys.readouterr().err
        assert err.startswith("neardup: error: --memory-limit 315 MB per worker is too little: ")
        assert len(err.splitlines()) == 1
    assert not (tmp_path / "k").exists()


def test_a_work_folder_or_output_inside_an_input_folder_is_refused_before_the_cluster_starts(
    tmp_path: Path,
) -> None:
    # the first run went through; every run after it, --restart too, listed the work folder's
    # files as inputs and stopped ("a cluster run reads JSONL ... not text")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_text(Path(_corpus(tmp_path)).read_text())
    said = _refused([str(folder)], ClusterOutputs(str(tmp_path / "k")), work_dir=str(folder / "w"))
    assert said == (
        f"--work-dir {folder / 'w'} is inside the input folder {folder}: a run again would read "
        "its files as inputs; put it beside the inputs, not among them"
    )
    said = _refused([str(folder)], ClusterOutputs(str(folder / "kept")))
    assert said.startswith(f"-o {folder / 'kept'} is inside the input folder {folder}")
    glob = ClusterOutputs(str(folder / "kept"))  # a glob's matches are files, not the folder
    with pytest.raises(Exception) as past:  # past the checks: the stand-in is no Client
        dedup([str(folder / "*.jsonl")], DedupParams(), glob, JobOptions(), client=object())  # type: ignore[arg-type]
    assert not isinstance(past.value, ParamError), past.value


def test_local_workers_that_cannot_start_are_one_error_naming_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Dask's "RuntimeError: Nanny failed to start." and its logged tracebacks were all it said
    import neardup.dask.cluster as cluster
    from neardup.dask import connect
    from neardup.errors import NeardupError

    monkeypatch.setattr(cluster, "WORKER_PRELOAD", "neardup.no_such_module")
    with pytest.raises(NeardupError) as caught, connect("local:1"):
        pass
    assert str(caught.value).startswith(
        "the local Dask workers could not start (ModuleNotFoundError: No module named "
        "'neardup.no_such_module'); check that neardup with its Dask extra imports"
    )
