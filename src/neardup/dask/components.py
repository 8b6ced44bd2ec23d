"""Star edges -> each linked document's component label (its smallest document): in one task
when the graph fits a task's memory budget, else in rounds of large-star and small-star
(Kiveris et al., "Connected Components in MapReduce and Beyond", 2014).

The single task (``single_labels``) reads the graph stage's parts on one worker, folding them by
union-find into one star per component whenever the edges it holds would pass the budget (the
parts repeat an edge once per key two documents share); it writes the same files the rounds do,
into ``components/single/``. It empties that folder first, and the client marks the stage once
it returns, so it is whole or done again. When the stars and one part pass the budget it gives
up, writing nothing, and the rounds run: they keep no task holding more than the edges at one
block's documents.

Edges are oriented (doc, root), root < doc. Each round regroups them by document through Dask's
P2P shuffle (``bundles.regroup``), a destination per block of the document's key:

- large-star (odd rounds): a document sees all its neighbours; each larger neighbour is linked
  instead to the smallest of the document and its neighbours;
- small-star (even rounds): a document sees its smaller neighbours; they and the document are
  linked instead to the smallest of them.

Both keep every component and shrink it towards one star around its smallest document, in a
number of rounds logarithmic in practice. A large-star round in which every document is settled
(a centre, whose neighbours are all larger, or a leaf, whose one neighbour is smaller) proves
that state: each document's label is then the smallest of itself and its neighbours, which each
settled destination of a large-star round writes as ``labels-B.parquet`` (B: the block). Each
round is kept in ``components/round-R/`` with its totals, so a killed run resumes at the round
it was in; the client holds one line of counts per round.
"""

from __future__ import annotations

import uuid
from itertools import pairwise
from typing import Any

import numpy as np

from .._heap import trim
from .._types import IntArray
from ..candidates import distinct_inverse
from ..clusters import cluster_labels
from .bundles import Pieces, concat_tables, regroup
from .tables import key_block
from .workdir import WorkDir

#: Alternating rounds finish in O(log^2 n) (Kiveris et al.), about 2 log2 n on a path, the slowest
#: shape in practice (a path of 2^40 documents: about 80); reaching this means a fault.
MAX_ROUNDS = 256
#: The single task's working memory per edge it holds, at its peak: its int64 arrays (the edges,
#: both ends joined, ``np.unique``'s sort and inverse, the union-find labels) peak at 114-127
#: bytes an edge under tracemalloc, plus Arrow's buffers of the part being read (docs/DASK.md,
#: "Memory per worker"). The task holds at most the budget over this many edges.
BYTES_PER_EDGE = 160
#: The single task's labels, a file per block, as a round's (``labels_file``).
SINGLE = "components/single"


def round_folder(r: int) -> str:
    return f"components/round-{r:04d}"


def labels_file(folder: str, block: int) -> str:
    """A block's labels (doc, label) in the final round's ``folder``; absent when none of the
    block's documents is linked."""
    return f"{folder}/labels-{block:05d}.parquet"


def connected_components(
    work: WorkDir,
    n_graph: int,
    n_blocks: int,
    edges: dict[int, int],
    budget: int,
    max_rounds: int = MAX_ROUNDS,
) -> str:
    """Every star edge of the graph stage (``edges``: how many each destination's part holds)
    -> the folder holding each block's labels: in one task when its edges fit ``budget`` bytes,
    else in rounds; rounds already kept in the work folder are not run again, so a call that
    stopped (killed, or past ``max_rounds``) is resumed by the next."""
    if work.done("components"):
        return str(work.read_json("components/labels.json")["labels"])
    capacity = budget // BYTES_PER_EDGE
    started = work.exists(round_folder(1))  # the single task did not fit before
    if not started and max(edges.values(), default=0) <= capacity:
        totals = _single(work, edges, capacity)
        if totals is not None:
            summary = {"labels": SINGLE, "method": "single", "rounds": 0, **totals}
            work.write_json("components/labels.json", summary)
            work.mark("components")
            return SINGLE
    for r in range(1, max_rounds + 1):
        totals = _round(work, r, n_graph, n_blocks)
        if r % 2 == 1 and totals["unsettled"] == 0:
            summary = {"labels": round_folder(r), "method": "rounds", "rounds": r, **totals}
            work.write_json("components/labels.json", summary)
            work.mark("components")
            return round_folder(r)
    raise RuntimeError(
        f"connected components did not converge in {max_rounds} rounds of large-star and "
        f"small-star; the rounds are kept in {work.url}/components"
    )


def _single(work: WorkDir, edges: dict[int, int], capacity: int) -> dict[str, int] | None:
    """``single_labels`` run as one task on a worker (the client never holds the edges)."""
    import dask

    task = dask.delayed(single_labels, pure=False)
    key = f"neardup-components-{uuid.uuid4().hex}"
    answer: dict[str, int] | None = task(work, edges, capacity, dask_key_name=key).compute()
    return answer


def single_labels(work: WorkDir, edges: dict[int, int], capacity: int) -> dict[str, int] | None:
    """The graph stage's parts (``edges``: part -> its edges), read in one task and folded into
    one star per component -> each block's labels (doc, label) in ``SINGLE``, sorted by
    document as a large-star round writes them; returns the edges read, documents labelled,
    components (centres) found and folds made. Holds at most ``capacity`` edges: the stars
    found so far and the parts read since, folded when the next part would not fit (repeated
    edges, one per key two documents share, go); None, with nothing written, when the stars
    and a part alone do not fit, or the stars fill more than half of it."""
    work.forget(SINGLE)  # what a task stopped part-way left
    star = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    batch: list[tuple[IntArray, IntArray]] = []
    held = folds = 0
    for part, n in sorted(edges.items()):
        if not n:
            continue
        if len(star[0]) + held + n > capacity:
            star, batch, held = _fold(star, batch), [], 0
            folds += 1
            # stars over half the budget leave each later fold less than half a budget of new
            # edges: the folds would multiply
            if len(star[0]) + n > capacity or 2 * len(star[0]) > capacity:
                return None
        t = work.read_table(f"graph/part-{part:05d}.parquet")
        batch.append((t.column("doc").to_numpy(), t.column("root").to_numpy()))
        held += n
    nodes, labels = _linked([star, *batch])
    del star, batch
    blocks = key_block(nodes)
    bounds = np.append(_groups(blocks)[0], len(nodes)).tolist()
    for s, e in pairwise(bounds):
        _write(work, labels_file(SINGLE, int(blocks[s])), {"doc": nodes[s:e], "label": labels[s:e]})
    centres = int(np.count_nonzero(labels == nodes))
    totals = {"edges": sum(edges.values()), "documents": len(nodes), "centres": centres,
              "folds": folds}  # fmt: skip
    del nodes, labels, blocks
    trim()
    return totals


def _linked(edges: list[tuple[IntArray, IntArray]]) -> tuple[IntArray, IntArray]:
    """Edges in pieces -> every linked document, ascending, and its component's smallest."""
    return smallest_linked(
        np.concatenate([doc for doc, _ in edges]), np.concatenate([root for _, root in edges])
    )


def smallest_linked(u: IntArray, v: IntArray) -> tuple[IntArray, IntArray]:
    """Edges between documents (64-bit keys) -> every linked document, ascending, and the
    smallest document of its connected component (documents numbered by ``distinct_inverse``,
    which sorts only the distinct ones: an edge list repeats its documents many times)."""
    nodes, inv = distinct_inverse(np.concatenate([u, v]))
    if not len(nodes):
        return nodes, nodes
    labels = cluster_labels(len(nodes), inv[: len(u)], inv[len(u) :])
    return nodes, nodes[labels]


def stars(u: IntArray, v: IntArray) -> tuple[IntArray, IntArray]:
    """Edges between documents -> the same components as stars: each linked document but the
    smallest of its component, and that smallest."""
    nodes, labels = smallest_linked(u, v)
    moved = nodes != labels
    return nodes[moved], labels[moved]


def _fold(
    star: tuple[IntArray, IntArray], batch: list[tuple[IntArray, IntArray]]
) -> tuple[IntArray, IntArray]:
    """The stars so far and a batch of edges -> ``stars`` of them all."""
    pieces = [star, *batch]
    return stars(np.concatenate([u for u, _ in pieces]), np.concatenate([v for _, v in pieces]))


def _round(work: WorkDir, r: int, n_graph: int, n_blocks: int) -> dict[str, Any]:
    """Round ``r`` run (or its kept totals read back): edges in, edges changed, unsettled
    documents, documents and centres seen, summed over its destinations."""
    folder = round_folder(r)
    if work.done(folder):
        return dict(work.read_json(f"{folder}/totals.json"))
    source, n_sources = ("graph", n_graph) if r == 1 else (round_folder(r - 1), n_blocks)
    large = r % 2 == 1
    answers = regroup(
        range(n_sources), star_pieces, (work, source, large), n_blocks, star_take,
        (work, folder, large), "neardup-large-star" if large else "neardup-small-star",
        (work, folder),
    )  # fmt: skip
    totals = {"edges": 0, "changed": 0, "unsettled": 0, "documents": 0, "centres": 0}
    for answer in answers.values():
        for key in totals:
            totals[key] += int(answer[key])
    totals["round"] = r
    work.write_json(f"{folder}/totals.json", totals)
    work.mark(folder)
    return totals


def star_pieces(source: int, work: WorkDir, folder: str, large: bool) -> Pieces:
    """A part's edges as records (document, neighbour) by the document's block: both ends of
    each edge for large-star, the larger end for small-star."""
    import pyarrow as pa

    rel = f"{folder}/part-{source:05d}.parquet"
    if not work.exists(rel):  # no edge was sent there
        return {}
    t = work.read_table(rel)
    if not t.num_rows:
        return {}
    doc, root = t.column("doc").to_numpy(), t.column("root").to_numpy()
    node, other = (
        (np.concatenate([doc, root]), np.concatenate([root, doc])) if large else (doc, root)
    )
    block = key_block(node)
    order = np.argsort(block, kind="stable")
    blocks, starts = np.unique(block[order], return_index=True)
    ends = np.append(starts[1:], len(order))
    return {
        int(b): {"edges": pa.table({"node": node[order[s:e]], "other": other[order[s:e]]})}
        for b, s, e in zip(blocks.tolist(), starts.tolist(), ends.tolist(), strict=True)
    }


def star_take(
    dest: int, tables: dict[str, list[Any]], work: WorkDir, folder: str, large: bool
) -> dict[str, int]:
    """One block's documents through a large-star or small-star step: their new edges (and,
    for a settled large-star destination, their labels) written, and the counts returned."""
    rel = f"{folder}/part-{dest:05d}"
    if work.exists(rel + ".json"):
        return dict(work.read_json(rel + ".json"))
    edges = concat_tables(tables["edges"])
    node, other = _distinct(edges.column("node").to_numpy(), edges.column("other").to_numpy())
    step = large_star if large else small_star
    doc, root, answer, labels = step(node, other)
    _write(work, rel + ".parquet", {"doc": doc, "root": root})
    if labels is not None:
        _write(work, labels_file(folder, dest), {"doc": labels[0], "label": labels[1]})
    work.write_json(rel + ".json", answer)
    return answer


Step = tuple[IntArray, IntArray, dict[str, int], tuple[IntArray, IntArray] | None]


def large_star(node: IntArray, other: IntArray) -> Step:
    """Distinct records (document, neighbour) sorted by both -> each larger neighbour linked to
    the smallest of the document and its neighbours; the documents' labels when all settled."""
    starts, group = _groups(node)
    nodes = node[starts]
    lowest = other[starts]  # the smallest neighbour: records are sorted
    smallest = np.minimum(nodes, lowest)
    up = other > node
    doc, root = other[up], smallest[group[up]]
    degree = np.diff(np.append(starts, len(node)))
    settled = (lowest > nodes) | ((degree == 1) & (lowest < nodes))
    answer = {
        "edges": int(len(node) - np.count_nonzero(up)),  # each edge counted at its larger end
        "changed": int(np.count_nonzero(root != node[up])),
        "unsettled": int(len(nodes) - np.count_nonzero(settled)),
        "documents": len(nodes),
        "centres": int(np.count_nonzero(lowest > nodes)),
    }
    labels = (nodes, smallest) if answer["unsettled"] == 0 else None
    return doc, root, answer, labels


def small_star(node: IntArray, other: IntArray) -> Step:
    """Distinct records (document, smaller neighbour) sorted by both -> the smaller neighbours
    other than the smallest, and the document, linked to that smallest."""
    starts, group = _groups(node)
    smallest = other[starts]
    to = smallest[group]
    moved = other != to
    doc = np.concatenate([other[moved], node[starts]])
    root = np.concatenate([to[moved], smallest])
    answer = {
        "edges": len(node),
        "changed": int(np.count_nonzero(moved)),
        "unsettled": 0,
        "documents": len(starts),
        "centres": 0,
    }
    return doc, root, answer, None


def _distinct(node: IntArray, other: IntArray) -> tuple[IntArray, IntArray]:
    """The records without repeats, sorted by document then neighbour."""
    order = np.lexsort((other, node))
    node, other = node[order], other[order]
    new = np.ones(len(node), dtype=np.bool_)
    new[1:] = (node[1:] != node[:-1]) | (other[1:] != other[:-1])
    return node[new], other[new]


def _groups(node: IntArray) -> tuple[IntArray, IntArray]:
    """Where each document's run of records starts, and each record's run number."""
    new = np.ones(len(node), dtype=np.bool_)
    new[1:] = node[1:] != node[:-1]
    return np.flatnonzero(new), np.cumsum(new) - 1


def _write(work: WorkDir, rel: str, columns: dict[str, IntArray]) -> None:
    import pyarrow as pa

    work.write_table(rel, pa.table({k: np.asarray(v, dtype=np.int64) for k, v in columns.items()}))
