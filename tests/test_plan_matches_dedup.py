"""`neardup plan` prints what `neardup dedup` with the same options uses: one function decides.

Issue 29: plan used to suggest k=25, s=10, r=3 for 0.8 (equal costs, P(0.8) = 0.51) while dedup
used k=38, s=6, r=3 (misses 1000 times costlier, P(0.8) = 0.999). Both now go through
``planner.features_for``; these tests hold them together through the command line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from neardup.cli import main
from neardup.testing.synth import near_duplicate_corpus, random_documents

#: Option sets given to both commands (shingling options change nothing about the features
#: but a dedup command line must be accepted by plan as it is).
OPTION_SETS = [
    [],
    ["--verify", "none"],
    ["--verify", "exact", "--num-perm", "64"],
    ["--num-perm", "128", "--sketch", "classic", "-w", "3", "--tokens", "char"],
    ["--features", "6,14,2"],
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = random_documents(75, seed=11, words=(40, 120))
    texts = near_duplicate_corpus(base, 150, 0.5, seed=12).texts
    path = tmp_path_factory.mktemp("plan") / "in.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
    return path


def _plan(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[str, tuple[int, ...]]:
    """plan's printout and the (k, s, r) of its report."""
    assert main(["plan", *args]) == 0
    out = capsys.readouterr().out
    found = re.search(r"k = (\d+) features .* s = (\d+) sketch .* r = (\d+) shared", out)
    assert found, out
    return out, tuple(int(x) for x in found.groups())


def _method_line(out: str) -> str:
    """The method line plan names (the line after "method line:")."""
    lines = out.splitlines()
    return next(lines[i + 1].strip() for i, x in enumerate(lines) if x.endswith("method line:"))


def _dedup_summary(src: Path, tmp_path: Path, args: list[str]) -> dict[str, object]:
    summary = tmp_path / "summary.json"
    run = ["dedup", str(src), "-o", str(tmp_path / "kept.jsonl"), "--summary-json", str(summary)]
    assert main([*run, "--quiet", *args]) == 0
    return dict(json.loads(summary.read_text()))


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: " ".join(o) or "defaults")
@pytest.mark.parametrize("threshold", ["0.6", "0.8", "0.95"])
def test_plan_prints_the_features_and_curve_point_dedup_reports_using(
    corpus: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    threshold: str,
    options: list[str],
) -> None:
    out, (k, s, r) = _plan(capsys, ["--threshold", threshold, *options])
    p_plan = float(re.search(rf"P\({threshold}\) = ([\d.e-]+)\n", out)[1])  # type: ignore[index]
    used = _dedup_summary(corpus, tmp_path, ["--threshold", threshold, *options])["method"]
    assert used == _method_line(out)
    found = re.search(rf"k=(\d+), s=(\d+), r=(\d+) .*; P\({threshold}\) = ([\d.e-]+)", str(used))
    assert found, used
    assert (int(found[1]), int(found[2]), int(found[3])) == (k, s, r)
    assert float(found[4]) == pytest.approx(p_plan, abs=6e-4)
    if "--features" not in options:  # planned: the cost model follows the verification
        assert ("fn-cost 1 (unverified)" if "none" in options else "fn-cost 1000") in out
        assert (p_plan >= 0.99) == ("none" not in options)


def test_dedup_with_plans_printed_features_keeps_what_its_default_keeps(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for threshold in ("0.7", "0.8"):
        _, (k, s, r) = _plan(capsys, ["--threshold", threshold])
        default = _dedup_summary(corpus, tmp_path, ["--threshold", threshold])
        planned = (tmp_path / "kept.jsonl").read_bytes()
        given = _dedup_summary(
            corpus, tmp_path, ["--threshold", threshold, "--features", f"{k},{s},{r}"]
        )
        assert (tmp_path / "kept.jsonl").read_bytes() == planned
        assert given["removed"] == default["removed"] > 0


def test_other_costs_name_the_features_dedup_then_needs(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, (k, s, r) = _plan(capsys, ["--threshold", "0.8", "--fn-cost", "1"])
    assert (k, s, r) == (25, 10, 3)  # equal costs: P(0.8) near 1/2, what plan printed before
    assert "uses other features" in out and "k=38, s=6, r=3" in _method_line(out)
    assert "to use the features above: neardup dedup --features 25,10,3" in out
    used = _dedup_summary(corpus, tmp_path, ["--threshold", "0.8", "--features", "25,10,3"])
    assert str(used["method"]).endswith("P(0.8) = 0.512, given")
    out, _ = _plan(capsys, ["--threshold", "0.8", "--fn-cost", "1000"])
    assert "uses them; its summary's method line" in out  # dedup's own costs: the same plan


@pytest.mark.parametrize("w", ["0", "1000"])
@pytest.mark.parametrize("method", [["--threshold", "0.8"], ["--method", "simhash"]])
def test_plan_refuses_a_shingle_size_dedup_refuses(
    capsys: pytest.CaptureFixture[str], w: str, method: list[str]
) -> None:
    # plan printed its features and "neardup dedup with these options uses them" for -w 0
    assert main(["plan", *method, "-w", w]) == 1
    assert f"shingle size w must be an integer from 1 to 64, got {w}" in capsys.readouterr().err


def test_plan_for_simhash_names_the_tables_dedup_uses_on_as_many_documents(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = _dedup_summary(corpus, tmp_path, ["--method", "simhash", "--max-distance", "4"])
    docs = re.search(r"n=([\d,]+)", str(summary["hamming_plan"]))
    assert docs, summary
    n = docs[1].replace(",", "")
    assert main(["plan", "--method", "simhash", "--max-distance", "4", "--docs", n]) == 0
    assert capsys.readouterr().out.splitlines()[0] == summary["hamming_plan"]


def test_docs_plan_page_shows_the_real_output_and_its_python_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "PLAN.md").read_text()
    shown = re.search(r"```console\n\$ neardup plan --threshold 0\.8\n(.*?)```", page, re.S)
    assert shown, "docs/PLAN.md shows the output of neardup plan --threshold 0.8"
    assert main(["plan", "--threshold", "0.8"]) == 0
    assert capsys.readouterr().out == shown[1]
    (block,) = re.findall(r"```python\n(.*?)```", page, re.S)
    exec(compile(block, "docs/PLAN.md", "exec"), {})
    assert "k = 38 features" in capsys.readouterr().out
