"""How the kernels run: compiled by Numba, or as the same source interpreted, for small inputs.

Loading Numba and its compiled kernels costs about 0.4 s, more than a small run's whole work.
The kernels are plain Python with NumPy scalar arithmetic, so the same functions run
compiled or interpreted with the same results (``tests/test_interpreted.py``
compares whole runs). The mode is chosen once per process, before the first kernel module is
imported: ``NEARDUP_KERNELS=python`` in the environment, or ``interpret()`` (the command line
calls it for small inputs). Compiled is the default; a library caller is never switched.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..errors import ParamError, Restart

F = TypeVar("F", bound=Callable[..., Any])

MODES = ("numba", "python")
_mode: str | None = None  # fixed by the first kernel defined


def _env_mode() -> str:
    """The mode the environment asks for (NEARDUP_KERNELS), compiled when unset."""
    mode = os.environ.get("NEARDUP_KERNELS", "numba").strip().lower() or "numba"
    if mode not in MODES:
        raise ParamError(f"NEARDUP_KERNELS={mode!r}: set it to 'numba' (the default) or 'python'")
    return mode


def mode() -> str:
    """The mode in effect ('numba' or 'python'); fixed from here on."""
    global _mode
    if _mode is None:
        _mode = _env_mode()
    return _mode


_expired = False  # the budget ran out while no kernel was running: the next call restarts


def interpret(budget: float | None = None) -> bool:
    """Run the kernels interpreted unless a kernel is already defined or the environment
    chose (NEARDUP_KERNELS); True when they will be interpreted.

    ``budget`` (seconds, main thread only): after that long, the running kernel (or the next
    one called) raises ``Restart``, until ``settle()``: an input can be small and still costly
    interpreted (a text of six words, in a sketch longer than the first-hit table covers,
    densifies by some t * t / 2 probes).
    """
    global _mode
    if _mode is None and not os.environ.get("NEARDUP_KERNELS", "").strip():
        _mode = "python"
    if mode() != "python":
        return False
    if budget is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGALRM, _expire)
        signal.setitimer(signal.ITIMER_REAL, budget)
    return True


def _expire(signum: int, frame: object) -> None:
    """SIGALRM: the budget is spent; stop the kernel running in this thread, if one is."""
    global _expired
    _expired = True
    if getattr(_inside, "kernel", False):
        raise Restart


def settle() -> None:
    """No restart from here on (outputs are about to be written); a no-op when none was armed."""
    global _expired
    if _mode == "python" and signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        signal.setitimer(signal.ITIMER_REAL, 0)
    _expired = False


_inside = threading.local()  # .kernel: this thread is running an interpreted kernel


def _interpreted(func: F) -> F:
    """``func`` called with NumPy's integer overflow warnings off: kernel arithmetic wraps
    modulo 2**64 by design, as it does compiled (set once, by the outermost kernel call)."""

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        if getattr(_inside, "kernel", False):
            return func(*args, **kwargs)
        if _expired:
            raise Restart
        _inside.kernel = True
        try:
            with np.errstate(over="ignore"):
                return func(*args, **kwargs)
        finally:
            _inside.kernel = False

    call.py_func = func  # type: ignore[attr-defined]  # as a Numba dispatcher has
    return call  # type: ignore[return-value]


def njit(**options: Any) -> Callable[[F], F]:
    """Numba's ``njit(**options)``, or, interpreted, the function itself (inline helpers) or
    wrapped so wrapping arithmetic does not warn. A kernel marked both ``inline="always"``
    and ``nogil=True`` is inlined into other kernels and also called from Python: wrapped."""
    if mode() == "numba":
        import numba

        return numba.njit(**options)
    if options.get("inline") == "always" and not options.get("nogil"):
        return lambda func: func
    return _interpreted


#: CPU seconds Numba takes to compile the kernels a run calls from each module, measured on the
#: first run of ``neardup dedup examples/sample.jsonl`` on 2 cores (docs/FIRST_RUN.md; simhash
#: and hamming rougher); used only to say how long the wait will be.
COMPILE_SECONDS = {
    "jsonl": 38.0,
    "shingles": 11.5,
    "leaders": 12.0,
    "buffers": 4.5,
    "minhash": 4.0,
    "simhash": 4.0,
    "hamming": 6.0,
}


def uncached(modules: list[str], names: list[str] | None = None) -> list[str]:
    """The kernel modules among ``modules`` (names under ``neardup._kernels``) none of whose
    kernels (of ``names`` only, when given) is in Numba's cache for their current source:
    their first calls will compile.

    Reads only the cache's index files (as Numba does before compiling), so it costs about a
    millisecond a module; the modules are imported, compiled mode only.
    """
    import importlib

    from numba.core.registry import CPUDispatcher

    cold = []
    for name in modules:
        module = importlib.import_module(f"{__package__}.{name}")
        kernels = [
            k
            for k in vars(module).values()
            if isinstance(k, CPUDispatcher)
            and k.__module__ == module.__name__
            and (names is None or k.py_func.__name__ in names)
        ]
        if kernels and not any(_cached(k) for k in kernels):
            cold.append(name)
    return cold


def _cached(kernel: Any) -> bool:
    """Whether Numba's cache holds a compiled version of ``kernel`` for its current source."""
    cache = getattr(kernel, "_cache", None)
    index = getattr(getattr(cache, "_cache_file", None), "_load_index", None)
    if index is None:  # another Numba: say nothing rather than guess
        return True
    try:
        return bool(index())
    except Exception:  # an unreadable index: Numba recompiles, as it will here
        return False


def compile_seconds(modules: list[str]) -> float:
    """About how long compiling the kernels of ``modules`` takes (COMPILE_SECONDS)."""
    return sum(COMPILE_SECONDS.get(name, 2.0) for name in modules)
