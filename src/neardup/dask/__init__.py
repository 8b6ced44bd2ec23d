"""neardup on a Dask cluster: the workers read the inputs, regroup with Dask's P2P shuffle,
run the engine's own stages and write part files; the client holds O(blocks).

    from neardup import DedupParams
    from neardup.dask import ClusterOutputs, JobOptions, connect, dedup

    with connect("local:4") as client:
        summary = dedup(["s3://bucket/crawl/*.jsonl.gz"], DedupParams(threshold=0.8),
                        ClusterOutputs(kept="s3://bucket/kept/"), JobOptions(), client)

See ``job`` for the stages and docs/DASK.md for running on a cluster.
"""

from __future__ import annotations

from typing import Any

from ..params import DedupParams
from .cluster import cluster_errors, connect
from .job import ClusterOutputs, JobOptions, read_output, run_job

__all__ = ["ClusterOutputs", "JobOptions", "cluster_errors", "connect", "dedup", "read_output"]


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
        from .cluster import import_distributed

        client = import_distributed().get_client()
    paths = [inputs] if isinstance(inputs, str) else list(inputs)
    with cluster_errors():
        return run_job(paths, params, outputs, options or JobOptions(), client, info)
