"""``neardup plan --max-distance D`` (or ``--method simhash``): SimHash's permuted tables for
pairs within D bits."""

from __future__ import annotations

import argparse

from ..hamming import plan_tables
from .convert import simhash_params
from .output import print_out
from .plan_checks import check_plan_options


def run(args: argparse.Namespace) -> int:
    """Print the tables' plan."""
    check_plan_options(args)
    method = simhash_params(args)  # MinHash's options refused, as by dedup
    docs = 1_000_000 if args.docs is None else args.docs
    print_out(plan_tables(method.max_distance, docs).describe() + "\n")
    return 0
