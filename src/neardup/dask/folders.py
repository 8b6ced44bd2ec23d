"""A cluster run's output folders: checked before anything runs, earlier parts and manifests
cleared, each folder's manifest written last (the folder is whole from then on), and a
finished folder read back as the single-machine run's file."""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, OutputError, ParamError
from ..io._outputs import check_json_name
from ..io._targets import classify, folder_problem, quick_kind
from .inputs import InputFile, file_stamp, filesystem, is_url, reaching
from .stages import PART_SIZES, PART_STAMPS, part_name
from .workdir import WorkDir, write_whole

MANIFEST = "manifest.json"


def check_folders(
    folders: dict[str, str | None],
    out_files: dict[str, str | None],
    files: list[InputFile],
    work: str | None,
    storage: dict[str, Any],
    roots: Sequence[str] = (),
) -> None:
    """Output folders and files (by flag: ``--summary-json``, ``--performance-report``) are
    not inputs, not each other, not the work folder, not inside an input folder (``roots``:
    the inputs as given); a file is no folder; a folder holds nothing but an earlier neardup
    output (replaced) when it exists."""
    named = {
        flag: value
        for flag, value in (*folders.items(), ("--work-dir", work), *out_files.items())
        if value
    }
    _not_nested(named, [*folders, "--work-dir"])
    seen: dict[str, str] = {}
    inputs = {_norm(f.url) for f in files}
    for flag, value in named.items():
        where = _norm(value if is_url(value) else str(value))
        if where in seen:
            raise ParamError(
                f"{flag} and {seen[where]} name the same folder {value}; give each its own"
            )
        if where in inputs:
            raise ParamError(f"{flag} {value} is an input; write the output somewhere else")
        inside = sorted(i for i in inputs if i.startswith(where + "/"))
        if inside and flag not in out_files:  # its parts would overwrite them, or be read next
            raise ParamError(
                f"{flag} {value} is a folder holding the input {inside[0]}; write the output "
                "beside the inputs, not among them"
            )
        _not_in_an_input(flag, value, where, [r for r in roots if _norm(r) not in inputs])
        seen[where] = flag
        with reaching(value, storage):
            _check_place(flag, value, flag in out_files, storage)


def _not_in_an_input(flag: str, value: str, where: str, roots: Sequence[str]) -> None:
    """ParamError when ``value`` (``where``, normalised) is inside an input folder (``roots``:
    the inputs given that are no file): the next run of the same command would list its files
    as inputs (and refuse them, or read them)."""
    for root in roots:
        if any(c in root for c in "*?["):  # a glob's files are its matches, not a folder's
            continue
        if where.startswith(_norm(root).rstrip("/") + "/"):
            raise ParamError(
                f"{flag} {value} is inside the input folder {root}: a run again would read its "
                "files as inputs; put it beside the inputs, not among them"
            )


def _check_place(flag: str, value: str, is_file: bool, storage: dict[str, Any]) -> None:
    """An output file is no folder; an output folder is no file and holds nothing but an
    earlier neardup output; the work folder's storage answers."""
    fs, path = filesystem(value, storage)
    if is_file:
        check_json_name(flag, value)
        if fs.isdir(path):
            raise ParamError(f"{flag} {value} is a folder; give a file name")
        if not is_url(value):
            classify(value)  # the single-machine run's checks (its folder takes files) and messages
        return
    if flag != "--work-dir":
        if fs.exists(path) and not fs.isdir(path):
            what = (
                "a file"
                if is_url(value) or quick_kind(Path(value)) == "file"
                else "a device or pipe"
            )
            raise ParamError(
                f"{flag} {value} is {what}; with --dask outputs are folders of part files"
            )
        if fs.isdir(path) and not all(_ours(p) for p in fs.ls(path, detail=False)):
            raise ParamError(
                f"{flag} {value} is a folder that holds other files; give an empty or new folder"
            )
    if is_url(value):
        fs.exists(path)  # wrong storage options are said now, not once the cluster runs
    else:
        _check_local_folder(value)


def _check_local_folder(value: str) -> None:
    """A local output or work folder can be made: its nearest existing ancestor (the folder
    itself, when it exists) is a folder that takes new folders."""
    ancestor = Path(os.path.abspath(value))
    while not os.path.exists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ParamError(f"cannot write {value}: a part of the path is not a folder")
    problem = folder_problem(ancestor, subfolder=True)
    if problem is not None:
        inside = Path(os.path.abspath(value)) == ancestor
        doing = f"write into {value}" if inside else f"create {value} in folder {ancestor}"
        raise OutputError(f"cannot {doing}: {problem}")


def _not_nested(named: dict[str, str], folders: list[str]) -> None:
    """No output inside an output folder or the work folder: a folder of parts is refused
    when it holds other files (the same command run again would stop there), and a work
    folder is emptied by --restart."""
    where = {flag: _norm(value) for flag, value in named.items()}
    for flag, path in where.items():
        for outer in folders:
            if outer in where and outer != flag and path.startswith(where[outer] + "/"):
                raise ParamError(
                    f"{flag} {named[flag]} is inside the {outer} folder {named[outer]}; put it "
                    "beside that folder (it holds only what neardup writes there)"
                )


#: The files of an output folder: its parts (or one being written when a run was killed).
_OURS = re.compile(r"part-\d{5}\.(jsonl|jsonl\.gz|parquet)(\.tmp-[0-9a-f]{32})?")


def _ours(path: str) -> bool:
    """True for a file a cluster run writes into an output folder: the manifest, a part, or
    a part of an unfinished run (killed while writing: no manifest yet)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name == MANIFEST or _OURS.fullmatch(name) is not None


def _norm(path: str) -> str:
    return path.rstrip("/") if is_url(path) else os.path.abspath(path)


def write_summary_json(where: str | None, summary: dict[str, Any], storage: dict[str, Any]) -> None:
    """The run's summary as an indented JSON file at ``where`` (None: none), written whole."""
    if where:
        fs, path = filesystem(where, storage)
        body = (json.dumps(summary, indent=1) + "\n").encode()
        write_whole(fs, path, body, is_url(where))


#: An output folder of a run: (folder or None, its parts' kind, the block answer's record count).
Folder = tuple[str | None, str, str]


def check_written(
    work: WorkDir, folders: list[Folder], n_blocks: int, storage: dict[str, Any]
) -> None:
    """Written parts count as done only while they are where this run writes them, as this run
    wrote them: other output folders, parts deleted since, or parts of another size or stamp
    (another run's or program's written over them, even of the same size; a part cut short),
    write those blocks again."""
    record: dict[str, Any] = {count: folder for folder, _, count in folders}
    record["kinds"] = [kind for _, kind, _ in folders]
    if work.exists("write") and (
        not work.exists("write/outputs.json") or work.read_json("write/outputs.json") != record
    ):
        work.forget("write")
    blocks = range(n_blocks) if work.done("write") else sorted(work.finished("write"))
    answers = work.read_jsons([f"write/part-{b:05d}.json" for b in blocks])
    lost = _parts_lost(folders, dict(zip(blocks, answers, strict=True)), storage)
    if lost and work.done("write"):
        work.forget("write")
    for b in lost if work.exists("write") else ():  # a killed write stage: those blocks again
        work.fs.rm(work.path(f"write/part-{b:05d}.json"))
    if not work.exists("write/outputs.json"):
        work.write_json("write/outputs.json", record)


def _parts_lost(
    folders: list[Folder], written: dict[int, dict[str, Any]], storage: dict[str, Any]
) -> list[int]:
    """The blocks (``written``: their write answers) whose part file is missing from one of the
    output folders, or has another size or stamp than the block wrote (``PART_SIZES``,
    ``PART_STAMPS``: the folder's listing, no part read). An answer without stamps (an earlier
    version's) counts as lost; a stamp of None (a filesystem that reports neither ETag nor
    modification time) leaves the size alone to check."""
    lost: set[int] = set()
    for folder, kind, count in folders:
        if folder is None or not written:
            continue
        fs, root = filesystem(folder, storage)
        found = fs.glob(f"{root.rstrip('/')}/part-*", detail=True)
        have = {
            p.rsplit("/", 1)[-1]: (info.get("size"), file_stamp(info)) for p, info in found.items()
        }
        for b, answer in written.items():
            size = answer.get(PART_SIZES, {}).get(count)
            stamps = answer.get(PART_STAMPS, {})  # none: an earlier version's answer
            if size is None or count not in stamps:
                lost.add(b)
                continue
            got_size, got_stamp = have.get(part_name(b, kind), (None, None))
            if got_size != size or (stamps[count] is not None and got_stamp != stamps[count]):
                lost.add(b)
    return sorted(lost)


def unmark(folders: list[Folder], storage: dict[str, Any]) -> None:
    """Remove an earlier manifest from the output folders: not whole while parts are written."""
    for folder, _, _ in folders:
        if folder is not None:
            fs, root = filesystem(folder, storage)
            manifest = f"{root.rstrip('/')}/{MANIFEST}"
            if fs.exists(manifest):
                fs.rm(manifest)


def write_manifests(
    folders: list[Folder],
    written: dict[int, dict[str, Any]],
    summary: dict[str, Any],
    n_blocks: int,
    storage: dict[str, Any],
) -> None:
    """Each output folder's manifest, last: the folder is whole from then on."""
    for folder, kind, count in folders:
        if folder is None:
            continue
        parts = [
            {"file": part_name(b, kind), "records": int(written[b][count])} for b in range(n_blocks)
        ]
        fs, root = filesystem(folder, storage)
        stale = [
            p for p in fs.glob(f"{root.rstrip('/')}/part-*")
            if p.rsplit("/", 1)[-1] not in {x["file"] for x in parts}
        ]  # fmt: skip
        for p in stale:  # parts of an earlier, larger output in the same folder
            fs.rm(p)
        body = {"format": 1, "parts": parts, "summary": summary}
        data = (json.dumps(body, indent=1) + "\n").encode()
        write_whole(fs, f"{root.rstrip('/')}/{MANIFEST}", data, is_url(folder))


def output_parts(folder: str, storage_options: dict[str, Any] | None = None) -> list[str]:
    """A finished output folder's part files (the folder as given, joined with each part's
    name), in manifest order: concatenated, the single-machine run's output. An unfinished
    folder (no manifest) is an InputError."""
    fs, root = filesystem(folder, dict(storage_options or {}))
    root = root.rstrip("/")
    if not fs.exists(f"{root}/{MANIFEST}"):
        raise InputError(f"{folder} has no {MANIFEST}: not a finished neardup output")
    manifest = json.loads(fs.cat_file(f"{root}/{MANIFEST}"))
    return [f"{folder.rstrip('/')}/{part['file']}" for part in manifest["parts"]]


def read_output(folder: str, storage_options: dict[str, Any] | None = None) -> bytes:
    """A finished output folder of JSONL parts as one file: its parts in manifest order, gzip
    parts decompressed — the single-machine run's file, byte for byte. An unfinished folder
    (no manifest) is an InputError; Parquet parts are a ParamError (read them as a table)."""
    fs, _ = filesystem(folder, dict(storage_options or {}))
    parts = output_parts(folder, storage_options)
    if any(p.endswith(".parquet") for p in parts):
        raise ParamError(
            f"{folder} holds Parquet parts: read them as one table, e.g. "
            "pyarrow.parquet.read_table(neardup.dask.output_parts(folder))"
        )
    data = bytearray()
    for path in parts:
        raw = fs.cat_file(path)
        data += gzip.decompress(raw) if path.endswith(".gz") else raw
    return bytes(data)
