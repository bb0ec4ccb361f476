"""Measure where ``PPPCA(svd_solver="randomized")`` fits faster than the covariance path (issue 37).

The measurement behind :data:`mpc_pca.pppca.randomized.AUTO_MIN_FEATURES`:
one process, synthetic rows (``N`` rows with ten spiked directions over
noise, split over three providers), ``k = 10``, the additive backend; each
fit timed once, both solvers at each width.

Usage::

    PYTHONPATH=$PWD OPENBLAS_NUM_THREADS=1 python tools/solver_threshold.py [--rows N] [--widths 500 1000 ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mpc_pca import PPPCA


def rows(n: int, d: int, seed: int = 0) -> list[np.ndarray]:
    """``n x d`` rows with ten spikes over unit noise, in three unequal parts."""
    rng = np.random.default_rng(seed)
    loadings = np.linalg.qr(rng.normal(size=(d, 10)))[0]
    X = (rng.normal(size=(n, 10)) * np.linspace(10.0, 3.0, 10)) @ loadings.T + rng.normal(size=(n, d))
    return np.array_split(X, [n // 5, n // 2])


def seconds(solver: str, parts: list[np.ndarray]) -> tuple[float, int]:
    """Wall time of one fit and the bytes the first provider sent."""
    start = time.perf_counter()
    fitted = PPPCA(10, svd_solver=solver, random_state=0, timeout=600.0).fit(parts)
    return time.perf_counter() - start, int(fitted.report_["provider0"]["bytes_sent"])


def main() -> None:
    """Print one line per width: d, then seconds and provider0's bytes sent of each solver."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--widths", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    args = parser.parse_args()
    print("d  covariance_eigh_s  randomized_s  covariance_eigh_bytes  randomized_bytes")
    for d in args.widths:
        parts = rows(args.rows, d)
        (exact, exact_bytes), (randomized, randomized_bytes) = (
            seconds("covariance_eigh", parts),
            seconds("randomized", parts),
        )
        print(f"{d}  {exact:.2f}  {randomized:.2f}  {exact_bytes}  {randomized_bytes}", flush=True)


if __name__ == "__main__":
    main()
