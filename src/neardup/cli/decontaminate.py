"""``neardup decontaminate``: training documents that contain benchmark items, dropped."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from ..decontaminate_run import DecontaminateOutputs, decontaminate_source
from ..errors import ParamError
from ..params import DecontaminateParams
from ..run import ReadOptions
from .convert import progress, shingle_params
from .options import refuse_cluster_only
from .reading import against_field, inputs, read_options
from .summary import decontaminate_summary


@dataclasses.dataclass(frozen=True)
class Job:
    """What a decontaminate command line asks, here or on a cluster."""

    params: DecontaminateParams
    read: ReadOptions
    against_read: ReadOptions
    outputs: DecontaminateOutputs
    against: str | list[str]


def job(args: argparse.Namespace) -> Job:
    """The command line's parameters, reading options and outputs, checked."""
    if not (args.output or args.matches or args.summary_json):
        raise ParamError("name an output: -o CLEAN, --matches FILE or --summary-json FILE")
    read = read_options(args)
    return Job(
        DecontaminateParams(containment=args.containment, shingle=shingle_params(args)),
        read,
        dataclasses.replace(
            read,
            format=args.against_format,
            text_field=against_field(
                args.against_text_field, "--against-text-field", args.text_field
            ),
            id_field=against_field(args.against_id_field, "--against-id-field", args.id_field),
        ),
        DecontaminateOutputs(args.output, args.matches, args.summary_json),
        inputs(args.against),
    )


def run(args: argparse.Namespace) -> int:
    """Write the clean documents and the matches named; the summary on stderr."""
    todo = job(args)
    refuse_cluster_only(args, ["--memory-limit"] if args.memory_limit else [])
    summary = decontaminate_source(
        inputs(args.inputs),
        todo.against,
        todo.params,
        todo.outputs,
        todo.read,
        todo.against_read,
        progress=progress(args),
        jobs=args.jobs,
    )
    if not args.quiet:
        sys.stderr.write(decontaminate_summary(summary))
    return 0
