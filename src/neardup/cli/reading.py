"""How a command reads: its inputs (``-`` for standard input), --batch-size and the other
sizes, --storage-options, as the job functions of ``neardup.run`` take them."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import ParamError
from ..run import BATCH_BYTES, ReadOptions, parse_size


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
    """--batch-size: a plain number counts documents; with a unit (4M, 512K) it is bytes."""
    value = str(text).strip()
    if value.isdigit():
        return int(value), BATCH_BYTES
    return None, parse_size(value)


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
