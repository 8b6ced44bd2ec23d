"""The summaries a run prints on stderr: its counts as aligned lines, with hints where the
counts suggest another option."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..io import skipped_line


def dedup_summary(s: Mapping[str, Any], problems: str) -> str:
    """The summary of ``neardup dedup`` (``problems``: the skipped records' report, if any)."""
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
    lines += _hints(s)
    text = "\n".join(lines) + "\n"
    if problems:
        text += problems.rstrip("\n") + "\n"
    return text


def _hints(s: Mapping[str, Any]) -> list[str]:
    """Big buckets, and the hints the counts call for: another --max-bucket, char tokens."""
    lines = []
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
    return lines


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


def decontaminate_summary(s: Mapping[str, Any]) -> str:
    """The summary of ``neardup decontaminate``."""
    return (
        "neardup decontaminate summary\n"
        f"  documents            {s['documents']:>12,}\n"
        f"  contaminated         {s['contaminated']:>12,}\n"
        f"  documents kept       {s['kept']:>12,}\n"
        f"  matches              {s['matches']:>12,}\n"
        f"  benchmark items      {s['benchmark_items']:>12,} ({s['benchmark_items_matched']:,} "
        f"found; {s['benchmark_items_without_shingles']:,} without tokens)\n"
        f"  skipped records      {s['skipped_records']:>12,}\n"
        f"  skipped in benchmark {s['skipped_benchmark_records']:>12,}\n"
        f"  time                 {s['seconds']:>11.2f}s\n"
        f"  throughput           {s['mb_per_s']:>8.1f} MB/s\n"
        f"  peak memory          {s['peak_memory_mb']:>9.0f} MB\n"
        + _problems(s.get("problems"), "")
        + _problems(s.get("benchmark_problems"), "benchmark: ")
    )


def _problems(report: Mapping[str, Any] | None, prefix: str) -> str:
    """What was skipped, by kind, and the first (as ``ErrorReport.summary`` words it), if any."""
    if not report or not report.get("total"):
        return ""
    return f"{prefix}{skipped_line(report)}\n"


def dedup_index_summary(s: Mapping[str, Any], added: bool) -> str:
    """The summary line of ``neardup dedup --index`` (``added``: with --add)."""
    return (
        f"neardup dedup --index: {s['documents']:,} documents, "
        f"{s['duplicates_of_index']:,} duplicate the index, "
        f"{s['duplicates_in_input']:,} duplicate earlier input, {s['kept']:,} kept"
        f"{', added to the index' if added else ''}\n" + _problems(s.get("problems"), "")
    )
