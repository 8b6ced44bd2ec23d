"""The README works when pasted: its Python blocks run and its first command runs on the sample."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from neardup.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize("block", re.findall(r"```python\n(.*?)```", README, re.S))
def test_python_examples_run(block: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(block, "README.md", "exec"), {})
    assert capsys.readouterr().out  # every example prints what it shows


def test_first_command_deduplicates_the_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = re.search(r"```bash\n(pip install \. && neardup dedup .*?)\n```", README)
    assert first is not None, "the README must open with the install-and-run command"
    args = shlex.split(first.group(1).split("&& neardup ", 1)[1])
    args = [str(ROOT / a) if a.startswith("examples/") else a for a in args]
    monkeypatch.chdir(tmp_path)
    assert main(args) == 0
    assert "documents removed" in capsys.readouterr().err
    assert (tmp_path / "kept.jsonl").stat().st_size > 0
    assert (tmp_path / "clusters.jsonl").stat().st_size > 0
