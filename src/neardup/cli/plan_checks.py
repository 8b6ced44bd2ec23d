"""``neardup plan``'s options that would change nothing in the plan asked for: refused in one
line, as options of the other method are, never silently ignored."""

from __future__ import annotations

import argparse

from ..errors import ParamError
from ..params import ShingleParams
from .convert import given, refuse_other

#: Options read only with --sample (name on the command line -> attribute of ``args``); the
#: parser leaves them None so that a given one is told from its default.
SAMPLE_ONLY = {
    "--sample-size": "sample_size",
    "--seed": "seed",
    "--floor": "floor",
    "--format": "format",
    "--text-field": "text_field",
    "--id-field": "id_field",
    "--on-error": "on_error",
    "--max-record-size": "max_record_size",
}

#: Their values when --sample is given without them (those its help shows).
SAMPLE_DEFAULTS: dict[str, object] = {
    "sample_size": 1000,
    "seed": 1,
    "text_field": "text",
    "id_field": "id",
    "on_error": "stop",
    "max_record_size": "64M",
}

#: What only MinHash's plan uses: the cost model and the curve.
MINHASH_PLAN_ONLY = {
    "--fn-cost": "fn_cost",
    "--fp-cost": "fp_cost",
    "--budget": "budget",
    "--plot": "plot",
}

#: Dedup options of the SimHash method that leave its tables as they are.
SIMHASH_TABLES_IGNORE = {"--threshold": "threshold", "--verify": "verify"}


def check_plan_options(args: argparse.Namespace) -> None:
    """Refuse the options the plan asked for would ignore: sample-only ones without --sample,
    --docs with MinHash, MinHash's cost options, --plot, --threshold and --verify with SimHash;
    and the shingling options checked as dedup checks them (``-w 0`` was planned for)."""
    ShingleParams(w=args.shingle_size, tokens=args.tokens)
    if not args.sample:
        unused = given(args, SAMPLE_ONLY)
        if unused:
            raise ParamError(
                f"{', '.join(unused)} only appl{'ies' if len(unused) == 1 else 'y'} with "
                f"--sample; drop {'it' if len(unused) == 1 else 'them'} or add --sample FILE"
            )
    if args.method != "simhash":
        refuse_other(given(args, {"--docs": "docs"}), "simhash")
    elif not args.sample:  # with --sample, SimHash itself is refused (plan_sample)
        refuse_other(given(args, MINHASH_PLAN_ONLY), "minhash")
        unused = given(args, SIMHASH_TABLES_IGNORE)
        if unused:
            raise ParamError(
                f"{', '.join(unused)} change{'s' if len(unused) == 1 else ''} nothing in the "
                "SimHash tables plan prints (dedup uses them to verify pairs); drop "
                f"{'it' if len(unused) == 1 else 'them'}"
            )


def with_sample_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the sample options not given set to their defaults."""
    values = vars(args).copy()
    for attr, default in SAMPLE_DEFAULTS.items():
        if values.get(attr) is None:
            values[attr] = default
    return argparse.Namespace(**values)
