"""What the local workers' fork server holds before it forks them: Dask's DataFrame, neardup's
stages and a loaded kernel, imported once in one process instead of once in every worker.

``--dask local:N`` starts its workers from a fork server (``multiprocessing``'s "forkserver"
start method, where the platform has it): a process that imports these modules, then forks
one worker per request. Each spawned worker imported pandas, pyarrow, Dask's DataFrame, Numba
and the stages itself (about 2 s of CPU each, all starting at once on the same cores as the
client's own imports). Only imports and a kernel run here, in the server's one thread: a fork
copies no other thread.
"""

from __future__ import annotations

import dask.dataframe  # noqa: F401
import numpy as np

from .._kernels.keys import destinations
from . import decontaminate, job  # noqa: F401

destinations(np.zeros(1, dtype=np.uint64), 1)  # Numba's registries and one cached kernel
