"""Seed -> synthetic corpora with known near-duplicates: Zipf text, word edits, shuffled copies.

Documents are words drawn from a Zipf-Mandelbrot law p(r) ∝ 1/(r + 2.7) over a generated vocabulary
of pronounceable pseudo-words, with sentences, commas, capitals and paragraph breaks so that
canonicalisation matters. Copies of a document are exact, cosmetic (only case, punctuation or
whitespace change: canonical tokens are identical) or edited: each word is hit with probability
`rate` by a substitution, insertion, deletion or swap with its neighbour, and some edited copies
get a short prefix or suffix (a retweet-like "RT @name:" or a "via ..." tail). With w-word shingles
the Jaccard resemblance of an edited copy to its original is roughly (1 - rate)^w / (1 + ...) and so
spans 0-1 as `rate` goes from 0 to about 0.5.

Everything is deterministic in an explicit seed. Work is done in fixed blocks of `BLOCK` documents,
each with its own numpy Generator seeded by (seed, stream, block index): the i-th output never
depends on how many documents are requested after it or how the caller chunks the output.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import ParamError

__all__ = [
    "BLOCK",
    "KIND_COSMETIC",
    "KIND_EDITED",
    "KIND_EMPTY",
    "KIND_EXACT",
    "KIND_NAMES",
    "KIND_ORIGINAL",
    "CorpusPlan",
    "NearDupCorpus",
    "cosmetic",
    "cosmetic_batch",
    "edit",
    "edit_batch",
    "edit_vocabulary",
    "iter_render",
    "near_duplicate_corpus",
    "plan_corpus",
    "pseudo_vocabulary",
    "random_documents",
    "render_corpus",
]

#: Documents per internal block; each block has its own random stream (see module docstring).
BLOCK = 1024

# Stream tags so that different generators never share random numbers for the same seed.
_STREAM_VOCAB = 11
_STREAM_DOCS = 12
_STREAM_EDIT = 13
_STREAM_COSMETIC = 14
_STREAM_PLAN = 15
_STREAM_RENDER = 16

KIND_ORIGINAL = 0  #: the base text itself, once
KIND_EXACT = 1  #: a byte-identical copy of an original
KIND_COSMETIC = 2  #: a copy with only case / punctuation / whitespace changes
KIND_EDITED = 3  #: a copy with word-level edits at `edit_rate`
KIND_EMPTY = 4  #: an empty or whitespace/punctuation-only text (no tokens), source -1
KIND_NAMES = ("original", "exact", "cosmetic", "edited", "empty")

_ONSETS = (
    "", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
    "br", "ch", "cl", "cr", "dr", "fl", "gr", "pl", "pr", "sh", "sl", "sp", "st", "str", "th", "tr",
)  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "i", "o", "ai", "ea", "ee", "ie", "oo", "ou", "y")
_CODAS = ("", "", "", "", "n", "r", "s", "t", "l", "m", "nd", "ng", "nt", "rk", "st", "ck", "sh")

# Separator after a word in generated text: plain, comma, sentence ends, paragraph end, doc end.
_SEPS = np.array([" ", ", ", ". ", "? ", "! ", ".\n\n", "; ", "."], dtype=object)
_SEP_LEN = np.array([len(s) for s in _SEPS], dtype=np.int64)
_SEP_SPACE, _SEP_COMMA, _SEP_SEMI, _SEP_LAST = 0, 1, 6, 7
_SENT_END_CODES = np.array([2, 3, 4, 5], dtype=np.int64)
_SENT_END_P = np.array([0.76, 0.07, 0.05, 0.12])

_WS_SPLIT = re.compile(r"(\s+)")
_TRAILING_PUNCT = re.compile(r"(?<=\w)[.,;:!?]+(?=\s|$)")
_WS_RUN = re.compile(r"\s+")


def _rng(seed: int, stream: int, block: int = 0) -> np.random.Generator:
    return np.random.default_rng([seed, stream, block])


def _check_seed(seed: int) -> None:
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool) or seed < 0:
        raise ParamError(f"seed must be a non-negative integer, got {seed!r}")


@functools.lru_cache(maxsize=16)
def pseudo_vocabulary(size: int = 20000, seed: int = 0) -> tuple[str, ...]:
    """`size` distinct lower-case pronounceable pseudo-words, shortest first.

    Words are 1-4 syllables of (onset, vowel, coda). Sorted by length (stable), so that the most
    frequent Zipf ranks get the shortest words, as in natural language. Cached: the same
    (size, seed) always returns the same tuple object.
    """
    if not isinstance(size, int) or size < 1 or size > 5_000_000:
        raise ParamError(f"vocabulary size must be an integer from 1 to 5,000,000, got {size!r}")
    _check_seed(seed)
    rng = _rng(seed, _STREAM_VOCAB)
    onsets = np.array(_ONSETS, dtype=object)
    vowels = np.array(_VOWELS, dtype=object)
    codas = np.array(_CODAS, dtype=object)
    words: dict[str, None] = {}
    while len(words) < size:
        m = 2 * (size - len(words)) + 64
        nsyl = rng.choice(np.arange(1, 5), size=m, p=[0.25, 0.4, 0.25, 0.1])
        total = int(nsyl.sum())
        syl = (
            onsets[rng.integers(0, len(onsets), total)]
            + vowels[rng.integers(0, len(vowels), total)]
            + codas[rng.integers(0, len(codas), total)]
        ).tolist()
        ends = np.cumsum(nsyl).tolist()
        start = 0
        for end in ends:
            words.setdefault("".join(syl[start:end]), None)
            start = end
            if len(words) >= size:
                break
    return tuple(sorted(list(words)[:size], key=len))


@functools.lru_cache(maxsize=16)
def _vocab_tables(
    size: int, seed: int
) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.object_], npt.NDArray[np.int64]]:
    vocab = pseudo_vocabulary(size, seed)
    low = np.array(vocab, dtype=object)
    cap = np.array([w.capitalize() for w in vocab], dtype=object)
    lens = np.array([len(w) for w in vocab], dtype=np.int64)
    return low, cap, lens


@functools.lru_cache(maxsize=16)
def _zipf_cdf(size: int, exponent: float) -> npt.NDArray[np.float64]:
    p = 1.0 / (np.arange(1, size + 1, dtype=np.float64) + 2.7) ** exponent
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    return cdf


def _join_pieces(
    words: npt.NDArray[np.object_],
    seps: npt.NDArray[np.object_],
    doc_lengths: npt.NDArray[np.int64],
    tok_len: npt.NDArray[np.int64] | None = None,
) -> list[str]:
    """Concatenate word+sep pieces once and slice per document (C-speed; no per-word Python).

    tok_len, if known, is len(word) + len(sep) per position (saves measuring every piece).
    """
    if len(words) == 0:
        return [""] * len(doc_lengths)
    pieces = np.empty(2 * len(words), dtype=object)
    pieces[0::2] = words
    pieces[1::2] = seps
    flat = pieces.tolist()
    big = "".join(flat)
    if tok_len is None:
        piece_len = np.fromiter(map(len, flat), dtype=np.int64, count=len(flat))
        tok_len = piece_len[0::2] + piece_len[1::2]
    cum_tok = np.concatenate(([0], np.cumsum(tok_len)))
    doc_ends = np.cumsum(doc_lengths)
    char_ends = cum_tok[doc_ends].tolist()
    char_starts = cum_tok[doc_ends - doc_lengths].tolist()
    return [big[s:e] for s, e in zip(char_starts, char_ends, strict=True)]


def random_documents(
    n: int,
    seed: int,
    words: tuple[int, int] = (20, 300),
    vocab_size: int = 20000,
    zipf_exponent: float = 1.05,
) -> list[str]:
    """`n` English-like documents of Zipf-distributed pseudo-words, deterministic in `seed`.

    Lengths are log-uniform in [words[0], words[1]] words. Sentences average about 12 words,
    start with a capital and end with '.', '?', '!' or a paragraph break; commas and semicolons
    appear inside. Prefix-stable: random_documents(n, s)[:k] == random_documents(k, s).
    """
    if not isinstance(n, int | np.integer) or n < 0:
        raise ParamError(f"n must be a non-negative integer, got {n!r}")
    _check_seed(seed)
    lo, hi = words
    if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
        raise ParamError(f"words must be (min, max) integers with 1 <= min <= max, got {words!r}")
    if zipf_exponent <= 0:
        raise ParamError(f"zipf_exponent must be positive, got {zipf_exponent!r}")
    low, cap, vlen = _vocab_tables(vocab_size, seed)
    cdf = _zipf_cdf(vocab_size, float(zipf_exponent))
    out: list[str] = []
    for block in range((n + BLOCK - 1) // BLOCK):
        rng = _rng(seed, _STREAM_DOCS, block)
        lengths = np.exp(rng.uniform(np.log(lo), np.log(hi + 1), BLOCK)).astype(np.int64)
        lengths = np.clip(lengths, lo, hi)
        total = int(lengths.sum())
        ids = np.minimum(np.searchsorted(cdf, rng.random(total), side="right"), vocab_size - 1)
        last = np.cumsum(lengths) - 1
        sent_end = rng.random(total) < 1.0 / 12.0
        sep = np.where(
            sent_end,
            rng.choice(_SENT_END_CODES, size=total, p=_SENT_END_P),
            np.where(
                rng.random(total) < 0.07,
                _SEP_COMMA,
                np.where(rng.random(total) < 0.01, _SEP_SEMI, _SEP_SPACE),
            ),
        )
        sep[last] = _SEP_LAST
        is_end = np.isin(sep, np.array([2, 3, 4, 5, _SEP_LAST]))
        capital = np.empty(total, dtype=bool)
        capital[0] = True
        capital[1:] = is_end[:-1]
        forms = np.where(capital, cap[ids], low[ids])
        docs = _join_pieces(forms, _SEPS[sep], lengths, vlen[ids] + _SEP_LEN[sep])
        take = min(BLOCK, n - block * BLOCK)
        out.extend(docs[:take])
    return out


# ----------------------------------------------------------------------------------------------
# Word-level edits


def _split_words(
    texts: Sequence[str],
) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.object_], npt.NDArray[np.int64]]:
    """Texts -> flat (word, following whitespace) arrays and words per text.

    re.split with a capture group alternates word / whitespace; a leading or trailing empty word
    keeps leading/trailing whitespace in place (it is never edited).
    """
    word_list: list[str] = []
    sep_list: list[str] = []
    counts = np.empty(len(texts), dtype=np.int64)
    for i, t in enumerate(texts):
        parts = _WS_SPLIT.split(t)
        w = parts[0::2]
        s = parts[1::2]
        s.append("")
        word_list.extend(w)
        sep_list.extend(s)
        counts[i] = len(w)
    words = np.empty(len(word_list), dtype=object)
    words[:] = word_list
    seps = np.empty(len(sep_list), dtype=object)
    seps[:] = sep_list
    return words, seps, counts


def edit_vocabulary() -> tuple[str, ...]:
    """The pseudo-words that substitutions, insertions and affixes draw from (fixed, cached)."""
    return pseudo_vocabulary(5000, 7)


def _edit_block(
    texts: Sequence[str],
    rates: npt.NDArray[np.float64],
    rng: np.random.Generator,
    affix_prob: float,
) -> list[str]:
    words, seps, counts = _split_words(texts)
    total = len(words)
    vocab = np.array(edit_vocabulary(), dtype=object)
    doc = np.repeat(np.arange(len(texts)), counts)
    editable = np.fromiter(map(len, words.tolist()), dtype=np.int64, count=total) > 0
    hit = editable & (rng.random(total) < rates[doc])
    op = rng.integers(0, 4, total)  # 0 substitute, 1 delete, 2 insert before, 3 swap with next
    replacement = vocab[rng.integers(0, len(vocab), total)]

    # Swap with the next word of the same document; drop a swap whose left neighbour also swaps,
    # so that the swapped pairs never overlap.
    swap = hit & (op == 3)
    swap[-1:] = False
    same_next = np.zeros(total, dtype=bool)
    same_next[:-1] = (doc[1:] == doc[:-1]) & editable[1:]
    swap &= same_next
    swap[1:] &= ~swap[:-1]
    perm = np.arange(total)
    s = np.flatnonzero(swap)
    perm[s], perm[s + 1] = s + 1, s
    words = words[perm]

    sub = hit & (op == 0)
    words[sub] = replacement[sub]

    emit = np.ones(total, dtype=np.int64)
    emit[hit & (op == 1)] = 0
    ins = hit & (op == 2)
    emit[ins] = 2
    src = np.repeat(np.arange(total), emit)
    # the first of the two slots emitted for an inserting word is the new word
    first_slot = np.ones(len(src), dtype=bool)
    first_slot[1:] = src[1:] != src[:-1]
    new = ins[src] & first_slot
    out_words = words[src]
    out_seps = seps[src]
    out_words[new] = vocab[rng.integers(0, len(vocab), int(new.sum()))]
    out_seps[new] = " "
    out_counts = np.bincount(doc[src], minlength=len(texts)).astype(np.int64)
    result = _join_pieces(out_words, out_seps, out_counts)

    # Retweet-like prefix or "via" suffix on some edited documents.
    affix = (rng.random(len(texts)) < affix_prob) & (rates > 0)
    where = rng.random(len(texts)) < 0.5
    names = vocab[rng.integers(0, len(vocab), (len(texts), 3))]
    for i in np.flatnonzero(affix).tolist():
        a, b, c = names[i]
        if where[i]:
            result[i] = f"RT @{a}{b}: {result[i]}"
        else:
            result[i] = f"{result[i]}\n\nvia {a} {b} {c}"
    return result


def _check_rates(rates: npt.ArrayLike, n: int) -> npt.NDArray[np.float64]:
    r = np.broadcast_to(np.asarray(rates, dtype=np.float64), (n,))
    if n and (not np.all(np.isfinite(r)) or r.min() < 0 or r.max() > 1):
        raise ParamError("edit rates must be finite numbers from 0 to 1")
    return r


def edit_batch(
    texts: Sequence[str], rates: npt.ArrayLike, seed: int, affix_prob: float = 0.15
) -> list[str]:
    """Edit each text at the word level: each word is hit with probability rates[i].

    A hit word is substituted by a pseudo-word, deleted, preceded by an inserted pseudo-word, or
    swapped with the next word, with equal probability. Whitespace between surviving words is kept.
    With probability `affix_prob` a text with rate > 0 also gets a retweet-like "RT @name: " prefix
    or a "via ..." suffix. Rate 0 returns the text unchanged.
    """
    _check_seed(seed)
    if not 0.0 <= affix_prob <= 1.0:
        raise ParamError(f"affix_prob must be from 0 to 1, got {affix_prob!r}")
    r = _check_rates(rates, len(texts))
    out: list[str] = []
    for block in range((len(texts) + BLOCK - 1) // BLOCK):
        lo, hi = block * BLOCK, min(len(texts), (block + 1) * BLOCK)
        out.extend(_edit_block(texts[lo:hi], r[lo:hi], _rng(seed, _STREAM_EDIT, block), affix_prob))
    return out


def edit(text: str, rate: float, seed: int, affix_prob: float = 0.15) -> str:
    """One text edited at word-level `rate` (see `edit_batch`)."""
    return edit_batch([text], [rate], seed, affix_prob)[0]


def _cosmetic_one(text: str, ops: npt.NDArray[np.bool_], lead: str, tail: str) -> str:
    if ops[0]:
        text = text.lower()
    elif ops[1]:
        text = text.upper()
    if ops[2]:
        text = _TRAILING_PUNCT.sub("", text)
    elif ops[3]:
        text = text.replace(" ", " !" if len(text) % 2 else " ,", 1)
    if ops[4]:
        text = _WS_RUN.sub(" ", text)
    elif ops[5]:
        text = text.replace(" ", "  ").replace("\n", "\n \n")
    return lead + text + tail


def cosmetic_batch(texts: Sequence[str], seed: int) -> list[str]:
    """Copies that differ only in case, punctuation and whitespace: canonical tokens are unchanged.

    Each text gets a random subset of: all lower / all upper case; trailing punctuation after
    words stripped or an extra ',' / '!' added; whitespace collapsed or doubled; leading or
    trailing whitespace. Token-preserving for text whose case mappings keep word characters word
    characters (all of Latin, Greek, Cyrillic; a few exotic letters gain combining marks).
    """
    _check_seed(seed)
    out: list[str] = []
    leads = np.array(["", " ", "\n", "  "], dtype=object)
    tails = np.array(["", "\n", " ", "!!"], dtype=object)
    for block in range((len(texts) + BLOCK - 1) // BLOCK):
        lo, hi = block * BLOCK, min(len(texts), (block + 1) * BLOCK)
        rng = _rng(seed, _STREAM_COSMETIC, block)
        m = hi - lo
        ops = rng.random((m, 6)) < 0.45
        lead = leads[rng.integers(0, 4, m)]
        tail = tails[rng.integers(0, 4, m)]
        for j in range(m):
            t = texts[lo + j]
            new = _cosmetic_one(t, ops[j], lead[j], tail[j])
            if new == t:  # make sure a cosmetic copy is never byte-identical
                new = t + " "
            out.append(new)
    return out


def cosmetic(text: str, seed: int) -> str:
    """One text with only case/punctuation/whitespace changes (see `cosmetic_batch`)."""
    return cosmetic_batch([text], seed)[0]


# ----------------------------------------------------------------------------------------------
# Corpora of originals plus copies


class CorpusPlan(NamedTuple):
    """What each output document will be, as arrays (cheap for millions of documents).

    source: index into the base texts (-1 for KIND_EMPTY); kind: KIND_* code; edit_rate: the
    word-level edit rate (0 unless kind is KIND_EDITED).
    """

    source: npt.NDArray[np.int64]
    kind: npt.NDArray[np.int8]
    edit_rate: npt.NDArray[np.float64]


class NearDupCorpus(NamedTuple):
    """A rendered corpus: texts plus, per text, its base text index, edit rate and kind."""

    texts: list[str]
    source: npt.NDArray[np.int64]
    edit_rate: npt.NDArray[np.float64]
    kind: npt.NDArray[np.int8]


DEFAULT_EDIT_RATES = (0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.3, 0.45)


def plan_corpus(
    n_base: int,
    n_total: int,
    dup_fraction: float,
    seed: int,
    edit_rates: Sequence[float] = DEFAULT_EDIT_RATES,
    exact_fraction: float = 0.15,
    cosmetic_fraction: float = 0.15,
    n_empty: int = 0,
) -> CorpusPlan:
    """Plan a shuffled corpus of n_total documents from n_base base texts.

    round(dup_fraction * (n_total - n_empty)) documents are copies, the rest distinct originals
    (each used once, chosen at random from the base texts). Each copy picks its original uniformly;
    of the copies, `exact_fraction` are exact, `cosmetic_fraction` cosmetic and the rest edited
    at a rate drawn uniformly from `edit_rates`. `n_empty` empty texts are mixed in.
    """
    _check_seed(seed)
    if not isinstance(n_total, int | np.integer) or n_total < 0:
        raise ParamError(f"n_total must be a non-negative integer, got {n_total!r}")
    if not isinstance(n_empty, int | np.integer) or not 0 <= n_empty <= n_total:
        raise ParamError(f"n_empty must be an integer from 0 to n_total, got {n_empty!r}")
    if not 0.0 <= dup_fraction < 1.0:
        raise ParamError(f"dup_fraction must be in [0, 1), got {dup_fraction!r}")
    if exact_fraction < 0 or cosmetic_fraction < 0 or exact_fraction + cosmetic_fraction > 1:
        raise ParamError(
            "exact_fraction and cosmetic_fraction must be non-negative and add up to at most 1, "
            f"got {exact_fraction!r} and {cosmetic_fraction!r}"
        )
    rates = _check_rates(list(edit_rates), len(edit_rates))
    if len(rates) == 0:
        raise ParamError("edit_rates must name at least one rate, e.g. (0.05, 0.1, 0.2)")
    n_docs = n_total - n_empty
    n_copy = round(dup_fraction * n_docs)
    n_orig = n_docs - n_copy
    if n_docs and n_orig < 1:
        raise ParamError("dup_fraction leaves no original documents; lower it")
    if n_orig > n_base:
        raise ParamError(
            f"{n_orig} distinct originals are needed but only {n_base} base texts were given; "
            "add base texts (e.g. from random_documents) or raise dup_fraction"
        )
    rng = _rng(seed, _STREAM_PLAN)
    originals = rng.choice(n_base, size=n_orig, replace=False) if n_orig else np.zeros(0, np.int64)
    copy_src = originals[rng.integers(0, n_orig, n_copy)] if n_copy else np.zeros(0, np.int64)
    u = rng.random(n_copy)
    copy_kind = np.where(
        u < exact_fraction,
        KIND_EXACT,
        np.where(u < exact_fraction + cosmetic_fraction, KIND_COSMETIC, KIND_EDITED),
    )
    copy_rate = np.where(copy_kind == KIND_EDITED, rates[rng.integers(0, len(rates), n_copy)], 0.0)
    source = np.concatenate([originals, copy_src, np.full(n_empty, -1)]).astype(np.int64)
    kind = np.concatenate([np.zeros(n_orig), copy_kind, np.full(n_empty, KIND_EMPTY)]).astype(
        np.int8
    )
    rate = np.concatenate([np.zeros(n_orig), copy_rate, np.zeros(n_empty)]).astype(np.float64)
    order = rng.permutation(n_total)
    return CorpusPlan(source[order], kind[order], rate[order])


_EMPTY_TEXTS = ("", "", "", " ", "\n\n", "...", " - ", "\t")


def _render_block(
    base_texts: Sequence[str], plan: CorpusPlan, seed: int, block: int, n: int
) -> list[str]:
    lo, hi = block * BLOCK, min(n, (block + 1) * BLOCK)
    src = plan.source[lo:hi]
    kind = plan.kind[lo:hi]
    rng = _rng(seed, _STREAM_RENDER, block)
    sub_seed = int(rng.integers(0, 2**62))
    empty_pick = rng.integers(0, len(_EMPTY_TEXTS), hi - lo)
    out = [
        base_texts[s] if s >= 0 else _EMPTY_TEXTS[e]
        for s, e in zip(src.tolist(), empty_pick.tolist(), strict=True)
    ]
    cos = np.flatnonzero(kind == KIND_COSMETIC)
    if len(cos):
        for i, t in zip(cos, cosmetic_batch([out[i] for i in cos], sub_seed), strict=True):
            out[i] = t
    ed = np.flatnonzero(kind == KIND_EDITED)
    if len(ed):
        new = edit_batch([out[i] for i in ed], plan.edit_rate[lo:hi][ed], sub_seed)
        for i, t in zip(ed, new, strict=True):
            out[i] = t
    return out


def iter_render(
    base_texts: Sequence[str], plan: CorpusPlan, seed: int
) -> Iterator[tuple[int, list[str]]]:
    """Yield (start index, texts) for consecutive blocks of the planned corpus (streaming)."""
    _check_seed(seed)
    n = len(plan.source)
    if n and int(plan.source.max()) >= len(base_texts):
        raise ParamError("the plan refers to more base texts than were given; plan with n_base")
    for block in range((n + BLOCK - 1) // BLOCK):
        yield block * BLOCK, _render_block(base_texts, plan, seed, block, n)


def render_corpus(base_texts: Sequence[str], plan: CorpusPlan, seed: int) -> list[str]:
    """All texts of the planned corpus, in plan order."""
    out: list[str] = []
    for _, texts in iter_render(base_texts, plan, seed):
        out.extend(texts)
    return out


def near_duplicate_corpus(
    base_texts: Sequence[str],
    n_total: int,
    dup_fraction: float,
    edit_rates: Sequence[float] = DEFAULT_EDIT_RATES,
    seed: int = 0,
    exact_fraction: float = 0.15,
    cosmetic_fraction: float = 0.15,
    n_empty: int = 0,
) -> NearDupCorpus:
    """Originals plus exact, cosmetic and edited copies, shuffled; see `plan_corpus`.

    Returns texts and, per text, `source` (index of its base text: documents with the same source
    form a true near-duplicate group), `edit_rate` and `kind`.
    """
    plan = plan_corpus(
        len(base_texts),
        n_total,
        dup_fraction,
        seed,
        edit_rates,
        exact_fraction,
        cosmetic_fraction,
        n_empty,
    )
    texts = render_corpus(base_texts, plan, seed)
    return NearDupCorpus(texts, plan.source, plan.edit_rate, plan.kind)
