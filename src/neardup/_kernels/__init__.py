"""Numba kernels, one module per stage; each has a pure-Python reference proven equal in tests."""
