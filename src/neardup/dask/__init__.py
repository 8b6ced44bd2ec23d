"""neardup on a Dask cluster: the workers read the inputs, regroup with Dask's P2P shuffle,
run the engine's own stages and write part files; the client holds O(blocks).

    from neardup import DedupParams
    from neardup.dask import ClusterOutputs, JobOptions, connect, dedup

    with connect("local:4") as client:
        summary = dedup(["s3://bucket/crawl/*.jsonl.gz"], DedupParams(threshold=0.8),
                        ClusterOutputs(kept="s3://bucket/kept/"), JobOptions(), client)

``decontaminate`` is ``neardup decontaminate`` the same way (``dask.decontaminate``).
See ``job`` for the stages and docs/DASK.md for running on a cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..params import DecontaminateParams, DedupParams
from ..run import ReadOptions, _paths, _read_benchmark
from .cluster import cluster_errors, connect, import_distributed
from .decontaminate import DecontaminateFolders, check_job, run_decontaminate
from .folders import output_parts, read_output
from .job import ClusterOutputs, JobOptions, run_job

__all__ = [
    "ClusterOutputs",
    "DecontaminateFolders",
    "JobOptions",
    "cluster_errors",
    "connect",
    "decontaminate",
    "dedup",
    "output_parts",
    "read_output",
]


def dedup(
    inputs: str | list[str],
    params: DedupParams,
    outputs: ClusterOutputs,
    options: JobOptions | None = None,
    client: Any = None,
    info: Any = None,
) -> dict[str, Any]:
    """Deduplicate files (paths, folders, globs or fsspec URLs) on the cluster of ``client``
    (None: the current one); part files and a manifest go to each output folder. Returns the
    summary."""
    if client is None:
        client = import_distributed().get_client()
    paths = [inputs] if isinstance(inputs, str) else list(inputs)
    with cluster_errors():
        return run_job(paths, params, outputs, options or JobOptions(), client, info)


def decontaminate(
    inputs: str | list[str],
    against: str | Sequence[str],
    params: DecontaminateParams,
    outputs: DecontaminateFolders,
    options: JobOptions | None = None,
    client: Any = None,
    info: Any = None,
    against_read: ReadOptions | None = None,
    worker_memory: int | None = None,
    dashboard: bool = False,
) -> dict[str, Any]:
    """Drop the training documents of ``inputs`` (JSONL files, folders, globs or fsspec URLs,
    read by the workers) that contain an item of the benchmark ``against`` (files of any
    format ``neardup decontaminate`` reads, read here with ``against_read``'s fields, by
    default ``options``'); clean and matches part files and a manifest go to each output
    folder. ``client``: a Client, ``"local:N"`` or a scheduler address (connected once the
    inputs and outputs are checked), None for the current one; ``worker_memory`` and
    ``dashboard``: a ``"local:N"`` cluster's worker limit and dashboard. Returns the summary."""
    options = options or JobOptions()
    paths = [inputs] if isinstance(inputs, str) else list(inputs)
    files = check_job(paths, outputs, options, tuple(_paths(against)))
    bench = against_read or ReadOptions(
        text_field=options.text_field,
        id_field=options.id_field,
        on_error=options.on_error,  # type: ignore[arg-type]
        max_record_size=options.max_record_size,
    )
    benchmark = _read_benchmark(against, bench)
    if client is None:
        client = import_distributed().get_client()
    with connect(client, info, worker_memory, dashboard) as connected, cluster_errors():
        return run_decontaminate(files, benchmark, params, outputs, options, connected, info)
