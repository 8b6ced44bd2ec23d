"""``neardup dedup ... --dask CLUSTER``: the same job on a Dask cluster (loads Dask)."""

from __future__ import annotations

import argparse
import sys

from ..dask_local import start_fork_server
from .convert import dedup_params
from .dedup import check_args, outputs
from .output import info
from .reading import read_options, size, storage_options
from .summary import dedup_summary


def run(args: argparse.Namespace) -> int:
    """Deduplicate the inputs into the part-file folders named; the summary on stderr."""
    check_args(args)
    start_fork_server(args.dask)  # its imports, while this process imports Dask's client
    from ..cluster_run import dedup_cluster

    result = dedup_cluster(
        args.inputs, dedup_params(args), outputs(args), read_options(args, key_field=args.keep_field),
        args.dask, args.work_dir, args.restart, storage_options(args.storage_options),
        None if args.quiet else info, size(args.memory_limit), args.performance_report,
        args.dashboard,
    )  # fmt: skip
    if not args.quiet:
        sys.stderr.write(dedup_summary(result.summary, result.problems))
    return 0
