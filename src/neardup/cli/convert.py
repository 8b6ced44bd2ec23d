"""Parsed options -> the library's parameter objects (DedupParams, ShingleParams, ...), with
the checks that concern the command line itself: options of the other method, options that go
together."""

from __future__ import annotations

import argparse
import sys

from ..errors import ParamError
from ..params import (
    DedupParams,
    FeatureParams,
    MinhashParams,
    SampledParams,
    ShingleParams,
    SimhashMethodParams,
)

#: Options that belong to one method: name on the command line -> attribute of ``args``.
MINHASH_ONLY = {
    "--features": "features",
    "--max-perm": "max_perm",
    "--sketch": "sketch",
    "--super-features": "super_features",
    "--max-bucket": "max_bucket",
}
SIMHASH_ONLY = {
    "--max-distance": "max_distance",
    "--simhash-features": "simhash_features",
    "--qgram": "qgram",
    "--simhash-weighting": "simhash_weighting",
}


def given(args: argparse.Namespace, options: dict[str, str]) -> list[str]:
    """The flags among ``options`` given on the command line."""
    return [
        flag for flag, attr in options.items() if getattr(args, attr, None) not in (None, False)
    ]


def progress(args: argparse.Namespace) -> bool:
    """--progress / --no-progress, else on when stderr is a terminal."""
    return sys.stderr.isatty() if args.progress is None else bool(args.progress)


def shingle_params(args: argparse.Namespace) -> ShingleParams:
    """The shingling options (options.add_shingle_options)."""
    return ShingleParams(w=args.shingle_size, tokens=args.tokens, nfkc=args.nfkc, hash=args.hash)


def method_params(args: argparse.Namespace) -> MinhashParams | SimhashMethodParams:
    """The method's own parameters; options of the other method are refused, not ignored."""
    return simhash_params(args) if args.method == "simhash" else minhash_params(args)


def minhash_params(args: argparse.Namespace) -> MinhashParams:
    """MinHash's own parameters; SimHash's options are refused."""
    refuse_other(given(args, SIMHASH_ONLY), "simhash")
    values = {
        "features": FeatureParams(*args.features) if args.features is not None else None,
        "sketch": args.sketch,
        "max_t": args.max_perm,
        "super_features": args.super_features or None,
        "max_bucket": getattr(args, "max_bucket", None),
    }
    return MinhashParams(**{k: v for k, v in values.items() if v is not None})


def simhash_params(args: argparse.Namespace) -> SimhashMethodParams:
    """SimHash's own parameters; MinHash's options are refused."""
    refuse_other(given(args, MINHASH_ONLY), "minhash")
    values = {
        "features": getattr(args, "simhash_features", None),
        "q": getattr(args, "qgram", None),
        "weighting": getattr(args, "simhash_weighting", None),
        "max_distance": args.max_distance,
    }
    return SimhashMethodParams(**{k: v for k, v in values.items() if v is not None})


def refuse_other(other: list[str], method: str) -> None:
    """ParamError naming the options ``other`` that only apply to ``method``, if any."""
    if other:
        raise ParamError(
            f"{', '.join(other)} only appl{'ies' if len(other) == 1 else 'y'} to --method "
            f"{method}; drop {'it' if len(other) == 1 else 'them'} or change --method"
        )


def dedup_params(args: argparse.Namespace) -> DedupParams:
    """The parameters of ``neardup dedup``; a survivor chosen twice is refused."""
    if args.keep and args.keep_field:
        raise ParamError("--keep and --keep-field both choose the survivor; give one of them")
    if args.keep_prefer and not args.keep_field:
        raise ParamError("--keep-prefer applies to --keep-field; add --keep-field NAME")
    return DedupParams(
        threshold=args.threshold,
        shingle=shingle_params(args),
        method=method_params(args),
        verify=args.verify,
        keep="field" if args.keep_field else (args.keep or "first"),
        keep_prefer=args.keep_prefer or "max",
        removal=args.removal,
        seed=args.seed,
    )


def index_params(args: argparse.Namespace) -> DedupParams:
    """Parameters of ``index create``: those of dedup, and the sampled containment method."""
    method: MinhashParams | SimhashMethodParams | SampledParams
    if args.method == "sampled":
        other = given(args, {**MINHASH_ONLY, **SIMHASH_ONLY})
        if other:
            raise ParamError(f"{', '.join(other)} do(es) not apply to --method sampled; drop it")
        method = SampledParams() if args.sample_mod is None else SampledParams(m=args.sample_mod)
    else:
        if args.sample_mod is not None:
            raise ParamError("--sample-mod only applies to --method sampled")
        method = method_params(args)
    return DedupParams(
        threshold=args.threshold,
        shingle=shingle_params(args),
        method=method,
        verify=args.verify,
        seed=args.seed,
    )
