"""Records on Dask workers -> records regrouped by key on other workers; edges -> components.

Two tools the Dask backend composes (``neardup.dask_stages`` holds what each stage computes):

- ``exchange``: an all-to-all shuffle between partitions that live on the workers. Each source
  splits its records into one piece per destination (a task where the source lives); each
  destination's task then receives only its pieces, worker to worker, never through the client.
  The client holds futures and the byte count of each source's pieces. With more sources than
  workers, the splits on one worker are first bundled per destination, a few at a time: a
  bundle task holds its splits and its copy of them, so its splits total at most
  ``bundle_bytes`` (a share of the worker's memory limit), whatever the corpus size.
- ``star_components``: connected components of an edge list partitioned by node, by alternating
  large-star and small-star rounds (Kiveris et al., "Connected Components in MapReduce and
  Beyond", 2014). Each round is one exchange; labels are the smallest node of each component.
  The rounds stop when every partition sees only stars: every node either has only larger
  neighbours (a root) or exactly one neighbour, smaller (a leaf), which makes each component
  one star around its smallest node.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
_Class = TypeVar("_Class", bound=type)

#: A bundle task's splits total at most this share of its worker's memory limit ...
BUNDLE_SHARE = 1 / 16
#: ... and at most this many bytes (fewer, larger bundles save little beyond it).
BUNDLE_BYTES = 64 * 2**20

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def route(x: npt.ArrayLike, parts: int) -> IntArray:
    """Destination partition of each value (splitmix64 of it, modulo ``parts``): spreads runs."""
    z = np.asarray(x).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    return np.asarray(z % np.uint64(parts), dtype=np.int64)


def nbytes_of(obj: object) -> int:
    """Bytes of the arrays in a piece (arrays, tuples and dataclasses of them)."""
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, tuple | list):
        return sum(nbytes_of(x) for x in obj)
    size = getattr(obj, "nbytes", None)
    if isinstance(size, int):
        return size
    fields = getattr(obj, "__dataclass_fields__", None)
    if fields is not None:
        return sum(nbytes_of(getattr(obj, f)) for f in fields)
    return 0


def dask_sized(cls: _Class) -> _Class:
    """Class decorator: Dask measures the class's objects by ``nbytes_of`` (their arrays).
    Its ``sizeof`` sees any other object as ~56 bytes, so a worker would count blocks and
    records as unmanaged memory (never spilling them to reach its target: only when the whole
    process passes the spill threshold) and the scheduler would think moving them free."""
    try:
        from dask.sizeof import sizeof
    except ImportError:  # pragma: no cover - without the dask extra nothing is measured
        return cls
    sizeof.register(cls)(nbytes_of)
    return cls


@dask_sized
@dataclass(frozen=True)
class Split:
    """One source's records cut into one piece per destination."""

    pieces: list[Any]
    nbytes: int


def split_by(dest: IntArray, parts: int, *columns: np.ndarray) -> Split:
    """Rows of ``columns`` grouped by destination (stable: rows keep their order in a piece)."""
    order = np.argsort(dest, kind="stable")
    cuts = np.searchsorted(dest[order], np.arange(parts + 1))
    sorted_cols = [c[order] for c in columns]
    pieces = [tuple(c[lo:hi] for c in sorted_cols) for lo, hi in itertools.pairwise(cuts)]
    return Split(pieces, sum(nbytes_of(p) for p in pieces))


@dask_sized
@dataclass(frozen=True)
class Bundle:
    """The pieces of several sources (those on one worker) bound for one destination."""

    items: list[tuple[int, Any]]  # (source index, piece)

    @property
    def nbytes(self) -> int:
        return sum(nbytes_of(p) for _, p in self.items)


@dask_sized
@dataclass(frozen=True)
class Fanout:
    """One source's pieces for the destinations on one worker: fetched there once, each
    destination's task then takes its own (``_pick``), not one small task per piece."""

    pieces: dict[int, Any]  # destination -> piece

    @property
    def nbytes(self) -> int:
        return sum(nbytes_of(p) for p in self.pieces.values())


def unbundle(pieces: Sequence[Any]) -> list[Any]:
    """A destination's pieces in source order, whether they came one by one or in bundles."""
    if not any(isinstance(p, Bundle) for p in pieces):
        return list(pieces)
    items = [item for b in pieces for item in b.items]
    items.sort(key=lambda item: item[0])
    return [p for _, p in items]


def memory_limit(client: Any, workers: Sequence[str]) -> int:
    """The smallest memory limit of the workers in bytes; 0 when none has one."""
    info = client.scheduler_info().get("workers", {})
    limits = [int(info.get(w, {}).get("memory_limit") or 0) for w in workers]
    return min((x for x in limits if x > 0), default=0)


def bundle_budget(client: Any, workers: Sequence[str]) -> int:
    """Bytes of splits per bundle task: ``BUNDLE_SHARE`` of the smallest memory limit of the
    workers, at most ``BUNDLE_BYTES`` (which workers without a limit get)."""
    limit = memory_limit(client, workers) if workers else 0
    return max(1, min(BUNDLE_BYTES, int(limit * BUNDLE_SHARE))) if limit else BUNDLE_BYTES


def bundle_runs(
    holders: Sequence[str], sizes: Sequence[int], budget: int
) -> list[tuple[str, list[int]]]:
    """Sources cut into bundles: runs of sources held by one worker, in source order, each of
    at most ``budget`` bytes (a bigger source alone). Returns (worker, source indices) pairs."""
    by_worker: dict[str, list[int]] = {}
    for i, w in enumerate(holders):
        by_worker.setdefault(w, []).append(i)
    runs: list[tuple[str, list[int]]] = []
    for w, idx in sorted(by_worker.items()):
        run: list[int] = []
        total = 0
        for i in idx:
            if run and total + sizes[i] > budget:
                runs.append((w, run))
                run, total = [], 0
            run.append(i)
            total += sizes[i]
        runs.append((w, run))
    return runs


def balance(holders: Sequence[str], workers: Sequence[str]) -> list[str]:
    """Where each partition's tasks run: its holder while the holder has fewer than an even
    share (ceil(partitions / workers)), the least loaded worker otherwise (ties by name). The
    map stage gives a worker as many partitions as it finishes (18 and 21 of 39 when the
    scheduler shares a core with one of them), and every per-partition step of ``finish``
    would inherit that; moving a partition costs one transfer of what its tasks read."""
    load = dict.fromkeys(workers, 0)
    cap = -(-len(holders) // max(len(load), 1))
    out: list[str | None] = [None] * len(holders)
    for i, h in enumerate(holders):
        if h in load and load[h] < cap:
            out[i] = h
            load[h] += 1
    for i in range(len(holders)):
        if out[i] is None:
            w = min(load, key=lambda x: (load[x], x))
            out[i] = w
            load[w] += 1
    return cast(list[str], out)  # every entry set above


def _bundle(indices: list[int], parts: int, *splits: Split) -> Split:
    pieces = [
        Bundle([(i, _own(s.pieces[d])) for i, s in zip(indices, splits, strict=True)])
        for d in range(parts)
    ]
    return Split(pieces, sum(s.nbytes for s in splits))


def _own(piece: Any) -> Any:
    """A copy owning its memory: pieces are views into their split's arrays, and a key that
    shares buffers with another defeats Dask's memory accounting (spilling one frees nothing)."""
    return copy.deepcopy(piece)


def _piece(split: Split, d: int) -> Any:
    return _own(split.pieces[d])


def _fanout(split: Split, dests: list[int]) -> Fanout:
    return Fanout({d: _own(split.pieces[d]) for d in dests})


def _pick(d: int, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` with each ``Fanout`` replaced by destination d's piece."""
    return fn(*(a.pieces[d] if isinstance(a, Fanout) else a for a in args))


def _size(split: Split) -> int:
    return split.nbytes


class Exchanges:
    """Runs exchanges on one client and counts the bytes of every piece, by stage name."""

    def __init__(
        self, client: Any, workers: Sequence[str] = (), bundle_bytes: int | None = None
    ) -> None:
        self.client = client
        self.workers = list(workers)
        #: Bytes of splits one bundle task takes at most (one split always fits).
        self.bundle_bytes = bundle_bytes or bundle_budget(client, self.workers)
        self._sizes: dict[str, list[Any]] = {}  # futures of split sizes, by exchange
        self._counted: dict[str, int] = {}  # sizes the scheduler already knew, by exchange
        #: The worker each block's own steps run on (``place_blocks``); None: where Dask likes.
        self.blocks: list[str] | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        """One task (where its inputs live); its result stays on the worker."""
        return self.client.submit(fn, *args, pure=False)

    def home(self, d: int) -> str:
        """The worker destination partition d runs on by default: d mod W (spreads work)."""
        return self.workers[d % len(self.workers)]

    def at(self, d: int, fn: Callable[..., Any], *args: Any, worker: str | None = None) -> Any:
        """The task of destination d, preferably on ``worker`` (default ``home(d)``): calls
        ``fn(*args)``, a ``Fanout`` among ``args`` replaced by d's piece."""
        if not self.workers:
            return self.submit(_pick, d, fn, *args)
        where = [worker or self.home(d)]
        key = f"{getattr(fn, '__name__', 'task')}-{uuid.uuid4().hex}"
        return self.client.submit(
            _pick, d, fn, *args, key=key, workers=where, allow_other_workers=True
        )

    def place_blocks(self, futures: Sequence[Any]) -> None:
        """Choose where each block's own steps run (``at_block``) and where exchanges to the
        blocks deliver (``where=ex.blocks``): ``balance`` of the holders of ``futures``."""
        if self.workers:
            self.blocks = balance(self.holders(futures), self.workers)

    def at_block(self, p: int, fn: Callable[..., Any], *args: Any) -> Any:
        """Block p's step (``at`` with destination p), on the worker ``place_blocks`` chose."""
        return self.at(p, fn, *args, worker=self.blocks[p] if self.blocks else None)

    def holders(self, futures: Sequence[Any]) -> list[str]:
        """The worker holding each future's result (``home(i)`` when none is known)."""
        who = self.client.who_has(list(futures))  # futures, not keys: keys answer {}
        return [sorted(who.get(f.key) or [self.home(i)])[0] for i, f in enumerate(futures)]

    def exchange(
        self,
        name: str,
        sources: Sequence[Any],
        split: Callable[..., Split],
        parts: int,
        *args: Any,
        where: Sequence[str] | None = None,
    ) -> list[list[Any]]:
        """``split(source, parts, *args)`` on each source; returns pieces[d][s] (futures)."""
        splits = [self.submit(split, s, parts, *args) for s in sources]
        return self.pieces(name, splits, parts, where)

    def pieces(
        self, name: str, splits: Sequence[Any], parts: int, where: Sequence[str] | None = None
    ) -> list[list[Any]]:
        """pieces[d]: the pieces of ``splits`` (futures of ``Split``) for destination d, whose
        task runs on ``where[d]`` (default ``home(d)``; give it to ``at``). With more sources
        than workers, each worker first bundles its sources' pieces, a run of sources of at
        most ``bundle_bytes`` per task, where they are; no task holds more than twice
        ``bundle_bytes`` of pieces, and ``unbundle`` restores the source order. Each source
        (or bundle) then gives one ``Fanout`` per destination worker, not one task per
        destination: an exchange costs about sources + bundles x (W + 1) small tasks, not
        sources x (parts + 2)."""
        if self.workers and len(splits) > len(self.workers):
            splits = self._bundled(name, splits, parts)
        else:
            self._sizes.setdefault(name, []).extend(self.submit(_size, f) for f in splits)
        if not self.workers:
            return [[self.submit(_piece, f, d) for f in splits] for d in range(parts)]
        where = list(where) if where is not None else [self.home(d) for d in range(parts)]
        dests: dict[str, list[int]] = {}
        for d, w in enumerate(where):
            dests.setdefault(w, []).append(d)
        fans = [{w: self.submit(_fanout, f, ds) for w, ds in dests.items()} for f in splits]
        return [[fan[where[d]] for fan in fans] for d in range(parts)]

    def _bundled(self, name: str, splits: Sequence[Any], parts: int) -> list[Any]:
        """Bundle tasks of the splits' runs (their sizes are the scheduler's: Dask measures a
        ``Split`` by ``nbytes``, see ``dask_sized``)."""
        from distributed import wait

        wait(splits)
        keys = [f.key for f in splits]
        holder = self.holders(splits)  # asked by key, every bundle once ran on one worker
        known = self.client.nbytes(keys, summary=False)
        sizes = [int(known.get(k, 0)) for k in keys]
        self._counted[name] = self._counted.get(name, 0) + sum(sizes)
        runs = bundle_runs(holder, sizes, self.bundle_bytes)
        return [
            self.client.submit(
                _bundle,
                idx,
                parts,
                *[splits[i] for i in idx],
                pure=False,
                workers=[w],
                allow_other_workers=True,
            )
            for w, idx in runs
        ]

    def moved(self) -> dict[str, int]:
        """Bytes of all pieces of each exchange (an upper bound of what crossed the network:
        pieces whose source and destination share a worker do not leave it)."""
        moved = dict(self._counted)
        for name, futs in self._sizes.items():
            moved[name] = moved.get(name, 0) + int(sum(self.client.gather(futs)))
        return {name: size for name, size in moved.items() if size}


# -- connected components by large-star / small-star rounds -----------------------------------------
@dask_sized
@dataclass(frozen=True)
class Edges:
    """Directed edges (u, v) held by one partition."""

    u: IntArray
    v: IntArray

    @property
    def nbytes(self) -> int:
        return int(self.u.nbytes + self.v.nbytes)


@dask_sized
@dataclass(frozen=True)
class LargeStar:
    """A large-star round's output edges, and what the partition saw of its input: each node's
    smallest neighbour-or-self (the label once the input is all stars) and whether it was."""

    out: Edges
    nodes: IntArray
    mins: IntArray
    stars: bool


def _both_ways(edges: Edges, parts: int) -> Split:
    u = np.concatenate([edges.u, edges.v])
    v = np.concatenate([edges.v, edges.u])
    return split_by(route(u, parts), parts, u, v)


def _larger_first(edges: Edges, parts: int) -> Split:
    u = np.maximum(edges.u, edges.v)
    v = np.minimum(edges.u, edges.v)
    return split_by(route(u, parts), parts, u, v)


def _unique_edges(pieces: Sequence[tuple[IntArray, IntArray]]) -> tuple[IntArray, IntArray]:
    u = np.concatenate([np.zeros(0, np.int64), *(p[0] for p in pieces)])
    v = np.concatenate([np.zeros(0, np.int64), *(p[1] for p in pieces)])
    keep = u != v
    u, v = u[keep], v[keep]
    order = np.lexsort((v, u))
    u, v = u[order], v[order]
    if len(u):
        new = np.r_[True, (u[1:] != u[:-1]) | (v[1:] != v[:-1])]
        u, v = u[new], v[new]
    return u, v


def _runs(u: IntArray) -> tuple[IntArray, IntArray]:
    """Start and end of each run of equal values of sorted ``u``."""
    if len(u) == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e.copy()
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    return starts, np.r_[starts[1:], len(u)].astype(np.int64)


def large_star(*pieces: tuple[IntArray, IntArray]) -> LargeStar:
    """Each node u with neighbours N(u): link every larger neighbour to m = min(N(u) + {u})."""
    u, v = _unique_edges(unbundle(pieces))
    starts, ends = _runs(u)
    nodes = u[starts]
    # v is sorted within each run: the smallest neighbour is the run's first.
    mins = np.minimum(nodes, v[starts]) if len(starts) else nodes.copy()
    degree = ends - starts
    is_root = v[starts] > nodes
    is_leaf = (degree == 1) & (v[starts] < nodes)
    m = np.repeat(mins, degree)
    out = v > u
    return LargeStar(Edges(v[out], m[out]), nodes, mins, bool(np.all(is_root | is_leaf)))


def small_star(*pieces: tuple[IntArray, IntArray]) -> Edges:
    """Each node u with its smaller neighbours N: link N and u to m = min(N) (edges u > v)."""
    u, v = _unique_edges(unbundle(pieces))
    starts, ends = _runs(u)
    m = np.repeat(v[starts], ends - starts)  # smallest neighbour: each run's first
    nodes = u[starts]
    mins = v[starts]
    out_u = np.concatenate([v, nodes])
    out_v = np.concatenate([m, mins])
    keep = out_u != out_v
    return Edges(out_u[keep], out_v[keep])


def _star_source(state: LargeStar) -> Edges:
    return state.out


def star_components(
    ex: Exchanges, sources: Sequence[Any], parts: int, max_rounds: int = 200
) -> tuple[list[Any], int]:
    """Components of the edges held by ``sources`` (futures of ``Edges``): per partition d
    (nodes u with ``route(u, parts) == d``), a future of ``LargeStar`` whose (nodes, mins) are
    every node's component label (its smallest node). Returns (partitions, rounds)."""
    current: Sequence[Any] = sources
    for rounds in range(1, max_rounds + 1):
        pieces = ex.exchange("components", current, _both_ways, parts)
        stars = [ex.at(d, large_star, *pieces[d]) for d in range(parts)]
        if all(ex.client.gather([ex.submit(_is_star, s) for s in stars])):
            return stars, rounds
        outs = [ex.submit(_star_source, s) for s in stars]
        pieces = ex.exchange("components", outs, _larger_first, parts)
        current = [ex.at(d, small_star, *pieces[d]) for d in range(parts)]
    raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")


def _is_star(state: LargeStar) -> bool:
    return state.stars
