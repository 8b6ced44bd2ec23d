"""Edge I/O: JSONL / gzip JSONL / Parquet / CSV / TSV / text files / WARC / HTML / stdin ->
document batches (pass 1); kept mask -> the kept records in the input's own format (pass 2);
result writers; atomic output. Each input format is one module of ``formats/`` behind one
``Format`` protocol, which ``Source`` and the cluster backend call.
``plan_outputs`` checks every output against the inputs and each other before anything is read;
``OutputPlan.commit()`` (``output_group()``) renames all outputs into place together, or none.

Nothing here knows the algorithm: the dedup command streams ``Source.batches()`` into the engine,
then calls ``Source.write_kept(kept, out)``. With ``open_source(..., key_field=NAME)`` each
batch also carries that field's values (``DocBatch.keys``), which ``key_ranks`` turns into ranks
for "keep the member with the largest/smallest NAME". Bad input raises ``InputError`` naming
file, line and fix, or with ``on_error="skip"`` is skipped and counted in ``Source.errors``.
"""

from __future__ import annotations

from ._atomic import atomic_dir, atomic_write, output_group
from ._batches import DocBatch
from ._keys import key_ranks
from ._open import open_source
from ._outputs import OutputPlan, check_json_name, plan_outputs
from ._report import ErrorReport, skipped_line
from ._source import Source
from ._writers import write_clusters, write_pairs
from .formats import FORMATS, Fmt, detect_format

__all__ = [
    "FORMATS",
    "DocBatch",
    "ErrorReport",
    "Fmt",
    "OutputPlan",
    "Source",
    "atomic_dir",
    "atomic_write",
    "check_json_name",
    "detect_format",
    "key_ranks",
    "open_source",
    "output_group",
    "plan_outputs",
    "skipped_line",
    "write_clusters",
    "write_pairs",
]
