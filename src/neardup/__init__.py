"""neardup: find near-duplicate documents in text collections, fast."""

from __future__ import annotations

from .errors import IndexMismatchError, InputError, NeardupError, ParamError
from .params import FORMAT_VERSION, ShingleParams, SketchParams

__version__ = "0.1.0"

__all__ = [
    "FORMAT_VERSION",
    "IndexMismatchError",
    "InputError",
    "NeardupError",
    "ParamError",
    "ShingleParams",
    "SketchParams",
    "__version__",
]
