"""The larger-than-memory section of :mod:`benchmarks.bench_pppca`: peak RSS of chunked Parquet statistics.

One provider's statistics from an ``n x d`` Parquet file read in chunks, in a
fresh process (``python -m benchmarks.bench_pppca --parquet-only`` runs only
this; target for 1e7 x 100: <= 1 GiB above the d^2 terms).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

_PARQUET_CHILD = r"""
import json, sys, time
from mpc_pca.pppca.chunked import ParquetPart

def status(field):  # kB, from the kernel's accounting of this process
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])

path, chunk_rows = sys.argv[1], int(sys.argv[2])
part = ParquetPart(path, chunk_rows=chunk_rows)
before = status("VmRSS")
start = time.perf_counter()
stats = part.statistics()
seconds = time.perf_counter() - start
print(json.dumps({"rss_before_kib": before, "rss_peak_kib": status("VmHWM"), "seconds": seconds,
                  "n_rows": stats.n_rows}))
"""


def write_parquet(path: Path, n: int, d: int, row_group: int) -> None:
    """An n x d float64 Parquet file written one row group at a time (bounded memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    schema = pa.schema([(f"f{j}", pa.float64()) for j in range(d)])
    with pq.ParquetWriter(path, schema, compression="none") as writer:
        for start in range(0, n, row_group):
            block = rng.normal(size=(min(row_group, n - start), d))
            writer.write_table(pa.table({f"f{j}": block[:, j] for j in range(d)}, schema=schema))


def parquet_memory(n: int, d: int, chunk_rows: int) -> dict[str, Any]:
    """Peak RSS of one provider's chunked statistics from an n x d Parquet file, in a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "part.parquet"
        start = time.perf_counter()
        write_parquet(path, n, d, row_group=chunk_rows)
        write_seconds = time.perf_counter() - start
        size = path.stat().st_size
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        out = subprocess.run(
            [sys.executable, "-c", _PARQUET_CHILD, str(path), str(chunk_rows)],
            check=True,
            capture_output=True,
            text=True,
            env=env,
            cwd=Path(__file__).resolve().parent.parent,
        )
    child = json.loads(out.stdout.strip().splitlines()[-1])
    above = (child["rss_peak_kib"] - child["rss_before_kib"]) * 1024
    d2_terms = 8 * d * d * 3  # the chunk's Gram product and two packed triangles
    chunk_bytes = 8 * chunk_rows * d
    return {
        "n": n,
        "d": d,
        "chunk_rows": chunk_rows,
        "file_bytes": size,
        "write_seconds": write_seconds,
        "statistics_seconds": child["seconds"],
        "peak_rss_above_start_bytes": above,
        "peak_rss_above_start_minus_d2_bytes": above - d2_terms,
        "stated_bound_bytes": 2 * chunk_bytes + 2 * 8 * d * d,
        "n_rows_read": child["n_rows"],
    }


def parquet_section(quick: bool) -> dict[str, Any]:
    """The Parquet peak-RSS measurement at CI size or at 1e7 x 100 (issue 15's target: <= 1 GiB)."""
    n_pq, d_pq, chunk = (200_000, 20, 50_000) if quick else (10_000_000, 100, 250_000)
    return parquet_memory(n_pq, d_pq, chunk)
