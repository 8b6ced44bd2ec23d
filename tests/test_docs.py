"""The docs work when pasted: every ```python block and every `neardup` line of every ```bash
block of the README and docs/*.md runs, in order, in a fresh folder holding examples/.

```sh blocks are shown, not run (placeholders such as corpus.jsonl, servers, clusters); a
```bash block must hold only commands that run here, so a page cannot drift from the code.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

import pytest

from neardup import DedupParams, MinhashParams, ParamError, SampledParams, SimhashMethodParams
from neardup.cli import main

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)
#: Lines of a bash block that set up rather than demonstrate (not run here).
_SETUP = ("pip ", "python -m pytest", "ruff ", "mypy", "cd ", "export ")


def _commands(block: str) -> list[list[str]]:
    """The neardup commands of a bash block, each as argv after "neardup"; continuation lines
    joined, comments dropped, ``a && b`` split."""
    joined = re.sub(r"\\\n\s*", " ", block)
    out: list[list[str]] = []
    for line in joined.splitlines():
        if not line.strip() or line.lstrip().startswith(("#", *_SETUP)):
            continue
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if not words:
                continue
            assert words[0] == "neardup", f"a bash block runs neardup commands only: {line!r}"
            assert not {"|", ">", "<", ">>"} & set(words), f"shell syntax belongs in sh: {line!r}"
            out.append(words[1:])
    return out


def _steps(page: Path) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(page.read_text())]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_example_of_the_page_runs(
    page: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    ran = 0
    for lang, body in _steps(page):
        if lang == "python":
            exec(compile(body, str(page), "exec"), {"__name__": "__docs__"})
            ran += 1
        elif lang == "bash":
            for argv in _commands(body):
                code = main(argv)
                err = capsys.readouterr().err
                assert code == 0, f"{page.name}: neardup {shlex.join(argv)} -> {code}\n{err}"
                ran += 1
    if page.name == "README.md":
        assert ran >= 10  # the README's examples are its commands, and they all ran


def test_the_first_command_deduplicates_the_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"```bash\n(pip install \. && neardup dedup .*?)\n```", readme)
    assert first is not None, "the README must open with the install-and-run command"
    args = shlex.split(first.group(1).split("&& neardup ", 1)[1])
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    assert main(args) == 0
    assert "documents removed" in capsys.readouterr().err
    assert (tmp_path / "kept.jsonl").stat().st_size > 0
    assert (tmp_path / "clusters.jsonl").stat().st_size > 0


def test_the_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


def test_the_readme_names_every_extra_and_install_commands_work_from_a_checkout() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    readme = (ROOT / "README.md").read_text()
    for name in extras:
        assert f".[{name}" in readme or f",{name}" in readme or f"'.[{name}]'" in readme, name
    for page in PAGES:
        for _lang, body in _steps(page):
            for line in body.splitlines():
                if line.lstrip().startswith("pip install") and "neardup[" in line:
                    assert "PyPI" in line or "from a checkout" in line, (page.name, line)


def test_the_library_page_imports_from_the_stage_modules_named_like_their_functions() -> None:
    """``neardup.simhash`` and ``neardup.features`` are the functions, so the page shows the
    ``from ... import`` form that reaches their modules (``import ... as`` does not)."""
    page = ROOT / "docs" / "LIBRARY.md"
    shown = [b for lang, b in _steps(page) if lang == "python" and "from neardup.simhash" in b]
    assert shown, "LIBRARY.md shows how to import from neardup.simhash"
    exec(compile(shown[0], str(page), "exec"), {"__name__": "__docs__"})
    import neardup.simhash as as_named

    assert not hasattr(as_named, "fit_idf")  # the function, as the page says


def test_the_library_page_changes_a_params_method_by_building_new_params_not_replace() -> None:
    """``dataclasses.replace`` keeps the resolved verification of the old method, so the page
    shows building a new DedupParams, which takes the new method's defaults."""
    page = ROOT / "docs" / "LIBRARY.md"
    shown = [b for lang, b in _steps(page) if lang == "python" and "minhash = DedupParams(" in b]
    assert shown, "LIBRARY.md shows how to change the method of a DedupParams"
    exec(compile(shown[0], str(page), "exec"), {"__name__": "__docs__"})
    old = DedupParams(method=SimhashMethodParams())
    assert dataclasses.replace(old, method=MinhashParams()).resolved_verify == "none"  # documented
    with pytest.raises(ParamError, match="sampled containment"):
        dataclasses.replace(DedupParams(), method=SampledParams())
