"""Texts -> 64-bit SimHash fingerprints (Charikar): sign of sum over features of +-weight per bit.

Each feature (character q-gram, word, or word w-shingle) hashes to 64 bits; a vector V of 64
counters gets +w where a bit is 1 and -w where it is 0, and the fingerprint's bit i is V[i] > 0.
Similar feature multisets give fingerprints a few bits apart (Hamming distance), which
``neardup.hamming`` finds. Weights are occurrence counts, or counts times inverse document
frequency learned from a corpus with ``fit_idf``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from ._kernels import simhash as _ks
from ._kernels.shingles import distinct_per_doc, unique_per_doc
from .errors import IndexMismatchError, InputError, ParamError
from .params import ShingleParams, SimhashParams, check_seed
from .shingles import shingle_sequence


@dataclass(frozen=True)
class IdfTable:
    """Document frequencies of features in a corpus, and the weights derived from them.

    keys: sorted unique feature hashes (uint64); df: documents containing each (int64);
    n_docs: documents seen; features: ``ShingleParams.fingerprint()`` of the features counted
    (empty if unknown), checked when the table is used.
    Weight of a feature: ``ln((1 + n_docs) / (1 + df)) + 1`` (smoothed IDF, always > 0); a
    feature never seen has df = 0, the largest weight.
    """

    keys: npt.NDArray[np.uint64]
    df: npt.NDArray[np.int64]
    n_docs: int
    features: str = ""

    def __post_init__(self) -> None:
        if self.keys.dtype != np.uint64 or self.df.dtype != np.int64:
            raise ParamError("IdfTable needs keys as uint64 and df as int64 arrays")
        if self.keys.shape != self.df.shape or self.keys.ndim != 1:
            raise ParamError("IdfTable keys and df must be 1-D arrays of the same length")
        if self.keys.size > 1 and not bool(np.all(self.keys[1:] > self.keys[:-1])):
            raise ParamError("IdfTable keys must be sorted ascending and unique")

    @property
    def weights(self) -> npt.NDArray[np.float64]:
        """IDF weight of each key."""
        return np.log((1.0 + self.n_docs) / (1.0 + self.df)) + 1.0

    @property
    def unseen_weight(self) -> float:
        """IDF weight of a feature absent from the corpus."""
        return math.log(1.0 + self.n_docs) + 1.0

    def lookup(self, fps: npt.NDArray[np.uint64]) -> npt.NDArray[np.float64]:
        """IDF weight of each feature hash (binary search in the sorted keys)."""
        out = np.full(fps.shape[0], self.unseen_weight)
        if self.keys.size == 0 or fps.size == 0:
            return out
        pos = np.searchsorted(self.keys, fps)
        pos_c = np.minimum(pos, self.keys.size - 1)
        hit = self.keys[pos_c] == fps
        out[hit] = self.weights[pos_c[hit]]
        return out


def _merge_counts(
    keys_a: npt.NDArray[np.uint64],
    df_a: npt.NDArray[np.int64],
    keys_b: npt.NDArray[np.uint64],
    df_b: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    keys = np.concatenate([keys_a, keys_b])
    df = np.concatenate([df_a, df_b])
    order = np.argsort(keys, kind="stable")
    keys, df = keys[order], df[order]
    if keys.size == 0:
        return keys, df
    start = np.ones(keys.size, bool)
    start[1:] = keys[1:] != keys[:-1]
    idx = np.flatnonzero(start)
    return keys[idx], np.add.reduceat(df, idx).astype(np.int64)


def fit_idf(
    batches: Iterable[tuple[npt.ArrayLike, npt.ArrayLike] | object],
    features: ShingleParams | None = None,
) -> IdfTable:
    """Document frequency of every feature over batches of feature sequences -> ``IdfTable``.

    Each batch is ``(fps uint64[], offsets int64[n+1])`` as ``shingle_sequence`` returns (repeats
    allowed; a feature counts once per document) or an object with ``.fps`` and ``.offsets``
    (a ``ShingleBatch``). Counting is by sorting: unique features per document, then unique
    with counts per batch, merged across batches. ``features`` names the shingling used, so
    ``simhash`` can refuse a table built from other features.
    """
    keys = np.empty(0, np.uint64)
    df = np.empty(0, np.int64)
    n_docs = 0
    for batch in batches:
        if isinstance(batch, tuple):
            fps_in, off_in = batch
        else:
            fps_in, off_in = getattr(batch, "fps", None), getattr(batch, "offsets", None)
        fps, offsets = _check_features(fps_in, off_in)
        ufps, _ = unique_per_doc(fps, offsets)
        bk, bc = np.unique(ufps, return_counts=True)
        keys, df = _merge_counts(keys, df, bk.astype(np.uint64), bc.astype(np.int64))
        n_docs += offsets.shape[0] - 1
    return IdfTable(keys, df, n_docs, features.fingerprint() if features else "")


def fit_idf_texts(texts: Iterable[str], params: SimhashParams, batch_size: int = 2000) -> IdfTable:
    """``fit_idf`` over the features ``params`` extracts from ``texts``, in batches."""
    sp = params.shingle_params()

    def gen() -> Iterable[tuple[npt.ArrayLike, npt.ArrayLike]]:
        batch: list[str] = []
        for t in texts:
            batch.append(t)
            if len(batch) == batch_size:
                yield shingle_sequence(batch, sp)
                batch = []
        if batch:
            yield shingle_sequence(batch, sp)

    return fit_idf(gen(), sp)


def _check_features(fps: object, offsets: object) -> tuple[np.ndarray, np.ndarray]:
    f = np.asarray(fps)
    o = np.asarray(offsets)
    if f.ndim != 1 or f.dtype != np.uint64:
        raise InputError(
            f"feature hashes must be a 1-D uint64 array, got dtype {f.dtype} shape {f.shape}"
        )
    if (
        o.ndim != 1
        or o.dtype.kind not in "iu"
        or o.shape[0] < 1
        or o[0] != 0
        or o[-1] != f.shape[0]
        or bool(np.any(np.diff(o) < 0))
    ):
        raise InputError(
            "offsets must be n+1 non-decreasing integers from 0 to len(fps); document i's "
            "features are fps[offsets[i]:offsets[i+1]]"
        )
    return np.ascontiguousarray(f), np.ascontiguousarray(o, dtype=np.int64)


@cache
def _spread() -> np.ndarray:
    return _ks.spread_table()


def simhash_from_features(
    fps: npt.ArrayLike,
    offsets: npt.ArrayLike,
    weights: npt.ArrayLike | None = None,
    seed: int = 1,
) -> npt.NDArray[np.uint64]:
    """SimHash of each document's feature hashes ``fps[offsets[i]:offsets[i+1]]`` -> uint64[n].

    weights: None (each occurrence adds 1: count weighting, since a repeated feature adds its
    weight again) or float64 per occurrence, aligned with fps. Each feature is re-mixed with
    ``fmix64(fp ^ splitmix64(seed))`` before its bits are used. A document without features
    gets fingerprint 0 (check ``offsets`` to tell it apart; ``simhash_batch`` reports it).
    """
    f, o = _check_features(fps, offsets)
    check_seed(seed)
    if weights is None:
        return _ks.simhash_counts(f, o, seed, _spread())
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if w.shape != f.shape:
        raise InputError(f"weights must have one value per feature: shape {f.shape}, got {w.shape}")
    if not bool(np.all(np.isfinite(w))):
        raise InputError("weights must be finite numbers")
    return _ks.simhash_weighted(f, o, w, seed)


@dataclass(frozen=True)
class SimhashBatch:
    """SimHash fingerprints of n documents, and which documents had no features at all.

    An empty document's fingerprint is 0, which carries no information: never treat two empty
    documents as duplicates of each other because their fingerprints agree (pass ``empty`` as
    ``ignore`` to ``hamming_pairs``).
    """

    fps: npt.NDArray[np.uint64]
    empty: npt.NDArray[np.bool_]


def simhash_batch(
    texts: Sequence[str], params: SimhashParams = SimhashParams(), idf: IdfTable | None = None
) -> SimhashBatch:
    """Fingerprints of ``texts`` and their empty-document mask (see ``simhash``)."""
    if isinstance(texts, str):
        raise InputError("texts must be a sequence of strings, not one string; wrap it in a list")
    fps, offsets = shingle_sequence(texts, params.shingle_params())
    return simhash_from_sequence(fps, offsets, params, idf)


def simhash_from_sequence(
    fps: npt.NDArray[np.uint64],
    offsets: npt.NDArray[np.int64],
    params: SimhashParams,
    idf: IdfTable | None = None,
) -> SimhashBatch:
    """Fingerprints from each document's feature hashes in order (``params.shingle_params()``
    shingling, repeats kept), weighted as ``params.weighting`` says."""
    sp = params.shingle_params()
    if params.weighting == "idf":
        if idf is None:
            raise ParamError(
                "weighting='idf' needs an IdfTable: build one with fit_idf_texts(corpus, params)"
            )
        if idf.features and idf.features != sp.fingerprint():
            raise IndexMismatchError(
                f"IDF table was fitted on features {idf.features} but these params extract "
                f"{sp.fingerprint()}; refit it with the same SimhashParams"
            )
    elif idf is not None:
        raise ParamError(
            f"an IDF table was given but weighting={params.weighting!r}; use weighting='idf'"
        )
    if params.weighting == "binary":  # each distinct feature once: the shingle *set*
        fps, offsets = distinct_per_doc(fps, offsets)
    weights = idf.lookup(fps) if idf is not None else None
    out = simhash_from_features(fps, offsets, weights, params.seed)
    return SimhashBatch(out, np.diff(offsets) == 0)


def simhash(
    texts: Sequence[str], params: SimhashParams = SimhashParams(), idf: IdfTable | None = None
) -> npt.NDArray[np.uint64]:
    """64-bit SimHash fingerprint of each text -> uint64[n].

    Documents without any word character get 0; ``simhash_batch`` also returns which ones.
    The same texts, params and IDF table give the same fingerprints whatever the batching.
    """
    return simhash_batch(texts, params, idf).fps
