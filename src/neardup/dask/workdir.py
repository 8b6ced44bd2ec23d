"""The work folder of a cluster run: each stage's outputs, kept so a killed run resumes.

A folder (local path or fsspec URL) holds ``run.json`` (what the run is: the parameters'
fingerprint, the read options, every input's name, size and modification stamp) and one
subfolder per stage: the stage's per-partition files and, once every partition is written, a
``_SUCCESS`` marker. A run started again with the same ``run.json`` skips the stages that have
their marker and, in the others, the partitions whose files exist; with anything different it
stops with a line saying what changed (``restart=True`` discards the folder instead). Files
are written under a temporary name and renamed (object stores: one PUT, whole or absent), so a
file that exists is complete. ``work_folder`` is a run's folder for its lifetime: a temporary
one goes when the run ends or stops on bad input or Ctrl-C, once no task can write into it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import InputError, ParamError
from ..io._targets import quick_kind, stdout_buffer
from .inputs import filesystem, is_url

RUN_FILE = "run.json"
DONE = "_SUCCESS"
FORMAT = 1
_PARQUET: dict[str, Any] = {
    "compression": "none",
    "use_dictionary": False,
    "row_group_size": 1 << 16,
}


class WorkDir:
    """A work folder; picklable (workers write into it)."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = url.rstrip("/") or url
        self.storage_options = storage_options or {}
        self._fs: Any = None
        self._root: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "storage_options": self.storage_options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], state["storage_options"])  # type: ignore[misc]

    @property
    def fs(self) -> Any:
        if self._fs is None:
            self._fs, self._root = filesystem(self.url, self.storage_options)
        return self._fs

    def path(self, rel: str) -> str:
        """The filesystem path of ``rel`` inside the folder."""
        self.fs  # noqa: B018 - sets the root
        return f"{self._root}/{rel}"

    def exists(self, rel: str) -> bool:
        return bool(self.fs.exists(self.path(rel)))

    def finished(self, folder: str) -> set[int]:
        """The partitions of a stage's ``folder`` that finished: those whose answer
        (``part-NNNNN.json``, written last) exists."""
        paths = self.fs.glob(self.path(f"{folder}/part-*.json"))
        return {int(str(p).rsplit("part-", 1)[1].split(".")[0]) for p in paths}

    def answer(self, folder: str, part: int) -> dict[str, Any]:
        """What finished partition ``part`` of ``folder`` answered."""
        return dict(self.read_json(f"{folder}/part-{part:05d}.json"))

    def write_bytes(self, rel: str, data: bytes) -> None:
        """``data`` as file ``rel``: whole or absent, never partial."""
        write_whole(self.fs, self.path(rel), data, is_url(self.url))

    def read_bytes(self, rel: str) -> bytes:
        return bytes(self.fs.cat_file(self.path(rel)))

    def write_json(self, rel: str, value: object) -> None:
        self.write_bytes(rel, json.dumps(value, sort_keys=True).encode())

    def read_json(self, rel: str) -> Any:
        return json.loads(self.read_bytes(rel))

    def read_jsons(self, rels: list[str]) -> list[Any]:
        """Several JSON files of the folder, in order (fetched together where the filesystem
        can: an object store's requests run concurrently)."""
        paths = [self.path(rel) for rel in rels]
        got = self.fs.cat(paths) if paths else {}
        return [json.loads(got[p] if p in got else self.fs.cat_file(p)) for p in paths]

    def write_table(self, rel: str, table: Any) -> None:
        """An Arrow table as Parquet, uncompressed and without dictionaries: signatures, keys
        and hashes neither compress nor repeat (a dictionary tried on 2M 64-bit keys made
        their write 0.23 s against 0.05 s)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not is_url(self.url):  # straight to a temporary file, renamed: no copy in memory
            target = self.path(rel)
            self.fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
            tmp = f"{target}.tmp-{uuid.uuid4().hex}"
            pq.write_table(table, tmp, **_PARQUET)
            self.fs.mv(tmp, target)
            return
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, **_PARQUET)
        self.write_bytes(rel, sink.getvalue().to_pybytes())

    @contextmanager
    def table_writer(self, rel: str, schema: Any) -> Iterator[Callable[[Any], None]]:
        """A Parquet file of the folder written a table at a time (``put(table)``, each of
        ``schema``), for what is too large to hold at once; whole or absent as ``write_table``
        writes, once the block ends without an error."""
        import pyarrow.parquet as pq

        options = {k: v for k, v in _PARQUET.items() if k != "row_group_size"}
        target = self.path(rel)
        with (
            open_whole(self.fs, target, is_url(self.url)) as fh,
            pq.ParquetWriter(fh, schema, **options) as writer,
        ):
            yield lambda table: writer.write_table(table, _PARQUET["row_group_size"])

    def table_pieces(self, rel: str, rows: int) -> Iterator[Any]:
        """A Parquet file of the folder as tables of at most ``rows`` rows, in order."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        with self.fs.open(self.path(rel), "rb") as fh:
            for batch in pq.ParquetFile(fh).iter_batches(batch_size=rows):
                yield pa.Table.from_batches([batch])

    def read_table(self, rel: str, columns: list[str] | None = None) -> Any:
        """A Parquet table of the folder (only ``columns``, when given)."""
        import pyarrow.parquet as pq

        with self.fs.open(self.path(rel), "rb") as fh:
            return pq.read_table(fh, columns=columns)

    def done(self, stage: str) -> bool:
        return self.exists(f"{stage}/{DONE}")

    def mark(self, stage: str) -> None:
        self.write_bytes(f"{stage}/{DONE}", b"")

    def start(self, run: dict[str, Any], restart: bool) -> bool:
        """Bind the folder to this run: True when it resumes an earlier one. A folder made for
        another run (other parameters or inputs) is an InputError naming the difference, unless
        ``restart``, which empties it."""
        run = {"format": FORMAT, **run}
        if self.exists(RUN_FILE):
            before = self.read_json(RUN_FILE)
            change = _difference(before, run)
            if change is None:
                return True
            if not restart:
                raise InputError(
                    f"the work folder {self.url} belongs to another run ({change}); use "
                    "--restart to discard it, or give another --work-dir"
                )
        root = self.path("").rstrip("/")
        if self.fs.exists(root) and self.fs.ls(root):
            if not self.exists(RUN_FILE):
                raise InputError(
                    f"the work folder {self.url} holds files neardup did not write; give an "
                    "empty or new folder"
                )
            self.clear()
        self.write_json(RUN_FILE, run)
        return False

    def forget(self, stage: str) -> None:
        """Drop a stage's kept results, so it runs again."""
        folder = self.path(stage)
        if self.fs.exists(folder):
            self.fs.rm(folder, recursive=True)

    def clear(self) -> None:
        root = self.path("").rstrip("/")
        if self.fs.exists(root):
            self.fs.rm(root, recursive=True)

    def remove(self) -> None:
        """Delete the folder (a temporary one, after a successful run)."""
        self.clear()


def write_whole(fs: Any, target: str, data: bytes, remote: bool) -> None:
    """``data`` as file ``target``, whole or absent: one PUT on an object store (which never
    shows a partial object), else as ``open_whole`` writes."""
    if remote:
        fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
        fs.pipe_file(target, data)
        return
    with open_whole(fs, target, remote) as fh:
        fh.write(data)


@contextmanager
def open_whole(fs: Any, target: str, remote: bool) -> Iterator[BinaryIO]:
    """A binary file that becomes ``target`` whole, when the block ends without an error, or
    not at all: a temporary name renamed into place on a file system (into the file a symlink
    names); on an object store, a local temporary file uploaded at the end (an upload shows no
    partial object); a device, a pipe or standard output is written into, never renamed over
    (a FIFO, or /dev/null, became a regular file)."""
    fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
    if remote:
        with tempfile.NamedTemporaryFile(prefix="neardup-part-") as spool:
            yield spool  # type: ignore[misc]
            spool.flush()
            fs.put_file(spool.name, target)
        return
    kind = quick_kind(Path(target))  # one stat: this runs for every part and work file
    if kind == "stdout":
        out = stdout_buffer()
        yield out
        out.flush()
        return
    if kind == "stream":
        with open(target, "wb") as stream:
            yield stream
        return
    final = os.path.realpath(target)
    tmp = f"{final}.tmp-{uuid.uuid4().hex}"
    try:
        with fs.open(tmp, "wb") as fh:
            yield fh
    except BaseException:
        with suppress(OSError):
            fs.rm(tmp)
        raise
    fs.mv(tmp, final)


def _difference(before: dict[str, Any], now: dict[str, Any]) -> str | None:
    """What differs between two runs, in a few words, or None."""
    if before.get("format") != now.get("format"):
        return "it was made by another version of neardup"
    if before.get("params") != now.get("params"):
        return "the parameters changed"
    if before.get("benchmark") != now.get("benchmark"):
        return "the benchmark changed"
    if before.get("read") != now.get("read"):
        return "the read options changed"
    old = {f["name"]: f for f in before.get("inputs", [])}
    new = {f["name"]: f for f in now.get("inputs", [])}
    if list(old) != list(new):
        gone = [n for n in old if n not in new]
        added = [n for n in new if n not in old]
        if gone:
            return f"{gone[0]} is no longer an input"
        if added:
            return f"{added[0]} is a new input"
        return "the inputs are in another order"
    for name, f in new.items():
        if old[name] != f:
            return f"{name} changed since (size or modification time)"
    if before.get("options") != now.get("options"):
        return "the block size changed"
    return None


@contextmanager
def work_folder(
    work_dir: str | None, storage_options: dict[str, Any], info: Any, client: Any = None
) -> Iterator[WorkDir]:
    """The run's work folder: ``work_dir``, or a temporary one removed when the run ends or
    stops on bad input or Ctrl-C (once ``client``'s running tasks, which would write into it
    again, are over), but kept (and its place said) on any other failure, so that the run can
    resume from it."""
    temporary = work_dir is None
    work_url = work_dir or f"{tempfile.gettempdir()}/neardup-work-{uuid.uuid4().hex}"
    work = WorkDir(work_url, dict(storage_options))
    try:
        yield work
    except (InputError, ParamError, KeyboardInterrupt):
        if temporary:
            settle(client)
            work.remove()
        raise
    except BaseException as exc:
        if not temporary or _started(work):  # said by cluster_errors: where to resume from
            exc.neardup_work_dir = work_url  # type: ignore[attr-defined]
            if temporary and info is not None:  # never lose work: say where it is
                info(f"finished stages are kept in {work_url}; add --work-dir {work_url} to resume")
        raise
    if temporary:
        work.remove()


def _started(work: WorkDir) -> bool:
    """Whether the run got as far as binding the work folder (what a rerun resumes from)."""
    with suppress(Exception):  # the folder's storage may be what failed
        return work.exists(RUN_FILE)
    return False


#: Seconds an interrupted run waits for its running tasks to end before removing its work folder.
SETTLE_SECONDS = 10.0


def settle(client: Any, seconds: float = SETTLE_SECONDS) -> None:
    """Cancel ``client``'s tasks and wait, up to ``seconds``, until no worker runs one: Dask
    cannot stop a running task, which would write into a work folder removed under it."""
    if client is None:
        return
    from distributed import Future

    with suppress(Exception):  # best effort: the cluster may be gone already
        client.cancel([Future(key, client) for key in list(client.futures)], force=True)
        deadline = time.monotonic() + seconds
        while any(client.run(_running).values()) and time.monotonic() < deadline:
            time.sleep(0.05)


def _running(dask_worker: Any) -> int:
    """Tasks a worker is running (cancelled ones still running included)."""
    return len(dask_worker.state.executing) + len(dask_worker.state.long_running)
