"""``neardup plan --max-distance D`` (or ``--method simhash``): SimHash's permuted tables for
pairs within D bits."""

from __future__ import annotations

import argparse

from ..hamming import plan_tables
from .convert import simhash_params
from .output import print_out


def run(args: argparse.Namespace) -> int:
    """Print the tables' plan."""
    method = simhash_params(args)  # MinHash's options refused, as by dedup
    print_out(plan_tables(method.max_distance, args.docs).describe() + "\n")
    return 0
