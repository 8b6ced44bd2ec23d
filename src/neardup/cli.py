"""The ``neardup`` command: parse arguments, call one library function, report; nothing more.

Exit status: 0 success, 1 bad input or parameters (a NeardupError, message on stderr),
2 bad command line, 130 interrupted.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from . import __version__
from .errors import NeardupError, ParamError
from .params import (
    DedupParams,
    FeatureParams,
    MinhashParams,
    ShingleParams,
    SimhashMethodParams,
)


def _features(value: str) -> tuple[int, int, int]:
    try:
        k, s, r = (int(x) for x in value.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--features takes k,s,r as three integers, e.g. 6,14,2; got {value!r}"
        ) from None
    return k, s, r


def _add_shingle_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("shingling")
    g.add_argument(
        "--shingle-size",
        "-w",
        type=int,
        default=5,
        help="tokens per shingle (q for --tokens char) [5]",
    )
    g.add_argument(
        "--tokens",
        choices=["word", "char"],
        default="word",
        help="word tokens or character q-grams [word]",
    )
    g.add_argument("--nfkc", action="store_true", help="apply Unicode NFKC normalisation first")
    g.add_argument(
        "--hash", choices=["mix", "rabin"], default="mix", help="shingle fingerprint [mix]"
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neardup",
        description="Find near-duplicate documents in text collections.",
    )
    parser.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    d = sub.add_parser(
        "dedup",
        help="cluster near-duplicates and write the deduplicated collection",
        description="Read documents, find near-duplicate clusters, write the kept documents.",
    )
    d.add_argument(
        "inputs",
        nargs="+",
        help="JSONL (.jsonl/.jsonl.gz), Parquet, text files or folders, or - for stdin",
    )
    d.add_argument("-o", "--output", help="write the kept documents here, in the input's format")
    d.add_argument(
        "--clusters", help='write {"id","cluster","kept"} for every document in a cluster of 2+'
    )
    d.add_argument("--pairs", help='write {"id_a","id_b","score"} for every accepted pair')
    d.add_argument(
        "--all-pairs",
        action="store_true",
        help="--pairs lists every document pair, exact-duplicate groups expanded (default: each exact copy once, with its first copy; near pairs between first copies)",
    )
    d.add_argument("--summary-json", help="also write the summary as JSON to this file")
    io = d.add_argument_group("input")
    io.add_argument("--format", choices=["jsonl", "parquet", "text"], help="force the input format")
    io.add_argument("--text-field", default="text", help="field holding the text [text]")
    io.add_argument(
        "--id-field", default="id", help="field holding the id [id; line number when absent]"
    )
    io.add_argument(
        "--on-error",
        choices=["stop", "skip"],
        default="stop",
        help="stop at the first bad record, or skip and count [stop]",
    )
    io.add_argument("--batch-size", type=int, default=5000, help="documents per batch [5000]")
    m = d.add_argument_group("method")
    m.add_argument("--method", choices=["minhash", "simhash"], default="minhash", help="[minhash]")
    m.add_argument(
        "--threshold",
        type=float,
        help="resemblance (Jaccard) threshold; with simhash only together with --verify [0.8]",
    )
    m.add_argument("--num-perm", type=int, help="largest sketch length the planner may use [256]")
    m.add_argument(
        "--features",
        type=_features,
        metavar="K,S,R",
        help="explicit Broder features (LSH bands): K features of S values, R must match",
    )
    m.add_argument("--sketch", choices=["oph", "classic"], help="MinHash sketch kind [oph]")
    m.add_argument("--seed", type=int, default=1, help="random seed [1]")
    m.add_argument(
        "--verify",
        choices=["sketch", "hybrid", "exact", "none"],
        help="confirm candidates by Jaccard: sketch estimate; hybrid: sketch, and exact Jaccard for pairs near the threshold (their texts read again); exact: stored shingle sets; none: the method decides [minhash: hybrid, simhash: none]",
    )
    m.add_argument(
        "--max-bucket",
        type=int,
        help="minhash: feature buckets larger than this are big buckets, not expanded [200]",
    )
    m.add_argument(
        "--keep",
        choices=["first", "longest"],
        help="which document survives: the first in input order or the longest [first]",
    )
    m.add_argument(
        "--keep-field",
        metavar="NAME",
        help="keep the cluster member with the largest value of this field (JSONL/Parquet)",
    )
    m.add_argument(
        "--keep-prefer",
        choices=["max", "min"],
        help="with --keep-field: keep the largest or the smallest value [max]",
    )
    m.add_argument(
        "--removal",
        choices=["keep-aware", "components"],
        default="keep-aware",
        help="keep-aware: remove a document only when a kept document resembles it; components: one survivor per connected component (chains can remove unique documents) [keep-aware]",
    )
    m.add_argument("--max-distance", type=int, help="simhash: largest Hamming distance [3]")
    m.add_argument(
        "--simhash-features",
        choices=["char", "word", "shingle"],
        help="simhash features [char]",
    )
    m.add_argument("--q", type=int, help="simhash character window [4]")
    m.add_argument(
        "--simhash-weighting",
        choices=["binary", "count", "idf"],
        help="simhash feature weights: each distinct feature once, occurrence counts, or counts times IDF fitted on the input (one more read) [binary]",
    )
    _add_shingle_options(d)
    m.add_argument(
        "--super-features",
        action="store_true",
        help="find candidates by megashingles (one key per r-subset of features) instead of counting; small k and r only",
    )
    out = d.add_argument_group("reporting")
    out.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr [on when stderr is a terminal]",
    )
    out.add_argument("--quiet", "-q", action="store_true", help="no summary")
    d.add_argument(
        "--dask",
        metavar="CLUSTER",
        help="run on Dask: local:N (N worker processes here) or a scheduler address such as tcp://host:8786; the same outputs, byte for byte (pip install 'neardup[dask]')",
    )

    pl = sub.add_parser(
        "plan",
        help="choose Broder feature parameters (k, s, r) for a threshold",
        description="Choose (k, s, r) from the acceptance curve P(rho) for a target threshold.",
    )
    pl.add_argument("--threshold", type=float, help="target resemblance rho0 (MinHash features)")
    pl.add_argument(
        "--max-distance",
        type=int,
        help="SimHash instead: plan permuted tables for pairs within this many bits",
    )
    pl.add_argument(
        "--docs", type=int, default=1_000_000, help="SimHash: collection size [1000000]"
    )
    pl.add_argument("--budget", type=int, help="bytes per document for features (8 per feature)")
    pl.add_argument("--num-perm", type=int, help="largest sketch length k*s [256]")
    pl.add_argument(
        "--fp-cost", type=float, default=1.0, help="relative cost of a false positive [1]"
    )
    pl.add_argument(
        "--fn-cost", type=float, default=1.0, help="relative cost of a false negative [1]"
    )
    pl.add_argument(
        "--features",
        type=_features,
        metavar="K,S,R",
        help="describe these parameters instead of planning",
    )
    pl.add_argument("--plot", help="draw P(rho) on linear and log scales to this PNG")
    return parser


#: Options that belong to one method: name on the command line -> attribute of ``args``.
_MINHASH_ONLY = {
    "--features": "features",
    "--num-perm": "num_perm",
    "--sketch": "sketch",
    "--super-features": "super_features",
    "--max-bucket": "max_bucket",
}
_SIMHASH_ONLY = {
    "--max-distance": "max_distance",
    "--simhash-features": "simhash_features",
    "--q": "q",
    "--simhash-weighting": "simhash_weighting",
}


def _given(args: argparse.Namespace, options: dict[str, str]) -> list[str]:
    return [flag for flag, attr in options.items() if getattr(args, attr) not in (None, False)]


def _method_params(args: argparse.Namespace) -> MinhashParams | SimhashMethodParams:
    """The method's own parameters; options of the other method are refused, not ignored."""
    other = _given(args, _SIMHASH_ONLY if args.method == "minhash" else _MINHASH_ONLY)
    if other:
        raise ParamError(
            f"{', '.join(other)} only appl{'ies' if len(other) == 1 else 'y'} to --method "
            f"{'simhash' if args.method == 'minhash' else 'minhash'}; drop "
            f"{'it' if len(other) == 1 else 'them'} or change --method"
        )
    if args.method == "simhash":
        values = {
            "features": args.simhash_features,
            "q": args.q,
            "weighting": args.simhash_weighting,
            "max_distance": args.max_distance,
        }
        return SimhashMethodParams(**{k: v for k, v in values.items() if v is not None})
    values = {
        "features": FeatureParams(*args.features) if args.features is not None else None,
        "sketch": args.sketch,
        "max_t": args.num_perm,
        "super_features": args.super_features or None,
        "max_bucket": args.max_bucket,
    }
    return MinhashParams(**{k: v for k, v in values.items() if v is not None})


def _dedup_params(args: argparse.Namespace) -> DedupParams:
    if args.keep and args.keep_field:
        raise ParamError("--keep and --keep-field both choose the survivor; give one of them")
    if args.keep_prefer and not args.keep_field:
        raise ParamError("--keep-prefer applies to --keep-field; add --keep-field NAME")
    shingle = ShingleParams(w=args.shingle_size, tokens=args.tokens, nfkc=args.nfkc, hash=args.hash)
    return DedupParams(
        threshold=args.threshold,
        shingle=shingle,
        method=_method_params(args),
        verify=args.verify,
        keep="field" if args.keep_field else (args.keep or "first"),
        keep_prefer=args.keep_prefer or "max",
        removal=args.removal,
        seed=args.seed,
    )


def _warn(message: str) -> None:
    sys.stderr.write(f"neardup: warning: {message}\n")


def _info(message: str) -> None:
    sys.stderr.write(f"neardup: {message}\n")


def cmd_dedup(args: argparse.Namespace) -> int:
    from .run import DedupOutputs, ReadOptions, dedup_source

    params = _dedup_params(args)
    read = ReadOptions(
        format=args.format,
        text_field=args.text_field,
        id_field=args.id_field,
        on_error=args.on_error,
        key_field=args.keep_field,
        batch_size=args.batch_size,
    )
    outputs = DedupOutputs(
        kept=args.output,
        clusters=args.clusters,
        pairs=args.pairs,
        summary_json=args.summary_json,
        all_pairs=args.all_pairs,
    )
    inputs = args.inputs[0] if args.inputs == ["-"] else args.inputs
    show = sys.stderr.isatty() if args.progress is None else args.progress
    if args.dask:
        from .run import dedup_source_dask

        info = None if args.quiet else _info
        result = dedup_source_dask(inputs, params, outputs, read, args.dask, show, _warn, info)
    else:
        result = dedup_source(inputs, params, outputs, read, progress=show, warn=_warn)
    if not args.quiet:
        sys.stderr.write(_format_summary(result.summary, result.problems))
    return 0


def _format_summary(s: Mapping[str, Any], problems: str) -> str:
    lines = [
        "neardup dedup summary",
        f"  documents            {s['documents']:>12,}",
        f"  empty documents      {s['empty']:>12,}",
        f"  exact duplicates     {s['exact_duplicates']:>12,}",
        f"  near-dup clusters    {s['clusters']:>12,}",
        f"  documents removed    {s['removed']:>12,}",
        f"  documents kept       {s['kept']:>12,}",
        f"  method               {s['method']}",
        f"  candidate pairs      {s['candidate_pairs']:>12,}",
        f"  accepted pairs       {s['accepted_pairs']:>12,}",
        *(
            [f"  re-checked exactly   {s['rechecked_pairs']:>12,}"]
            if s.get("rechecked_pairs")
            else []
        ),
        f"  skipped records      {s['skipped_records']:>12,}",
        f"  time                 {s['seconds']:>11.2f}s",
        f"  throughput           {s['mb_per_s']:>8.1f} MB/s",
        f"  peak memory          {s['peak_memory_mb']:>9.0f} MB",
    ]
    if s.get("hamming_plan"):
        lines.append(f"  {s['hamming_plan']}")
    if s.get("big_buckets"):
        lines.append(
            f"  big feature buckets  {s['big_buckets']:>12,} ({s['big_bucket_docs']:,} docs; "
            f"{s.get('bucket_checks', 0):,} checks against kept leaders found "
            f"{s.get('bucket_pairs_found', 0):,} pairs; {s.get('bucket_unresolved', 0):,} "
            "members not compared with every leader)"
        )
    text = "\n".join(lines) + "\n"
    if problems:
        text += problems.rstrip("\n") + "\n"
    return text


def cmd_plan(args: argparse.Namespace) -> int:
    from .features import FeatureParams
    from .planner import evaluate, plan, plot_curve

    if args.max_distance is not None:
        from .hamming import plan_tables

        sys.stdout.write(plan_tables(args.max_distance, args.docs).describe() + "\n")
        return 0
    if args.threshold is None:
        raise ParamError("neardup plan needs --threshold (MinHash) or --max-distance (SimHash)")
    costs = {"cost_fp": args.fp_cost, "cost_fn": args.fn_cost}
    if args.features is not None:
        chosen = evaluate(FeatureParams(*args.features), args.threshold, **costs)
    else:
        chosen = plan(
            args.threshold,
            max_bytes=args.budget,
            max_t=256 if args.num_perm is None else args.num_perm,
            **costs,
        )
    sys.stdout.write(chosen.describe() + "\n")
    if args.plot:
        plot_curve(chosen, args.plot)
        sys.stdout.write(f"curve written to {args.plot}\n")
    return 0


def _caused_by_interrupt(exc: BaseException | None) -> bool:
    """True when a KeyboardInterrupt is somewhere in the exception's cause chain."""
    seen = 0
    while exc is not None and seen < 50:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so partly written outputs are removed, never left behind."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "dedup":
            return cmd_dedup(args)
        return cmd_plan(args)
    except NeardupError as exc:
        sys.stderr.write(f"neardup: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("neardup: interrupted\n")
        return 130
    except SystemError as exc:  # an interrupt that arrived inside a compiled kernel
        if not _caused_by_interrupt(exc):
            raise
        sys.stderr.write("neardup: interrupted\n")
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
