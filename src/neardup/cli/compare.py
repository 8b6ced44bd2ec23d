"""``neardup compare A B``: two documents by every measure, and a word diff."""

from __future__ import annotations

import argparse
import json
import sys

from ..compare import compare, format_comparison
from ..errors import ParamError
from ..io._html import read_document
from ..params import SketchParams
from .convert import shingle_params
from .output import print_out


def run(args: argparse.Namespace) -> int:
    """Print the comparison, as a table or as JSON."""
    if args.a == "-" and args.b == "-":
        raise ParamError("only one of the two documents can be read from standard input")
    sketch = SketchParams(kind=args.sketch, t=args.num_perm, seed=args.seed)
    result = compare(
        read_document(args.a),
        read_document(args.b),
        shingle_params(args),
        sketch,
        diff=not args.no_diff,
    )
    if args.json:
        print_out(json.dumps(result.as_dict(), ensure_ascii=False, indent=1) + "\n")
    else:
        color = sys.stdout.isatty() if args.color is None else args.color
        print_out(format_comparison(result, color=color))
    return 0
