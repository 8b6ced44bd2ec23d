"""Usage errors of an index: used after ``close()``, or ``with index:`` nested.

SQLite reports both (a closed connection; a transaction within a transaction) as errors that
would read as a damaged index, and a closed in-memory store would go on working; so both
stores refuse them alike, before SQLite is reached, with what to do instead.
"""

from __future__ import annotations

from typing import NoReturn, cast

from ..errors import NeardupError
from .store import Store


class ClosedStore:
    """Stands for a closed store: every attribute but ``where`` raises a NeardupError."""

    def __init__(self, where: str) -> None:
        self.where = where

    def close(self) -> None:
        """Closing again does nothing, as for a file."""

    def __getattr__(self, name: str) -> NoReturn:
        """Refuse any use: the index was closed (not damaged)."""
        if self.where == "<memory>":
            raise NeardupError(
                "this in-memory index is closed and its documents are gone; make a new one "
                "with Index.create(None)"
            )
        raise NeardupError(
            f"the index {self.where} is closed; open it again with Index.open({self.where!r})"
        )


def closed(store: Store) -> Store:
    """Close ``store`` and return what stands for it, so later uses say it is closed."""
    store.close()
    return cast(Store, ClosedStore(store.where))


def nested(where: str) -> NeardupError:
    """The error of starting a write while one is open: ``with index:`` inside another."""
    return NeardupError(
        f"{where}: already inside `with index:` (a write is open); do the work in that block "
        "instead of entering the index again"
    )
