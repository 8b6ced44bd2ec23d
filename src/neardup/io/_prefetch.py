"""``prefetch`` and ``ordered_map`` live in ``neardup._prefetch`` (the stage modules use them
without loading the I/O package); still importable here."""

from .._prefetch import ordered_map, prefetch

__all__ = ["ordered_map", "prefetch"]
