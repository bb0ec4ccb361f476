"""Cost of dropout tolerance: ``masks`` vs ``masks`` with ``dropout_threshold`` (one secure sum).

For every (M, L) (M providers, L summed entries) the script runs one
in-process secure sum in each mode (providers and a server as threads) and
records, per mode, the bytes every provider and the server sent and
received, their rounds, and the median wall time of the whole sum. Bytes and
rounds are exact (they do not depend on the machine); the time ratio is the
cost of the Shamir sharing, the extra key material and the unmasking step.

The dropout-tolerant sum makes fresh keys for every sum, so the per-run key
agreement of plain ``masks`` mode is counted in that mode's first sum too:
``masks_first`` is a fresh run (key agreement included), ``masks_later`` a
second sum of the same run (keys cached).

Usage: ``python -m benchmarks.bench_dropout [--quick]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from benchmarks.output import add_out_argument, output_dir, write_json
from mpc_pca.studies.machine import describe_machine as machine
from protocols import AdditiveBackend
from protocols.runtime import run_inprocess


def _one_run(arrays: dict[str, np.ndarray], backend: AdditiveBackend, sums: int) -> dict[str, Any]:
    providers = tuple(arrays)

    def provider(name: str):
        def run(party):
            for _ in range(sums):
                backend.secure_sum(party, arrays[name], contributors=providers, receiver="server")

        return run

    def server(party):
        for _ in range(sums):
            backend.secure_sum(party, None, contributors=providers, receiver="server")

    start = time.perf_counter()
    result = run_inprocess({**{p: provider(p) for p in providers}, "server": server})
    seconds = time.perf_counter() - start
    reports = result.report_dict()
    return {"seconds": seconds, "provider0": reports["p0"], "server": reports["server"]}


def measure(m: int, length: int, repeats: int) -> dict[str, Any]:
    rng = np.random.default_rng(m * 100_000 + length)
    arrays = {f"p{i}": rng.normal(size=length) for i in range(m)}
    threshold = max(2, (2 * m) // 3)
    modes = {
        "masks_first": (AdditiveBackend("masks"), 1),
        "masks_two_sums": (AdditiveBackend("masks"), 2),
        "dropout": (AdditiveBackend("masks", dropout_threshold=threshold), 1),
    }
    row: dict[str, Any] = {"M": m, "L": length, "threshold": threshold}
    for backend, sums in modes.values():  # warm up (imports, first allocations)
        _one_run(arrays, backend, sums)
    for name, (backend, sums) in modes.items():
        runs = [_one_run(arrays, backend, sums) for _ in range(repeats)]
        row[name] = {
            "seconds": statistics.median(r["seconds"] for r in runs),
            "provider0": {k: runs[0]["provider0"][k] for k in ("bytes_sent", "bytes_received", "rounds")},
            "server": {k: runs[0]["server"][k] for k in ("bytes_sent", "bytes_received", "rounds")},
        }
    first, two = row["masks_first"], row["masks_two_sums"]
    later = {
        who: {k: two[who][k] - first[who][k] for k in ("bytes_sent", "bytes_received", "rounds")}
        for who in ("provider0", "server")
    }
    row["masks_later"] = {"seconds": two["seconds"] - first["seconds"], **later}
    row["dropout_over_masks_first_seconds"] = row["dropout"]["seconds"] / first["seconds"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    add_out_argument(parser)
    args = parser.parse_args()
    folder = output_dir(args.out, args.quick)
    ms = [3, 5] if args.quick else [3, 5, 10]
    lengths = [100, 5051] if args.quick else [100, 5051, 500_500]  # 5051, 500500: d = 100, 1000 triangles
    repeats = 3 if args.quick else 5
    rows = []
    for m in ms:
        for length in lengths:
            row = measure(m, length, repeats)
            rows.append(row)
            d, f = row["dropout"], row["masks_first"]
            print(
                f"M={m:2d} L={length:7d} t={row['threshold']}: provider0 sent {f['provider0']['bytes_sent']:>9,} B "
                f"-> {d['provider0']['bytes_sent']:>9,} B, rounds {f['provider0']['rounds']} -> "
                f"{d['provider0']['rounds']}; server received {f['server']['bytes_received']:>10,} B -> "
                f"{d['server']['bytes_received']:>10,} B; time x{row['dropout_over_masks_first_seconds']:.2f}"
            )
    write_json("dropout.json", {"machine": machine(), "repeats": repeats, "rows": rows}, folder)


if __name__ == "__main__":
    main()
