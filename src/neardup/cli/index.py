"""``neardup index ...``: create a standing index, edit it, show and check it (``index add``
and ``index query`` read documents: ``index_docs.py``)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from ..errors import IndexCorrupt, NeardupError
from ..index import SCHEMA_VERSION, Index
from ..index.sqlite_store import stored_version
from .convert import index_params
from .output import print_json, print_out


def run(args: argparse.Namespace) -> int:
    """Run the index subcommand named."""
    return _COMMANDS.get(args.index_command, _show)(args)


def _create(args: argparse.Namespace) -> int:
    Index.create(args.path, index_params(args), store_text=args.store_text).close()
    if not args.quiet:
        sys.stderr.write(f"neardup: created index {args.path}\n")
    return 0


def _edit(args: argparse.Namespace) -> int:
    """remove and retire: one transaction; an unknown id changes nothing."""
    index = Index.open(args.path)
    try:
        if args.index_command == "remove":
            n = index.remove(args.ids)
            sys.stderr.write(f"neardup: removed {n:,} document{'s' * (n != 1)}\n")
        else:
            n = index.retire(args.urls, args.date)
            sys.stderr.write(f"neardup: retired {n:,} URL{'s' * (n != 1)}\n")
    finally:
        index.close()
    return 0


def _show(args: argparse.Namespace) -> int:
    """stats, check and moved: read-only."""
    index = Index.open(args.path)
    try:
        if args.index_command == "stats":
            print_json(index.stats())
        elif args.index_command == "moved":
            print_json([m.as_dict() for m in index.moved(args.url, limit=args.limit)])
        else:
            problems = index.check()
            if problems:
                print_out("".join(f"{i}\n" for i in index.damage().ids))  # all, for repair
                raise IndexCorrupt(f"{args.path} failed the check: " + "; ".join(problems))
            print_out(f"{args.path}: ok ({len(index):,} documents)\n")
    finally:
        index.close()
    return 0


def _repair(args: argparse.Namespace) -> int:
    """Remove what check finds damaged; the removed ids on stdout, one per line."""
    index = Index.open(args.path)
    try:
        ids = index.repair()
        problems = index.check()
        count = len(index)
    finally:
        index.close()
    print_out("".join(f"{i}\n" for i in ids))
    if problems:
        raise NeardupError(f"{args.path} still fails the check: " + "; ".join(problems))
    sys.stderr.write(
        f"neardup: {args.path}: removed {len(ids):,} damaged documents ({count:,} remain); "
        + ("add them again from your corpus (ids listed above)\n" if ids else "nothing to do\n")
    )
    return 0


def _upgrade(args: argparse.Namespace) -> int:
    """Upgrade a schema-3 index in place; one at the current schema is left as it is."""
    current = stored_version(args.path) == str(SCHEMA_VERSION)
    n = Index.upgrade(args.path)
    done = (
        f"already at the current index schema (version {SCHEMA_VERSION}); nothing to do"
        if current
        else "upgraded, with record checksums"
    )
    sys.stderr.write(f"neardup: {args.path}: {done} ({n:,} documents)\n")
    return 0


def _compact(args: argparse.Namespace) -> int:
    """Merge the index's segments (one transaction); what it did on stderr."""
    index = Index.open(args.path)
    try:
        started = time.perf_counter()
        done = index.compact()
    finally:
        index.close()
    seconds = time.perf_counter() - started
    if done.segments_before == done.segments_after and not done.dropped:
        said = f"already compact ({done.segments_after:,} segments); nothing to do"
    else:
        said = (
            f"{done.segments_before:,} segments merged into {done.segments_after:,}, "
            f"{done.dropped:,} postings of removed documents dropped ({seconds:.1f} s)"
        )
    sys.stderr.write(f"neardup: {args.path}: {said}\n")
    return 0


#: index subcommand -> its function; stats, check and moved are ``_show``.
_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "create": _create,
    "remove": _edit,
    "retire": _edit,
    "repair": _repair,
    "upgrade": _upgrade,
    "compact": _compact,
}
