"""A reading Index sees one committed state while another connection writes (SQLite WAL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neardup import Index
from neardup.testing.synth import random_documents


def test_a_query_sees_one_state_when_a_writer_removes_its_candidates_midway(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "i.db")
    texts = random_documents(30, seed=4, words=(40, 80))
    ids = [f"d{i}" for i in range(len(texts))]
    Index.create(path).close()
    writer, reader = Index.open(path), Index.open(path)
    writer.add(ids, texts)
    shared = reader.store.shared

    def shared_then_removed(*args: Any) -> Any:
        found = shared(*args)
        writer.remove(ids)  # commits between the reader's lookup and its load
        return found

    reader.store.shared = shared_then_removed  # type: ignore[method-assign]
    found = reader.query(texts)
    assert [[m.id for m in ms] for ms in found] == [[i] for i in ids]  # the state it began with
    reader.store.shared = shared  # type: ignore[method-assign]
    assert reader.query(texts) == [[] for _ in texts]  # the next query sees the removal
    reader.close()
    writer.close()
