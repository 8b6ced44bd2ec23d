"""A block's link records, made by the scan where its signatures are, for the graph stage.

A link record is (column-folded lookup key, document): the method's postings and each
document's content hash (so exact copies link too). The scan cuts a block's records by graph
destination and writes them in one file per *range* of destinations: the graph stage runs one
P2P shuffle per range, each kept whole in the work folder when it ends, so a run killed inside
the stage resumes losing at most one range's work (before, the whole stage's), and a range's
sources only read their own file (before, every source read the block's signatures and
computed all of its postings).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .._kernels.links import split_links
from ..methods import Signatures, make_method, postings
from ..params import DedupParams
from .workdir import WorkDir

#: The "column" of content hashes among the lookup keys: exact copies are linked too.
CONTENT_COLUMN = -1
#: Input bytes (gzip counted 4x) per range of the graph's destinations: one shuffle each.
GROUP_BYTES = 1 << 30
#: The most ranges: each is a shuffle with a barrier, and every block a source of each.
MAX_GROUPS = 16


def graph_groups(input_bytes: int, n_dests: int, group_bytes: int = GROUP_BYTES) -> int:
    """How many ranges the graph's ``n_dests`` destinations are cut into."""
    wanted = -(-input_bytes // max(group_bytes, 1))
    return max(1, min(MAX_GROUPS, n_dests, wanted))


def group_bounds(n_dests: int, groups: int) -> list[tuple[int, int]]:
    """The destination ranges [lo, hi) of the graph's shuffles, in order."""
    return [(g * n_dests // groups, (g + 1) * n_dests // groups) for g in range(groups)]


def links_file(block: int, group: int) -> str:
    """Where the scan keeps a block's link records of destination range ``group``."""
    return f"scan/links-{block:05d}-{group:03d}.parquet"


def write_links(
    work: WorkDir,
    block: int,
    doc_key: np.ndarray,
    canonical: np.ndarray,
    sigs: Signatures,
    params: DedupParams,
    links: tuple[int, int],
) -> None:
    """A block's link records (``links``: the graph's destinations and ranges), one file per
    range, in destination order; each file's ``starts`` (metadata) says where each of its
    destinations' records begin."""
    import pyarrow as pa

    n_dests, groups = links
    row, col, key = postings(make_method(params), sigs)
    fold, doc, start = split_links(row, col, key, doc_key, canonical, CONTENT_COLUMN, n_dests)
    for g, (lo, hi) in enumerate(group_bounds(n_dests, groups)):
        at = slice(int(start[lo]), int(start[hi]))
        starts = (start[lo : hi + 1] - start[lo]).tolist()
        table = pa.table({"fold": fold[at], "doc": doc[at]})
        work.write_table(
            links_file(block, g), table.replace_schema_metadata({"starts": json.dumps(starts)})
        )


def read_links(work: WorkDir, block: int, group: int) -> tuple[Any, list[int]]:
    """A block's link records of range ``group`` (an Arrow table of fold and doc), and where
    each destination of the range begins in it (one more entry than destinations)."""
    table = work.read_table(links_file(block, group))
    starts = json.loads(table.schema.metadata[b"starts"])
    return table.replace_schema_metadata(None), [int(s) for s in starts]
