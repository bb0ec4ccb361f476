"""Running parties' local linear algebra side by side in one process.

In the embedded runtime every party is a thread of one process. Each party's
BLAS calls would otherwise spawn their own BLAS threads, which contend badly
(OpenBLAS: 20 concurrent eigendecompositions took seconds instead of
milliseconds here), while one BLAS thread per party thread keeps every core
busy (the Gram matrices of 4 providers' 100,000 x 100 blocks: 96 ms on 2 cores
instead of 199 ms with OpenBLAS's own threading).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from threadpoolctl import threadpool_limits

T = TypeVar("T")
R = TypeVar("R")


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Limit BLAS to one thread while parties run as threads of this process.

    With OpenBLAS, concurrent LAPACK calls (each site's eigendecomposition)
    from many Python threads, each spawning BLAS threads, contend so badly
    that 20 sites take seconds instead of milliseconds. The limit is
    process-wide (other threads' BLAS calls are limited too while it is in
    force) and restored on exit.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        yield


#: Below this many floating-point operations in total, local work runs inline:
#: starting a thread pool (a few milliseconds) would cost more than the work.
INLINE_WORK = 2e7


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask), not the machine's count.

    Pinned with ``taskset -c 0`` this is 1 even on a 64-core machine, where
    ``os.cpu_count()`` would still say 64 and side-by-side threads would thrash.
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def map_parties(fn: Callable[[T], R], items: Sequence[T], *, work: float | None = None) -> list[R]:
    """``[fn(x) for x in items]`` with one thread per usable core and single-threaded BLAS.

    For each party's purely local computation before a protocol starts (no
    messages are involved); results keep the order of ``items``.

    Parameters
    ----------
    fn : callable
    items : sequence
    work : float, optional
        Estimated floating-point operations of all calls together; below
        :data:`INLINE_WORK` the calls run inline, in this thread.
    """
    workers = min(len(items), usable_cpus())
    if workers <= 1 or (work is not None and work < INLINE_WORK):
        return [fn(item) for item in items]
    with single_threaded_blas(), ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))
