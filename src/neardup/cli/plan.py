"""``neardup plan``: the MinHash features dedup would use, and their curve (SimHash's tables
are planned by ``plan_tables.py``, ``plan --sample`` by ``plan_sample.py``)."""

from __future__ import annotations

import argparse

from ..errors import ParamError
from ..io import plan_outputs
from ..methods import make_method
from ..params import DedupParams
from ..planner import plan_as_dedup
from ..plots import check_picture, plot_curve
from .convert import minhash_params
from .output import print_out
from .plan_checks import check_plan_options


def run(args: argparse.Namespace) -> int:
    """Print the plan (and draw its curve with --plot)."""
    check_plan_options(args)
    method = minhash_params(args)  # SimHash's options refused, as by dedup
    if args.threshold is None:
        raise ParamError("neardup plan needs --threshold (MinHash) or --max-distance (SimHash)")
    if args.plot:  # checked before the work: a missing folder, a folder, an input...
        plan_outputs([], {"--plot": args.plot})
        check_picture(args.plot)
    params = DedupParams(threshold=args.threshold, method=method, verify=args.verify)
    chosen, used = plan_as_dedup(
        params, cost_fp=args.fp_cost, cost_fn=args.fn_cost, max_bytes=args.budget
    )
    line = make_method(params).describe()
    if chosen.params == used.params:
        tail = f"neardup dedup with these options uses them; its summary's method line:\n  {line}"
    else:
        f = chosen.params
        tail = (
            f"neardup dedup with these options uses other features; its summary's method line:\n"
            f"  {line}\n"
            f"to use the features above: neardup dedup --features {f.k},{f.s},{f.r}"
        )
    print_out(f"{chosen.describe()}\n\n{tail}\n")
    if args.plot:
        plot_curve(chosen, args.plot)
        print_out(f"curve written to {args.plot}\n")
    return 0
