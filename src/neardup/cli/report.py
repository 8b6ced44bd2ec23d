"""``neardup report``: the HTML page of a dedup run (--clusters) or a decontaminate run
(--matches)."""

from __future__ import annotations

import argparse
import sys

from ..contamination_report import SAMPLE, write_contamination_report
from ..errors import ParamError
from ..params import ShingleParams
from ..report import TEXT_CLUSTERS, write_report
from ..run import parse_size
from .reading import against_field, inputs


def run(args: argparse.Namespace) -> int:
    """Write the page of the run the options name; one line on stderr."""
    if (args.clusters is None) == (args.matches is None):
        raise ParamError(
            "give --clusters (a dedup run) or --matches with --against (decontaminate)"
        )
    if args.matches is not None:
        return _matches(args)
    if args.against or args.against_text_field is not None or args.against_id_field is not None:
        raise ParamError("--against and its fields go with --matches")
    if args.sample is not None:
        raise ParamError("--sample goes with --matches (a decontaminate run); drop it")
    stats = write_report(
        inputs(args.inputs),
        args.clusters,
        args.output,
        pairs=args.pairs,
        run_summary=args.summary_json,
        fmt=args.format,
        text_field=args.text_field,
        id_field=args.id_field,
        on_error=args.on_error,
        max_record_size=parse_size(args.max_record_size),
        shingle=ShingleParams()
        if args.shingle_size is None
        else ShingleParams(w=args.shingle_size),
        max_chars=args.max_chars,
        text_clusters=TEXT_CLUSTERS if args.text_clusters is None else args.text_clusters,
        title=args.title,
    )
    sys.stderr.write(
        f"report: {_counted(stats.clusters, 'cluster')}, "
        f"{_counted(stats.removed, 'removed ' + stats.unit)}, "
        f"{stats.bytes / 1e6:.1f} MB -> {args.output}\n"
    )
    return 0


def _matches(args: argparse.Namespace) -> int:
    """report --matches: the page of a decontamination run."""
    if not args.against:
        raise ParamError("--matches needs --against BENCH: the benchmark the run read")
    if args.pairs or args.summary_json:
        raise ParamError("--pairs and --summary-json go with --clusters (a dedup run)")
    other = [
        flag
        for flag, value in (("--text-clusters", args.text_clusters), ("-w", args.shingle_size))
        if value is not None
    ]
    if other:
        one = len(other) == 1
        raise ParamError(
            f"{' and '.join(other)} go{'es' if one else ''} with --clusters (a dedup run); "
            f"drop {'it' if one else 'them'}"
        )
    stats = write_contamination_report(
        inputs(args.inputs),
        args.matches,
        args.against,
        args.output,
        fmt=args.format,
        text_field=args.text_field,
        id_field=args.id_field,
        against_format=args.against_format,
        against_text_field=against_field(
            args.against_text_field, "--against-text-field", args.text_field
        ),
        against_id_field=against_field(args.against_id_field, "--against-id-field", args.id_field),
        on_error=args.on_error,
        max_record_size=parse_size(args.max_record_size),
        sample=SAMPLE if args.sample is None else args.sample,
        max_chars=args.max_chars,
        title=args.title if args.title != "neardup report" else "neardup decontamination report",
    )
    sys.stderr.write(
        f"report: {_counted(stats.matches, 'match', 'matches')} of "
        f"{_counted(stats.items_found, 'benchmark item')} in "
        f"{_counted(stats.contaminated, 'document')}, {stats.shown:,} shown, "
        f"{stats.bytes / 1e6:.1f} MB -> {args.output}\n"
    )
    return 0


def _counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun it counts: "1 match", "2 matches"."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"
