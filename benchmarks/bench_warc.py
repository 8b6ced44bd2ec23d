"""WARC throughput (records/s, MB/s of WARC) and HTML text extraction (speed and quality).

    python benchmarks/bench_warc.py                       # 2,000 generated pages, ~1 minute
    python benchmarks/bench_warc.py --pages 5000 --json benchmarks/results/warc.json

Pages are generated (``neardup.testing.web``): an article of 150-600 Zipf pseudo-words inside a
news site's boilerplate (menu, related-stories sidebar, cookie banner, footer, scripts), written
as a gzipped WARC with a request record before every response (as crawlers write them). Measured,
single thread, best of ``--repeat``:

- reading: fastwarc and warcio iterating every record and reading its body (no extraction);
- extraction: resiliparse ``extract_plain_text(main_content=True)`` (and without main-content
  detection, for contrast) and trafilatura
  ``extract(fast=True)`` on the decoded HTML; quality = word 3-shingle containment of the article
  in the extracted text (recall) and of the extracted text in the article (precision: 1.0 means no
  boilerplate was kept);
- neardup's WARC source end to end (pass 1: parse, decode, extract, ids, URLs, dates).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import common

common.limit_threads(common.threads_from_argv(sys.argv))
common.ensure_neardup()

import numpy as np  # noqa: E402

from neardup.io import open_source  # noqa: E402
from neardup.io._html import decode_html, extract_text  # noqa: E402
from neardup.params import ShingleParams  # noqa: E402
from neardup.resemblance import containment  # noqa: E402
from neardup.shingles import shingle_batch  # noqa: E402
from neardup.testing.web import random_pages, write_warc  # noqa: E402


def best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def read_fastwarc(path: Path) -> int:
    from fastwarc.warc import ArchiveIterator

    n = 0
    with open(path, "rb") as fh:
        for rec in ArchiveIterator(fh, parse_http=True):
            rec.reader.read()
            n += 1
    return n


def read_warcio(path: Path) -> int:
    from warcio.archiveiterator import ArchiveIterator

    n = 0
    with open(path, "rb") as fh:
        for rec in ArchiveIterator(fh):
            rec.content_stream().read()
            n += 1
    return n


def quality(pages: list, texts: list[str]) -> tuple[float, float]:  # type: ignore[type-arg]
    """Mean word 3-shingle containment: article in extract (recall), extract in article."""
    p = ShingleParams(w=3)
    truth = shingle_batch([pg.title + "\n\n" + pg.text for pg in pages], p)
    got = shingle_batch(texts, p)
    rec = [containment(truth.doc(i), got.doc(i)) for i in range(len(pages))]
    prec = [containment(got.doc(i), truth.doc(i)) for i in range(len(pages))]
    return float(np.mean(rec)), float(np.mean(prec))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pages", type=int, default=2000, help="pages in the WARC [2000]")
    ap.add_argument(
        "--trafilatura-pages", type=int, default=300, help="pages for trafilatura [300]"
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write the numbers here")
    args = ap.parse_args()

    pages = random_pages(args.pages, seed=3)
    rows: list[list[object]] = []
    results: dict[str, object] = {"pages": args.pages}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "crawl.warc.gz"
        write_warc(path, pages, gzip=True, extras=True)
        mb = path.stat().st_size / 1e6
        html_mb = sum(len(p.html.encode()) for p in pages) / 1e6
        records = read_fastwarc(path)
        print(
            f"{args.pages} pages, {records} records, {mb:.1f} MB gzipped WARC "
            f"({html_mb:.1f} MB of HTML)"
        )
        for name, fn in (("fastwarc", read_fastwarc), ("warcio", read_warcio)):
            secs = best(lambda fn=fn: fn(path), args.repeat)
            rows.append([f"read: {name}", f"{records / secs:,.0f}", f"{mb / secs:,.1f}", ""])
            results[f"read_{name}"] = {"records_per_s": records / secs, "mb_per_s": mb / secs}

        htmls = [decode_html(p.html.encode()) for p in pages]
        extract_text(htmls[0])  # warm-up
        secs = best(lambda: [extract_text(h).text for h in htmls], args.repeat)
        rec, prec = quality(pages, [extract_text(h).text for h in htmls])
        rows.append(
            [
                "extract: resiliparse",
                f"{len(htmls) / secs:,.0f}",
                f"{html_mb / secs:,.1f}",
                f"{rec:.3f} / {prec:.3f}",
            ]
        )
        results["extract_resiliparse"] = {
            "pages_per_s": len(htmls) / secs,
            "recall": rec,
            "precision": prec,
        }
        from resiliparse.extract.html2text import extract_plain_text

        secs = best(lambda: [extract_plain_text(h) for h in htmls], args.repeat)
        rec, prec = quality(pages, [extract_plain_text(h) for h in htmls])
        rows.append(
            [
                "extract: resiliparse, all visible text",
                f"{len(htmls) / secs:,.0f}",
                f"{html_mb / secs:,.1f}",
                f"{rec:.3f} / {prec:.3f}",
            ]
        )
        results["extract_resiliparse_all_text"] = {
            "pages_per_s": len(htmls) / secs,
            "recall": rec,
            "precision": prec,
        }
        try:
            import trafilatura  # noqa: F401

            few = htmls[: args.trafilatura_pages]
            few_mb = sum(len(h.encode()) for h in few) / 1e6
            extract_text(few[0], "trafilatura")
            secs = best(lambda: [extract_text(h, "trafilatura") for h in few], 1)
            texts = [extract_text(h, "trafilatura").text for h in few]
            rec, prec = quality(pages[: len(few)], texts)
            rows.append(
                [
                    "extract: trafilatura",
                    f"{len(few) / secs:,.0f}",
                    f"{few_mb / secs:,.1f}",
                    f"{rec:.3f} / {prec:.3f}",
                ]
            )
            results["extract_trafilatura"] = {
                "pages_per_s": len(few) / secs,
                "recall": rec,
                "precision": prec,
            }
        except ImportError:
            print("trafilatura not installed: skipped")

        def source_pass() -> None:
            with open_source(path, on_error="skip") as src:
                for _ in src.batches(1000):
                    pass

        source_pass()
        secs = best(source_pass, args.repeat)
        rows.append(
            ["neardup WARC source (pass 1)", f"{records / secs:,.0f}", f"{mb / secs:,.1f}", ""]
        )
        results["neardup_source"] = {
            "records_per_s": records / secs,
            "pages_per_s": args.pages / secs,
            "mb_per_s": mb / secs,
        }
    names = ("step", "records (pages)/s", "MB/s", "recall / precision")
    common.print_table(
        [dict(zip(names, row, strict=True)) for row in rows], [(n, n, "") for n in names]
    )
    if args.json:
        common.write_json(args.json, {"machine": common.machine(), **results})


if __name__ == "__main__":
    main()
