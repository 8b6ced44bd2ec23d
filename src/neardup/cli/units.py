"""``neardup dedup --unit paragraph|line``: repeated paragraphs (lines) cut out of each document."""

from __future__ import annotations

import argparse
import sys

from ..errors import ParamError
from ..paragraph_run import DEFAULT_MIN_TOKENS, UnitOptions, dedup_paragraphs, format_summary
from .convert import dedup_params, progress
from .dedup import check_outputs, outputs
from .options import cluster_only_given
from .reading import inputs, read_options, size


def run(args: argparse.Namespace) -> int:
    """Rewrite each document without its repeated units; the summary on stderr."""
    refused = [
        flag
        for flag, given in {
            "--index": args.index,
            "--add": args.add,
            "--dask": args.dask,
        }.items()
        if given
    ] + cluster_only_given(args)
    if refused:
        raise ParamError(
            f"--unit {args.unit} runs on one machine without an index; drop {', '.join(refused)}"
        )
    check_outputs(args)
    units = UnitOptions(
        args.unit,
        DEFAULT_MIN_TOKENS if args.min_paragraph_tokens is None else args.min_paragraph_tokens,
    )
    result = dedup_paragraphs(
        inputs(args.inputs),
        dedup_params(args),
        outputs(args),
        units,
        read_options(args, key_field=args.keep_field),
        progress=progress(args),
        jobs=args.jobs,
        memory_limit=size(args.memory_limit),
    )
    if not args.quiet:
        sys.stderr.write(format_summary(result.summary, result.problems))
    return 0
