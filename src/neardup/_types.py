"""The array type aliases every stage shares: one definition, imported everywhere."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
"""Positions, ids, counts and offsets."""
FloatArray = npt.NDArray[np.float64]
"""Scores and similarities."""
BoolArray = npt.NDArray[np.bool_]
"""Masks (kept, removed, selected)."""
KeyArray = npt.NDArray[np.uint64]
"""64-bit fingerprints, sketch values and band keys."""
