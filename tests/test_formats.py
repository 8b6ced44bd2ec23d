"""The input formats behind ``io.formats``: each is found by its names and by ``--format``, and
``Source`` reads and writes any of them through the same methods."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from neardup.errors import ParamError
from neardup.io import FORMATS, detect_format, open_source
from neardup.io._convert import output_format
from neardup.io.formats import ALL, JSONL, PARQUET, TEXT, format_named, format_of


@pytest.mark.parametrize("fmt", ALL, ids=lambda f: f.name)
def test_every_format_is_found_by_its_name_and_its_suffixes(fmt) -> None:  # type: ignore[no-untyped-def]
    assert format_named(fmt.name) is fmt
    for suffix in getattr(fmt, "suffixes", ()):
        assert format_of(f"dir/Some.Name{suffix.upper()}") is fmt
        assert detect_format(f"x{suffix}") == fmt.name
    assert output_format("-", fmt) == fmt.default_out == output_format("-", fmt.name)


def test_the_format_names_are_those_of_the_formats_in_order() -> None:
    assert tuple(f.name for f in ALL) == FORMATS


def test_an_unknown_name_is_refused_in_one_line() -> None:
    with pytest.raises(ParamError, match="format must be one of jsonl, parquet"):
        format_named("xml")
    with pytest.raises(ParamError, match="cannot tell the format from the name"):
        format_of("notes.docx")
    assert format_of("README") is TEXT  # no suffix: a text file


def test_what_each_format_can_do_is_said_by_its_attributes() -> None:
    assert JSONL.cluster_blocks == "lines" and PARQUET.cluster_blocks == "row groups"
    assert TEXT.cluster_blocks is None
    assert not TEXT.has_fields and TEXT.unit is None and TEXT.copies_as == "folder"
    assert PARQUET.unit == "row" and JSONL.unit == "line"


def test_a_source_reads_and_writes_through_its_format(tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text('id,text\na,"one, two"\nb,three\n')
    with open_source(src) as source:
        assert source.format is format_named("csv") and source.fmt == "csv"
        texts = [t for batch in source.batches(10) for t in batch.texts]
        assert texts == ["one, two", "three"]
        out = tmp_path / "kept.csv"
        assert source.write_kept(np.array([False, True]), out) == 1
    assert out.read_text().splitlines() == ['"id","text"', '"b","three"']
