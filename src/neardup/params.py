"""Every frozen parameter object, validated on construction, with a stable fingerprint.

A stage receives only the parameter object it needs. ``DedupParams`` nests the method's own
parameters (``MinhashParams`` or ``SimhashMethodParams``) as one object; options that would do
nothing under the chosen method are refused here, where they enter, not silently ignored.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .errors import ParamError

if TYPE_CHECKING:
    pass

#: Version of the fingerprint and sketch formats. Bump when any hash, table or layout changes:
#: golden-file tests pin the outputs of this version.
FORMAT_VERSION = 1

#: Largest sketch length (and so k * s of a feature plan).
MAX_T = 65536

#: Most megashingle keys a document may have (``MinhashParams.super_features``).
MAX_SUPER_FEATURES = 256

#: Largest SimHash max_distance: the permuted tables need more blocks than differing bits, and
#: ``hamming.MAX_BLOCKS`` (20) is the most they split a fingerprint into.
MAX_DISTANCE = 19

#: Default bucket size above which a candidate bucket is handled as a big bucket.
DEFAULT_MAX_BUCKET = 200

TokenMode = Literal["word", "char"]
HashKind = Literal["mix", "rabin"]
SketchKind = Literal["oph", "classic", "bottomk"]
FeatureKind = Literal["char", "word", "shingle"]
Weighting = Literal["count", "binary", "idf"]
Verify = Literal["none", "sketch", "hybrid", "exact"]
Keep = Literal["first", "longest", "field"]
Removal = Literal["keep-aware", "components"]


def table_version() -> str:
    """The Unicode version the tokeniser's tables are built from (those of the running Python,
    ``text.py``); part of the fingerprint format."""
    import unicodedata  # here, not at module top: ``import neardup`` and --help never need it

    return unicodedata.unidata_version


def _fingerprint(obj: object) -> str:
    """A stable, human-readable string naming every field, the format and the Unicode version
    of the tokeniser's tables: equal strings mean equal outputs."""
    fields = dataclasses.asdict(obj)  # type: ignore[call-overload]
    fields["format"] = FORMAT_VERSION
    fields["unicode"] = table_version()
    return type(obj).__name__ + json.dumps(fields, sort_keys=True, separators=(",", ":"))


def params_json(obj: object) -> dict[str, object]:
    """A parameter object as the JSON object its fingerprint holds (every field, the format
    and the Unicode version), for summaries that scripts read."""
    text = _fingerprint(obj)
    value: dict[str, object] = json.loads(text[text.index("{") :])
    return value


def check_seed(seed: object) -> int:
    """The one seed check: an integer from 0 to 2**63-1 (NumPy integers taken, bools refused)."""
    if (
        not isinstance(seed, numbers.Integral)
        or isinstance(seed, bool)
        or not 0 <= int(seed) < 2**63
    ):
        raise ParamError(f"seed must be an integer from 0 to 2**63-1, got {seed!r}")
    return int(seed)


def check_fraction(name: str, value: object) -> float:
    """A number in (0, 1] (NumPy numbers taken, bools refused), as a float."""
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not real or not 0.0 < value <= 1.0:  # type: ignore[operator]
        raise ParamError(f"{name} must be a number in (0, 1], got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _store_ints(obj: object, *specs: tuple[str, str, int, int, str]) -> None:
    """Check integer fields (field, name, lo, hi, hint) and keep them as Python ints: a NumPy
    integer kept as given failed later checks and the JSON of ``fingerprint``."""
    for attr, name, lo, hi, hint in specs:
        object.__setattr__(obj, attr, check_int(name, getattr(obj, attr), lo, hi, hint))


def check_flag(name: str, value: object) -> bool:
    """A True/False parameter (NumPy's bool taken) as a bool; anything else refused: "no" or 0
    would be read as a wish."""
    import numpy as np

    if not isinstance(value, bool | np.bool_):
        raise ParamError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def _store_flags(obj: object, *attrs: str) -> None:
    """Check True/False fields and keep them as bools: "no" switched an option on."""
    for attr in attrs:
        object.__setattr__(obj, attr, check_flag(attr, getattr(obj, attr)))


#: How to make a DedupParams, for messages refusing something else where one belongs.
DEDUP_EXAMPLE = "DedupParams(threshold=0.8, ...)"
#: How to make a DecontaminateParams, for the same messages.
DECONTAMINATE_EXAMPLE = "DecontaminateParams(containment=0.5, ...) or leave the default"


def check_kind(value: object, kind: type, example: str, name: str = "params") -> None:
    """ParamError unless the argument ``name`` is a ``kind`` (a parameter object), saying how to
    make one (``example``): a string, dict or None passed where one belongs failed deep inside."""
    if not isinstance(value, kind):
        raise ParamError(
            f"{name} must be a {kind.__name__}, got {type(value).__name__}; pass {example}"
        )


def check_int(name: str, value: object, lo: int, hi: int, hint: str = "") -> int:
    """An integer parameter within [lo, hi] (NumPy integers accepted, bools refused)."""
    import numpy as np

    if not isinstance(value, int | np.integer) or isinstance(value, bool) or not lo <= value <= hi:
        tail = f"; {hint}" if hint else ""
        raise ParamError(f"{name} must be an integer from {lo} to {hi}, got {value!r}{tail}")
    return int(value)


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        options = ", ".join(repr(a) for a in allowed[:-1]) + f" or {allowed[-1]!r}"
        raise ParamError(f"{name} must be {options}, got {value!r}")


@dataclass(frozen=True)
class ShingleParams:
    """How text becomes a set of 64-bit shingle fingerprints.

    w: shingle size (tokens per shingle; characters per q-gram in char mode).
    tokens: "word" (runs of Unicode word characters) or "char" (q-grams of word characters).
    nfkc: apply Unicode NFKC normalisation before tokenising.
    hash: "mix" (fast 64-bit mixing hash, the default) or "rabin" (Rabin fingerprint, GF(2)).
    """

    w: int = 5
    tokens: TokenMode = "word"
    nfkc: bool = False
    hash: HashKind = "mix"

    def __post_init__(self) -> None:
        _store_ints(self, ("w", "shingle size w", 1, 64, ""))
        _store_flags(self, "nfkc")
        _choice("tokens", self.tokens, ("word", "char"))
        _choice("hash", self.hash, ("mix", "rabin"))

    def fingerprint(self) -> str:
        return _fingerprint(self)


@dataclass(frozen=True)
class SketchParams:
    """How a shingle set becomes a fixed-size MinHash sketch.

    kind: "oph" (one-permutation hashing with optimal densification; one hash per shingle,
    the default), "classic" (t independent min-wise hash functions) or "bottomk" (one hash,
    the t smallest values).
    t: sketch length (number of 64-bit values per document).
    seed: every random choice derives from it; same seed, same sketches.
    """

    kind: SketchKind = "oph"
    t: int = 128
    seed: int = 1

    def __post_init__(self) -> None:
        _choice("sketch kind", self.kind, ("oph", "classic", "bottomk"))
        _store_ints(self, ("t", "sketch length t", 1, MAX_T, ""))
        object.__setattr__(self, "seed", check_seed(self.seed))

    def fingerprint(self) -> str:
        return _fingerprint(self)


@dataclass(frozen=True)
class FeatureParams:
    """How a sketch becomes Broder features (LSH bands), and how many must match.

    k: number of features (LSH bands) per document; each costs 8 bytes.
    s: sketch values per feature (LSH rows per band); larger s makes the curve steeper and
       moves it towards ρ = 1.
    r: how many of the k features two documents must share to become a candidate pair.
    The sketch must have at least ``t = k * s`` values; only the first t are used.
    """

    k: int = 6
    s: int = 14
    r: int = 2

    def __post_init__(self) -> None:
        hint = "(or use neardup.planner.plan)"
        _store_ints(
            self,
            ("k", "number of features k", 1, MAX_T, f"try k=6 {hint}"),
            ("s", "values per feature s", 1, MAX_T, f"try s=14 {hint}"),
        )
        _store_ints(self, ("r", "required shared features r", 1, self.k, "r cannot exceed k"))
        if self.k * self.s > MAX_T:
            raise ParamError(
                f"k*s = {self.k * self.s} sketch values needed, more than the maximum sketch "
                f"length {MAX_T}; lower k or s"
            )

    @property
    def t(self) -> int:
        """Sketch length the features use: k * s."""
        return self.k * self.s

    @property
    def bytes_per_doc(self) -> int:
        """Storage per document: 8 bytes per feature."""
        return 8 * self.k

    def fingerprint(self) -> str:
        return _fingerprint(self)


@dataclass(frozen=True)
class SimhashParams:
    """How a text becomes a SimHash fingerprint.

    features: "char" (character q-grams of the text with spaces and punctuation removed, case
      folded: "kk really rocks!" -> kkre, krea, real, ...; the common choice), "word" (word
      tokens) or "shingle" (word w-shingles).
    q: character window for "char" (default 4). w: words per shingle for "shingle" (default 3).
    weighting: "count" (each occurrence adds weight 1), "binary" (each distinct feature adds 1
      once: the feature *set*, as Jaccard sees it, so repeated boilerplate cannot dominate) or
      "idf" (each occurrence adds the feature's inverse document frequency; needs a table from
      ``fit_idf``).
    seed: re-mixes every feature hash before its bits are used; same seed, same fingerprints.
    nfkc: apply Unicode NFKC normalisation before tokenising.
    """

    features: FeatureKind = "char"
    q: int = 4
    w: int = 3
    weighting: Weighting = "binary"
    seed: int = 1
    nfkc: bool = False

    def __post_init__(self) -> None:
        _choice("SimHash features", self.features, ("char", "word", "shingle"))
        _store_ints(self, ("q", "SimHash q", 1, 64, ""), ("w", "SimHash w", 1, 64, ""))
        _store_flags(self, "nfkc")
        _choice("weighting", self.weighting, ("count", "binary", "idf"))
        object.__setattr__(self, "seed", check_seed(self.seed))

    def shingle_params(self) -> ShingleParams:
        """The shingling that produces this SimHash's features."""
        if self.features == "char":
            return ShingleParams(w=self.q, tokens="char", nfkc=self.nfkc)
        if self.features == "word":
            return ShingleParams(w=1, tokens="word", nfkc=self.nfkc)
        return ShingleParams(w=self.w, tokens="word", nfkc=self.nfkc)

    def fingerprint(self) -> str:
        return _fingerprint(self)


@dataclass(frozen=True)
class MinhashParams:
    """The MinHash method: Broder features (LSH bands) over a MinHash sketch.

    features: explicit (k, s, r); None lets the planner choose them for the threshold.
    sketch: "oph" (default) or "classic" (features need positional sketches, not bottom-k).
    max_t: the longest sketch the planner may choose.
    super_features: look candidates up by Broder's megashingles (one key per r-subset of the k
      features, C(k, r) keys a document) instead of counting shared features; the same pairs,
      for small k and r only (e.g. k=6, r=2: 15 keys).
    max_bucket: feature buckets with more documents are big buckets (boilerplate): not expanded
      into all their pairs (see ``neardup.candidates``); keep-aware removal compares a document
      with at most this many kept leaders of each bucket (its first kept documents).
    """

    features: FeatureParams | None = None
    sketch: Literal["oph", "classic"] = "oph"
    max_t: int = 256
    super_features: bool = False
    max_bucket: int = DEFAULT_MAX_BUCKET

    def __post_init__(self) -> None:
        if self.features is not None and not isinstance(self.features, FeatureParams):
            raise ParamError(f"features must be a FeatureParams or None, got {self.features!r}")
        if self.sketch not in ("oph", "classic"):
            raise ParamError(
                f"sketch kind for deduplication must be 'oph' or 'classic' (features need "
                f"positional sketches; bottom-k is for estimation), got {self.sketch!r}"
            )
        _store_ints(
            self,
            ("max_t", "max_t (--max-perm)", 1, MAX_T, ""),
            ("max_bucket", "max_bucket", 2, 2**62, "try the default 200"),
        )
        _store_flags(self, "super_features")
        if self.features is not None and self.super_features:
            count = math.comb(self.features.k, self.features.r)
            if count > MAX_SUPER_FEATURES:
                raise ParamError(
                    f"super features need C(k={self.features.k}, r={self.features.r}) = "
                    f"{count:,} keys a document (at most {MAX_SUPER_FEATURES}); leave --features "
                    "out (the planner keeps super features within that), or give fewer"
                )

    def fingerprint(self) -> str:
        return _fingerprint(self)


@dataclass(frozen=True)
class SimhashMethodParams:
    """The SimHash method: 64-bit Charikar fingerprints within ``max_distance`` bits.

    features, q, weighting: the fingerprint's features (see ``SimhashParams``); the word
    shingle size, NFKC and the seed come from ``DedupParams``.
    max_distance: largest Hamming distance of a pair (0 to ``MAX_DISTANCE`` = 19).
    """

    features: FeatureKind = "char"
    q: int = 4
    weighting: Weighting = "binary"
    max_distance: int = 3

    def __post_init__(self) -> None:
        q = SimhashParams(features=self.features, q=self.q, weighting=self.weighting).q
        object.__setattr__(self, "q", q)
        hint = "the permuted tables need more blocks than differing bits, and at most 20 blocks"
        _store_ints(self, ("max_distance", "max_distance (--max-distance)", 0, MAX_DISTANCE, hint))

    def fingerprint(self) -> str:
        return _fingerprint(self)


#: Default sampling modulus of the sampled-shingle containment method (see ``SampledParams``).
DEFAULT_SAMPLE_MOD = 2


@dataclass(frozen=True)
class SampledParams:
    """The sampled-shingle containment method: shingles whose fingerprint is 0 mod ``m``.

    m: keep one shingle in m on average (the same shingles in every document, so a passage
      quoted in another document keeps the same sample). Larger m: smaller index, but a short
      document may keep no shingle at all and then cannot be found.
    The threshold of ``DedupParams`` is the containment threshold: a pair is accepted when the
    share of the smaller sample held by the other document reaches it.
    """

    m: int = DEFAULT_SAMPLE_MOD

    def __post_init__(self) -> None:
        _store_ints(self, ("m", "sampling modulus m (--sample-mod)", 1, 2**32, "try m=2"))

    def fingerprint(self) -> str:
        return _fingerprint(self)


MethodParams = MinhashParams | SimhashMethodParams | SampledParams

#: Verification each method uses when none is asked for: MinHash candidates are checked against
#: the resemblance threshold (hybrid: exact results at sketch memory); SimHash pairs are decided
#: by their Hamming distance alone unless a verification is asked for; sampled containment
#: scores its pairs itself.
DEFAULT_VERIFY: dict[type, Verify] = {
    MinhashParams: "hybrid",
    SimhashMethodParams: "none",
    SampledParams: "none",
}

#: The resemblance threshold when none is given.
DEFAULT_THRESHOLD = 0.8

#: Thresholds above this (up to 1) are planned as this: the planner needs a curve below 1.
MAX_PLANNED_THRESHOLD = 0.99


@dataclass(frozen=True)
class DedupParams:
    """Everything that decides which documents are near-duplicates and which survive.

    threshold: resemblance (Jaccard of shingle sets) at or above which two documents are
      near-duplicates; None means 0.8. Under SimHash it only matters with a verification.
    shingle: how texts become shingle sets (verification, MinHash sketches).
    method: ``MinhashParams()`` (default), ``SimhashMethodParams()`` or ``SampledParams()``
      (containment of sampled shingles; the threshold is then a containment threshold): how
      candidates are found.
    verify: how candidates are confirmed: "none" (the method's own decision), "sketch" (MinHash
      estimate of Jaccard), "hybrid" (sketch, and exact Jaccard of the texts for pairs near the
      threshold) or "exact" (Jaccard of stored shingle sets). None: the method's default
      (MinHash: hybrid; SimHash: none).
    keep: which document survives: "first" (smallest index), "longest" (most characters) or
      "field" (largest, or with keep_prefer="min" smallest, value of a key given to ``fit``).
    removal: "keep-aware" (default: a document is removed only when a kept document resembles
      it) or "components" (one survivor per connected component of the pair graph).
    seed: every random choice (sketches, SimHash feature mixing).

    threshold and verify are stored resolved (None becomes the method's default when made), so
    ``dataclasses.replace(p, method=...)`` keeps the old method's defaults (or refuses them):
    to change the method, build a new DedupParams from the fields chosen (docs/LIBRARY.md).
    """

    threshold: float | None = None
    shingle: ShingleParams = field(default_factory=ShingleParams)
    method: MethodParams = field(default_factory=MinhashParams)
    verify: Verify | None = None
    keep: Keep = "first"
    keep_prefer: Literal["max", "min"] = "max"
    removal: Removal = "keep-aware"
    seed: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.method, MinhashParams | SimhashMethodParams | SampledParams):
            raise ParamError(
                "method must be MinhashParams(...), SimhashMethodParams(...) or "
                f"SampledParams(...), got {self.method!r}"
            )
        if self.verify is not None:
            _choice("verify", self.verify, ("none", "sketch", "hybrid", "exact"))
        verify = self.verify or DEFAULT_VERIFY[type(self.method)]
        if isinstance(self.method, SampledParams) and verify != "none":
            raise ParamError(
                "the sampled containment method scores containment itself; a Jaccard "
                f"verification ({verify!r}) would reject the prefixed, suffixed and quoted "
                "copies it exists to find: drop verify (--verify) or use another method"
            )
        if self.threshold is not None:
            check_fraction("threshold", self.threshold)
            if isinstance(self.method, SimhashMethodParams) and verify == "none":
                raise ParamError(
                    "threshold does nothing with the SimHash method unless its pairs are "
                    "verified: add verify='sketch', 'hybrid' or 'exact' (--verify), or drop it"
                )
        _choice("keep", self.keep, ("first", "longest", "field"))
        _choice("keep_prefer", self.keep_prefer, ("max", "min"))
        if self.keep_prefer == "min" and self.keep != "field":
            raise ParamError("keep_prefer='min' only applies to keep='field' (--keep-field)")
        _choice("removal", self.removal, ("keep-aware", "components"))
        if not isinstance(self.shingle, ShingleParams):
            raise ParamError(f"shingle must be a ShingleParams, got {self.shingle!r}")
        object.__setattr__(self, "seed", check_seed(self.seed))
        object.__setattr__(self, "verify", verify)
        threshold = DEFAULT_THRESHOLD if self.threshold is None else float(self.threshold)
        object.__setattr__(self, "threshold", threshold)

    @property
    def resolved_threshold(self) -> float:
        """The threshold in force (never None after construction)."""
        return float(self.threshold)  # type: ignore[arg-type]

    @property
    def resolved_verify(self) -> Verify:
        """The verification in force (never None after construction)."""
        return self.verify  # type: ignore[return-value]

    def simhash_params(self) -> SimhashParams:
        """The SimHash fingerprint parameters (SimHash method only)."""
        if not isinstance(self.method, SimhashMethodParams):
            raise ParamError("SimHash fingerprint parameters belong to the SimHash method")
        m = self.method
        return SimhashParams(
            features=m.features,
            q=m.q,
            w=self.shingle.w,
            weighting=m.weighting,
            seed=self.seed,
            nfkc=self.shingle.nfkc,
        )

    def fingerprint(self) -> str:
        return _fingerprint(self)


#: The containment at or above which a training text counts as holding a benchmark item.
DEFAULT_CONTAINMENT = 0.5


@dataclass(frozen=True)
class DecontaminateParams:
    """Benchmark decontamination: which training texts contain which benchmark items.

    containment: C in (0, 1]; a training text d contains a benchmark item b when
      |S(b) n S(d)| / |S(b)| >= C over their shingle sets (exact, no sampling).
    shingle: how both become shingle sets (canonical tokens: case, punctuation and line breaks
      do not matter). NFKC is refused: the matches' character spans are offsets into the text
      as given, which normalisation would shift. An item of fewer than w tokens has one
      shingle of all its tokens, found only in a text of exactly those tokens: lower w for
      very short items.
    """

    containment: float = DEFAULT_CONTAINMENT
    shingle: ShingleParams = field(default_factory=ShingleParams)

    def __post_init__(self) -> None:
        object.__setattr__(self, "containment", check_fraction("containment", self.containment))
        if not isinstance(self.shingle, ShingleParams):
            raise ParamError(f"shingle must be a ShingleParams, got {self.shingle!r}")
        if self.shingle.nfkc:
            raise ParamError(
                "decontamination reports character spans of the text as given, which NFKC "
                "normalisation would shift; drop nfkc (--nfkc)"
            )

    def fingerprint(self) -> str:
        return _fingerprint(self)
