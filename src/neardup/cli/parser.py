"""The ``neardup`` command line: every command's parser, and parsing that names the closest
option when one is unknown (argparse only: nothing is run)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from .. import __version__
from .options import (
    AGAINST_FORMAT_HELP,
    DECONTAMINATE_FORMATS,
    add_read_fields,
    add_shingle_options,
)
from .parser_index import add_index_parser, add_serve_parser
from .parser_jobs import add_decontaminate_parser, add_dedup_parser, add_plan_parser


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``neardup`` and its commands, in the order ``--help`` lists them."""
    parser = argparse.ArgumentParser(
        prog="neardup",
        description="Find near-duplicate documents in text collections.",
    )
    parser.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    add_dedup_parser(sub)
    add_plan_parser(sub)
    add_decontaminate_parser(sub)
    _add_compare_parser(sub)
    _add_report_parser(sub)
    add_index_parser(sub)
    add_serve_parser(sub)
    return parser


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; an unknown option is reported with the usage of the command it
    was given to (not the top-level one) and the closest option that command has. Plan's
    --method defaults to the method whose option is given (--max-distance: SimHash)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        _unknown(parser, args, extra)
    if args.command == "plan" and args.method is None:  # the method whose option is given
        args.method = "simhash" if args.max_distance is not None else "minhash"
    return args


def _unknown(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]
) -> NoReturn:
    """Exit with the usage of the innermost command named and the closest option it has."""
    command = parser
    for dest in ("command", "index_command"):  # the innermost subcommand named
        choices = _subcommands(command)
        if choices is None or getattr(args, dest, None) not in choices:
            break
        command = choices[getattr(args, dest)]
    options = [
        o
        for action in command._actions
        if action.help != argparse.SUPPRESS
        for o in action.option_strings
        if o.startswith("--")
    ]
    import difflib  # only for a command line with an unknown option

    message = f"unrecognized arguments: {' '.join(extra)}"
    for word in (x for x in extra if x.startswith("-")):
        close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1, cutoff=0.7)
        if close:
            message += f" (did you mean {close[0]}?)"
            break
    command.error(message)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser] | None:
    """The subcommand parsers of ``parser`` by name, None when it has none."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return None


def _add_compare_parser(sub: Any) -> None:
    """``neardup compare A B``: two documents by every measure."""
    c = sub.add_parser(
        "compare",
        help="every similarity measure of two documents side by side, and a word diff",
        description="Compare two documents (text or .html files, or - for stdin, read as plain "
        "text) by every measure.",
    )
    c.add_argument("a", help="first document (a file, or - for standard input: plain text)")
    c.add_argument("b", help="second document (a file, or - for standard input: plain text)")
    c.add_argument("--json", action="store_true", help="print the measures and diff as JSON")
    c.add_argument("--num-perm", type=int, default=128, help="MinHash sketch length [128]")
    c.add_argument("--sketch", choices=["oph", "classic", "bottomk"], default="oph")
    c.add_argument("--seed", type=int, default=1, help="random seed [1]")
    c.add_argument("--no-diff", action="store_true", help="measures only")
    c.add_argument("--color", action=argparse.BooleanOptionalAction, default=None)
    add_shingle_options(c)


def _add_report_parser(sub: Any) -> None:
    """``neardup report``: the HTML page of a dedup or decontaminate run."""
    r = sub.add_parser(
        "report",
        help="one self-contained HTML page showing a run's clusters (or matches) side by side",
        description="Write an HTML report of a dedup run: summary, histograms, and every "
        "cluster (largest first) with removed documents beside what they duplicate. With "
        "--matches and --against, of a decontaminate run instead: how many training documents "
        "contain each benchmark item, and a sample of matches, spans highlighted, beside the "
        "item.",
    )
    r.add_argument("inputs", nargs="+", help="the input the run read (same options)")
    r.add_argument("--clusters", help="the dedup run's --clusters file (JSONL)")
    r.add_argument(
        "--matches",
        help="the decontaminate run's --matches file (or its --dask folder); needs --against",
    )
    r.add_argument("--against", nargs="+", metavar="BENCH", help="with --matches: the benchmark")
    r.add_argument("--against-text-field", help="with --matches: the benchmark's text field")
    r.add_argument("--against-id-field", help="with --matches: the benchmark's id field")
    r.add_argument("--against-format", choices=DECONTAMINATE_FORMATS, help=AGAINST_FORMAT_HELP)
    r.add_argument(
        "--sample",
        type=int,
        help="with --matches: matches shown with their texts, spread over the items [200]",
    )
    r.add_argument("-o", "--output", required=True, help="the HTML file to write")
    r.add_argument("--pairs", help="the run's --pairs file (scores when the clusters have none)")
    r.add_argument("--summary-json", help="the run's --summary-json file (parameters, timing)")
    add_read_fields(r)
    r.add_argument(
        "--text-clusters",
        type=int,
        help="with --clusters: embed texts for this many of the largest clusters [2000]",
    )
    r.add_argument("--max-chars", type=int, default=3000, help="characters shown per text [3000]")
    r.add_argument(
        "--shingle-size",
        "-w",
        type=int,
        help="with --clusters: words per shared passage highlighted [5]",
    )
    r.add_argument("--title", default="neardup report", help="page title")
