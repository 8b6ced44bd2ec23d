"""``neardup index add`` and ``index query``: documents read into a standing index, or
looked up in it."""

from __future__ import annotations

import argparse
import sys

from ..index.jobs import add_source as index_add_source
from ..index.jobs import query_source as index_query_source
from .convert import progress
from .reading import inputs, read_options


def run(args: argparse.Namespace) -> int:
    """Add the inputs to the index, or query it with them; one line on stderr."""
    return _add(args) if args.index_command == "add" else _query(args)


def _add(args: argparse.Namespace) -> int:
    done = index_add_source(
        args.path,
        inputs(args.inputs),
        read_options(args),
        url_field=args.url_field,
        date_field=args.date_field,
        progress=progress(args),
        jobs=args.jobs,
    )
    summary = (
        f"neardup: added {done['added']:,}, replaced {done['replaced']:,} "
        f"({done['documents']:,} in the index; {done['docs_per_s']:,} docs/s){_skipped(done)}\n"
    )
    warning = _unnamed(done.get("named_by_line", 0), args.url_field or args.id_field)
    warning += _undated(done.get("without_date", 0), done["read"], args.date_field)
    sys.stderr.write(("" if args.quiet else summary) + warning)
    return 0


def _undated(n: int, read: int, date_field: str | None) -> str:
    """A warning when no record read had the --date-field (a misspelt name, most likely)."""
    if not date_field or not read or n < read:
        return ""
    return (
        f"neardup: warning: no record had the field {date_field!r} that --date-field names: "
        "no date was stored (documents added again keep the date they had); check its name\n"
    )


def _unnamed(n: int, id_field: str) -> str:
    """A warning for records stored under their line number: a standing index keeps ids, and
    the next add of another file names its records 1, 2, ... again, replacing these."""
    if not n:
        return ""
    return (
        f"neardup: warning: {n:,} record{'s' * (n != 1)} had no {id_field!r} field and "
        f"{'were' if n != 1 else 'was'} stored under {'their' if n != 1 else 'its'} line number "
        "(NAME:LINE with several files); adding another file later reuses those ids and replaces "
        "them: give every record an id (--id-field)\n"
    )


def _skipped(done: dict[str, int]) -> str:
    """What ``--on-error skip`` left out, when anything: skipped, so also counted."""
    n = done.get("skipped_records", 0)
    return f"; skipped {n:,} bad record{'s' * (n != 1)}" if n else ""


def _query(args: argparse.Namespace) -> int:
    done = index_query_source(
        args.path,
        inputs(args.inputs),
        args.output,
        read_options(args),
        threshold=args.threshold,
        limit=args.limit,
        jobs=args.jobs,
        progress=progress(args),
    )
    if not args.quiet:
        sys.stderr.write(
            f"neardup: {done['queries']:,} queries, {done['with_matches']:,} with matches"
            f"{_skipped(done)}\n"
        )
    return 0
