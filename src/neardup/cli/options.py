"""Option groups that several commands share, declared once (argparse only: nothing is run)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import ParamError

#: --features K,S,R explained where it is offered (R is not rows per band, as in text-dedup).
FEATURES_HELP = (
    "explicit Broder features (LSH bands): K features (bands) per document, each of S sketch "
    "values (S is the rows per band, text-dedup's r); two documents are a candidate pair when "
    "they share at least R of the K features (R is a count of shared bands, 1 = classic LSH)"
)

#: The input formats each command reads.
DEDUP_FORMATS = ["jsonl", "parquet", "csv", "tsv", "text", "warc", "html"]
INDEX_FORMATS = ["jsonl", "parquet", "csv", "tsv", "text"]
DECONTAMINATE_FORMATS = ["jsonl", "parquet", "csv", "tsv", "text", "warc", "html"]
#: ``--against-format``'s help.
AGAINST_FORMAT_HELP = (
    "the benchmark's format, when its names do not say it (--format is the training data's)"
)


class RenamedOption(argparse.Action):
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


def add_renamed(group: Any, old: str, new: str, dest: str, kind: Any = int) -> None:
    """``old`` as a hidden alias of ``new`` (same destination) that says it was renamed."""
    group.add_argument(old, dest=dest, action=RenamedOption, new=new, type=kind, default=None)


def features(value: str) -> tuple[int, int, int]:
    """--features K,S,R: three integers, or a usage error that shows the form."""
    try:
        k, s, r = (int(x) for x in value.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--features takes k,s,r as three integers, e.g. 38,6,3; got {value!r}"
        ) from None
    return k, s, r


def add_shingle_options(p: argparse.ArgumentParser, nfkc_help: str | None = None) -> None:
    """How texts become shingles: the same four options wherever shingles are made;
    ``nfkc_help``: --nfkc's help where it differs (``argparse.SUPPRESS``: left out of it)."""
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
    g.add_argument(
        "--nfkc", action="store_true", help=nfkc_help or "apply Unicode NFKC normalisation first"
    )
    g.add_argument(
        "--hash", choices=["mix", "rabin"], default="mix", help="shingle fingerprint [mix]"
    )


def add_input_options(p: argparse.ArgumentParser, formats: list[str]) -> Any:
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
    add_max_record_size(io)
    io.add_argument(
        "--batch-size",
        metavar="SIZE",
        default="4M",
        help="input per batch: bytes (4M, 16M; a JSONL file's parser reads this much at a time; a batch is signed in slices of at most 16 MB of working arrays, so a batch of one-line texts holds no more at once than one of long documents) or a number of documents (5000); the output is the same for any size [4M]",
    )
    return io


def add_max_record_size(group: Any) -> None:
    """--max-record-size: the largest record any reader holds."""
    group.add_argument(
        "--max-record-size",
        metavar="SIZE",
        default="64M",
        help="largest record read (a JSONL line, a Parquet text, a file, a WARC record), e.g. 256M; a larger one is a bad record, found before it is held [64M]",
    )


def add_minhash_options(m: Any) -> None:
    """MinHash's own options, as dedup and index create take them."""
    m.add_argument(
        "--max-perm",
        type=int,
        metavar="T",
        help="the longest sketch (hash permutations) the planner may choose; a ceiling, not the length used (0.8 uses 228) [256]",
    )
    add_renamed(m, "--num-perm", "--max-perm", "max_perm")
    m.add_argument("--features", type=features, metavar="K,S,R", help=FEATURES_HELP)
    m.add_argument("--sketch", choices=["oph", "classic"], help="MinHash sketch kind [oph]")


def add_simhash_options(m: Any, weightings: list[str]) -> None:
    """SimHash's own options, as dedup and index create take them (``weightings`` offered)."""
    m.add_argument(
        "--max-distance", type=int, help="simhash: largest Hamming distance, 0 to 19 [3]"
    )
    m.add_argument(
        "--simhash-features", choices=["char", "word", "shingle"], help="simhash features [char]"
    )
    m.add_argument(
        "--qgram", type=int, metavar="Q", help="simhash: characters per q-gram feature [4]"
    )
    add_renamed(m, "--q", "--qgram", "qgram")
    idf = ", or counts times IDF fitted on the input (one more read)" if "idf" in weightings else ""
    m.add_argument(
        "--simhash-weighting",
        choices=weightings,
        help=f"simhash feature weights: each distinct feature once, occurrence counts{idf} [binary]",
    )


def add_reporting(p: argparse.ArgumentParser) -> Any:
    """The reporting options of the long-running commands: a progress bar, no summary."""
    out = p.add_argument_group("reporting")
    add_progress(out, "progress bar")
    out.add_argument("--quiet", "-q", action="store_true", help="no summary")
    return out


def add_progress(group: Any, what: str) -> None:
    """--progress / --no-progress: ``what`` shows on stderr, by default when it is a terminal."""
    group.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"{what} on stderr [on when stderr is a terminal]",
    )


def add_jobs(group: Any, what: str) -> None:
    """--jobs, -j: threads for the kernels; ``what`` says what they do in parallel."""
    group.add_argument("--jobs", "-j", type=int, help=what)


#: The options of ``add_dask_options`` that only a cluster run reads, and their attributes.
CLUSTER_ONLY = {
    "--work-dir": "work_dir",
    "--restart": "restart",
    "--storage-options": "storage_options",
    "--performance-report": "performance_report",
    "--dashboard": "dashboard",
}


def cluster_only_given(args: argparse.Namespace) -> list[str]:
    """The cluster-only options given on the command line, in ``CLUSTER_ONLY`` order."""
    return [flag for flag, name in CLUSTER_ONLY.items() if getattr(args, name)]


def refuse_cluster_only(args: argparse.Namespace, more: Sequence[str] = ()) -> None:
    """A run on this machine: the cluster-only options given (and ``more``) refused, named."""
    given = [*cluster_only_given(args), *more]
    if given:
        verb = "goes" if len(given) == 1 else "go"
        raise ParamError(f"{', '.join(given)} {verb} with --dask; add --dask or drop it")


def add_dask_options(parser: argparse.ArgumentParser, what: str) -> None:
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
    parser.add_argument(
        "--performance-report",
        metavar="FILE",
        help="with --dask: write Dask's performance report of the run (HTML: task stream, worker profiles, bandwidth) to FILE",
    )
    parser.add_argument(
        "--dashboard",
        action="store_true",
        help="with --dask local:N: start Dask's dashboard and print its link (about a second more to start)",
    )


def add_read_fields(g: Any) -> None:
    """The reading options of commands that read a run's input again (report, plan --sample)."""
    g.add_argument("--format", choices=DEDUP_FORMATS)
    g.add_argument("--text-field", default="text", help="field holding the text [text]")
    g.add_argument("--id-field", default="id", help="field holding the id [id]")
    g.add_argument("--on-error", choices=["stop", "skip"], default="stop")
    add_max_record_size(g)
