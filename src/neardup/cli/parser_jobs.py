"""The options of the batch jobs: ``dedup``, ``plan`` (dedup's features, ahead) and
``decontaminate`` (argparse only: nothing is run)."""

from __future__ import annotations

import argparse
from typing import Any

from .options import (
    AGAINST_FORMAT_HELP,
    DECONTAMINATE_FORMATS,
    DEDUP_FORMATS,
    add_dask_options,
    add_input_options,
    add_jobs,
    add_minhash_options,
    add_read_fields,
    add_renamed,
    add_reporting,
    add_shingle_options,
    add_simhash_options,
    features,
)


def add_dedup_parser(sub: Any) -> None:
    """``neardup dedup``: inputs, outputs, how they are read, the method, shingling."""
    d = sub.add_parser(
        "dedup",
        help="cluster near-duplicates and write the deduplicated collection",
        description="Read documents, find near-duplicate clusters, write the kept documents.",
    )
    d.add_argument(
        "inputs",
        nargs="+",
        help="JSONL (.jsonl/.jsonl.gz), Parquet, CSV/TSV, WARC (.warc/.warc.gz, WET .wet.gz), HTML or text (.txt/.md) files or folders, or - for stdin",
    )
    _add_dedup_outputs(d)
    io = add_input_options(d, DEDUP_FORMATS)
    add_jobs(
        io,
        "threads signing batches in parallel; the output is the same for any number [all cores]",
    )
    io.add_argument(
        "--memory-limit",
        metavar="SIZE",
        help="per-document data kept in memory before it goes to disk, memory-mapped (e.g. 4G); with --dask local:N, each worker's memory limit (Dask spills past it); the output is the same [an eighth of the available memory]",
    )
    m = d.add_argument_group("method")
    _add_dedup_method(m)
    add_simhash_options(m, ["binary", "count", "idf"])
    add_shingle_options(d)
    m.add_argument(
        "--super-features",
        action="store_true",
        help="find candidates by megashingles (one key per r-subset of features) instead of counting; planned within 256 megashingles",
    )
    add_reporting(d)
    add_dask_options(
        d,
        "the workers read the inputs (paths, globs, folders or URLs such as s3://...) and "
        "write part files into the -o, --clusters and --pairs folders (see docs/DASK.md)",
    )


def _add_dedup_outputs(d: argparse.ArgumentParser) -> None:
    """What a dedup writes, against which index, and which unit it removes."""
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


def _add_dedup_method(m: Any) -> None:
    """The method group of dedup: threshold, MinHash's options, verification and removal."""
    m.add_argument("--method", choices=["minhash", "simhash"], default="minhash", help="[minhash]")
    m.add_argument(
        "--threshold",
        type=float,
        help="resemblance (Jaccard) threshold; with simhash only together with --verify [0.8]",
    )
    add_minhash_options(m)
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
        help="keep the cluster member with the largest value of this field (any input with fields: JSONL, Parquet, CSV/TSV, WARC)",
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


def add_plan_parser(sub: Any) -> None:
    """``neardup plan``: the features dedup would use, their curve, or a sample's forecast."""
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
    _add_plan_method(pl)
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
    # None when not given, so that plan can refuse them without --sample (plan_checks.py)
    pl.set_defaults(text_field=None, id_field=None, on_error=None, max_record_size=None)


def _add_plan_method(pl: argparse.ArgumentParser) -> None:
    """The dedup options plan takes: they decide the features it plans."""
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
    add_renamed(pl, "--num-perm", "--max-perm", "max_perm")
    pl.add_argument(
        "--features",
        type=features,
        metavar="K,S,R",
        help="describe these parameters instead of planning (as dedup --features): K features "
        "of S sketch values each (S = rows per band), a candidate when R features are shared",
    )
    pl.add_argument("--sketch", choices=["oph", "classic"], help="MinHash sketch kind [oph]")
    pl.add_argument(
        "--super-features",
        action="store_true",
        help="as dedup's: features planned within 256 megashingles",
    )
    pl.add_argument(
        "--max-distance",
        type=int,
        help="SimHash instead: plan permuted tables for pairs within this many bits, 0 to 19 [3]",
    )
    pl.add_argument("--docs", type=int, help="SimHash: collection size [1000000]")


def _add_plan_sample_options(pl: argparse.ArgumentParser) -> None:
    """plan --sample: measure the corpus's resemblance and forecast what dedup will find."""
    g = pl.add_argument_group("learning from the corpus (--sample)")
    g.add_argument(
        "--sample",
        nargs="+",
        metavar="INPUT",
        help="measure resemblance among pairs of this corpus and forecast false candidates and misses",
    )
    g.add_argument("--sample-size", type=int, help="random query documents [1000]")
    g.add_argument("--seed", type=int, help="random seed of the sample [1]")
    g.add_argument(
        "--floor",
        type=float,
        help="measure pairs down to this resemblance, 0.1 to the threshold [max(0.3, T/2), at most T]",
    )
    add_read_fields(g)
    g.add_argument("--shingle-size", "-w", type=int, default=5, help="tokens per shingle [5]")
    g.add_argument("--tokens", choices=["word", "char"], default="word", help="[word]")


def add_decontaminate_parser(sub: Any) -> None:
    """``neardup decontaminate``: training data against benchmark items."""
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
        help="benchmark items: JSONL, Parquet, CSV/TSV or text files or folders (format from the names)",
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
    _add_decontaminate_rest(x)


def _add_decontaminate_rest(x: argparse.ArgumentParser) -> None:
    """decontaminate's reading, shingling, reporting and cluster options."""
    io = add_input_options(x, DECONTAMINATE_FORMATS)
    io.add_argument(
        "--against-text-field", help="field holding a benchmark item's text [--text-field]"
    )
    io.add_argument("--against-id-field", help="field holding a benchmark item's id [--id-field]")
    io.add_argument("--against-format", choices=DECONTAMINATE_FORMATS, help=AGAINST_FORMAT_HELP)
    add_jobs(
        io,
        "threads shingling batches in parallel; the output is the same for any number [all cores]",
    )
    add_shingle_options(x, argparse.SUPPRESS)  # refused: NFKC would shift the spans reported
    add_reporting(x)
    add_dask_options(
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
