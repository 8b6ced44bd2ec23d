"""A new index file made whole under a temporary name, then linked into place."""

from __future__ import annotations

import contextlib
import os

from ..errors import OutputError
from .sqlite_store import SqliteStore, exists_error


def create_file(path: str, meta: dict[str, str], timeout: float = 10.0) -> None:
    """An empty index at ``path`` holding ``meta``, made whole under a temporary name in its
    folder and then linked to ``path``, which a link never replaces: of two creates at once
    one succeeds and the other says the path exists (each had passed the check, and the one
    that failed removed the other's new file), and a create killed midway leaves no file at
    ``path`` (it left one without its metadata, which no command could open or create again)."""
    if os.path.lexists(path):
        raise exists_error(path)
    folder, name = os.path.split(os.path.abspath(path))
    draft = os.path.join(folder, f".{name}.{os.getpid()}-{os.urandom(4).hex()}.creating")
    try:
        store = SqliteStore(draft, create=True, timeout=timeout, where=path)
        try:
            store.begin()
            store.write_meta(meta)
            store.commit()
        finally:
            store.close()  # the last connection: the WAL goes into the file, then away
        try:
            os.link(draft, path)
        except FileExistsError:
            raise exists_error(path) from None
        except OSError as exc:  # a filesystem without hard links: checked, then renamed
            if os.path.lexists(path):
                raise exists_error(path) from None
            try:
                os.rename(draft, path)
            except OSError:
                raise OutputError(f"cannot create the index {path} ({exc})") from None
    finally:
        for made in (draft, draft + "-wal", draft + "-shm"):
            with contextlib.suppress(OSError):
                os.remove(made)
