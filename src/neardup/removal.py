"""PROVISIONAL (replaced by the removal branch): verified pairs -> kept set."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .clusters import cluster_labels


@dataclass(frozen=True)
class Removal:
    kept: npt.NDArray[np.bool_]
    duplicate_of: npt.NDArray[np.int64]
    score: npt.NDArray[np.float64]
    labels: npt.NDArray[np.int64]


def priority_ranks(n, strategy="first", *, lengths=None, key=None, prefer="max"):  # type: ignore[no-untyped-def]
    if strategy == "first":
        return np.arange(n, dtype=np.int64)
    if strategy == "longest":
        v = -np.asarray(lengths)
    else:
        _, v = np.unique(np.asarray(key), return_inverse=True)
        v = -v if prefer == "max" else v
    order = np.lexsort((np.arange(n), v))
    ranks = np.empty(n, np.int64)
    ranks[order] = np.arange(n)
    return ranks


def _expand(n, a, b, score, priority, groups, pick):  # type: ignore[no-untyped-def]
    if groups is None:
        groups = np.arange(n)
    groups = np.asarray(groups)
    best = {}
    for d in np.argsort(priority, kind="stable").tolist():
        best.setdefault(int(groups[d]), d)
    gb = (
        np.array([best[int(g)] for g in groups.tolist()], dtype=np.int64)
        if n
        else np.zeros(0, np.int64)
    )
    ga = gb[a] if len(a) else a
    gbb = gb[b] if len(b) else b
    kept_g, dup_g, sc_g = pick(n, ga, gbb, np.asarray(score, float), priority)
    kept = np.zeros(n, bool)
    dup = np.full(n, -1, np.int64)
    sc = np.full(n, np.nan)
    for d in range(n):
        r = int(gb[d])
        if kept_g[r]:
            if r == d:
                kept[d] = True
            else:
                dup[d], sc[d] = r, 1.0
        else:
            dup[d], sc[d] = dup_g[r], sc_g[r]
    labels = cluster_labels(n, np.flatnonzero(~kept), dup[~kept]) if n else np.zeros(0, np.int64)
    return Removal(kept, dup, sc, labels)


def _greedy(n, a, b, score, priority):  # type: ignore[no-untyped-def]
    nb = [[] for _ in range(n)]
    for x, y, s in zip(a.tolist(), b.tolist(), score.tolist(), strict=True):
        nb[x].append((y, s))
        nb[y].append((x, s))
    kept = np.zeros(n, bool)
    dup = np.full(n, -1, np.int64)
    sc = np.full(n, np.nan)
    for d in np.argsort(priority, kind="stable").tolist():
        cands = [(s, -priority[u], u) for u, s in nb[d] if kept[u]]
        if cands:
            s, _, u = max(cands)
            dup[d], sc[d] = u, s
        else:
            kept[d] = True
    return kept, dup, sc


def _components(n, a, b, score, priority):  # type: ignore[no-untyped-def]
    lab = cluster_labels(n, a, b)
    kept = np.zeros(n, bool)
    dup = np.full(n, -1, np.int64)
    sc = np.full(n, np.nan)
    best = {}
    for d in np.argsort(priority, kind="stable").tolist():
        best.setdefault(int(lab[d]), d)
    direct = {}
    for x, y, s in zip(a.tolist(), b.tolist(), score.tolist(), strict=True):
        direct[(x, y)] = direct[(y, x)] = s
    for d in range(n):
        r = best[int(lab[d])]
        if r == d:
            kept[d] = True
        else:
            dup[d] = r
            sc[d] = direct.get((d, r), np.nan)
    return kept, dup, sc


def keep_aware(n, a, b, score, priority, *, groups=None):  # type: ignore[no-untyped-def]
    return _expand(n, np.asarray(a), np.asarray(b), score, np.asarray(priority), groups, _greedy)


def components(n, a, b, score, priority, *, groups=None):  # type: ignore[no-untyped-def]
    return _expand(
        n, np.asarray(a), np.asarray(b), score, np.asarray(priority), groups, _components
    )
