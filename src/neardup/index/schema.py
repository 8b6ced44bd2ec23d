"""Index metadata: the schema version and the parameters an index was built with, as JSON.

An index stores its ``DedupParams`` (as JSON) and their fingerprint (format and Unicode versions
included). Opening rebuilds the parameters from the JSON and compares fingerprints: a different
neardup format, Unicode table or schema gives ``IndexMismatchError`` naming both sides, never
silently different answers. An index of schema 3 (before record checksums) is upgraded in
place by ``neardup index upgrade``; one of another schema is rebuilt.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..errors import IndexMismatchError, ParamError
from ..params import (
    DedupParams,
    FeatureParams,
    MinhashParams,
    SampledParams,
    ShingleParams,
    SimhashMethodParams,
)

#: Version of the index layout (tables, blobs). Bump when either changes.
#: 4: a CRC-32 per document row and per postings run.
SCHEMA_VERSION = 4
#: The version ``upgrade`` turns into this one (the same tables without checksums).
UPGRADABLE = 3
#: The tables of an index besides its postings segments (``segments.schema``), and its counters.
TABLES = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs(
    doc INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    hash INTEGER NOT NULL,
    nkeys INTEGER NOT NULL,
    sig BLOB NOT NULL,
    ev BLOB NOT NULL,
    text TEXT,
    meta TEXT,
    first_seen TEXT,
    last_seen TEXT,
    gone TEXT,
    crc INTEGER NOT NULL
);
CREATE TABLE removed(doc INTEGER PRIMARY KEY);
INSERT INTO meta VALUES ('next_doc', '0'), ('documents', '0');
"""

_METHODS: dict[str, type] = {
    "minhash": MinhashParams,
    "simhash": SimhashMethodParams,
    "sampled": SampledParams,
}


def params_to_json(params: DedupParams) -> str:
    """The parameters as JSON (the method tagged by name), readable by ``params_from_json``."""
    fields = dataclasses.asdict(params)
    name = next(k for k, v in _METHODS.items() if isinstance(params.method, v))
    fields["method"] = {"name": name, **fields["method"]}
    return json.dumps(fields, sort_keys=True)


def params_from_json(text: str) -> DedupParams:
    """Parameters from ``params_to_json`` output (IndexMismatchError when unreadable)."""
    try:
        fields: dict[str, Any] = json.loads(text)
        method = dict(fields.pop("method"))
        cls = _METHODS[method.pop("name")]
        if cls is MinhashParams and method.get("features") is not None:
            method["features"] = FeatureParams(**method["features"])
        fields["shingle"] = ShingleParams(**fields["shingle"])
        if cls is SimhashMethodParams and fields.get("verify") == "none":
            fields["threshold"] = None  # resolved to the default; refused when given
        return DedupParams(method=cls(**method), **fields)
    except (KeyError, TypeError, ValueError, ParamError) as exc:
        raise IndexMismatchError(
            f"the index's stored parameters cannot be read by this neardup ({exc}); rebuild "
            "the index with this version"
        ) from None


def check_meta(where: str, meta: dict[str, str], expected: DedupParams | None) -> DedupParams:
    """The index's parameters, after checking schema version and fingerprint."""
    version = meta.get("schema_version")
    if version is None or "params" not in meta or "fingerprint" not in meta:
        raise IndexMismatchError(f"{where} is not a neardup index (its metadata is missing)")
    if version == str(UPGRADABLE):
        raise IndexMismatchError(
            f"{where} has index schema version {version} (no record checksums); this neardup "
            f"reads version {SCHEMA_VERSION}; upgrade it in place with: neardup index upgrade "
            f"{where}"
        )
    if version != str(SCHEMA_VERSION):
        raise IndexMismatchError(
            f"{where} has index schema version {version}; this neardup reads version "
            f"{SCHEMA_VERSION}; rebuild it (neardup index create, then add the documents again)"
        )
    params = params_from_json(meta["params"])
    stored = meta["fingerprint"]
    if params.fingerprint() != stored:
        raise IndexMismatchError(
            f"{where} was built with parameters {stored}, but this neardup computes "
            f"{params.fingerprint()} for them (another format or Unicode version); rebuild it"
        )
    if expected is not None and expected.fingerprint() != stored:
        raise IndexMismatchError(
            f"{where} was built with parameters {stored}, not the requested "
            f"{expected.fingerprint()}; open it without parameters or build another index"
        )
    return params
