"""How a command reads: its inputs (``-`` for standard input), --batch-size and the other
sizes, --storage-options, as the job functions of ``neardup.run`` take them."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import ParamError
from ..run import BATCH_BYTES, BATCH_BYTES_RANGE, BATCH_DOCS_MAX, ReadOptions, parse_size


def inputs(names: list[str]) -> str | list[str]:
    """The inputs as the library takes them: ``-`` alone is standard input."""
    return names[0] if names == ["-"] else names


def size(text: str | None) -> int | None:
    """A size option (4G, 512M) in bytes, None when not given."""
    return None if text is None else parse_size(text)


def read_options(args: argparse.Namespace, key_field: str | None = None) -> ReadOptions:
    """How the command's inputs are read (the options of ``options.add_input_options``)."""
    docs, nbytes = batch_size(args.batch_size)
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


def against_field(value: str | None, option: str, default: str) -> str:
    """A benchmark field option: the data's own field when not given; an empty name is
    refused, as --text-field '' is, rather than silently taken for the data's."""
    if value is None:
        return default
    if not value:
        raise ParamError(
            f"{option} must be a non-empty string, got {value!r}; name the benchmark's field, "
            "or leave the option out to use the data's"
        )
    return value


def batch_size(text: str) -> tuple[int | None, int]:
    """--batch-size: a plain number counts documents; with a unit (4M, 512K) it is bytes.
    One that is neither, or out of range, is quoted as typed (never as the number it became)."""
    value = str(text).strip()
    if value.isdigit():
        if 1 <= int(value) <= BATCH_DOCS_MAX:
            return int(value), BATCH_BYTES
        raise _bad_batch_size(text)
    try:
        nbytes = parse_size(value)
    except ParamError:
        raise _bad_batch_size(text) from None
    lo, hi = BATCH_BYTES_RANGE
    if not lo <= nbytes <= hi:
        raise _bad_batch_size(text)
    return None, nbytes


def _bad_batch_size(text: str) -> ParamError:
    """The one-line error of a --batch-size it cannot take, with the forms it takes."""
    return ParamError(
        "--batch-size must be a byte size with a unit from 1K to 1T (such as 4M or 512K) or a "
        f"whole number of documents from 1 to {BATCH_DOCS_MAX:,} (such as 5000), got {text!r}"
    )


def storage_options(text: str | None) -> dict[str, Any]:
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
