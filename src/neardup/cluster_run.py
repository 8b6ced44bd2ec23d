"""Whole jobs on a Dask cluster: the dedup and decontaminate commands' ``--dask`` runs.

The workers read the inputs (JSONL paths, folders, globs or fsspec URLs) block by block and
write part files into the output folders, with a manifest each (``neardup.dask``); this module
turns the commands' options into a cluster job and its summary. Importing it loads Dask, so
the commands import it only for a cluster run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .dask import (
    ClusterOutputs,
    DecontaminateFolders,
    JobOptions,
    cluster_errors,
    connect,
    run_job,
)
from .dask import decontaminate as run_decontaminate
from .dask.job import check_job
from .decontaminate_run import DecontaminateOutputs
from .errors import ParamError
from .io import skipped_line
from .io.formats import format_named
from .params import DecontaminateParams, DedupParams
from .run import DedupOutputs, DedupResult, ReadOptions, _peak_memory_mb


def cluster_job(
    read: ReadOptions,
    inputs: str | Path | Sequence[str | Path],
    work_dir: str | None,
    restart: bool,
    storage_options: dict[str, Any] | None,
    performance_report: str | None = None,
) -> tuple[list[str], JobOptions]:
    """The input paths and job options of a cluster run (JSONL or Parquet)."""
    if read.format is not None and format_named(read.format).cluster_blocks is None:
        raise ParamError(f"a cluster run reads JSONL or Parquet files, not {read.format}")
    paths = [str(inputs)] if isinstance(inputs, str | Path) else [str(p) for p in inputs]
    return paths, JobOptions(
        text_field=read.text_field,
        id_field=read.id_field,
        on_error=read.on_error,
        max_record_size=read.max_record_size,
        work_dir=work_dir,
        restart=restart,
        storage_options=storage_options or {},
        performance_report=performance_report,
        format=read.format,
    )


def dedup_cluster(
    inputs: str | Sequence[str],
    params: DedupParams,
    outputs: DedupOutputs,
    read: ReadOptions | None = None,
    cluster: str | Any = "local",
    work_dir: str | None = None,
    restart: bool = False,
    storage_options: dict[str, Any] | None = None,
    info: Callable[[str], None] | None = None,
    worker_memory: int | None = None,
    performance_report: str | None = None,
    dashboard: bool = False,
) -> DedupResult:
    """``dedup_source`` on a Dask cluster: the workers read the inputs (paths, folders, globs or
    fsspec URLs) and write part files into the output folders, with a manifest each; the same
    records, clusters and pairs as one machine once the parts are concatenated. ``cluster``:
    ``"local:N"``, a scheduler address, or a Client; ``work_dir`` keeps finished stages so the
    same command resumes (see ``neardup.dask``); ``worker_memory``: each ``local:N`` worker's
    memory limit in bytes (Dask's default otherwise); ``performance_report``: a file for Dask's
    performance report of the run (HTML); ``dashboard``: start a ``local:N`` cluster's
    dashboard."""
    read = read or ReadOptions()
    if read.key_field:
        raise ParamError(
            "--keep-field is not available on a cluster yet; use --keep first or longest, or "
            "run without --dask"
        )
    paths, options = cluster_job(
        read, inputs, work_dir, restart, storage_options, performance_report
    )
    folders = ClusterOutputs(
        outputs.kept, outputs.clusters, outputs.pairs, outputs.summary_json, outputs.all_pairs
    )
    files = check_job(paths, params, folders, options)
    with connect(cluster, info, worker_memory, dashboard) as client, cluster_errors():
        summary = run_job(paths, params, folders, options, client, info, files)
    summary["peak_memory_mb"] = round(_peak_memory_mb(), 1)
    problems = summary["problems"]
    report = skipped_line(problems) if problems["total"] else ""
    return DedupResult(None, [], summary, report)  # type: ignore[arg-type]


def decontaminate_cluster(
    inputs: str | Sequence[str],
    against: str | Sequence[str],
    params: DecontaminateParams,
    outputs: DecontaminateOutputs,
    read: ReadOptions | None = None,
    against_read: ReadOptions | None = None,
    cluster: str | Any = "local",
    work_dir: str | None = None,
    restart: bool = False,
    storage_options: dict[str, Any] | None = None,
    info: Callable[[str], None] | None = None,
    worker_memory: int | None = None,
    performance_report: str | None = None,
    dashboard: bool = False,
) -> dict[str, Any]:
    """``decontaminate_source`` on a Dask cluster: the workers read the training data (JSONL
    paths, folders, globs or fsspec URLs) block by block and write clean and matches part files
    into the output folders, with a manifest each; the benchmark is read here. The same records
    and lines as one machine once the parts are concatenated. ``cluster``, ``work_dir``,
    ``restart``, ``worker_memory``, ``performance_report``, ``dashboard``: as for
    ``dedup_cluster``."""
    read = read or ReadOptions()
    paths, options = cluster_job(
        read, inputs, work_dir, restart, storage_options, performance_report
    )
    folders = DecontaminateFolders(outputs.clean, outputs.matches, outputs.summary_json)
    summary = run_decontaminate(
        paths, against, params, folders, options, cluster, info, against_read, worker_memory,
        dashboard,
    )  # fmt: skip
    summary["peak_memory_mb"] = round(_peak_memory_mb(), 1)
    return summary
