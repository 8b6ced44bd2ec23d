"""Parquet's pass 1 in blocks over Arrow's buffers gives the rows, ids, problems and skipped
rows of the row-by-row reader, whatever the batch boundaries; and the same outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neardup.cli import main
from neardup.io import open_source
from neardup.io.formats.parquet import Parquet
from neardup.testing.synth import random_documents

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _rows_of(path: Path, blocks: bool, monkeypatch: pytest.MonkeyPatch, **options: object):  # type: ignore[no-untyped-def]
    """Everything pass 1 tells of ``path``: ids, texts, positions, sizes, problems, skipped."""
    with monkeypatch.context() as m:
        if not blocks:
            m.setattr(Parquet, "reads_blocks", lambda self, entry, fields: False)
        source = open_source(str(path), **options)  # type: ignore[arg-type]
        ids, texts, positions, nbytes = [], [], [], 0
        for batch in source.batches(7):
            ids += list(batch.ids)
            texts += list(batch.texts)
            positions += batch.positions.tolist()
            nbytes += batch.nbytes
        skipped = [sorted(e.skipped) for e in source._entries]
        return (ids, texts, positions, nbytes, dict(source.errors.counts),
                list(source.errors.examples), skipped)  # fmt: skip


@pytest.mark.parametrize("batch_rows", [3, 64, 65_536])
def test_blocks_and_rows_read_a_parquet_file_alike(
    batch_rows: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neardup.io import _parquet

    monkeypatch.setattr(_parquet, "BATCH_ROWS", batch_rows)
    texts: list[str | None] = list(random_documents(40, seed=3, words=(1, 12)))
    texts[5] = None  # a null text
    texts[9] = "é" * 3000  # over the record limit below
    texts[12] = ""
    texts[20] = "日本語 😀 naïve"
    ids: list[str | None] = [f"r{i}" for i in range(40)]
    ids[7] = None  # a null id
    ids[5] = None  # null text and id: the text is named
    ids[30] = "r3"  # a repeated id
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": texts, "id": ids, "extra": list(range(40))}), path)
    options = {"on_error": "skip", "max_record_size": 5000}
    assert _rows_of(path, True, monkeypatch, **options) == _rows_of(
        path, False, monkeypatch, **options
    )
    by_int = tmp_path / "ints.parquet"  # integer ids, a dictionary-encoded text column
    text_dict = pa.array([t or "" for t in texts]).dictionary_encode()
    pq.write_table(pa.table({"text": text_dict, "id": pa.array(range(40), pa.int64())}), by_int)
    assert _rows_of(by_int, True, monkeypatch) == _rows_of(by_int, False, monkeypatch)
    no_ids = tmp_path / "no_ids.parquet"
    pq.write_table(pa.table({"text": [t or "" for t in texts]}), no_ids)
    assert _rows_of(no_ids, True, monkeypatch) == _rows_of(no_ids, False, monkeypatch)


def test_the_first_bad_row_stops_a_run_in_the_same_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": ["a", "b", None, "d"], "id": ["1", "2", "3", "4"]}), path)
    messages = []
    for blocks in (True, False):
        with pytest.raises(Exception) as raised:
            _rows_of(path, blocks, monkeypatch)
        messages.append(str(raised.value))
    assert messages[0] == messages[1] and "c.parquet row 3: field 'text' is null" in messages[0]


def test_parquet_read_in_blocks_keeps_what_jsonl_keeps(tmp_path: Path) -> None:
    texts = random_documents(300, seed=8, words=(4, 40))
    texts += [t + " extra" for t in texts[:100]]
    rows = [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet", row_group_size=50)
    for name in ("in.jsonl", "in.parquet"):
        assert main(["dedup", str(tmp_path / name), "-o", str(tmp_path / f"{name}.kept.jsonl"),
                     "-q"]) == 0  # fmt: skip
    kept = [
        [json.loads(line)["id"] for line in (tmp_path / f"{name}.kept.jsonl").open()]
        for name in ("in.jsonl", "in.parquet")
    ]
    assert kept[0] == kept[1] and 300 <= len(kept[0]) < len(texts)


@pytest.mark.parametrize("name", ["c.csv", "c.tsv"])
def test_blocks_and_rows_read_a_delimited_file_alike(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neardup.io.formats.delimited import Delimited

    sep = "," if name.endswith(".csv") else "\t"
    lines = ["id" + sep + "text" + sep + "extra"]
    for i, t in enumerate(random_documents(30, seed=4, words=(1, 10))):
        lines.append(f"r{i % 25}{sep}{t}{sep}{i}")  # ids repeat from row 26
    lines[8] = f"r7{sep}only two values"  # a row with too few columns
    lines[12] = f"r11{sep}{'é' * 3000}{sep}0"  # over the record limit below
    lines[15] = f"r14{sep}{sep}0"  # an empty text: fine
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def rows(blocks: bool):  # type: ignore[no-untyped-def]
        with monkeypatch.context() as m:
            if not blocks:
                m.setattr(Delimited, "reads_blocks", lambda self, entry, fields: False)
            return _rows_of(path, True, m, on_error="skip", max_record_size=5000)

    got = rows(True)
    assert got == rows(False)
    counts = got[4]
    assert counts["too_large"] == 1 and counts["bad_csv"] >= 1 and counts["duplicate_id"] >= 4


def test_parquet_batches_hold_about_batch_bytes_whatever_the_document_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long documents make batches of fewer rows (memory follows bytes), and the documents read
    are the same whatever the batch size."""
    from neardup.io import _parquet

    short = random_documents(300, seed=4, words=(2, 6))
    long = [" ".join([t] * 200) for t in short]
    for name, texts in (("short", short), ("long", long)):
        pq.write_table(pa.table({"id": [f"d{i}" for i in range(300)], "text": texts}),
                       tmp_path / f"{name}.parquet", row_group_size=50)  # fmt: skip
    monkeypatch.setattr(_parquet, "BATCH_BYTES", 64 << 10)
    rows = {
        name: _parquet.batch_rows_of(pq.ParquetFile(tmp_path / f"{name}.parquet"), ["id", "text"])
        for name in ("short", "long")
    }
    assert rows["long"] < rows["short"] // 50 and rows["long"] >= 1
    sizes: list[int] = []
    block = _parquet.arrow_block

    def spied(entry, batch, *args):  # type: ignore[no-untyped-def]
        sizes.append(batch.num_rows)
        return block(entry, batch, *args)

    with monkeypatch.context() as m:
        m.setattr(_parquet, "arrow_block", spied)
        for _ in open_source(str(tmp_path / "long.parquet")).batches(10**6):
            pass
    assert sum(sizes) == 300 and max(sizes) == rows["long"]
    read = _rows_of(tmp_path / "long.parquet", True, monkeypatch)
    monkeypatch.setattr(_parquet, "BATCH_BYTES", 8 << 20)
    assert _rows_of(tmp_path / "long.parquet", True, monkeypatch) == read


def test_a_parquet_output_of_long_documents_gets_row_groups_of_about_row_group_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neardup.io import _parquet

    texts = [" ".join([t] * 100) for t in random_documents(200, seed=8, words=(3, 8))]
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(200)], "text": texts}), src)
    monkeypatch.setattr(_parquet, "ROW_GROUP_BYTES", 32 << 10)
    out = tmp_path / "out.parquet"
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 0
    written = pq.ParquetFile(out)
    assert written.metadata.num_row_groups > 5
    assert written.read().equals(pq.read_table(src))  # every row kept, as it was


@pytest.mark.parametrize("command", ["dedup", "paragraphs", "decontaminate", "to-jsonl"])
def test_view_typed_columns_are_kept_rows_of_their_own_type(tmp_path: Path, command: str) -> None:
    """Arrow cannot filter string or binary views (a pyarrow 16+ writer's choice): kept rows of
    such columns, nested ones too, are written with their types, not a traceback."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    texts = ["alpha beta gamma delta epsilon", "other words entirely here now"] * 2
    table = pa.table(
        {
            "id": ["a", "b", "c", "d"],
            "text": pa.array(texts, pa.string_view()),
            "note": pa.array([b"1", b"2", b"3", b"4"], pa.binary_view()),
            "meta": pa.array(
                [{"k": f"m{i}"} for i in range(4)], pa.struct([("k", pa.string_view())])
            ),
        }
    )
    pq.write_table(table, tmp_path / "in.parquet")
    src, out = str(tmp_path / "in.parquet"), tmp_path / "out.parquet"
    args = {
        "dedup": ["dedup", src, "-o", str(out)],
        "paragraphs": ["dedup", src, "--unit", "paragraph", "-o", str(out)],
        "decontaminate": [
            "decontaminate",
            src,
            "--against",
            str(tmp_path / "b.jsonl"),
            "-o",
            str(out),
        ],
        "to-jsonl": ["dedup", src, "-o", str(tmp_path / "out.jsonl")],
    }[command]
    (tmp_path / "b.jsonl").write_text(json.dumps({"text": texts[1]}) + "\n")
    assert main([*args, "-q"]) == 0
    if command == "to-jsonl":
        rows = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
        assert [r["meta"] for r in rows] == [{"k": "m0"}, {"k": "m1"}]
        return
    kept = pq.read_table(out)
    assert kept.schema.equals(table.schema)
    want = {"dedup": ["a", "b"], "paragraphs": ["a", "b"], "decontaminate": ["a", "c"]}
    assert kept.column("id").to_pylist() == want[command]
    assert kept.column("meta").to_pylist()[0] == {"k": "m0"}
