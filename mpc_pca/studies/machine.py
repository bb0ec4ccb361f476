"""Where a study ran: CPU, cores, affinity, BLAS threads, library versions, load."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from typing import Any

_PACKAGES = ("mpc-pca", "numpy", "scipy", "scikit-learn", "gmpy2", "torch", "crypten", "matplotlib", "tqdm")


def cpu_model() -> str:
    """The CPU model name from ``/proc/cpuinfo`` (or :func:`platform.processor`)."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> list[float] | None:
    """1, 5 and 15 minute load averages (other processes sharing the cores)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def blas_threads() -> list[dict[str, Any]]:
    """The BLAS/OpenMP thread pools numpy and scipy use (threadpoolctl)."""
    from threadpoolctl import threadpool_info

    return [
        {k: info.get(k) for k in ("user_api", "internal_api", "num_threads", "version")}
        for info in threadpool_info()
    ]


def describe_machine() -> dict[str, Any]:
    """A JSON-ready description of this machine and software."""
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    import numpy  # noqa: F401  (loads the BLAS so threadpoolctl sees it)

    return {
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "affinity": affinity,
        "blas": blas_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        "load_average": load_average(),
    }
