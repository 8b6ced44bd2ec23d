"""The neardup command: outputs, summaries, exit codes and messages, as a user sees them."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neardup.cli import _module_name, main
from neardup.cli.parser import parse
from neardup.testing.synth import near_duplicate_corpus, random_documents


def _write_corpus(path: Path, n: int = 400) -> list[dict[str, object]]:
    base = random_documents(n // 2, seed=5, words=(40, 200))
    texts = near_duplicate_corpus(base, n, 0.5, seed=6).texts
    records = [{"id": f"doc{i}", "text": t, "extra": {"i": i}} for i, t in enumerate(texts)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return records


def test_dedup_writes_kept_records_clusters_and_pairs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    records = _write_corpus(src)
    out, cl, pairs = tmp_path / "kept.jsonl", tmp_path / "clusters.jsonl", tmp_path / "pairs.jsonl"
    code = main(["dedup", str(src), "-o", str(out), "--clusters", str(cl), "--pairs", str(pairs)])
    assert code == 0
    err = capsys.readouterr().err
    assert "documents removed" in err and "clusters (2+ docs)" in err and "peak memory" in err
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    clusters = [json.loads(line) for line in cl.read_text().splitlines()]
    accepted = [json.loads(line) for line in pairs.read_text().splitlines()]
    assert 0 < len(kept) < len(records)
    assert all(r["extra"] == {"i": int(str(r["id"])[3:])} for r in kept)  # all fields preserved
    removed = {c["id"] for c in clusters if not c["kept"]}
    assert len(kept) + len(removed) == len(records)
    assert {r["id"] for r in kept}.isdisjoint(removed)
    assert accepted and all(0.8 <= p["score"] <= 1.0 for p in accepted)


def test_dedup_is_deterministic_byte_for_byte(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    _write_corpus(src, 200)
    outputs = []
    for run, batch in enumerate(("7", "5000")):
        out, cl = tmp_path / f"k{run}.jsonl", tmp_path / f"c{run}.jsonl"
        assert (
            main(
                [
                    "dedup",
                    str(src),
                    "-o",
                    str(out),
                    "--clusters",
                    str(cl),
                    "--batch-size",
                    batch,
                    "-q",
                ]
            )
            == 0
        )
        outputs.append((out.read_bytes(), cl.read_bytes()))
    assert outputs[0] == outputs[1]


def test_malformed_line_stops_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text('{"id": "a", "text": "fine text"}\n{"id": "b", "text": oops}\n')
    out = tmp_path / "kept.jsonl"
    assert main(["dedup", str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl line 2" in err and err.startswith("neardup: error:")
    assert not out.exists()  # nothing half-written


def test_skip_mode_counts_bad_records_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text(
        '{"id": "a", "text": "fine text here"}\n{"id": "b"}\nnot json\n{"id": "c", "text": "more"}\n'
    )
    out, summary = tmp_path / "kept.jsonl", tmp_path / "summary.json"
    assert (
        main(
            [
                "dedup",
                str(src),
                "-o",
                str(out),
                "--on-error",
                "skip",
                "--summary-json",
                str(summary),
            ]
        )
        == 0
    )
    assert len(out.read_text().splitlines()) == 2
    report = json.loads(summary.read_text())
    assert report["skipped_records"] == 2 and report["documents"] == 2


def test_missing_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dedup", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "k.jsonl")]) == 1
    assert "nope.jsonl" in capsys.readouterr().err


def test_bad_parameters_exit_1_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    _write_corpus(src, 20)
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--threshold", "1.5"]) == 1
    assert "threshold" in capsys.readouterr().err


def test_plan_reproduces_broders_example(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    png = tmp_path / "curve.png"
    assert main(["plan", "--threshold", "0.9", "--features", "6,14,2", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "k = 6" in out and "48 bytes" in out and "0.909" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_plot_of_an_unknown_picture_type_stops_before_the_plan_is_printed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    txt = tmp_path / "curve.txt"
    assert main(["plan", "--threshold", "0.9", "--plot", str(txt)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "unknown picture type '.txt'" in err and not txt.exists()


def test_a_pgf_plot_without_its_tex_system_stops_in_one_line_before_the_plan_is_printed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no xelatex (nor anything) to be found
    pgf = tmp_path / "curve.pgf"
    assert main(["plan", "--threshold", "0.9", "--plot", str(pgf)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and not pgf.exists() and len(err.splitlines()) == 1
    assert "a .pgf picture is typeset by xelatex, which is not installed" in err


def test_a_plot_to_standard_output_is_refused_before_the_plan_is_printed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "a b c"}\n{"text": "a b d"}\n')
    for args in (["--plot", "-"], ["--plot", "-", "--sample", str(src)]):
        assert main(["plan", "--threshold", "0.8", *args]) == 1
        out, err = capsys.readouterr()
        assert out == "" and "cannot draw to -" in err and len(err.splitlines()) == 1


def test_a_plot_to_a_name_of_standard_output_is_refused_before_the_plan_is_printed(
    tmp_path: Path,
) -> None:
    printed = tmp_path / "plan.txt"
    plan = [sys.executable, "-m", "neardup.cli", "plan", "--threshold", "0.8", "--plot"]
    for where in ("/dev/stdout", str(printed)):
        with printed.open("wb") as out:
            proc = subprocess.run(
                [*plan, where],
                stdout=out,
                stderr=subprocess.PIPE,
                text=True,
                check=False,
            )
        assert proc.returncode == 1 and printed.read_bytes() == b""
        assert f"cannot draw to {where}: the plan's text goes to standard output" in proc.stderr


def test_console_script_reads_stdin(tmp_path: Path) -> None:
    lines = [
        json.dumps({"text": t})
        for t in ["one two three four five six", "ONE two, three four five six!", "other"]
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "dedup", "-", "-o", "-", "-q"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    kept = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [k["text"] for k in kept] == ["one two three four five six", "other"]


def test_simhash_method_shares_the_dedup_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    records = _write_corpus(src, 200)
    out = tmp_path / "kept.jsonl"
    assert (
        main(["dedup", str(src), "-o", str(out), "--method", "simhash", "--max-distance", "3"]) == 0
    )
    kept = out.read_text().splitlines()
    assert 0 < len(kept) < len(records)
    assert "documents removed" in capsys.readouterr().err


def test_keep_field_keeps_the_preferred_cluster_member(tmp_path: Path) -> None:
    text = " ".join(f"word{i}" for i in range(40))
    rows = [
        {"id": "a", "text": text, "quality": 0.2},
        {"id": "b", "text": text.upper(), "quality": 0.9},
        {"id": "c", "text": text + "!", "quality": None},
        {"id": "d", "text": "something else entirely", "quality": 0.1},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for prefer, winner in (("max", "b"), ("min", "a")):
        out = tmp_path / f"kept_{prefer}.jsonl"
        args = [
            "dedup",
            str(src),
            "-o",
            str(out),
            "--keep-field",
            "quality",
            "--keep-prefer",
            prefer,
            "-q",
        ]
        assert main(args) == 0
        assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == [winner, "d"]


def test_a_keep_field_no_document_has_is_one_warning_after_the_last_chance_to_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warning comes after ``_jit.settle()``: a small run that restarts compiled would
    otherwise print it once in each process."""
    from neardup._kernels import _jit

    said: list[str] = []
    settle = _jit.settle
    monkeypatch.setattr(_jit, "settle", lambda: (said.append("settle"), settle()))
    # capsys makes sys.stderr an object whose write can be replaced, even under ``pytest -s``
    monkeypatch.setattr(sys.stderr, "write", lambda text: said.append(text) or len(text))
    text = " ".join(f"word{i}" for i in range(40))
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": text}) + "\n" for i in "ab"))
    assert (
        main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--keep-field", "q", "-q"]) == 0
    )
    assert said == [
        "settle",
        "neardup: warning: no document has the field 'q'; clusters keep their first member\n",
    ]


def test_hybrid_verification_reads_borderline_texts_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    _write_corpus(src, 400)
    kept = {}
    for verify in ("hybrid", "exact"):
        out = tmp_path / f"{verify}.jsonl"
        assert (
            main(["dedup", str(src), "-o", str(out), "--verify", verify, "--threshold", "0.6"]) == 0
        )
        kept[verify] = out.read_bytes()
    found = re.search(r"\(([\d,]+) exactly; ([\d,]+) texts read again", capsys.readouterr().err)
    assert found and int(found[1].replace(",", "")) > 0 and int(found[2].replace(",", "")) > 0
    assert kept["hybrid"] == kept["exact"]


def test_plan_for_simhash_says_which_tables_it_chose(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--max-distance", "3", "--docs", "1000000"]) == 0
    out = capsys.readouterr().out
    assert "4 blocks of 16/16/16/16 bits" in out and "4 tables" in out
    assert main(["plan"]) == 1
    assert "--threshold" in capsys.readouterr().err


def test_prefetch_keeps_order_passes_errors_and_stops_its_reader() -> None:
    import threading

    from neardup._prefetch import prefetch

    assert list(prefetch(iter(range(100)))) == list(range(100))

    def failing() -> object:
        yield 1
        raise ValueError("bad record")

    got = []
    with pytest.raises(ValueError, match="bad record"):
        for x in prefetch(failing()):  # type: ignore[arg-type]
            got.append(x)
    assert got == [1]

    def endless() -> object:
        i = 0
        while True:
            yield i
            i += 1

    gen = prefetch(endless())  # type: ignore[arg-type]
    assert [next(gen) for _ in range(5)] == [0, 1, 2, 3, 4]
    gen.close()  # the consumer stops early: the reader thread must end too
    assert not any(t.name == "neardup-reader" for t in threading.enumerate())


def _wait_until_catching(pid: int, signum: int, timeout: float = 120.0) -> None:
    """Poll /proc until the process has a handler for ``signum`` (Linux), however slow start-up is."""
    import time

    deadline = time.monotonic() + timeout
    status = Path(f"/proc/{pid}/status")
    while time.monotonic() < deadline:
        caught = [line for line in status.read_text().splitlines() if line.startswith("SigCgt:")]
        if caught and int(caught[0].split()[1], 16) >> (signum - 1) & 1:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never installed a handler for signal {signum}")


def test_sigterm_stops_cleanly_without_leaving_partial_output(tmp_path: Path) -> None:
    import signal
    import time

    out = tmp_path / "kept.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "neardup.cli", "dedup", "-", "-o", str(out)],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"text": "some words to read"}) + "\n")
    proc.stdin.flush()
    _wait_until_catching(proc.pid, signal.SIGTERM)  # the CLI's handler is installed
    time.sleep(0.5)  # and it is waiting for more input on the open pipe
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "interrupted" in err
    assert list(tmp_path.iterdir()) == []  # no output, no temporary file


def test_an_interrupt_while_the_engine_loads_is_handled_once_it_has_loaded() -> None:
    import os
    import signal

    from neardup.run import _signals_deferred

    seen: list[str] = []
    old = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append("handled"))
    try:
        with _signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # a handler would run in this loop, were it not deferred
                pass
            seen.append("loaded")
        for _ in range(1000):  # and runs here
            pass
    finally:
        signal.signal(signal.SIGTERM, old)
    assert seen == ["loaded", "handled"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-distance", "4"], "--max-distance only applies to --method simhash"),
        (
            ["--method", "simhash", "--features", "6,14,2"],
            "--features only applies to --method minhash",
        ),
        (["--method", "simhash", "--threshold", "0.7"], "threshold does nothing with the SimHash"),
        (["--keep", "longest", "--keep-field", "n"], "--keep and --keep-field"),
        (["--keep-prefer", "min"], "--keep-prefer applies to --keep-field"),
    ],
)
def test_options_that_would_do_nothing_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    src = tmp_path / "in.jsonl"
    _write_corpus(src, 20)
    out = tmp_path / "kept.jsonl"
    assert main(["dedup", str(src), "-o", str(out), *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not out.exists()


def test_clusters_file_names_the_kept_document_each_removed_one_duplicates(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    records = _write_corpus(src, 300)
    texts = {str(r["id"]): str(r["text"]) for r in records}
    cl = tmp_path / "clusters.jsonl"
    assert main(["dedup", str(src), "--clusters", str(cl), "--verify", "exact", "--quiet"]) == 0
    rows = [json.loads(line) for line in cl.read_text().splitlines()]
    kept = {r["id"] for r in rows if r["kept"]}
    removed = [r for r in rows if not r["kept"]]
    assert removed
    from neardup.resemblance import jaccard
    from neardup.shingles import shingle_batch

    for r in removed:
        assert r["duplicate_of"] in kept  # a star around a kept document
        batch = shingle_batch([texts[r["id"]], texts[r["duplicate_of"]]])
        assert r["score"] == pytest.approx(jaccard(batch.doc(0), batch.doc(1)))
        assert r["score"] >= 0.8
    assert all(r["duplicate_of"] is None and r["score"] is None for r in rows if r["kept"])


def test_keep_aware_removal_keeps_the_end_of_a_chain_that_components_removes(
    tmp_path: Path,
) -> None:
    words = random_documents(1, seed=9, words=(60, 60))[0].split()
    a = " ".join(words)
    b = " ".join(words[:50] + ["zz"] * 10)  # ~0.7 with a
    c = " ".join(words[:40] + ["zz"] * 20)  # ~0.7 with b, ~0.5 with a
    src = tmp_path / "chain.jsonl"
    src.write_text(
        "".join(
            json.dumps({"id": i, "text": t}) + "\n" for i, t in zip("abc", (a, b, c), strict=True)
        )
    )
    kept = {}
    for removal in ("keep-aware", "components"):
        out = tmp_path / f"{removal}.jsonl"
        args = ["dedup", str(src), "-o", str(out), "--threshold", "0.6", "--verify", "exact"]
        assert main([*args, "--removal", removal, "--quiet"]) == 0
        kept[removal] = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert kept["components"] == ["a"]
    assert kept["keep-aware"] == ["a", "c"]


def test_the_number_of_jobs_never_changes_the_outputs(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    _write_corpus(src, 300)
    digests = set()
    for jobs in ("1", "2", "3"):
        outs = [tmp_path / f"{name}{jobs}.jsonl" for name in ("k", "c", "p")]
        args = ["dedup", str(src), "-o", str(outs[0]), "--clusters", str(outs[1])]
        args += ["--pairs", str(outs[2]), "--batch-size", "17", "--jobs", jobs, "--quiet"]
        assert main(args) == 0
        digests.add(tuple(o.read_bytes() for o in outs))
    assert len(digests) == 1


def test_ordered_map_keeps_input_order_and_passes_errors() -> None:
    import time

    from neardup._prefetch import ordered_map

    def slow_square(x: int) -> int:
        time.sleep(0.001 * ((7 * x) % 5))  # finish out of order
        if x == 41:
            raise ValueError("forty-one")
        return x * x

    got = [r for _, r in ordered_map(slow_square, range(40), jobs=3)]
    assert got == [x * x for x in range(40)]
    with pytest.raises(ValueError, match="forty-one"):
        list(ordered_map(slow_square, range(50), jobs=3))


def test_hybrid_rechecks_in_several_threads_keep_what_one_thread_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``--jobs 3`` the re-check reads the borderline lines and shingles them in chunks,
    in threads (chunks made tiny here so there are many): the outputs are byte-identical."""
    from neardup import verify
    from neardup.io.formats import jsonl

    monkeypatch.setattr(verify, "RECHECK_CHUNK", 7)
    monkeypatch.setattr(jsonl, "TEXTS_AT_CHUNK", 5)
    base = random_documents(200, seed=31, words=(30, 120))
    texts = near_duplicate_corpus(base, 400, 0.6, seed=32).texts
    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    outputs = {}
    for jobs in (1, 3):
        out, clusters, summary = (
            tmp_path / f"{n}{jobs}.jsonl" for n in ("kept", "clusters", "summary")
        )
        args = ["dedup", str(src), "-o", str(out), "--clusters", str(clusters), "--threshold"]
        args += ["0.7", "--verify", "hybrid", "--quiet", "--jobs", str(jobs)]
        assert main([*args, "--summary-json", str(summary)]) == 0
        outputs[jobs] = (out.read_bytes(), clusters.read_bytes())
        rechecked = json.loads(summary.read_text())["rechecked_pairs"]
        assert rechecked > 2 * 7  # more borderline documents than two chunks
    assert outputs[1] == outputs[3]


def test_hybrid_rechecks_read_only_the_borderline_lines_and_agree_with_the_library(
    tmp_path: Path,
) -> None:
    """Plain, gzip and piped JSONL with blank and bad lines: the CLI's hybrid re-check (which
    seeks the borderline records by line) keeps what the library keeps with the texts in memory."""
    import gzip

    from neardup.engine import Deduplicator
    from neardup.params import DedupParams

    base = random_documents(200, seed=21, words=(30, 120))
    texts = near_duplicate_corpus(base, 400, 0.6, seed=22).texts
    lines = []
    for i, t in enumerate(texts):
        lines.append(json.dumps({"id": f"d{i}", "text": t}))
        if i % 50 == 7:
            lines += ["", "{not json"]  # blank and bad lines shift the line numbers
    raw = ("\n".join(lines) + "\n").encode()
    plain, packed = tmp_path / "in.jsonl", tmp_path / "in.jsonl.gz"
    plain.write_bytes(raw)
    packed.write_bytes(gzip.compress(raw))
    want = Deduplicator(DedupParams(threshold=0.7, verify="hybrid")).fit(texts)
    assert want.stats_.rechecked_pairs > 0
    want_ids = [f"d{i}" for i in np.flatnonzero(want.kept_)]
    for source in (plain, packed, "-"):
        out = tmp_path / "kept.jsonl"
        args = ["dedup", str(source), "-o", str(out), "--threshold", "0.7", "--on-error", "skip"]
        args += ["--verify", "hybrid", "--quiet"]
        if source == "-":
            proc = subprocess.run(
                [sys.executable, "-m", "neardup.cli", *args], input=raw, capture_output=True
            )
            assert proc.returncode == 0, proc.stderr
        else:
            assert main(args) == 0
        assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == want_ids


def test_a_memory_limit_spills_blocks_to_disk_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    _write_corpus(src, 300)
    results = []
    for limit in (None, "0", "20K"):
        outs = [tmp_path / f"{name}{limit}.jsonl" for name in ("k", "c", "p")]
        summary = tmp_path / f"s{limit}.json"
        args = ["dedup", str(src), "-o", str(outs[0]), "--clusters", str(outs[1])]
        args += ["--pairs", str(outs[2]), "--batch-size", "23", "--summary-json", str(summary)]
        args += [] if limit is None else ["--memory-limit", limit]
        assert main([*args, "--quiet"]) == 0
        results.append(tuple(o.read_bytes() for o in outs))
        spilled = json.loads(summary.read_text())["spilled_bytes"]
        assert (spilled == 0) == (limit is None)
    assert len(set(results)) == 1
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--memory-limit", "lots"]) == 1
    assert "a size must look like" in capsys.readouterr().err


def test_spilled_blocks_are_removed_after_the_fit(tmp_path: Path) -> None:
    from neardup.engine import Deduplicator
    from neardup.params import DedupParams

    texts = random_documents(200, seed=4, words=(20, 60))
    dedup = Deduplicator(DedupParams(verify="exact"), memory_limit=0, spill_dir=str(tmp_path))
    dedup.fit(texts, batch_size=50)
    assert dedup.stats_.spilled_bytes > 0
    assert list(tmp_path.iterdir()) == []


def test_the_default_memory_limit_is_a_share_of_the_available_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neardup import run

    assert run.available_memory() > 0  # this machine's, read before it is replaced
    src = tmp_path / "in.jsonl"
    _write_corpus(src, 300)
    spilled = {}
    for name, available in (("roomy", 1 << 40), ("tight", 400_000)):
        monkeypatch.setattr(run, "available_memory", lambda available=available: available)
        assert run.default_memory_limit() == int(available * run.MEMORY_SHARE)
        summary = tmp_path / f"{name}.json"
        args = ["dedup", str(src), "-o", str(tmp_path / f"{name}.jsonl"), "--batch-size", "30"]
        assert main([*args, "--summary-json", str(summary), "--quiet"]) == 0
        spilled[name] = json.loads(summary.read_text())["spilled_bytes"]
    assert spilled["roomy"] == 0 < spilled["tight"]  # 50 KB of blocks held, the rest on disk
    assert (tmp_path / "roomy.jsonl").read_bytes() == (tmp_path / "tight.jsonl").read_bytes()


@pytest.mark.parametrize(
    ("argv", "module"),
    [
        (["dedup", "x"], "dedup"),
        (["dedup", "x", "--index", "ix.db"], "dedup_index"),
        (["dedup", "x", "--add"], "dedup_index"),
        (["dedup", "x", "--unit", "line"], "units"),
        (["plan", "--threshold", "0.8"], "plan"),
        (["plan", "--max-distance", "3"], "plan_tables"),
        (["plan", "--method", "simhash"], "plan_tables"),
        (["plan", "--threshold", "0.8", "--sample", "x"], "plan_sample"),
        (["decontaminate", "x", "--against", "y"], "decontaminate"),
        (["compare", "a", "b"], "compare"),
        (["report", "x", "-o", "y"], "report"),
        (["serve", "ix.db"], "serve"),
        *(
            (["index", c, "ix.db"], "index")
            for c in ("create", "stats", "check", "repair", "compact")
        ),
        (["index", "upgrade", "ix.db"], "index"),
        (["index", "remove", "ix.db", "a"], "index"),
        (["index", "retire", "ix.db", "a"], "index"),
        (["index", "moved", "ix.db", "a"], "index"),
        (["index", "add", "ix.db", "x"], "index_docs"),
        (["index", "query", "ix.db", "x"], "index_docs"),
    ],
)
def test_every_command_line_is_run_by_one_command_module(argv: list[str], module: str) -> None:
    """The dispatcher names a module of neardup.cli that has the command's ``run``."""
    assert _module_name(parse(argv)) == module
    assert callable(importlib.import_module(f"neardup.cli.{module}").run)


def test_plan_and_dedup_refuse_a_max_distance_the_tables_cannot_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "a b c"}\n')
    dedup = ["dedup", str(src), "-o", str(tmp_path / "out.jsonl")]
    for args in (
        ["plan", "--max-distance", "20"],
        [*dedup, "--method", "simhash", "--max-distance", "32"],
    ):
        assert main(args) == 1
        err = capsys.readouterr().err
        assert "--max-distance" in err and "from 0 to 19" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "simhash", "--plot", "c.png"], "--plot only applies to --method minhash"),
        (["--max-distance", "3", "--fn-cost", "5", "--budget", "64"], "--fn-cost, --budget only"),
        (["--max-distance", "3", "--verify", "exact"], "--verify changes nothing in the SimHash"),
        (["--threshold", "0.8", "--docs", "5"], "--docs only applies to --method simhash"),
        (["--threshold", "0.8", "--floor", "7"], "--floor only applies with --sample"),
        (["--threshold", "0.8", "--sample-size", "-1"], "--sample-size only applies with --sample"),
        (["--threshold", "0.8", "--seed", "-3"], "--seed only applies with --sample"),
        (["--threshold", "0.8", "--text-field", "body"], "--text-field only applies with --sample"),
        (["--threshold", "0.8", "--fn-cost", "-1"], "cost_fn (--fn-cost) must be a positive"),
        (["--max-distance", "3", "--docs", "-5"], "collection size n (--docs)"),
    ],
)
def test_plan_refuses_options_its_plan_would_ignore_or_values_it_cannot_use(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", *args]) == 1
    out, err = capsys.readouterr()
    assert out == "" and message in err and len(err.splitlines()) == 1
