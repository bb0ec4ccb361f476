"""``mpc-pca party --data FILE`` of a PPPCA provider reads its file in chunks, or on a Dask cluster.

Every party is an ``mpc-pca party`` process over TLS on loopback. The
streamed runs must give the in-memory run's components and variances (the
same rows read whole with ``--chunk-rows 0``); the bounded-memory test runs
one provider under an ``RLIMIT_AS`` that its file read whole does not fit in.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mpc_pca.cli import main as cli
from mpc_pca.pppca.deployment import read_projection

ROOT = Path(__file__).resolve().parents[2]
#: One thread per native pool: comparable memory peaks, and an allocation that fails under
#: RLIMIT_AS raises (with Arrow's 8 I/O threads it may abort or deadlock instead).
SMALL_ENV = {
    "PYTHONPATH": str(ROOT),
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "ARROW_IO_THREADS": "1",
    "MALLOC_ARENA_MAX": "2",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_table(path: Path, rows: np.ndarray, row_group: int = 65_536) -> Path:
    """Write ``rows`` (columns ``f0, f1, ...``) as Parquet (by extension) or CSV with a header."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=[f"f{j}" for j in range(rows.shape[1])])
    if path.suffix == ".parquet":
        frame.to_parquet(path, row_group_size=row_group, index=False)
    else:
        frame.to_csv(path, index=False, float_format="%.17g")
    return path


def run_parties(
    tmp: Path,
    files: Sequence[Path],
    extra: Mapping[int, Sequence[str]] | None = None,
    env: Mapping[int, Mapping[str, str]] | None = None,
    timeout: float = 120.0,
    projection: bool = True,
) -> tuple[dict[str, Any] | None, dict[int, subprocess.CompletedProcess[str]]]:
    """Run one provider per file, the server and the consumer as ``mpc-pca party`` processes.

    ``extra[rank]`` adds options and ``env[rank]`` environment variables to one
    party. Returns the server's JSON result with the consumer's ``projection``
    (unless ``projection=False``; ``None`` if the server failed) and every
    party's completed process.
    """
    tls = tmp / "tls"
    if not tls.exists():
        names = [f"provider{i}" for i in range(len(files))] + ["server", "consumer"]
        assert cli(["certs", "--parties", ",".join(names), "--out", str(tls)]) == 0
    world = len(files) + 2
    master = f"127.0.0.1:{free_port()}"
    base_env = {**os.environ, **SMALL_ENV}
    processes = {}
    stamp = time.monotonic_ns()
    out, projected = tmp / f"server-{stamp}.json", tmp / f"consumer-{stamp}.json"
    for rank in range(world):
        argv = [
            sys.executable, "-m", "tests.helpers.limited_party", "party", "--protocol", "pppca-ss",
            "--rank", str(rank), "--world-size", str(world), "--master", master, "--tls-dir", str(tls),
            "--timeout", str(timeout), "--connect-timeout", "60", "-q",
        ]  # fmt: skip
        if rank < len(files):
            argv += ["--data", str(files[rank])]
        if rank == len(files) or (rank > len(files) and projection):
            argv += ["--output", str(out if rank == len(files) else projected)]
        argv += list((extra or {}).get(rank, ()))
        processes[rank] = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**base_env, **(env or {}).get(rank, {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    done = {}
    for rank, process in processes.items():
        stdout, stderr = process.communicate(timeout=timeout + 60)
        done[rank] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    result = json.loads(out.read_text()) if out.exists() else None
    if result is not None and projected.exists():
        result["projection"] = read_projection(json.loads(projected.read_text())["projection"])[1]
    return result, done


def assert_same_pca(streamed: Mapping[str, Any], in_memory: Mapping[str, Any], rtol: float = 1e-9) -> None:
    """Components (up to sign) and explained variances agree to ``rtol`` relative."""
    a, b = np.asarray(streamed["components"]), np.asarray(in_memory["components"])
    signs = np.sign(np.sum(a * b, axis=1, keepdims=True))
    np.testing.assert_allclose(a * signs, b, rtol=rtol, atol=rtol * np.max(np.abs(b)))
    np.testing.assert_allclose(streamed["explained_variance"], in_memory["explained_variance"], rtol=rtol)
    assert streamed["n_samples"] == in_memory["n_samples"]
    if "projection" in streamed and "projection" in in_memory:
        p, q = np.asarray(streamed["projection"]), np.asarray(in_memory["projection"])
        assert p.shape == q.shape
        np.testing.assert_allclose(p * signs.T, q, rtol=rtol, atol=rtol * np.max(np.abs(q)))


def parts(n_rows: Sequence[int], d: int, seed: int = 0) -> list[np.ndarray]:
    """Correlated rows (a random mixing of independent columns), one block per provider."""
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(d, d)) * np.linspace(3.0, 0.2, d)[:, None]
    return [rng.normal(size=(n, d)) @ mixing + 5.0 for n in n_rows]


def ok(done: Mapping[int, subprocess.CompletedProcess[str]]) -> None:
    failed = {rank: p.stderr[-2000:] for rank, p in done.items() if p.returncode != 0}
    assert not failed, failed


def test_csv_streamed_in_many_chunks_equals_in_memory(tmp_path):
    files = [write_table(tmp_path / f"p{i}.csv", x) for i, x in enumerate(parts([2_000, 1_500, 1_700], 6))]
    in_memory, done = run_parties(tmp_path, files, {i: ["--chunk-rows", "0"] for i in range(3)})
    ok(done)
    # provider 0 and 2 read 97 rows at a time (a header row, then blocks that do not divide the rows)
    streamed, done = run_parties(tmp_path, files, {0: ["--chunk-rows", "97"], 2: ["--chunk-rows", "1000"]})
    ok(done)
    assert streamed is not None and in_memory is not None
    assert_same_pca(streamed, in_memory)


def in_memory_result(files: Sequence[Path]) -> dict[str, Any]:
    """The deploy floor's in-memory path on the same files (each read whole), parties as threads."""
    from mpc_pca.data.inputs import ReadOptions, load_table
    from mpc_pca.deploy.local import run_threads

    return run_threads(
        "pppca-ss", [load_table(str(f), ReadOptions()).values for f in files], {"n_components": 2}
    )


def memory_of(path: Path) -> dict[str, int]:
    return json.loads(path.read_text())


@pytest.mark.slow
def test_a_provider_streams_a_parquet_file_larger_than_its_address_space_bound(tmp_path):
    """One provider's Parquet file (~320 MB) does not fit in its RLIMIT_AS read whole; streamed, it runs.

    The bound is the virtual-memory peak of the same party on a 3,000-row file
    (measured here, on this machine) plus half the big file's size: reading
    the file whole needs at least the whole file as float64 plus pyarrow's
    and pandas' copies of it. (With three quarters, a whole read that no
    longer makes an n x d temporary could fit and then fail to start a
    thread instead.)
    """
    d = 16
    big_rows, small_rows = parts([2_000_000, 3_000], d)
    big = write_table(tmp_path / "p0.parquet", big_rows)
    sample = write_table(tmp_path / "sample.parquet", big_rows[:3_000])
    del big_rows
    small = [write_table(tmp_path / f"p{i}.parquet", x) for i, x in ((1, small_rows), (2, small_rows[::-1]))]
    size = big.stat().st_size
    assert size > 250e6

    # the honest baseline: the same party, streaming a small file, without a bound
    _, done = run_parties(
        tmp_path, [sample, *small], env={0: {"MPC_PCA_MEMORY_REPORT": str(tmp_path / "base")}}
    )
    ok(done)
    limit = memory_of(tmp_path / "base")["vm_peak"] + size // 2
    bounded = {"MPC_PCA_AS_LIMIT": str(limit)}

    # read whole, the rows do not fit: the party fails (exit 3) before it opens a link
    argv = [
        sys.executable, "-m", "tests.helpers.limited_party", "party", "--protocol", "pppca-ss", "--rank", "0",
        "--world-size", "5", "--master", f"127.0.0.1:{free_port()}", "--insecure", "--data", str(big),
        "--chunk-rows", "0", "--connect-timeout", "5",
    ]  # fmt: skip
    whole = subprocess.run(
        argv, cwd=ROOT, env={**os.environ, **SMALL_ENV, **bounded}, capture_output=True, text=True, timeout=120
    )  # fmt: skip
    assert whole.returncode == 3, whole.stderr[-2000:]
    assert "rows do not fit in this process's memory" in whole.stderr, whole.stderr[-2000:]

    report = tmp_path / "streamed"
    streamed, done = run_parties(
        tmp_path, [big, *small], env={0: {**bounded, "MPC_PCA_MEMORY_REPORT": str(report)}}, projection=False
    )
    ok(done)
    assert streamed is not None
    peak = memory_of(report)
    assert peak["vm_peak"] <= limit
    print(f"\nfile {size / 2**20:.0f} MiB, RLIMIT_AS {limit / 2**20:.0f} MiB, streamed peak {peak}")
    assert_same_pca(streamed, in_memory_result([big, *small]))


def test_a_provider_computes_its_statistics_on_a_dask_cluster(tmp_path):
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed (mpc-pca[dask])"
    )
    files = [
        write_table(tmp_path / f"p{i}.parquet", x, row_group=700)
        for i, x in enumerate(parts([2_000, 3_000, 1_000], 5, seed=1))
    ]
    files[2] = write_table(tmp_path / "p2.csv", parts([1_000], 5, seed=2)[0])
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        dashboard_address=":0",
        host="127.0.0.1",
        protocol="tcp",
    ) as cluster:
        address = cluster.scheduler_address.removeprefix("tcp://")
        on_cluster, done = run_parties(
            tmp_path, files, {1: ["--dask-scheduler", address], 2: ["--dask-scheduler", address]}
        )
        # the blocks were read, checked and reduced by the cluster's worker, the column peaks in the
        # same pass as the statistics (no second pass over the blocks for them)
        prefixes = set(cluster.scheduler.task_prefixes)
        assert "block_statistics" in prefixes and "chunk_max" not in prefixes, sorted(prefixes)
    ok(done)
    in_memory, done = run_parties(tmp_path, files, {i: ["--chunk-rows", "0"] for i in range(3)})
    ok(done)
    assert on_cluster is not None and in_memory is not None
    assert_same_pca(on_cluster, in_memory)


def test_dask_scheduler_needs_dask_and_a_streaming_protocol(tmp_path, monkeypatch):
    """No link is opened in either case (no master listens at port 1)."""
    from mpc_pca.cli import build_parser
    from mpc_pca.cli.errors import errors_in_flag_terms as spelled
    from mpc_pca.cli.party import party_command
    from protocols.errors import InputValidationError

    data = write_table(tmp_path / "p0.csv", parts([20], 3)[0])
    env = {"RANK": "0", "WORLD_SIZE": "5", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}

    def args(protocol: str, *more: str) -> Any:
        argv = ["party", "--protocol", protocol, "--insecure", "--data", str(data), *more]
        return build_parser().parse_args(argv)

    # party_command runs below the command line's errors_in_flag_terms (cli/party.py's _party_guarded)
    with (
        pytest.raises(InputValidationError, match=r"--dask-scheduler applies to the providers of pppca-ss"),
        spelled(),
    ):
        party_command(args("ag", "--dask-scheduler", "127.0.0.1:1"), env)
    with pytest.raises(InputValidationError, match=r"drop --chunk-rows 0"), spelled():
        party_command(args("pppca-ss", "--chunk-rows", "0", "--dask-scheduler", "127.0.0.1:1"), env)
    with pytest.raises(InputValidationError, match=r"--chunk-rows must be a non-negative integer"), spelled():
        party_command(args("pppca-ss", "--chunk-rows", "-1"), env)
    monkeypatch.setattr("mpc_pca.cli.options.installed", lambda module: module not in ("dask", "distributed"))
    with pytest.raises(
        InputValidationError, match=r"needs dask and distributed.*pip install 'mpc-pca\[dask\]'"
    ):
        party_command(args("pppca-ss", "--dask-scheduler", "127.0.0.1:1"), env)
