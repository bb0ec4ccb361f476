"""Whole-protocol speed: PPPCA (additive backend) vs scikit-learn PCA on the pooled rows.

Times ``PPPCA(backend="additive").fit`` on 4 parts of a 400,000 x 100 matrix
and ``sklearn.decomposition.PCA(svd_solver="covariance_eigh").fit`` on the
pooled matrix, alternating in the same process, and reports the ratio of
medians (target, issue 2: PPPCA no slower, ratio <= 1). Both compute one
O(n d^2) Gram matrix; the secure part of PPPCA is O(M d^2).

Usage: ``python -m benchmarks.bench_pppca [--quick]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sklearn.decomposition import PCA

from benchmarks.timing import add_out_argument, machine, output_dir, write_json
from mpc_pca import PPPCA


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller matrix, fewer repeats")
    add_out_argument(parser)
    args = parser.parse_args()
    folder = output_dir(args.out, args.quick)
    n, d, parties, k = (100_000, 50, 4, 10) if args.quick else (400_000, 100, 4, 10)
    repeats = 3 if args.quick else 7
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + rng.normal(size=d) * 5
    parts = [np.ascontiguousarray(p) for p in np.array_split(X, parties)]
    timings: dict[str, list[float]] = {"sklearn_covariance_eigh": [], "pppca_additive": [], "pppca_masks": []}
    runs = {
        "sklearn_covariance_eigh": lambda: PCA(k, svd_solver="covariance_eigh").fit(X),
        "pppca_additive": lambda: PPPCA(k, backend="additive").fit(parts),
        "pppca_masks": lambda: PPPCA(k, backend="additive-masks").fit(parts),
    }
    runs["sklearn_covariance_eigh"]()  # warm up BLAS threads
    for _ in range(repeats):
        for name, fn in runs.items():  # interleaved so load drifts hit all alike
            start = time.perf_counter()
            fn()
            timings[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(ts) for name, ts in timings.items()}
    base = medians["sklearn_covariance_eigh"]
    result = {
        "machine": machine(),
        "n_samples": n,
        "n_features": d,
        "parties": parties,
        "n_components": k,
        "repeats": repeats,
        "seconds": timings,
        "median_seconds": medians,
        "ratio_to_sklearn": {name: m / base for name, m in medians.items()},
    }
    for name, m in medians.items():
        print(f"{name:26s} median {m:.3f} s   ratio to sklearn {m / base:.3f}")
    print(f"wrote {write_json('pppca_speed.json', result, folder)}")


if __name__ == "__main__":
    main()
