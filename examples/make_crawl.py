"""Write examples/crawl.warc.gz: a small synthetic news crawl with exact and near-duplicate pages.

    python examples/make_crawl.py

40 unrelated stories from one site (shared menu, sidebar and footer), then re-crawls: an exact
copy of story 0 and three lightly edited ones, an edited story 1, an exact story 2 and an edited
story 3; plus a warcinfo record, a request record before each response, an image and a JSON
response (not pages) and one broken record. Record ids are random UUIDs, so a new file differs
in its ids, not in its pages.
"""

from __future__ import annotations

from pathlib import Path

from neardup.testing.synth import edit, random_documents
from neardup.testing.web import site_pages, write_warc

base = random_documents(40, seed=7, words=(200, 300))
copies = [
    base[0],
    edit(base[0], 0.01, 1, 0.0),
    edit(base[0], 0.02, 2, 0.0),
    edit(base[0], 0.03, 6, 0.0),
    edit(base[1], 0.02, 3, 0.0),
    base[2],
    edit(base[3], 0.03, 4, 0.0),
]
out = Path(__file__).resolve().parent / "crawl.warc.gz"
write_warc(out, site_pages([*base, *copies], seed=2), extras=True, broken=1)
print(f"wrote {out}")
