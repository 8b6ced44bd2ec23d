"""Frozen parameter objects for each stage, validated on construction, with a stable fingerprint."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Literal

from .errors import ParamError

#: Version of the fingerprint and sketch formats. Bump when any hash, table or layout changes:
#: golden-file tests pin the outputs of this version.
FORMAT_VERSION = 1

TokenMode = Literal["word", "char"]
HashKind = Literal["mix", "rabin"]
SketchKind = Literal["oph", "classic", "bottomk"]


def _fingerprint(obj: object) -> str:
    """A stable, human-readable string naming every field; equal strings mean equal outputs."""
    fields = dataclasses.asdict(obj)  # type: ignore[call-overload]
    fields["format"] = FORMAT_VERSION
    return type(obj).__name__ + json.dumps(fields, sort_keys=True, separators=(",", ":"))


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
        if not isinstance(self.w, int) or isinstance(self.w, bool) or not 1 <= self.w <= 64:
            raise ParamError(f"shingle size w must be an integer from 1 to 64, got {self.w!r}")
        if self.tokens not in ("word", "char"):
            raise ParamError(f"tokens must be 'word' or 'char', got {self.tokens!r}")
        if self.hash not in ("mix", "rabin"):
            raise ParamError(f"hash must be 'mix' or 'rabin', got {self.hash!r}")

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
        if self.kind not in ("oph", "classic", "bottomk"):
            raise ParamError(
                f"sketch kind must be 'oph', 'classic' or 'bottomk', got {self.kind!r}"
            )
        if not isinstance(self.t, int) or isinstance(self.t, bool) or not 1 <= self.t <= 65536:
            raise ParamError(f"sketch length t must be an integer from 1 to 65536, got {self.t!r}")
        if (
            not isinstance(self.seed, int)
            or isinstance(self.seed, bool)
            or not 0 <= self.seed < 2**63
        ):
            raise ParamError(f"seed must be an integer from 0 to 2**63-1, got {self.seed!r}")

    def fingerprint(self) -> str:
        return _fingerprint(self)
