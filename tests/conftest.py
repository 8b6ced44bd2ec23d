"""Hypothesis without deadlines: a first example that loads a compiled kernel, a busy CI host
or interpreted kernels (NEARDUP_KERNELS=python) make timings vary, and speed is measured in
benchmarks/, never in unit tests."""

from hypothesis import settings

settings.register_profile("neardup", deadline=None)
settings.load_profile("neardup")
