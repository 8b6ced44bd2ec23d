"""``neardup decontaminate``: training documents that contain benchmark items, dropped."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from ..errors import ParamError
from ..params import DecontaminateParams
from ..run import DecontaminateOutputs, decontaminate_cluster, decontaminate_source
from .convert import progress, shingle_params
from .output import info
from .reading import inputs, read_options, size, storage_options
from .summary import decontaminate_summary


def run(args: argparse.Namespace) -> int:
    """Write the clean documents and the matches named; the summary on stderr."""
    if not (args.output or args.matches or args.summary_json):
        raise ParamError("name an output: -o CLEAN, --matches FILE or --summary-json FILE")
    params = DecontaminateParams(containment=args.containment, shingle=shingle_params(args))
    read = read_options(args)
    against_read = dataclasses.replace(
        read,
        format=None,
        text_field=args.against_text_field or args.text_field,
        id_field=args.against_id_field or args.id_field,
    )
    outputs = DecontaminateOutputs(args.output, args.matches, args.summary_json)
    against = inputs(args.against)
    if args.dask:
        summary = decontaminate_cluster(
            args.inputs, against, params, outputs, read, against_read, args.dask, args.work_dir,
            args.restart, storage_options(args.storage_options), None if args.quiet else info,
            size(args.memory_limit),
        )  # fmt: skip
    elif args.work_dir or args.restart or args.storage_options or args.memory_limit:
        raise ParamError(
            "--work-dir, --restart, --storage-options and --memory-limit go with --dask"
        )
    else:
        summary = decontaminate_source(
            inputs(args.inputs),
            against,
            params,
            outputs,
            read,
            against_read,
            progress=progress(args),
            jobs=args.jobs,
        )
    if not args.quiet:
        sys.stderr.write(decontaminate_summary(summary))
    return 0
