"""``neardup dedup``: whole documents on this machine (on Dask: ``dedup_dask``; against a
standing index: ``dedup_index``).

``--unit paragraph|line`` runs from ``units.py``: its kernels load when it is imported, and
here they must not load before a small run has chosen how they run (``_startup``).
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ParamError
from ..run import DedupOutputs, dedup_source
from ._startup import before_engine
from .convert import dedup_params, progress
from .options import refuse_cluster_only
from .output import warn
from .reading import inputs, read_options, size
from .summary import dedup_summary


def run(args: argparse.Namespace) -> int:
    """Deduplicate the inputs into the outputs named; the summary on stderr."""
    check_args(args)
    refuse_cluster_only(args)
    result = dedup_source(
        inputs(args.inputs),
        dedup_params(args),
        outputs(args),
        read_options(args, key_field=args.keep_field),
        progress=progress(args),
        warn=warn,
        jobs=args.jobs,
        memory_limit=size(args.memory_limit),
        prepare=before_engine(args),
    )
    if not args.quiet:
        sys.stderr.write(dedup_summary(result.summary, result.problems))
    return 0


def check_args(args: argparse.Namespace) -> None:
    """Options of another kind of run, and runs that would write nothing, refused."""
    if args.min_paragraph_tokens is not None:
        raise ParamError("--min-paragraph-tokens goes with --unit paragraph or --unit line")
    check_outputs(args)


def outputs(args: argparse.Namespace) -> DedupOutputs:
    """The files a dedup writes (-o, --clusters, --pairs, --summary-json)."""
    return DedupOutputs(
        kept=args.output,
        clusters=args.clusters,
        pairs=args.pairs,
        summary_json=args.summary_json,
        all_pairs=args.all_pairs,
    )


def check_outputs(args: argparse.Namespace) -> None:
    """A dedup that would write nothing, or an option that would change nothing, is refused
    before anything is read."""
    if args.all_pairs and not args.pairs:
        raise ParamError("--all-pairs changes what --pairs lists; add --pairs FILE or drop it")
    if args.index and args.add:
        return  # the index receives the kept documents
    if not (args.output or args.clusters or args.pairs or args.summary_json):
        more = "" if args.index else ", --clusters FILE, --pairs FILE"
        raise ParamError(
            f"this run would write nothing; name an output: -o KEPT{more} or "
            "--summary-json FILE (the counts alone)"
        )
