"""``neardup decontaminate ... --dask CLUSTER``: the same job on a Dask cluster (loads Dask)."""

from __future__ import annotations

import argparse
import sys

from ..dask_local import start_fork_server
from .decontaminate import job
from .output import info
from .reading import size, storage_options
from .summary import decontaminate_summary


def run(args: argparse.Namespace) -> int:
    """Write the clean and matches part files named; the summary on stderr."""
    todo = job(args)
    start_fork_server(args.dask)  # its imports, while this process imports Dask's client
    from ..cluster_run import decontaminate_cluster

    summary = decontaminate_cluster(
        args.inputs, todo.against, todo.params, todo.outputs, todo.read, todo.against_read,
        args.dask, args.work_dir, args.restart, storage_options(args.storage_options),
        None if args.quiet else info, size(args.memory_limit), args.performance_report,
        args.dashboard,
    )  # fmt: skip
    if not args.quiet:
        sys.stderr.write(decontaminate_summary(summary))
    return 0
