"""Inputs and named outputs -> an OutputPlan checked before anything is read: no output is an
input or another output, every output can be created, then all are renamed into place together.

Files are compared by identity (device and inode, symlinks followed), so a symlink, a hard link
or ``/dev/stdout`` naming the input is caught. Character devices (``/dev/null``) may take
several outputs; anything else may take one.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import ParamError
from ._atomic import output_group
from ._targets import Identity, Target, classify

_STDIN = "standard input"


def _regular_identity(path: str | Path) -> Identity | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def input_identities(inputs: Iterable[str | Path]) -> dict[Identity, str]:
    """Identity -> name of every regular file the inputs stand for (folders walked; ``-`` is
    standard input when it is a file). Missing inputs are left to the reader to report."""
    found: dict[Identity, str] = {}
    for raw in inputs:
        if str(raw) == "-":
            try:
                st = os.fstat(sys.stdin.fileno())
            except (OSError, ValueError, AttributeError):
                continue
            if stat.S_ISREG(st.st_mode):
                found.setdefault((st.st_dev, st.st_ino), _STDIN)
            continue
        if os.path.isdir(raw):
            for root, _, names in os.walk(raw):
                for name in names:
                    path = os.path.join(root, name)
                    ident = _regular_identity(path)
                    if ident is not None:
                        found.setdefault(ident, path)
            continue
        ident = _regular_identity(raw)
        if ident is not None:
            found.setdefault(ident, str(raw))
    return found


@dataclass(frozen=True)
class OutputPlan:
    """Resolved outputs by role (the option naming them, e.g. ``"--clusters"``).

    ``plan[role]`` is what to hand a writer: the resolved path or ``"-"`` for standard output
    (KeyError for an output not asked for: ``role in plan`` tells). Write them all inside
    ``plan.commit()``.
    """

    targets: Mapping[str, Target]

    def __getitem__(self, role: str) -> str | Path:
        target = self.targets[role]
        if target.kind == "stdout" or target.path is None:
            return "-"
        return target.path

    def __contains__(self, role: object) -> bool:
        return role in self.targets

    @contextmanager
    def commit(self) -> Iterator[None]:
        """Outputs written in the block appear together at its end, or none on an exception."""
        with output_group():
            yield


#: A URL such as s3://bucket/key (an output only the cluster backend can write).
_REMOTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


#: Outputs written as JSON whatever their name, by option: JSON lines (True; a name ending in
#: .gz is gzip-compressed) or one JSON document (False, never compressed).
_JSON_OUTPUTS = {"--clusters": True, "--pairs": True, "--matches": True, "--summary-json": False}

#: Name endings that say another format than the JSON these outputs are, or a compression
#: their writers do not apply.
_OTHER_FORMATS = (
    ((".parquet", ".pq"), "Parquet"),
    ((".csv", ".csv.gz", ".tsv", ".tsv.gz", ".tab"), "CSV/TSV"),
    ((".bz2", ".xz", ".zst", ".zstd", ".lz4"), "compressed other than by gzip"),
)


def check_json_name(role: str, value: str | Path) -> None:
    """ParamError when the name of a JSON output (``_JSON_OUTPUTS``) says a format it is not
    written in: ``--matches m.parquet`` would hold JSON lines, ``--summary-json s.json.gz``
    plain JSON."""
    lines = _JSON_OUTPUTS.get(role)
    if lines is None or str(value) == "-":
        return
    name = Path(str(value)).name.lower()
    formats = _OTHER_FORMATS if lines else (*_OTHER_FORMATS, ((".gz",), "gzip-compressed"))
    plain = name.removesuffix(".gz") if lines else name  # m.parquet.gz: still not Parquet
    for suffixes, kind in formats:
        if name.endswith(suffixes) or plain.endswith(suffixes):
            fix = "name it .jsonl (or .jsonl.gz, compressed)" if lines else "name it .json"
            what = "JSON lines" if lines else "one plain JSON document"
            raise ParamError(
                f"{role} {value}: the name says {kind}, but the file is written as {what}; {fix}"
            )


#: A file name to suggest for an output named as a folder, by option (else OPTION.jsonl).
_EXAMPLE_NAMES = {
    "-o": "kept.jsonl, with the input's suffix",
    "--summary-json": "summary.json",
    "--plot": "curve.png",
}


def _refuse_folder_name(role: str, value: str) -> None:
    """ParamError for a file output named as a folder (``--clusters out/``): the writer made a
    file of that name, ``out``, beside where the folder was meant."""
    if value.endswith(("/", os.sep)):
        example = _EXAMPLE_NAMES.get(role, f"{role.lstrip('-')}.jsonl")
        raise ParamError(
            f"{role} {value} ends in '/', which names a folder; name a file (e.g. {value}{example})"
        )


def plan_outputs(
    inputs: Iterable[str | Path],
    outputs: Mapping[str, str | Path | None],
    *,
    folders: Collection[str] = (),
) -> OutputPlan:
    """Check every output before any input is read; ParamError or OutputError if one cannot be.

    ``outputs`` maps a role (the option name, used in messages) to a path, ``"-"`` or None (not
    asked for); roles in ``folders`` want an output folder (text-file input). Refused: an output
    that is one of the inputs (through symlinks and hard links too), two outputs naming one file
    or both standard output, a missing or unwritable folder, a folder where a file is wanted,
    a JSON output whose name says another format (``check_json_name``).
    """
    for role, value in outputs.items():
        if value is not None and role not in folders:
            check_json_name(role, value)
            _refuse_folder_name(role, str(value))
        if value is not None and _REMOTE.match(str(value)):
            raise ParamError(
                f"{role} {value} is a remote path: the cluster backend writes those (--dask "
                "local:N, with s3fs or another fsspec filesystem installed); on one machine "
                "write a local file"
            )
    targets = {
        role: classify(value, folder=role in folders)
        for role, value in outputs.items()
        if value is not None
    }
    # Only an output that exists already can be an input: spare the walk of big input folders.
    existing = any(t.identity is not None and len(t.identity) == 2 for t in targets.values())
    sources = input_identities(inputs) if existing else {}
    claimed: dict[Identity, str] = {}
    for role, target in targets.items():
        label = f"{role} {target.name}"
        if target.identity is not None and target.identity in sources:
            name = sources[target.identity]
            what = name if name == _STDIN else f"the input {name}"
            raise ParamError(
                f"{label} names the same file as {what}: writing it would destroy the input; "
                "name another output file"
            )
        if target.kind == "stdout":
            key: Identity = ("stdout",)
        elif target.is_char_device or target.identity is None:
            continue
        else:
            key = target.identity
        if key in claimed:
            where = "standard output" if key == ("stdout",) else target.name
            raise ParamError(
                f"{claimed[key]} and {label} both write {where}; give each output its own file"
            )
        claimed[key] = label
    return OutputPlan(targets)
