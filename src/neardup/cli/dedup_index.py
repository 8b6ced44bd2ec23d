"""``neardup dedup --index PATH [--add]``: the inputs deduplicated against a standing index.

Its own module because the index (and with it the engine and Numba) loads when it is imported.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ParamError
from ..index.jobs import dedup_source
from .convert import MINHASH_ONLY, SIMHASH_ONLY
from .dedup import check_outputs
from .options import refuse_cluster_only
from .reading import inputs, read_options
from .summary import dedup_index_summary

#: What --index refuses: the index's own parameters decide, and the first document wins.
_NOT_WITH_INDEX = {
    "--threshold": "threshold",
    "--verify": "verify",
    "--clusters": "clusters",
    "--pairs": "pairs",
    "--keep": "keep",
    "--keep-field": "keep_field",
    **MINHASH_ONLY,
    **SIMHASH_ONLY,
}


#: Options with defaults that --index refuses when changed: the index's shingling, seed and
#: removal decide (an index is created with its own: ``neardup index create``).
_DEFAULTS_WITH_INDEX = {
    "--shingle-size": ("shingle_size", 5),
    "--tokens": ("tokens", "word"),
    "--nfkc": ("nfkc", False),
    "--hash": ("hash", "mix"),
    "--seed": ("seed", 1),
    "--removal": ("removal", "keep-aware"),
}


def run(args: argparse.Namespace) -> int:
    """dedup --index PATH [--add]: the index's parameters decide; method options are refused."""
    if args.min_paragraph_tokens is not None:
        raise ParamError("--min-paragraph-tokens goes with --unit paragraph or --unit line")
    if not args.index:
        raise ParamError("--add needs --index PATH: the index to add the kept documents to")
    if args.dask:  # the index is one SQLite file on this machine
        raise ParamError(
            "--index runs on this machine (the index is one SQLite file); drop --dask, or "
            "drop --index to deduplicate the inputs on the cluster"
        )
    refuse_cluster_only(args)
    given = [
        flag for flag, attr in _NOT_WITH_INDEX.items() if getattr(args, attr) not in (None, False)
    ]
    given += [
        flag
        for flag, (attr, default) in _DEFAULTS_WITH_INDEX.items()
        if getattr(args, attr, default) != default
    ]
    if given or args.method != "minhash":
        shown = ", ".join(given) or "--method"
        raise ParamError(
            f"with --index the index's own parameters decide and the first document wins; "
            f"drop {shown}"
        )
    check_outputs(args)
    done = dedup_source(
        inputs(args.inputs),
        args.index,
        args.output,
        read_options(args),
        add=args.add,
        summary_json=args.summary_json,
    )
    if not args.quiet:
        sys.stderr.write(dedup_index_summary(done, args.add))
    return 0
