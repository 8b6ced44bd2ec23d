"""The ``neardup`` command: parse arguments, call one library function, report; nothing more.

Exit status: 0 success, 1 bad input or parameters, or an input or output that cannot be read
or written (one line on stderr, never a traceback), 2 bad command line, 130 interrupted (``serve`` exits 0
when SIGTERM or Ctrl-C stops it cleanly).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import stat
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import __version__
from .errors import IndexCorrupt, NeardupError, OutputError, ParamError, Restart
from .params import (
    DedupParams,
    FeatureParams,
    MinhashParams,
    ShingleParams,
    SimhashMethodParams,
)

if TYPE_CHECKING:
    from .engine import Deduplicator


class _RenamedOption(argparse.Action):
    """A flag's old spelling, kept hidden for one release: stores into the new option's
    destination and prints a one-line note naming the new spelling."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", **kw: Any):
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kw)
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        sys.stderr.write(
            f"neardup: note: {option_string} is now {self.new}; the old name will be removed "
            "in the next release\n"
        )
        setattr(namespace, self.dest, values)


def _add_renamed(group: Any, old: str, new: str, dest: str, kind: Any = int) -> None:
    """``old`` as a hidden alias of ``new`` (same destination) that says it was renamed."""
    group.add_argument(old, dest=dest, action=_RenamedOption, new=new, type=kind, default=None)


#: --features K,S,R explained where it is offered (R is not rows per band, as in text-dedup).
_FEATURES_HELP = (
    "explicit Broder features (LSH bands): K features (bands) per document, each of S sketch "
    "values (S is the rows per band, text-dedup's r); two documents are a candidate pair when "
    "they share at least R of the K features (R is a count of shared bands, 1 = classic LSH)"
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


def _add_input_options(p: argparse.ArgumentParser, formats: list[str]) -> Any:
    """The input options every command that reads documents shares; returns the group."""
    io = p.add_argument_group("input")
    web = " (warc/html write kept pages as JSONL)" if "warc" in formats else ""
    io.add_argument("--format", choices=formats, help=f"force the input format{web}")
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
    _add_max_record_size(io)
    io.add_argument(
        "--batch-size",
        metavar="SIZE",
        default="4M",
        help="input per batch: bytes (4M, 16M; a JSONL file's parser reads this much at a time and signs it as one batch) or a number of documents (5000); the output is the same for any size [4M]",
    )
    return io


def _add_minhash_options(m: Any) -> None:
    """MinHash's own options, as dedup and index create take them."""
    m.add_argument(
        "--max-perm",
        type=int,
        metavar="T",
        help="the longest sketch (hash permutations) the planner may choose; a ceiling, not the length used (0.8 uses 228) [256]",
    )
    _add_renamed(m, "--num-perm", "--max-perm", "max_perm")
    m.add_argument("--features", type=_features, metavar="K,S,R", help=_FEATURES_HELP)
    m.add_argument("--sketch", choices=["oph", "classic"], help="MinHash sketch kind [oph]")


def _add_simhash_options(m: Any, weightings: list[str]) -> None:
    """SimHash's own options, as dedup and index create take them (``weightings`` offered)."""
    m.add_argument("--max-distance", type=int, help="simhash: largest Hamming distance [3]")
    m.add_argument(
        "--simhash-features", choices=["char", "word", "shingle"], help="simhash features [char]"
    )
    m.add_argument(
        "--qgram", type=int, metavar="Q", help="simhash: characters per q-gram feature [4]"
    )
    _add_renamed(m, "--q", "--qgram", "qgram")
    idf = ", or counts times IDF fitted on the input (one more read)" if "idf" in weightings else ""
    m.add_argument(
        "--simhash-weighting",
        choices=weightings,
        help=f"simhash feature weights: each distinct feature once, occurrence counts{idf} [binary]",
    )


def _add_reporting(p: argparse.ArgumentParser) -> Any:
    """The reporting options of the long-running commands: a progress bar, no summary."""
    out = p.add_argument_group("reporting")
    out.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr [on when stderr is a terminal]",
    )
    out.add_argument("--quiet", "-q", action="store_true", help="no summary")
    return out


def _add_max_record_size(group: Any) -> None:
    group.add_argument(
        "--max-record-size",
        metavar="SIZE",
        default="64M",
        help="largest record read (a JSONL line, a Parquet text, a file, a WARC record), e.g. 256M; a larger one is a bad record, found before it is held [64M]",
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
        help="JSONL (.jsonl/.jsonl.gz), Parquet, CSV/TSV, WARC (.warc/.warc.gz), HTML or text (.txt/.md) files or folders, or - for stdin",
    )
    d.add_argument(
        "-o",
        "--output",
        help="write the kept documents here, in the format its name says (.jsonl, .jsonl.gz, .parquet, .csv, .tsv; a folder ending in / for text files); every field is kept",
    )
    d.add_argument(
        "--clusters",
        help='write {"id","cluster","kept","duplicate_of","score"} for every document in a cluster of 2+ (docs/OUTPUTS.md)',
    )
    d.add_argument(
        "--pairs",
        help='write {"id_a","id_b","score"} for the pairs behind each removal (every pair with --all-pairs)',
    )
    d.add_argument(
        "--all-pairs",
        action="store_true",
        help="--pairs lists every document pair, exact-duplicate groups expanded (default: each exact copy once, with its first copy; near pairs between first copies)",
    )
    d.add_argument("--summary-json", help="also write the summary as JSON to this file")
    d.add_argument(
        "--index",
        metavar="PATH",
        help="also drop documents that duplicate one in this index (made by neardup index create; its parameters decide)",
    )
    d.add_argument("--add", action="store_true", help="with --index: add the kept documents to it")
    d.add_argument(
        "--unit",
        choices=["document", "paragraph", "line"],
        default="document",
        help="what is removed: whole documents, or repeated paragraphs (runs of lines between blank lines) or lines inside them, each document rewritten without them, separators kept (see docs/PARAGRAPHS.md) [document]",
    )
    d.add_argument(
        "--min-paragraph-tokens",
        type=int,
        metavar="N",
        help="with --unit paragraph or line: units of fewer than N tokens are never removed and never remove another [5]",
    )
    io = _add_input_options(d, ["jsonl", "parquet", "csv", "tsv", "text", "warc", "html"])
    io.add_argument(
        "--jobs",
        "-j",
        type=int,
        help="threads signing batches in parallel; the output is the same for any number [all cores]",
    )
    io.add_argument(
        "--memory-limit",
        metavar="SIZE",
        help="per-document data kept in memory before it goes to disk, memory-mapped (e.g. 4G); with --dask local:N, each worker's memory limit (Dask spills past it); the output is the same [an eighth of the available memory]",
    )
    m = d.add_argument_group("method")
    m.add_argument("--method", choices=["minhash", "simhash"], default="minhash", help="[minhash]")
    m.add_argument(
        "--threshold",
        type=float,
        help="resemblance (Jaccard) threshold; with simhash only together with --verify [0.8]",
    )
    _add_minhash_options(m)
    m.add_argument("--seed", type=int, default=1, help="random seed [1]")
    m.add_argument(
        "--verify",
        choices=["sketch", "hybrid", "exact", "none"],
        help="confirm candidates by Jaccard: sketch estimate; hybrid: sketch, and exact Jaccard for pairs near the threshold (their texts read again); exact: stored shingle sets; none: the method decides [minhash: hybrid, simhash: none]",
    )
    m.add_argument(
        "--max-bucket",
        type=int,
        help="minhash: feature buckets larger than this are big buckets, not expanded; keep-aware removal compares a document with at most this many kept documents of each bucket [200]",
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
    _add_simhash_options(m, ["binary", "count", "idf"])
    _add_shingle_options(d)
    m.add_argument(
        "--super-features",
        action="store_true",
        help="find candidates by megashingles (one key per r-subset of features) instead of counting; small k and r only",
    )
    _add_reporting(d)
    _add_dask_options(
        d,
        "the workers read the inputs (paths, globs, folders or URLs such as s3://...) and "
        "write part files into the -o, --clusters and --pairs folders (see docs/DASK.md)",
    )

    pl = sub.add_parser(
        "plan",
        help="print the features (k, s, r) neardup dedup uses for a threshold, and their curve",
        description="Print the Broder features (k, s, r) that neardup dedup with the same "
        "options uses, and their acceptance curve P(rho): the same function chooses them. The "
        "cost model follows --verify: candidates that are verified (dedup's default, hybrid) "
        "make a missed pair cost 1000 false candidates (a false candidate costs one check, a "
        "miss is lost), so P(threshold) >= 0.99; with --verify none the features decide alone "
        "and the costs are equal (P(threshold) near 1/2). --fn-cost, --fp-cost and --budget "
        "plan with other costs; dedup then needs the printed --features. See docs/PLAN.md.",
    )
    pl.add_argument(
        "--threshold", type=float, help="resemblance threshold rho0, as given to dedup (MinHash)"
    )
    pl.add_argument("--method", choices=["minhash", "simhash"], help="as dedup's [minhash]")
    pl.add_argument(
        "--verify",
        choices=["sketch", "hybrid", "exact", "none"],
        help="as dedup's: decides the cost model (none: equal costs; otherwise fn-cost 1000) [hybrid]",
    )
    pl.add_argument(
        "--max-perm",
        type=int,
        metavar="T",
        help="the longest sketch k*s the plan may use, as dedup's [256]",
    )
    _add_renamed(pl, "--num-perm", "--max-perm", "max_perm")
    pl.add_argument(
        "--features",
        type=_features,
        metavar="K,S,R",
        help="describe these parameters instead of planning (as dedup --features): K features "
        "of S sketch values each (S = rows per band), a candidate when R features are shared",
    )
    pl.add_argument("--sketch", choices=["oph", "classic"], help="MinHash sketch kind [oph]")
    pl.add_argument(
        "--super-features",
        action="store_true",
        help="as dedup's: refused when the planned features need too many megashingles",
    )
    pl.add_argument(
        "--max-distance",
        type=int,
        help="SimHash instead: plan permuted tables for pairs within this many bits [3]",
    )
    pl.add_argument(
        "--docs", type=int, default=1_000_000, help="SimHash: collection size [1000000]"
    )
    c = pl.add_argument_group("other costs (what dedup then needs is printed as --features K,S,R)")
    c.add_argument(
        "--fn-cost",
        type=float,
        help="what a missed pair costs, in false candidates [1000; 1 with --verify none]",
    )
    c.add_argument("--fp-cost", type=float, help="what a false candidate costs [1]")
    c.add_argument("--budget", type=int, help="bytes per document for features (8 per feature)")
    pl.add_argument("--plot", help="draw P(rho) on linear and log scales to this PNG")
    pl.set_defaults(simhash_features=None, q=None, simhash_weighting=None, max_bucket=None)
    _add_plan_sample_options(pl)
    _add_decontaminate_parser(sub)
    _add_compare_parser(sub)
    _add_report_parser(sub)
    _add_index_parser(sub)
    _add_serve_parser(sub)
    return parser


def _add_dask_options(parser: argparse.ArgumentParser, what: str) -> None:
    """--dask, --work-dir, --restart, --storage-options: the options of a cluster run."""
    parser.add_argument(
        "--dask",
        metavar="CLUSTER",
        help="run on Dask: local:N (N worker processes here) or a scheduler address such as "
        f"tcp://host:8786; {what}",
    )
    parser.add_argument(
        "--work-dir",
        metavar="DIR",
        help="with --dask: keep each finished stage here (a path or URL); the same command started again resumes [a temporary folder, removed on success]",
    )
    parser.add_argument(
        "--restart",
        action="store_true",
        help="with --dask: discard what --work-dir holds from an earlier run and start over",
    )
    parser.add_argument(
        "--storage-options",
        metavar="JSON",
        help="with --dask: fsspec options for remote paths, e.g. '{\"anon\": false}' (credentials are best left to the environment or fsspec's configuration)",
    )


def _add_decontaminate_parser(sub: argparse._SubParsersAction) -> None:
    x = sub.add_parser(
        "decontaminate",
        help="drop training documents that contain benchmark items (exact shingle containment)",
        description="Drop every training document holding at least C of some benchmark item's "
        "shingles (canonical tokens: case, punctuation and line breaks ignored); write the rest "
        "and, per match, the matched character spans. See docs/DECONTAMINATE.md.",
    )
    x.add_argument(
        "inputs",
        nargs="+",
        help="training data: JSONL, Parquet, WARC, HTML or text files or folders, or -",
    )
    x.add_argument(
        "--against",
        nargs="+",
        required=True,
        metavar="BENCH",
        help="benchmark items: JSONL, Parquet or text files or folders (format from the names)",
    )
    x.add_argument(
        "--containment",
        "-c",
        type=float,
        default=0.5,
        help="drop a document holding at least this share of an item's shingles [0.5]",
    )
    x.add_argument("-o", "--output", help="write the clean documents here, in the input's format")
    x.add_argument(
        "--matches",
        help='write {"id","benchmark_id","containment","spans"} for every match (spans: [start, end] character offsets in the training text)',
    )
    x.add_argument("--summary-json", help="also write the summary as JSON to this file")
    io = _add_input_options(x, ["jsonl", "parquet", "text", "warc", "html"])
    io.add_argument(
        "--against-text-field", help="field holding a benchmark item's text [--text-field]"
    )
    io.add_argument("--against-id-field", help="field holding a benchmark item's id [--id-field]")
    io.add_argument(
        "--jobs",
        "-j",
        type=int,
        help="threads shingling batches in parallel; the output is the same for any number [all cores]",
    )
    _add_shingle_options(x)
    _add_reporting(x)
    _add_dask_options(
        x,
        "the workers read the training data (JSONL paths, globs, folders or URLs such as "
        "s3://...) and write part files into the -o and --matches folders; the benchmark is "
        "read here (see docs/DECONTAMINATE.md)",
    )
    x.add_argument(
        "--memory-limit",
        metavar="SIZE",
        help="with --dask local:N: each worker's memory limit (e.g. 4G; Dask spills past it)",
    )


def cmd_decontaminate(args: argparse.Namespace) -> int:
    import dataclasses

    from .params import DecontaminateParams
    from .run import DecontaminateOutputs, decontaminate_source

    if not (args.output or args.matches or args.summary_json):
        raise ParamError("name an output: -o CLEAN, --matches FILE or --summary-json FILE")
    shingle = ShingleParams(w=args.shingle_size, tokens=args.tokens, nfkc=args.nfkc, hash=args.hash)
    params = DecontaminateParams(containment=args.containment, shingle=shingle)
    read = _read_options(args)
    against_read = dataclasses.replace(
        read,
        format=None,
        text_field=args.against_text_field or args.text_field,
        id_field=args.against_id_field or args.id_field,
    )
    outputs = DecontaminateOutputs(args.output, args.matches, args.summary_json)
    against = args.against[0] if args.against == ["-"] else args.against
    if args.dask:
        from .run import decontaminate_cluster, parse_size

        summary = decontaminate_cluster(
            args.inputs, against, params, outputs, read, against_read, args.dask, args.work_dir,
            args.restart, _storage_options(args.storage_options), None if args.quiet else _info,
            None if args.memory_limit is None else parse_size(args.memory_limit),
        )  # fmt: skip
    elif args.work_dir or args.restart or args.storage_options or args.memory_limit:
        raise ParamError(
            "--work-dir, --restart, --storage-options and --memory-limit go with --dask"
        )
    else:
        summary = decontaminate_source(
            args.inputs[0] if args.inputs == ["-"] else args.inputs,
            against,
            params,
            outputs,
            read,
            against_read,
            progress=sys.stderr.isatty() if args.progress is None else args.progress,
            jobs=args.jobs,
        )
    if not args.quiet:
        s = summary
        sys.stderr.write(
            "neardup decontaminate summary\n"
            f"  documents            {s['documents']:>12,}\n"
            f"  contaminated         {s['contaminated']:>12,}\n"
            f"  documents kept       {s['kept']:>12,}\n"
            f"  matches              {s['matches']:>12,}\n"
            f"  benchmark items      {s['benchmark_items']:>12,} ({s['benchmark_items_matched']:,} "
            f"found; {s['benchmark_items_without_shingles']:,} without tokens)\n"
            f"  skipped records      {s['skipped_records'] + s['skipped_benchmark_records']:>12,}\n"
            f"  time                 {s['seconds']:>11.2f}s\n"
            f"  throughput           {s['mb_per_s']:>8.1f} MB/s\n"
            f"  peak memory          {s['peak_memory_mb']:>9.0f} MB\n"
        )
    return 0


def _add_report_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(
        "report",
        help="one self-contained HTML page showing a run's clusters (or matches) side by side",
        description="Write an HTML report of a dedup run: summary, histograms, and every "
        "cluster (largest first) with removed documents beside what they duplicate. With "
        "--matches and --against, of a decontaminate run instead: how many training documents "
        "contain each benchmark item, and a sample of matches, spans highlighted, beside the "
        "item.",
    )
    r.add_argument("inputs", nargs="+", help="the input the run read (same options)")
    r.add_argument("--clusters", help="the dedup run's --clusters file (JSONL)")
    r.add_argument(
        "--matches",
        help="the decontaminate run's --matches file (or its --dask folder); needs --against",
    )
    r.add_argument("--against", nargs="+", metavar="BENCH", help="with --matches: the benchmark")
    r.add_argument("--against-text-field", help="with --matches: the benchmark's text field")
    r.add_argument("--against-id-field", help="with --matches: the benchmark's id field")
    r.add_argument(
        "--sample",
        type=int,
        default=200,
        help="with --matches: matches shown with their texts, spread over the items [200]",
    )
    r.add_argument("-o", "--output", required=True, help="the HTML file to write")
    r.add_argument("--pairs", help="the run's --pairs file (scores when the clusters have none)")
    r.add_argument("--summary-json", help="the run's --summary-json file (parameters, timing)")
    r.add_argument("--format", choices=["jsonl", "parquet", "csv", "tsv", "text", "warc", "html"])
    r.add_argument("--text-field", default="text", help="field holding the text [text]")
    r.add_argument("--id-field", default="id", help="field holding the id [id]")
    r.add_argument("--on-error", choices=["stop", "skip"], default="stop")
    _add_max_record_size(r)
    r.add_argument(
        "--text-clusters",
        type=int,
        default=2000,
        help="embed texts for this many of the largest clusters [2000]",
    )
    r.add_argument("--max-chars", type=int, default=3000, help="characters shown per text [3000]")
    r.add_argument("--shingle-size", "-w", type=int, default=5, help="words per shared passage [5]")
    r.add_argument("--title", default="neardup report", help="page title")


def cmd_report(args: argparse.Namespace) -> int:
    from .report import write_report
    from .run import parse_size

    if (args.clusters is None) == (args.matches is None):
        raise ParamError(
            "give --clusters (a dedup run) or --matches with --against (decontaminate)"
        )
    if args.matches is not None:
        return cmd_report_matches(args)
    if args.against or args.against_text_field or args.against_id_field:
        raise ParamError("--against and its fields go with --matches")
    stats = write_report(
        args.inputs[0] if args.inputs == ["-"] else args.inputs,
        args.clusters,
        args.output,
        pairs=args.pairs,
        run_summary=args.summary_json,
        fmt=args.format,
        text_field=args.text_field,
        id_field=args.id_field,
        on_error=args.on_error,
        max_record_size=parse_size(args.max_record_size),
        shingle=ShingleParams(w=args.shingle_size),
        max_chars=args.max_chars,
        text_clusters=args.text_clusters,
        title=args.title,
    )
    sys.stderr.write(
        f"report: {stats.clusters:,} clusters, {stats.removed:,} removed documents, "
        f"{stats.bytes / 1e6:.1f} MB -> {args.output}\n"
    )
    return 0


def cmd_report_matches(args: argparse.Namespace) -> int:
    """report --matches: the page of a decontamination run."""
    from .contamination_report import write_contamination_report
    from .run import parse_size

    if not args.against:
        raise ParamError("--matches needs --against BENCH: the benchmark the run read")
    if args.pairs or args.summary_json:
        raise ParamError("--pairs and --summary-json go with --clusters (a dedup run)")
    stats = write_contamination_report(
        args.inputs[0] if args.inputs == ["-"] else args.inputs,
        args.matches,
        args.against,
        args.output,
        fmt=args.format,
        text_field=args.text_field,
        id_field=args.id_field,
        against_text_field=args.against_text_field,
        against_id_field=args.against_id_field,
        on_error=args.on_error,
        max_record_size=parse_size(args.max_record_size),
        sample=args.sample,
        max_chars=args.max_chars,
        title=args.title if args.title != "neardup report" else "neardup decontamination report",
    )
    sys.stderr.write(
        f"report: {stats.matches:,} matches of {stats.items_found:,} benchmark items in "
        f"{stats.contaminated:,} documents, {stats.shown:,} shown, {stats.bytes / 1e6:.1f} MB "
        f"-> {args.output}\n"
    )
    return 0


def _add_plan_sample_options(pl: argparse.ArgumentParser) -> None:
    g = pl.add_argument_group("learning from the corpus (--sample)")
    g.add_argument(
        "--sample",
        nargs="+",
        metavar="INPUT",
        help="measure resemblance among pairs of this corpus and forecast false candidates and misses",
    )
    g.add_argument("--sample-size", type=int, default=1000, help="random query documents [1000]")
    g.add_argument("--seed", type=int, default=1, help="random seed of the sample [1]")
    g.add_argument(
        "--floor", type=float, help="measure pairs down to this resemblance [max(0.3, T/2)]"
    )
    g.add_argument("--format", choices=["jsonl", "parquet", "csv", "tsv", "text", "warc", "html"])
    g.add_argument("--text-field", default="text", help="field holding the text [text]")
    g.add_argument("--id-field", default="id", help="field holding the id [id]")
    g.add_argument("--on-error", choices=["stop", "skip"], default="stop")
    _add_max_record_size(g)
    g.add_argument("--shingle-size", "-w", type=int, default=5, help="tokens per shingle [5]")
    g.add_argument("--tokens", choices=["word", "char"], default="word", help="[word]")


def cmd_plan_sample(args: argparse.Namespace) -> int:
    from .features import FeatureParams
    from .io import open_source
    from .plots import plot_sample
    from .run import parse_size
    from .sample_plan import plan_with_sample

    if args.threshold is None:
        raise ParamError("neardup plan --sample needs --threshold")
    from .io import plan_outputs

    plan_outputs(args.sample, {"--plot": args.plot})  # never the sample, checked before reading
    with open_source(
        args.sample[0] if args.sample == ["-"] else args.sample,
        args.format,
        text_field=args.text_field,
        id_field=args.id_field,
        on_error=args.on_error,
        max_record_size=parse_size(args.max_record_size),
    ) as source:
        est, forecasts = plan_with_sample(
            lambda: ((b.texts, b.positions) for b in source.batches(5000)),
            args.threshold,
            n=args.sample_size,
            params=FeatureParams(*args.features) if args.features is not None else None,
            shingle=ShingleParams(w=args.shingle_size, tokens=args.tokens),
            max_t=256 if args.max_perm is None else args.max_perm,
            seed=args.seed,
            floor=args.floor,
            verify=args.verify,
        )
    _print(est.describe(forecasts) + "\n")
    if args.plot:
        plot_sample(est, forecasts, args.plot)
        _print(f"plot written to {args.plot}\n")
    return 0


def _add_compare_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "compare",
        help="every similarity measure of two documents side by side, and a word diff",
        description="Compare two documents (text or .html files, or - for stdin) by every measure.",
    )
    c.add_argument("a", help="first document (a file, or - for standard input)")
    c.add_argument("b", help="second document (a file, or - for standard input)")
    c.add_argument("--json", action="store_true", help="print the measures and diff as JSON")
    c.add_argument("--num-perm", type=int, default=128, help="MinHash sketch length [128]")
    c.add_argument("--sketch", choices=["oph", "classic", "bottomk"], default="oph")
    c.add_argument("--seed", type=int, default=1, help="random seed [1]")
    c.add_argument("--no-diff", action="store_true", help="measures only")
    c.add_argument("--color", action=argparse.BooleanOptionalAction, default=None)
    _add_shingle_options(c)


def cmd_compare(args: argparse.Namespace) -> int:
    import json

    from .compare import compare, format_comparison
    from .io._html import read_document
    from .params import SketchParams

    if args.a == "-" and args.b == "-":
        raise ParamError("only one of the two documents can be read from standard input")
    shingle = ShingleParams(w=args.shingle_size, tokens=args.tokens, nfkc=args.nfkc, hash=args.hash)
    sketch = SketchParams(kind=args.sketch, t=args.num_perm, seed=args.seed)
    result = compare(
        read_document(args.a), read_document(args.b), shingle, sketch, diff=not args.no_diff
    )
    if args.json:
        _print(json.dumps(result.as_dict(), ensure_ascii=False, indent=1) + "\n")
    else:
        color = sys.stdout.isatty() if args.color is None else args.color
        _print(format_comparison(result, color=color))
    return 0


#: Options that belong to one method: name on the command line -> attribute of ``args``.
_MINHASH_ONLY = {
    "--features": "features",
    "--max-perm": "max_perm",
    "--sketch": "sketch",
    "--super-features": "super_features",
    "--max-bucket": "max_bucket",
}
_SIMHASH_ONLY = {
    "--max-distance": "max_distance",
    "--simhash-features": "simhash_features",
    "--qgram": "qgram",
    "--simhash-weighting": "simhash_weighting",
}


def _given(args: argparse.Namespace, options: dict[str, str]) -> list[str]:
    return [
        flag for flag, attr in options.items() if getattr(args, attr, None) not in (None, False)
    ]


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
            "features": getattr(args, "simhash_features", None),
            "q": getattr(args, "qgram", None),
            "weighting": getattr(args, "simhash_weighting", None),
            "max_distance": args.max_distance,
        }
        return SimhashMethodParams(**{k: v for k, v in values.items() if v is not None})
    values = {
        "features": FeatureParams(*args.features) if args.features is not None else None,
        "sketch": args.sketch,
        "max_t": args.max_perm,
        "super_features": args.super_features or None,
        "max_bucket": getattr(args, "max_bucket", None),
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
    from .run import DedupOutputs, dedup_source, parse_size

    if args.unit != "document":
        return cmd_dedup_units(args)
    if args.min_paragraph_tokens is not None:
        raise ParamError("--min-paragraph-tokens goes with --unit paragraph or --unit line")
    if args.index or args.add:
        return cmd_dedup_index(args)
    _check_dedup_outputs(args)
    params = _dedup_params(args)
    read = _read_options(args, key_field=args.keep_field)
    outputs = DedupOutputs(
        kept=args.output,
        clusters=args.clusters,
        pairs=args.pairs,
        summary_json=args.summary_json,
        all_pairs=args.all_pairs,
    )
    inputs = args.inputs[0] if args.inputs == ["-"] else args.inputs
    limit = None if args.memory_limit is None else parse_size(args.memory_limit)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    if args.dask:
        from .run import dedup_cluster

        info = None if args.quiet else _info
        result = dedup_cluster(
            args.inputs, params, outputs, read, args.dask, args.work_dir, args.restart,
            _storage_options(args.storage_options), info, limit,
        )  # fmt: skip
    elif args.work_dir or args.restart or args.storage_options:
        raise ParamError("--work-dir, --restart and --storage-options go with --dask")
    else:
        result = dedup_source(
            inputs,
            params,
            outputs,
            read,
            progress=show,
            warn=_warn,
            jobs=args.jobs,
            memory_limit=limit,
            make=_deduplicator(args),
        )
    if not args.quiet:
        sys.stderr.write(_format_summary(result.summary, result.problems))
    return 0


def _check_dedup_outputs(args: argparse.Namespace) -> None:
    """A dedup that would write nothing, or an option that would change nothing, is refused
    before anything is read."""
    if args.all_pairs and not args.pairs:
        raise ParamError("--all-pairs changes what --pairs lists; add --pairs FILE or drop it")
    if args.index and args.add:
        return  # the index receives the kept documents
    if not (args.output or args.clusters or args.pairs or args.summary_json):
        more = "" if args.index else ", --clusters FILE, --pairs FILE"
        raise ParamError(
            f"this run would write nothing; name an output: -o KEPT{more} or "
            "--summary-json FILE (the counts alone)"
        )


def cmd_dedup_units(args: argparse.Namespace) -> int:
    """dedup --unit paragraph|line: repeated paragraphs (lines) cut out of each document."""
    from .paragraph_run import DEFAULT_MIN_TOKENS, UnitOptions, dedup_paragraphs, format_summary
    from .run import DedupOutputs, parse_size

    refused = [
        flag
        for flag, given in {
            "--index": args.index,
            "--add": args.add,
            "--dask": args.dask,
            "--work-dir": args.work_dir,
            "--restart": args.restart,
            "--storage-options": args.storage_options,
        }.items()
        if given
    ]
    if refused:
        raise ParamError(
            f"--unit {args.unit} runs on one machine without an index; drop {', '.join(refused)}"
        )
    _check_dedup_outputs(args)
    units = UnitOptions(
        args.unit,
        DEFAULT_MIN_TOKENS if args.min_paragraph_tokens is None else args.min_paragraph_tokens,
    )
    outputs = DedupOutputs(
        kept=args.output,
        clusters=args.clusters,
        pairs=args.pairs,
        summary_json=args.summary_json,
        all_pairs=args.all_pairs,
    )
    result = dedup_paragraphs(
        args.inputs[0] if args.inputs == ["-"] else args.inputs,
        _dedup_params(args),
        outputs,
        units,
        _read_options(args, key_field=args.keep_field),
        progress=sys.stderr.isatty() if args.progress is None else args.progress,
        jobs=args.jobs,
        memory_limit=None if args.memory_limit is None else parse_size(args.memory_limit),
    )
    if not args.quiet:
        sys.stderr.write(format_summary(result.summary, result.problems))
    return 0


def _storage_options(text: str | None) -> dict[str, Any]:
    """--storage-options: a JSON object, or a ParamError saying so."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ParamError(
            f"--storage-options is not JSON ({exc}); give an object such as '{{}}'"
        ) from None
    if not isinstance(value, dict):
        raise ParamError("--storage-options must be a JSON object, such as '{\"anon\": true}'")
    return value


def _pair_lines(s: Mapping[str, Any]) -> list[str]:
    """What finding the pairs cost: comparisons with kept leaders, candidate pairs listed."""
    lines = []
    if s.get("leader_checks"):
        lines.append(
            f"  compared with kept   {s['leader_checks']:>12,} ({s.get('exact_checks', 0):,} "
            f"exactly; {s.get('exact_sets', 0):,} texts read again; "
            f"{s.get('check_rounds', 0)} passes)"
        )
    if not s.get("leader_checks") or s.get("listed_pairs"):
        lines.append(f"  candidate pairs      {s['candidate_pairs']:>12,}")
        if s.get("rechecked_pairs"):
            lines.append(f"  re-checked exactly   {s['rechecked_pairs']:>12,}")
    if s.get("joined_docs"):
        lines.append(
            f"  joined exactly       {s['joined_docs']:>12,} documents of big buckets "
            f"({s.get('join_verified', 0):,} pairs verified)"
        )
    lines.append(f"  accepted pairs       {s['accepted_pairs']:>12,}")
    return lines


def _figure(x: float) -> str:
    """A measured figure with the digits that say something: 1,234 / 93.4 / 0.13 / 0.0029."""
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 1:
        return f"{x:.1f}"
    return f"{x:.2g}" if x > 0 else "0"


def _throughput(nbytes: int, seconds: float) -> str:
    """Input megabytes per second of the run's wall time, saying what was divided (a small
    run's rate is mostly start-up: 0.2 MB in 1.4 s, not "0.0 MB/s")."""
    mb = nbytes / 1e6
    rate = mb / max(seconds, 1e-9)
    return f"{_figure(rate):>8} MB/s ({_figure(mb)} MB of input in {seconds:.2f} s)"


def _format_summary(s: Mapping[str, Any], problems: str) -> str:
    lines = [
        "neardup dedup summary",
        f"  documents            {s['documents']:>12,}",
        f"  empty documents      {s['empty']:>12,}",
        f"  exact duplicates     {s['exact_duplicates']:>12,}",
        f"  near duplicates      {s['removed'] - s['exact_duplicates']:>12,}",
        f"  clusters (2+ docs)   {s['clusters']:>12,}",
        f"  documents removed    {s['removed']:>12,}",
        f"  documents kept       {s['kept']:>12,}",
        f"  method               {s['method']}",
        *_pair_lines(s),
        *(
            [f"  spilled to disk      {s['spilled_bytes'] / 1e6:>9.0f} MB"]
            if s.get("spilled_bytes")
            else []
        ),
        f"  skipped records      {s['skipped_records']:>12,}",
        f"  time                 {s['seconds']:>11.2f}s",
        f"  throughput           {_throughput(s['bytes_in'], s['seconds'])}",
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
        if s.get("bucket_unresolved"):
            lines.append(
                "  hint: documents sharing boilerplate keys were compared with the first "
                "--max-bucket kept documents of each key only; raise --max-bucket to compare "
                "with more, or use --all-pairs --pairs FILE to see every pair"
            )
    short = s.get("documents") and s.get("bytes_in", 0) / max(s["documents"], 1) < 120
    if short and s.get("tokens", "word") == "word":
        lines.append(
            "  hint: the documents are short (under 120 bytes on average); for titles and "
            "summaries --tokens char -w 5 finds near-copies that word 5-shingles cannot"
        )
    text = "\n".join(lines) + "\n"
    if problems:
        text += problems.rstrip("\n") + "\n"
    return text


def cmd_plan(args: argparse.Namespace) -> int:
    if args.sample:
        return cmd_plan_sample(args)
    if args.method is None:
        args.method = "simhash" if args.max_distance is not None else "minhash"
    method = _method_params(args)  # the other method's options refused, as by dedup
    if isinstance(method, SimhashMethodParams):
        from .hamming import plan_tables

        _print(plan_tables(method.max_distance, args.docs).describe() + "\n")
        return 0
    if args.threshold is None:
        raise ParamError("neardup plan needs --threshold (MinHash) or --max-distance (SimHash)")
    if args.plot:  # checked before the work: a missing folder, a folder, an input...
        from .io import plan_outputs

        plan_outputs([], {"--plot": args.plot})
    params = DedupParams(threshold=args.threshold, method=method, verify=args.verify)
    from .methods import make_method
    from .planner import plan_as_dedup

    chosen, used = plan_as_dedup(
        params, cost_fp=args.fp_cost, cost_fn=args.fn_cost, max_bytes=args.budget
    )
    line = make_method(params).describe()
    if chosen.params == used.params:
        tail = f"neardup dedup with these options uses them; its summary's method line:\n  {line}"
    else:
        f = chosen.params
        tail = (
            f"neardup dedup with these options uses other features; its summary's method line:\n"
            f"  {line}\n"
            f"to use the features above: neardup dedup --features {f.k},{f.s},{f.r}"
        )
    _print(f"{chosen.describe()}\n\n{tail}\n")
    if args.plot:
        from .plots import plot_curve

        plot_curve(chosen, args.plot)
        _print(f"curve written to {args.plot}\n")
    return 0


def _print(text: str) -> None:
    """Write a result to standard output; OutputError when it is closed or the pipe broke."""
    if sys.stdout is None:
        raise OutputError(
            "cannot write to standard output: it is closed; redirect it to a file instead"
        )
    from .io._targets import STDOUT, guarded, stdout_buffer, write_all

    out = sys.stdout
    if getattr(out, "buffer", None) is None:  # a text-only stream (redirect_stdout to StringIO)
        guarded(STDOUT, lambda: out.write(text))
        guarded(STDOUT, out.flush)
        return
    # Bytes written whole (``write_all``): an unbuffered text stream (PYTHONUNBUFFERED) can
    # drop the rest of a write that the pipe took only in part.
    data = text.encode(out.encoding or "utf-8", out.errors or "strict")
    guarded(STDOUT, out.flush)
    sink = stdout_buffer()
    write_all(sink, data, STDOUT)
    guarded(STDOUT, sink.flush)


def _fail(message: str) -> int:
    """Report an error in one line (newlines in file names escaped): exit status 1."""
    line = message.replace("\r", "\\r").replace("\n", "\\n")
    line = line.encode("utf-8", "backslashreplace").decode("utf-8")  # undecodable file names
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"neardup: error: {line}\n")
        sys.stderr.flush()
    return 1


def _os_error_message(exc: OSError) -> str:
    """An OSError no layer below named: which file, what went wrong, what to do."""
    from .io._targets import describe_os_error

    name = exc.filename if exc.filename is not None else ""
    return f"{name}: {describe_os_error(exc)}" if name else describe_os_error(exc)


def _quiet_stdout() -> None:
    """After a broken pipe, point standard output at /dev/null so the interpreter's final flush
    cannot print a second error."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)


# -- neardup index ... and dedup --index ---------------------------------------------------------


def _add_index_input_options(p: argparse.ArgumentParser) -> None:
    _add_input_options(p, ["jsonl", "parquet", "csv", "tsv", "text"])


def _add_index_parser(sub: Any) -> None:
    """``neardup index create|add|query|remove|retire|moved|stats|check|repair|upgrade``."""
    ix = sub.add_parser(
        "index",
        help="a standing index: add documents, ask which stored ones a new one duplicates",
        description="A standing near-duplicate index in one SQLite file.",
    )
    isub = ix.add_subparsers(dest="index_command", required=True)
    c = isub.add_parser("create", help="create an empty index with its parameters")
    c.add_argument("path", help="the index file to create (SQLite)")
    m = c.add_argument_group("method")
    m.add_argument(
        "--method",
        choices=["minhash", "simhash", "sampled"],
        default="minhash",
        help="minhash: resemblance; simhash: Hamming distance; sampled: containment of sampled shingles (prefixes, suffixes, quotations) [minhash]",
    )
    m.add_argument(
        "--threshold",
        type=float,
        help="resemblance threshold (containment with --method sampled) [0.8]",
    )
    m.add_argument("--sample-mod", type=int, help="sampled: keep shingles with fp %% M == 0 [2]")
    _add_minhash_options(m)
    m.add_argument("--super-features", action="store_true", help="look up by megashingles")
    m.add_argument("--max-bucket", type=int, help=argparse.SUPPRESS)
    m.add_argument("--seed", type=int, default=1, help="random seed [1]")
    m.add_argument(
        "--verify",
        choices=["sketch", "hybrid", "exact", "none"],
        help="how candidates are confirmed, as for dedup [minhash: hybrid, others: none]",
    )
    _add_simhash_options(m, ["binary", "count"])
    m.add_argument(
        "--store-text",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep each document's text (needed by hybrid verification) [only for hybrid]",
    )
    _add_shingle_options(c)

    a = isub.add_parser("add", help="add documents (an id already present is replaced)")
    a.add_argument("path", help="the index")
    a.add_argument("inputs", nargs="+", help="JSONL, Parquet, text files or folders, or -")
    _add_index_input_options(a)
    a.add_argument("--url-field", help="field holding each document's URL (used as its id)")
    a.add_argument("--date-field", help="field holding the crawl date (last seen)")
    a.add_argument(
        "--jobs",
        "-j",
        type=int,
        help="threads signing batches while the previous one is written; the index ends the same for any number [all cores]",
    )
    a.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)

    q = isub.add_parser("query", help="one JSON line of matches per query document")
    q.add_argument("path", help="the index")
    q.add_argument("inputs", nargs="+", help="JSONL, Parquet, text files or folders, or -")
    q.add_argument("-o", "--output", help="write the JSON lines here [stdout]")
    q.add_argument("--threshold", type=float, help="ask for more than the index's threshold")
    q.add_argument("--limit", type=int, help="at most this many matches per query")
    q.add_argument(
        "--jobs",
        "-j",
        type=int,
        help="threads signing batches while the previous one is looked up; the answers are the same for any number [all cores]",
    )
    _add_index_input_options(q)

    r = isub.add_parser("remove", help="remove documents by id")
    r.add_argument("path", help="the index")
    r.add_argument("ids", nargs="+", help="ids to remove (all must be present)")

    rt = isub.add_parser("retire", help="mark URLs gone (found again by moved)")
    rt.add_argument("path", help="the index")
    rt.add_argument("urls", nargs="+", help="URLs (ids) that disappeared")
    rt.add_argument("--date", help="when they disappeared")

    mv = isub.add_parser("moved", help="live URLs holding near-copies of a URL's last content")
    mv.add_argument("path", help="the index")
    mv.add_argument("url", help="a URL (id) in the index")
    mv.add_argument("--limit", type=int, help="at most this many")

    for name, text in (
        ("stats", "counts, size and parameters"),
        ("check", "integrity check: every record's checksum, and the tables agree"),
        ("repair", "remove the damaged documents check names (prints their ids: add them again)"),
        ("upgrade", "give an index of schema 3 its record checksums, in place"),
    ):
        x = isub.add_parser(name, help=text)
        x.add_argument("path", help="the index")


def _index_params(args: argparse.Namespace) -> DedupParams:
    """Parameters of ``index create``: those of dedup, and the sampled containment method."""
    from .params import SampledParams

    shingle = ShingleParams(w=args.shingle_size, tokens=args.tokens, nfkc=args.nfkc, hash=args.hash)
    method: MinhashParams | SimhashMethodParams | SampledParams
    if args.method == "sampled":
        other = _given(args, {**_MINHASH_ONLY, **_SIMHASH_ONLY})
        if other:
            raise ParamError(f"{', '.join(other)} do(es) not apply to --method sampled; drop it")
        method = SampledParams() if args.sample_mod is None else SampledParams(m=args.sample_mod)
    else:
        if args.sample_mod is not None:
            raise ParamError("--sample-mod only applies to --method sampled")
        method = _method_params(args)
    return DedupParams(
        threshold=args.threshold,
        shingle=shingle,
        method=method,
        verify=args.verify,
        seed=args.seed,
    )


def _read_options(args: argparse.Namespace, key_field: str | None = None) -> Any:
    """How the command's inputs are read (the options of ``_add_input_options``)."""
    from .run import ReadOptions, parse_size

    docs, nbytes = _batch_size(args.batch_size)
    return ReadOptions(
        key_field=key_field,
        format=args.format,
        text_field=args.text_field,
        id_field=args.id_field,
        on_error=args.on_error,
        batch_size=docs,
        batch_bytes=nbytes,
        max_record_size=parse_size(args.max_record_size),
    )


def _batch_size(text: str) -> tuple[int | None, int]:
    """--batch-size: a plain number counts documents; with a unit (4M, 512K) it is bytes."""
    from .run import BATCH_BYTES, parse_size

    value = str(text).strip()
    if value.isdigit():
        return int(value), BATCH_BYTES
    return None, parse_size(value)


def _print_json(value: object) -> None:
    import json

    _print(json.dumps(value, indent=1, ensure_ascii=False) + "\n")


def cmd_index_create(args: argparse.Namespace) -> int:
    from .index import Index

    Index.create(args.path, _index_params(args), store_text=args.store_text).close()
    sys.stderr.write(f"neardup: created index {args.path}\n")
    return 0


def cmd_index_add(args: argparse.Namespace) -> int:
    from .run import index_add_source

    done = index_add_source(
        args.path,
        args.inputs[0] if args.inputs == ["-"] else args.inputs,
        _read_options(args),
        url_field=args.url_field,
        date_field=args.date_field,
        progress=sys.stderr.isatty() if args.progress is None else args.progress,
        jobs=args.jobs,
    )
    sys.stderr.write(
        f"neardup: added {done['added']:,}, replaced {done['replaced']:,} "
        f"({done['documents']:,} in the index; {done['docs_per_s']:,} docs/s)\n"
    )
    return 0


def cmd_index_query(args: argparse.Namespace) -> int:
    from .run import index_query_source

    done = index_query_source(
        args.path,
        args.inputs[0] if args.inputs == ["-"] else args.inputs,
        args.output,
        _read_options(args),
        threshold=args.threshold,
        limit=args.limit,
        jobs=args.jobs,
    )
    sys.stderr.write(
        f"neardup: {done['queries']:,} queries, {done['with_matches']:,} with matches\n"
    )
    return 0


def cmd_index_edit(args: argparse.Namespace) -> int:
    """remove and retire: one transaction; an unknown id changes nothing."""
    from .index import Index

    index = Index.open(args.path)
    try:
        if args.index_command == "remove":
            n = index.remove(args.ids)
            sys.stderr.write(f"neardup: removed {n:,} documents\n")
        else:
            n = index.retire(args.urls, args.date)
            sys.stderr.write(f"neardup: retired {n:,} URLs\n")
    finally:
        index.close()
    return 0


def cmd_index_show(args: argparse.Namespace) -> int:
    """stats, check and moved: read-only."""
    from .index import Index

    index = Index.open(args.path)
    try:
        if args.index_command == "stats":
            _print_json(index.stats())
        elif args.index_command == "moved":
            _print_json([m.as_dict() for m in index.moved(args.url, limit=args.limit)])
        else:
            problems = index.check()
            if problems:
                _print("".join(f"{i}\n" for i in index.damage().ids))  # all of them, for repair
                raise IndexCorrupt(f"{args.path} failed the check: " + "; ".join(problems))
            _print(f"{args.path}: ok ({len(index):,} documents)\n")
    finally:
        index.close()
    return 0


def cmd_index_repair(args: argparse.Namespace) -> int:
    """Remove what check finds damaged; the removed ids on stdout, one per line."""
    from .index import Index

    index = Index.open(args.path)
    try:
        ids = index.repair()
        problems = index.check()
        count = len(index)
    finally:
        index.close()
    _print("".join(f"{i}\n" for i in ids))
    if problems:
        raise NeardupError(f"{args.path} still fails the check: " + "; ".join(problems))
    sys.stderr.write(
        f"neardup: {args.path}: removed {len(ids):,} damaged documents ({count:,} remain); "
        + ("add them again from your corpus (ids listed above)\n" if ids else "nothing to do\n")
    )
    return 0


def cmd_index_upgrade(args: argparse.Namespace) -> int:
    from .index import Index

    n = Index.upgrade(args.path)
    sys.stderr.write(f"neardup: {args.path}: upgraded, with record checksums ({n:,} documents)\n")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    commands = {
        "create": cmd_index_create,
        "add": cmd_index_add,
        "query": cmd_index_query,
        "remove": cmd_index_edit,
        "retire": cmd_index_edit,
        "repair": cmd_index_repair,
        "upgrade": cmd_index_upgrade,
    }
    return commands.get(args.index_command, cmd_index_show)(args)


def cmd_dedup_index(args: argparse.Namespace) -> int:
    """dedup --index PATH [--add]: the index's parameters decide; method options are refused."""
    from .run import dedup_index_source

    if not args.index:
        raise ParamError("--add needs --index PATH: the index to add the kept documents to")
    given = [
        flag
        for flag, attr in {
            "--threshold": "threshold",
            "--verify": "verify",
            "--clusters": "clusters",
            "--pairs": "pairs",
            "--keep": "keep",
            "--keep-field": "keep_field",
            **_MINHASH_ONLY,
            **_SIMHASH_ONLY,
        }.items()
        if getattr(args, attr) not in (None, False)
    ]
    if given or args.method != "minhash":
        shown = ", ".join(given) or "--method"
        raise ParamError(
            f"with --index the index's own parameters decide and the first document wins; "
            f"drop {shown}"
        )
    _check_dedup_outputs(args)
    read = _read_options(args)
    done = dedup_index_source(
        args.inputs[0] if args.inputs == ["-"] else args.inputs,
        args.index,
        args.output,
        read,
        add=args.add,
        summary_json=args.summary_json,
    )
    if not args.quiet:
        sys.stderr.write(
            f"neardup dedup --index: {done['documents']:,} documents, "
            f"{done['duplicates_of_index']:,} duplicate the index, "
            f"{done['duplicates_in_input']:,} duplicate earlier input, {done['kept']:,} kept"
            f"{', added to the index' if args.add else ''}\n"
        )
    return 0


# -- neardup serve -----------------------------------------------------------------------------


def _add_serve_parser(sub: Any) -> None:
    """``neardup serve PATH``: the index as an HTTP service (FastAPI, uvicorn)."""
    s = sub.add_parser(
        "serve",
        help="serve an index over HTTP (add, query, remove, retire, moved, stats)",
        description="Serve the SQLite index at PATH over HTTP; API docs at /docs. Stop with "
        "Ctrl-C or SIGTERM: requests in flight are answered first.",
    )
    s.add_argument("path", help="the index (made by neardup index create)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on [127.0.0.1]")
    s.add_argument("--port", type=int, default=8000, help="port; 0 picks a free one [8000]")
    auth = s.add_mutually_exclusive_group()
    auth.add_argument(
        "--token",
        help="require 'Authorization: Bearer TOKEN' on every request but /health and the API docs",
    )
    auth.add_argument("--token-file", help="read the token from this file (not shown by ps)")
    s.add_argument(
        "--docs-need-token",
        action="store_true",
        help="with a token, require it for /docs, /redoc and /openapi.json too",
    )
    s.add_argument(
        "--max-body",
        type=int,
        default=16 * 1024 * 1024,
        help="largest request body, bytes [16 MiB]",
    )
    s.add_argument(
        "--max-batch", type=int, default=1000, help="most documents or ids per request [1000]"
    )
    s.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds for a whole request body to arrive, and to wait for the index [30]",
    )
    s.add_argument("--readers", type=int, default=4, help="reader threads [4]")
    s.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        help="seconds for a request's headers to arrive, else 408 and the connection closed [10]",
    )
    s.add_argument(
        "--max-client-connections",
        type=int,
        default=128,
        help="open connections per client IP; one more closes the client's oldest idle "
        "keep-alive connection, or is refused with 503 [128]",
    )
    s.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="open connections in all; one more closes the oldest not being answered of the "
        "client holding the most [what the open-file limit allows]",
    )
    s.add_argument("--access-log", action="store_true", help="log every request on stderr")


def _serve_token(args: argparse.Namespace) -> str | None:
    if args.token_file is None:
        return args.token
    try:
        with open(args.token_file, encoding="utf-8") as fh:
            return fh.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise NeardupError(f"cannot read --token-file {args.token_file}: {exc}") from None


def _listen(host: str, port: int) -> Any:
    """A listening socket on (host, port), or one clear error (address in use, unknown host)."""
    import socket

    if not 0 <= port <= 65535:
        raise ParamError(f"--port must be from 0 to 65535, got {port}")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )[0]
    except socket.gaierror as exc:
        raise ParamError(f"--host {host!r} is not an address here ({exc.strerror})") from None
    # proto IPPROTO_TCP, not 0: asyncio then sets TCP_NODELAY on accepted connections (without
    # it every answer waits ~40 ms for the client's delayed ACK)
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(4096)  # bursts of connections wait in the kernel, not refused
    except OSError as exc:
        sock.close()
        raise NeardupError(
            f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port, or stop "
            "what is using it"
        ) from None
    return sock


def cmd_serve(args: argparse.Namespace) -> int:
    """Check the index, listen, serve until SIGTERM or Ctrl-C; exit 0 after a clean stop."""
    import ipaddress
    import os

    try:
        import uvicorn

        from .service import Limits, create_app
        from .service_connections import (
            ConnectionLimits,
            guarded_protocol,
            raise_open_file_limit,
            screened_socket,
            total_connections,
        )
    except ImportError as exc:
        raise NeardupError(
            f"neardup serve needs fastapi and uvicorn ({exc}); install them with: "
            "pip install 'neardup[service]'"
        ) from None
    token = _serve_token(args)
    limits = Limits(
        max_body=args.max_body, max_batch=args.max_batch, timeout=args.timeout, readers=args.readers
    )
    connection_limits = ConnectionLimits(
        header_timeout=args.header_timeout,
        per_client=args.max_client_connections,
        total=args.max_connections,
    )
    app = create_app(args.path, token, limits, open_docs=not args.docs_need_token)
    raise_open_file_limit()  # thousands of idle sockets must not exhaust file descriptors
    if not os.access(args.path, os.W_OK):
        _warn(f"{args.path} is read-only: queries work, writes will be refused")
    sock = _listen(args.host, args.port)
    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        loopback = args.host == "localhost"
    if not loopback and token is None:
        _warn(
            f"listening on {args.host} without --token: anyone who can reach this port can "
            "read and change the index"
        )
    protocol = guarded_protocol(
        connection_limits, total_connections(connection_limits, args.readers)
    )
    sock = screened_socket(sock, protocol)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(
        app,
        log_level="info" if args.access_log else "warning",
        access_log=args.access_log,
        timeout_graceful_shutdown=int(args.timeout) + 5,
        timeout_keep_alive=5,
        http=protocol,
        ws="none",
        loop="asyncio",  # the caps are kept in the socket's accept(), which uvloop does not call
    )
    server = uvicorn.Server(config)
    docs = "API docs at /docs"
    if token is not None:
        docs += ", with the token" if args.docs_need_token else "; it and /health need no token"
    sys.stderr.write(
        f"neardup: serving {args.path} at http://{shown}:{port} ({docs}); "
        "stop with Ctrl-C or SIGTERM\n"
    )
    sys.stderr.flush()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the stopping signal once it has shut down
        pass
    finally:
        sock.close()
    if not server.started:
        raise NeardupError(f"the service over {args.path} could not start; see the log above")
    sys.stderr.write("neardup: serve stopped; every answered write is committed\n")
    return 0


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; an unknown option is reported with the usage of the command it
    was given to (not the top-level one) and the closest option that command has."""
    args, extra = parser.parse_known_args(argv)
    if not extra:
        return args
    command = parser
    for dest in ("command", "index_command"):  # the innermost subcommand named
        choices = _subcommands(command)
        if choices is None or getattr(args, dest, None) not in choices:
            break
        command = choices[getattr(args, dest)]
    options = [
        o
        for action in command._actions
        if action.help != argparse.SUPPRESS
        for o in action.option_strings
        if o.startswith("--")
    ]
    import difflib

    unknown = [x for x in extra if x.startswith("-")]
    message = f"unrecognized arguments: {' '.join(extra)}"
    for word in unknown:
        close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1, cutoff=0.7)
        if close:
            message += f" (did you mean {close[0]}?)"
            break
    command.error(message)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser] | None:
    """The subcommand parsers of ``parser`` by name, None when it has none."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return None


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
    if sys.stderr is None:  # closed: errors have nowhere to go, the exit status still tells
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    parser = _build_parser()
    args = _parse(parser, argv)
    args.own_process = argv is None  # the process is this command
    if args.own_process:
        _skip_numba_blas_probe()
    if args.command in ("dedup", "report", "decontaminate"):
        # The job's modules load before SIGTERM is ours. The engine (and Numba) loads inside
        # the job once its inputs are open (help and errors stay fast), where an interrupt
        # unwinds like any other: no output exists before the job commits.
        import importlib

        importlib.import_module(".run", __package__)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        if args.command == "dedup":
            return cmd_dedup(args)
        if args.command == "compare":
            return cmd_compare(args)
        if args.command == "decontaminate":
            return cmd_decontaminate(args)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "index":
            return cmd_index(args)
        if args.command == "serve":
            return cmd_serve(args)
        return cmd_plan(args)
    except NeardupError as exc:
        return _fail(str(exc))
    except Restart:
        return _restart_compiled()
    except KeyboardInterrupt:
        sys.stderr.write("neardup: interrupted\n")
        return 130
    except SystemError as exc:  # an interrupt that arrived inside a compiled kernel
        if not _caused_by_interrupt(exc):
            raise
        sys.stderr.write("neardup: interrupted\n")
        return 130
    except OSError as exc:  # one the I/O layer did not name itself
        return _fail(_os_error_message(exc))
    except UnicodeError as exc:
        return _fail(f"text that cannot be encoded or decoded ({exc}); check the input's encoding")
    except RecursionError:
        return _fail("input nested too deeply to process; flatten the records")
    finally:
        _quiet_stdout()
        if argv is None:  # the process is this command, and it ends now
            _skip_final_collection()


#: Input size (bytes of regular, uncompressed files) and lines up to which a command's own
#: process runs its kernels interpreted: loading Numba and the compiled kernels costs about
#: 0.4 s, and interpreted kernels take about 5 ms a KB and 3-12 ms a document (more for very
#: short ones), so such a run ends sooner (benchmarks/README.md, "Start-up").
INTERPRET_BYTES = 32 * 1024
INTERPRET_LINES = 24
#: Spaces every line must have: a text of few words fills few of a sketch's bins, and each
#: empty bin then probes long for a filled one (t * t / filled probes: cheap compiled, slow
#: interpreted), so short texts go to the compiled kernels directly.
INTERPRET_MIN_SPACES = 40
#: Seconds an interpreted run may take before it starts again compiled (a small input can still
#: be costly interpreted: a text of six words, two shingles, takes 0.18 s to sketch).
INTERPRET_SECONDS = 0.5


def _interpret_small_run(args: argparse.Namespace) -> None:
    """Run the kernels interpreted (same source, same results, no Numba to load) when the
    command is a ``dedup`` with the default MinHash (OPH sketches of word shingles, mixed
    fingerprints) whose inputs are regular, uncompressed files of at most INTERPRET_BYTES and
    INTERPRET_LINES in all, every line with INTERPRET_MIN_SPACES spaces or more. Other methods
    cost 2-20 times more interpreted, so they stay compiled. ``NEARDUP_KERNELS`` in the
    environment overrides the choice."""
    if args.command != "dedup" or args.dask or args.index or args.add:
        return
    sketch = args.sketch or "oph"
    default_method = (args.method, sketch, args.tokens, args.hash) == (
        "minhash",
        "oph",
        "word",
        "mix",
    )
    if not default_method or args.format == "parquet":
        return
    size = lines = 0
    for name in args.inputs:
        if name == "-" or name.lower().endswith((".parquet", ".pq")):
            return
        try:
            if not stat.S_ISREG(os.stat(name).st_mode):
                return
            with open(name, "rb") as fh:
                data = fh.read(INTERPRET_BYTES + 1 - size)
        except OSError:
            return  # the job itself reports the input's problem
        if data.startswith(b"\x1f\x8b"):  # gzip: its size says little of its text
            return
        size += len(data)
        lines += data.count(b"\n") + (not data.endswith(b"\n"))
        if size > INTERPRET_BYTES or lines > INTERPRET_LINES:
            return
        if any(x.strip() and x.count(b" ") < INTERPRET_MIN_SPACES for x in data.split(b"\n")):
            return
    from ._kernels import _jit

    _jit.interpret(budget=INTERPRET_SECONDS)


def _deduplicator(args: argparse.Namespace) -> Callable[[DedupParams], Deduplicator]:
    """The job's deduplicator, built once its outputs are checked: first the kernels' mode is
    chosen (``_interpret_small_run``, in the command's own process), as nothing is read before
    the outputs are checked; then, unless ``--quiet``, a note when Numba must compile them."""

    def make(params: DedupParams) -> Deduplicator:
        if args.own_process:
            _interpret_small_run(args)
        if not args.quiet:
            _compile_notice(args)
        from .engine import Deduplicator

        return Deduplicator(params)

    return make


def _run_kernels(args: argparse.Namespace) -> list[str]:
    """The kernel modules (under ``neardup._kernels``) whose kernels every such dedup run
    compiles on its first call: the reader's, shingling's and the method's."""
    modules = ["shingles", "buffers"]
    modules += ["minhash", "leaders"] if args.method == "minhash" else ["simhash", "hamming"]
    from .io._jsonl_blocks import PYTHON_PARSE_BYTES

    if _jsonl_bytes(args) > PYTHON_PARSE_BYTES:  # less is parsed in Python on a first run
        modules.append("jsonl")
    return modules


def _jsonl_bytes(args: argparse.Namespace) -> float:
    """Bytes of the JSONL inputs (infinite when unknown: standard input, gzip, a folder)."""
    if args.format not in (None, "jsonl"):
        return 0
    total: float = 0
    for name in args.inputs:
        low = name.lower()
        if name == "-" or low.endswith(".gz"):
            total = math.inf
        elif args.format or low.endswith((".jsonl", ".ndjson")):
            with contextlib.suppress(OSError):  # a missing input: the job reports it
                info = os.stat(name)
                total += info.st_size if stat.S_ISREG(info.st_mode) else math.inf
    return total


def _compile_notice(args: argparse.Namespace) -> None:
    """One line on stderr when the run's kernels are not in Numba's cache yet (the first run
    after installing or upgrading): the silent seconds that follow are compiling, once."""
    from ._kernels import _jit

    if _jit.mode() != "numba":
        return
    cold = _jit.uncached(_run_kernels(args))
    if cold:
        seconds = _jit.compile_seconds(cold)
        _info(
            f"compiling kernels once (about {seconds:.0f} s; later runs load them from "
            "Numba's cache) ..."
        )


def _restart_compiled() -> int:
    """Run this command again, compiled: its interpreted kernels ran past INTERPRET_SECONDS.
    Nothing was written yet (``_jit.settle`` ends the budget before outputs are), and the
    inputs are regular files, so reading them again gives the same records. Returns only if
    the new program cannot start (exit status 1, one line)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, sys.orig_argv, {**os.environ, "NEARDUP_KERNELS": "numba"})
    except OSError as exc:
        return _fail(
            f"this small run was slow interpreted and could not start again compiled "
            f"({exc.strerror or exc}); run it with NEARDUP_KERNELS=numba"
        )


def _skip_numba_blas_probe() -> None:
    """Keep Numba from importing ``scipy.linalg`` when it starts (0.13-0.19 s of every run
    where SciPy is installed).

    Numba's first kernel call imports ``scipy.linalg.cython_blas`` only to learn whether
    ``np.cov``-style inner products may call BLAS; neardup's kernels call no BLAS, and nothing
    in a command's process uses ``scipy.linalg``, so the command's process marks it absent
    (Numba then uses its own loop). Only for a process that is the command, as
    ``_skip_final_collection``; a caller of ``main(argv)`` keeps its SciPy.
    """
    if "scipy.linalg" not in sys.modules:
        sys.modules["scipy.linalg"] = None  # type: ignore[assignment]


def _skip_final_collection() -> None:
    """Leave what the command allocated to the operating system at exit.

    Python's shutdown would walk and free some 100,000 objects, nearly all Numba's compiler
    state (0.1-0.2 s of a small run). Frozen objects are ignored by those collections. Nothing
    depends on their finalisers: outputs are closed and committed explicitly, and temporary
    files and folders are removed by ``weakref.finalize``, which runs at exit regardless.
    Only for a process that is the command (``main()`` without arguments): a caller of
    ``main(argv)`` keeps its garbage collected.
    """
    import gc

    gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
