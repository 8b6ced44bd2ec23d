"""Pure-Python references for every kernel: short, slow and obviously correct.

Fast paths in ``neardup._kernels`` are proven equal to these by property tests.
"""

from __future__ import annotations

import re

from neardup.text import canonical_tokens

MASK = (1 << 64) - 1
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
SHINGLE_MUL = 0x9FB21C651E98DF25
EMPTY = MASK
RABIN_P = (1 << 64) | 0x5B98B2C4F20492FF


def fmix64(x: int) -> int:
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & MASK
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & MASK
    return x ^ (x >> 33)


def splitmix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def bucket(h: int, t: int) -> int:
    return ((h >> 32) * t) >> 32


def token_hash(token: str) -> int:
    h = FNV_OFFSET
    for c in token:
        h = ((h ^ ord(c)) * FNV_PRIME) & MASK
    return fmix64(h ^ len(token))


def mix_shingle(token_hashes: list[int]) -> int:
    """fmix64 of the polynomial sum_j t_j * C^(m-1-j) mod 2^64, xor m."""
    m = len(token_hashes)
    s = sum(t * pow(SHINGLE_MUL, m - 1 - j, 1 << 64) for j, t in enumerate(token_hashes))
    return fmix64((s & MASK) ^ m)


def rabin(code_points: list[int]) -> int:
    """A(x) mod P by long division, A the bit string of the 32-bit code points, big-endian."""
    a = 0
    for c in code_points:
        a = (a << 32) | c
    while a.bit_length() > 64:
        a ^= RABIN_P << (a.bit_length() - 65)
    return a


def shingle_token_groups(tokens: list[str], w: int) -> list[list[str]]:
    if not tokens:
        return []
    if len(tokens) < w:
        return [tokens]
    return [tokens[i : i + w] for i in range(len(tokens) - w + 1)]


def shingles(
    text: str, w: int = 5, mode: str = "word", hash: str = "mix", nfkc: bool = False
) -> list[int]:
    """Fingerprints of the w-shingles of text, in order, with repeats."""
    tokens = canonical_tokens(text, mode, nfkc)  # type: ignore[arg-type]
    out = []
    for group in shingle_token_groups(tokens, w):
        if hash == "mix":
            out.append(mix_shingle([token_hash(t) for t in group]))
        else:
            joined = "".join(group) if mode == "char" else " ".join(group)
            out.append(rabin([ord(c) for c in joined]))
    return out


def canonical_hash(text: str, mode: str = "word", nfkc: bool = False) -> int:
    tokens = canonical_tokens(text, mode, nfkc)  # type: ignore[arg-type]
    if not tokens:
        return EMPTY
    h = FNV_OFFSET
    for t in tokens:
        h = ((h ^ token_hash(t)) * SHINGLE_MUL) & MASK
    return fmix64(h ^ len(tokens))


def raw_hash(text: str) -> int:
    data = text.encode("utf-8", "surrogatepass")
    h = FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & MASK
    return fmix64(h ^ len(data))


def sketch_classic(fps: set[int], t: int, seed: int) -> list[int]:
    if not fps:
        return [EMPTY] * t
    out = []
    for i in range(t):
        a = splitmix64((seed + 2 * i + 1) & MASK) | 1
        b = splitmix64((seed + 2 * i + 2) & MASK)
        out.append(min((a * fmix64(f ^ seed) + b) & MASK for f in fps))
    return out


def sketch_oph(fps: set[int], t: int, seed: int) -> list[int]:
    if not fps:
        return [EMPTY] * t
    bins: dict[int, int] = {}
    for f in fps:
        g = fmix64(f ^ seed)
        j = bucket(g, t)
        bins[j] = min(bins.get(j, EMPTY), g)
    dseed = splitmix64(seed)
    out = []
    for j in range(t):
        attempt = 0
        src = j
        while src not in bins:
            src = bucket(fmix64(dseed ^ ((j << 32) | attempt)), t)
            attempt += 1
        out.append(bins[src])
    return out


def sketch_bottomk(fps: set[int], t: int, seed: int) -> list[int]:
    values = sorted({fmix64(f ^ seed) for f in fps})[:t]
    return values + [EMPTY] * (t - len(values))


def estimate_positional(x: list[int], y: list[int]) -> float:
    if x[0] == EMPTY or y[0] == EMPTY:
        return 0.0
    return sum(p == q for p, q in zip(x, y, strict=True)) / len(x)


def estimate_bottomk(x: list[int], y: list[int]) -> float:
    t = len(x)
    sx = {v for v in x if v != EMPTY}
    sy = {v for v in y if v != EMPTY}
    union = sorted(sx | sy)[:t]
    if not union:
        return 0.0
    return sum(v in sx and v in sy for v in union) / len(union)


def keep_aware_reference(
    n: int,
    pairs: list[tuple[int, int, float]],
    priority: list[int],
    groups: list[int] | None = None,
) -> tuple[list[bool], list[int], list[float]]:
    """The greedy keep rule over all pairs, one group of exact duplicates at a time.

    Groups are visited by their best member's (priority, index); a group is kept unless a kept
    group is paired with it, else it follows the kept group with the highest pair score (ties:
    the better group). A kept group keeps its best member; everything else is removed.
    Returns (kept, duplicate_of, score) per document; -1 and NaN for kept documents.
    """
    groups = list(range(n)) if groups is None else groups
    key = {d: (priority[d], d) for d in range(n)}
    best: dict[int, int] = {}
    for d in range(n):
        g = groups[d]
        if g not in best or key[d] < key[best[g]]:
            best[g] = d
    adj: dict[int, dict[int, float]] = {g: {} for g in best}
    for a, b, s in pairs:
        ga, gb = groups[a], groups[b]
        if ga != gb:
            adj[ga][gb] = max(s, adj[ga].get(gb, s))
            adj[gb][ga] = max(s, adj[gb].get(ga, s))
    kept_groups: set[int] = set()
    follows: dict[int, tuple[int, float]] = {}
    for g in sorted(best, key=lambda g: key[best[g]]):
        near = [(s, h) for h, s in adj[g].items() if h in kept_groups]
        if not near:
            kept_groups.add(g)
        else:
            s, h = min(near, key=lambda sh: (-sh[0], key[best[sh[1]]]))
            follows[g] = (h, s)
    kept, dup, score = [], [], []
    for d in range(n):
        g = groups[d]
        if g in kept_groups:
            kept.append(d == best[g])
            dup.append(-1 if d == best[g] else best[g])
            score.append(float("nan") if d == best[g] else 1.0)
        else:
            h, s = follows[g]
            kept.append(False)
            dup.append(best[h])
            score.append(s)
    return kept, dup, score


def claim_ids(seen: dict[str, int], ids: list[str], keys: list[int]) -> list[int]:
    """``IdRegistry.claim``: -1 for a new id (claimed by its key), else the first claimer's key."""
    out = []
    for rid, key in zip(ids, keys, strict=True):
        first = seen.setdefault(rid, key)
        out.append(-1 if first == key else first)
    return out


def gather_ranges(data: bytes, ranges: list[tuple[int, int]]) -> bytes:
    return b"".join(data[a:b] for a, b in ranges)


def key_minimum(keys: list[int], docs: list[int]) -> list[int]:
    """For each row, the smallest document among the rows with its key."""
    smallest: dict[int, int] = {}
    for k, d in zip(keys, docs, strict=True):
        smallest[k] = min(d, smallest.get(k, d))
    return [smallest[k] for k in keys]


def smallest_linked(u: list[int], v: list[int]) -> tuple[list[int], list[int]]:
    """Every key of the edges, ascending, and the smallest key of its connected component."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for a, b in zip(u, v, strict=True):
        ra, rb = find(a), find(b)
        parent[max(ra, rb)] = min(ra, rb)
    nodes = sorted(parent)
    return nodes, [find(x) for x in nodes]


def key_links(keys: list[int], docs: list[int]) -> list[tuple[int, int]]:
    """(smallest, doc) of every row whose document is not its key's smallest, sorted."""
    minima = key_minimum(keys, docs)
    return sorted((m, d) for m, d in zip(minima, docs, strict=True) if m != d)


def token_spans(text: str, mode: str = "word") -> list[tuple[int, int]]:
    """Character spans of the canonical tokens: the ``\\w`` runs (each word character in
    character mode), as Python str indices."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"\w+", text)]
    if mode == "char":
        return [(i, i + 1) for s, e in runs for i in range(s, e)]
    return runs


def contained_items(
    benchmark: list[str],
    texts: list[str],
    containment: float,
    w: int = 5,
    mode: str = "word",
    hash: str = "mix",
) -> list[list[tuple[int, float, int, tuple[tuple[int, int], ...]]]]:
    """Brute force over every (text, item): (item, containment, shared, spans) where
    |S(b) n S(d)| / |S(b)| >= containment; spans: the extents of the text's shingles the item
    holds, merged where they overlap or touch, as character offsets."""
    sets = [set(shingles(b, w, mode, hash)) for b in benchmark]
    out = []
    for text in texts:
        seq = shingles(text, w, mode, hash)
        held = set(seq)
        tokens = token_spans(text, mode)
        row = []
        for i, s in enumerate(sets):
            shared = len(s & held)
            if not s or shared / len(s) < containment:
                continue
            merged: list[list[int]] = []
            for p, fp in enumerate(seq):
                if fp not in s:
                    continue
                lo, hi = p, min(p + w, len(tokens))
                if merged and lo <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], hi)
                else:
                    merged.append([lo, hi])
            spans = tuple((tokens[lo][0], tokens[hi - 1][1]) for lo, hi in merged)
            row.append((i, shared / len(s), shared, spans))
        out.append(row)
    return out


def pairs_from_hits(
    rows: list[int], keys: list[int], hit_keys: list[int], hit_docs: list[int], r: int
) -> list[tuple[int, int]]:
    """(row, doc) listed at least r times over every (posting, hit) of equal key, sorted."""
    count: dict[tuple[int, int], int] = {}
    for row, key in zip(rows, keys, strict=True):
        for hit_key, doc in zip(hit_keys, hit_docs, strict=True):
            if key == hit_key:
                count[row, doc] = count.get((row, doc), 0) + 1
    return sorted(pair for pair, c in count.items() if c >= r)


def json_literal(text: str) -> bytes:
    """A string as a JSON literal, as the JSON Lines writers write it (UTF-8, not escaped)."""
    import json

    return json.dumps(text, ensure_ascii=False).encode("utf-8")
