"""``neardup plan --sample``: resemblance measured among a corpus's pairs, and what dedup's
features would miss and over-collect there."""

from __future__ import annotations

import argparse
import sys

from ..errors import ParamError
from ..io import open_source, plan_outputs
from ..params import DedupParams, ShingleParams
from ..planner import plan_as_dedup
from ..plots import check_picture, plot_sample
from ..run import parse_size
from ..sample_plan import check_sample, plan_with_sample
from .convert import minhash_params
from .output import print_out
from .plan_checks import check_plan_options, with_sample_defaults
from .reading import inputs


def run(args: argparse.Namespace) -> int:
    """Print the sample's estimate and forecasts (and draw them with --plot)."""
    check_plan_options(args)
    args = with_sample_defaults(args)
    if args.threshold is None:
        raise ParamError("neardup plan --sample needs --threshold")
    if args.method == "simhash":
        raise ParamError(
            "--sample forecasts MinHash features (SimHash's tables have no resemblance curve); "
            "drop --method simhash (or --max-distance) or --sample"
        )
    params = DedupParams(
        threshold=args.threshold,
        shingle=ShingleParams(w=args.shingle_size, tokens=args.tokens),
        method=minhash_params(args),
        verify=args.verify,
    )
    plan_as_dedup(params, cost_fp=args.fp_cost, cost_fn=args.fn_cost, max_bytes=args.budget)
    check_sample(args.sample_size, args.threshold, args.floor, args.seed)
    plan_outputs(args.sample, {"--plot": args.plot})  # never the sample, checked before reading
    if args.plot:
        check_picture(args.plot)
    with open_source(
        inputs(args.sample),
        args.format,
        text_field=args.text_field,
        id_field=args.id_field,
        on_error=args.on_error,
        max_record_size=parse_size(args.max_record_size),
    ) as source:
        est, forecasts = plan_with_sample(
            lambda: ((b.texts, b.positions) for b in source.batches(5000)),
            params,
            n=args.sample_size,
            seed=args.seed,
            floor=args.floor,
            cost_fp=args.fp_cost,
            cost_fn=args.fn_cost,
            max_bytes=args.budget,
        )
        skipped = source.errors.summary() if source.errors.total else ""
    print_out(est.describe(forecasts) + "\n")
    if skipped:  # as dedup's summary ends: what --on-error skip passed over, and the first
        sys.stderr.write(skipped + "\n")
    if args.plot:
        plot_sample(est, forecasts, args.plot)
        print_out(f"plot written to {args.plot}\n")
    return 0
