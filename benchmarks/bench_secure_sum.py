"""Secure sum of d x d matrices: additive ``shares`` and ``masks`` modes vs the plain sum.

For every (M, d) the script times, in the same run:

* ``plain``: ``numpy`` sum of the M arrays (what an insecure pooled sum costs);
* ``csprng``: generating the random words the masks mode needs, M (M - 1) ChaCha20
  streams of d^2 words (each pairwise mask is expanded at both ends);
* ``shares`` and ``masks``: a full in-process secure sum, M providers and a
  server as threads, including encoding, serialisation, queues and decoding.

Target (issue 2): at d = 1000, ``masks <= 3 x (plain + csprng)``.

Usage: ``python -m benchmarks.bench_secure_sum [--quick]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks.output import add_out_argument, output_dir, write_json
from mpc_pca.studies.machine import describe_machine as machine
from mpc_pca.studies.plotting import plot_seconds_by_contributors
from protocols import AdditiveBackend
from protocols.prg import RingPRG
from protocols.secure_sum import run_secure_sum


def measure(m: int, d: int, repeats: int) -> dict[str, float]:
    rng = np.random.default_rng(m * 10_000 + d)
    arrays = {f"p{i}": rng.normal(size=(d, d)) for i in range(m)}
    values = list(arrays.values())
    runs = {
        "plain": lambda: np.sum(values, axis=0),
        "csprng": lambda: [RingPRG().ring_elements((d, d)) for _ in range(m * (m - 1))],
        "shares": lambda: run_secure_sum(arrays, receiver="server", backend=AdditiveBackend("shares")),
        "masks": lambda: run_secure_sum(arrays, receiver="server", backend=AdditiveBackend("masks")),
    }
    for fn in runs.values():  # warm up
        fn()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):  # interleaved, so drifts in machine load hit every variant alike
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    row: dict[str, float] = {"M": m, "d": d}
    row.update({name: statistics.median(ts) for name, ts in times.items()})
    row["masks_over_plain_plus_csprng"] = row["masks"] / (row["plain"] + row["csprng"])
    row["shares_over_plain_plus_csprng"] = row["shares"] / (row["plain"] + row["csprng"])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    add_out_argument(parser)
    args = parser.parse_args()
    folder = output_dir(args.out, args.quick)
    ms = [2, 3] if args.quick else [2, 3, 5, 10]
    ds = [10, 100] if args.quick else [10, 100, 300, 1000]
    repeats = 3 if args.quick else 11
    rows = []
    for m in ms:
        for d in ds:
            row = measure(m, d, repeats)
            rows.append(row)
            print(
                f"M={m:2d} d={d:4d}  plain {row['plain'] * 1e3:8.2f} ms  csprng {row['csprng'] * 1e3:8.2f} ms  "
                f"shares {row['shares'] * 1e3:8.2f} ms  masks {row['masks'] * 1e3:8.2f} ms  "
                f"masks/(plain+csprng) {row['masks_over_plain_plus_csprng']:.2f}"
            )
    path = write_json("secure_sum.json", {"machine": machine(), "repeats": repeats, "rows": rows}, folder)
    plot_seconds_by_contributors(
        rows,
        {"plain": "k:", "csprng": "g--", "shares": "b-o", "masks": "r-s"},
        lambda row, name: row[name],
        folder / "secure_sum.png",
    )
    print(f"wrote {path} and secure_sum.png")


if __name__ == "__main__":
    main()
