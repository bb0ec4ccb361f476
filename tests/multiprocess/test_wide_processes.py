"""pppca-randomized with every party its own process over TLS gives the threads run's answer exactly."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.cli import main as cli
from mpc_pca.deploy import launch_local
from mpc_pca.registry import entry
from mpc_pca.threads import run_protocol
from tests.wide.helpers import gapped_rows, split

ROOT = Path(__file__).resolve().parents[2]


def run_parties(
    tmp_path: Path,
    files: Sequence[Path],
    options: Sequence[str],
    data_options: Sequence[str] = (),
    timeout: float = 180,
) -> list[tuple[int, str]]:
    """``mpc-pca party`` of pppca-randomized, one process per site holding ``files[i]`` plus the server, over TLS.

    Every process gets ``options``; the sites also ``--data FILE`` and ``data_options``. Each writes
    ``out<rank>.json``. Returns every process's exit code and standard error, in rank order.
    """
    world = len(files) + 1
    names = [f"provider{i}" for i in range(len(files))] + ["server"]
    assert cli(["certs", "--parties", ",".join(names), "--out", str(tmp_path / "tls")]) == 0
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        master = f"127.0.0.1:{sock.getsockname()[1]}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    processes = []
    for rank in range(world):
        argv = [sys.executable, "-m", "mpc_pca", "party", "--protocol", "pppca-randomized", "--rank", str(rank),
                "--world-size", str(world), "--master", master, "--tls-dir", str(tmp_path / "tls"), *options,
                "--output", str(tmp_path / f"out{rank}.json")]  # fmt: skip
        if rank < len(files):
            argv += ["--data", str(files[rank]), *data_options]
        processes.append(
            subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        )
    finished = []
    for process in processes:
        _, stderr = process.communicate(timeout=timeout)
        finished.append((process.returncode, stderr.decode()))
    return finished


def all_succeed(finished: list[tuple[int, str]]) -> None:
    for code, stderr in finished:
        assert code == 0, stderr


def test_processes_over_tls_equal_the_threads_run():
    parts = split(gapped_rows(500, 40, seed=3), [100, 2, 398])
    settings = {"n_components": 3, "iterated_power": 30, "tol": 1e-10, "start_seed": 4, "standardize": True}
    result = launch_local("pppca-randomized", parts, settings, timeout=120)
    threads = run_protocol(entry("pppca-randomized"), parts, settings).output
    assert np.array_equal(np.asarray(result["components"]), threads.components)
    assert np.array_equal(np.asarray(result["explained_variance"]), threads.explained_variance)
    assert result["solver"] == threads.solver.report() and result["solver"]["stop"] == "tol"


def test_party_processes_stream_their_csv_files_in_chunks_and_equal_the_threads_run(tmp_path):
    import pandas as pd

    parts = split(gapped_rows(300, 30, seed=5), [120, 180])
    files = []
    for i, part in enumerate(parts):
        path = tmp_path / f"site{i}.csv"
        pd.DataFrame(part, columns=[f"c{j}" for j in range(30)]).to_csv(
            path, index=False, float_format="%.17g"
        )
        files.append(path)
    solver = ["--n-components", "3", "--iterated-power", "30", "--tol", "1e-10", "--start-seed", "8", "-q"]
    all_succeed(run_parties(tmp_path, files, solver, ["--chunk-rows", "37"]))
    server = json.loads((tmp_path / "out2.json").read_text())
    settings = {"n_components": 3, "iterated_power": 30, "tol": 1e-10, "start_seed": 8}
    threads = run_protocol(entry("pppca-randomized"), parts, settings)
    assert np.max(np.abs(np.asarray(server["components"]) - threads.output.components)) <= 1e-12
    for rank in range(2):
        scores = np.asarray(json.loads((tmp_path / f"out{rank}.json").read_text())["scores"])
        assert np.allclose(scores, threads.run.outputs[f"provider{rank}"]["scores"], atol=1e-10)


def test_party_processes_on_bed_files_with_swapped_alleles_all_stop_before_any_sum(tmp_path):
    """Over TLS, provider1's .bim counts the other allele: every party stops naming it, none writes a result."""
    pytest.importorskip("bed_reader", reason="the genotype extra is not installed")
    from tests.helpers.genotypes import genotypes, write

    values = genotypes(30, 12, seed=7)
    files = [
        write(tmp_path / "a.bed", values[:20]),
        write(tmp_path / "b.bed", values[20:], alleles=("G", "A")),
    ]
    finished = run_parties(tmp_path, files, ["-q", "--n-components", "2"], ["--chunk-rows", "8"])
    codes = []
    for code, stderr in finished:
        codes.append(code)  # 3: refused it itself; 4: a peer's refusal reached it first
        assert code in (3, 4), stderr
        assert "provider1's .bim and provider0's describe the agreed SNPs differently" in stderr
        assert "alleles swapped" in stderr and "before any sum is sent" in stderr
    assert 3 in codes and not any((tmp_path / f"out{rank}.json").exists() for rank in range(3))


def test_party_processes_on_bed_files_wider_than_65536_snps_equal_mpc_pca_run(tmp_path):
    """70,000 SNPs between hosts (no id list sent), one site's .bim shuffled: mpc-pca run's answer exactly."""
    pytest.importorskip("bed_reader", reason="the genotype extra is not installed")
    from tests.helpers.genotypes import genotypes, write

    d, rows = 70_000, 12
    values = genotypes(3 * rows, d, seed=11)
    ids = [f"rs{j:06d}" for j in range(d)]  # id order is .bim order at sites 0 and 2
    shuffled = np.random.default_rng(2).permutation(d)
    files = [
        write(tmp_path / "a.bed", values[:rows], ids=ids),
        write(tmp_path / "b.bed", values[rows : 2 * rows][:, shuffled], ids=[ids[j] for j in shuffled]),
        write(tmp_path / "c.bed", values[2 * rows :], ids=ids),
    ]
    solver = ["--n-components", "2", "--iterated-power", "3", "--start-seed", "6", "-q"]
    all_succeed(run_parties(tmp_path, files, solver, timeout=600))
    out = [json.loads((tmp_path / f"out{rank}.json").read_text()) for rank in range(4)]
    run = [*solver, "--protocol", "pppca-randomized", "--output", str(tmp_path / "run.json")]
    assert cli(["run", "--data", *map(str, files), *run]) == 0
    threads = json.loads((tmp_path / "run.json").read_text())
    assert np.array_equal(np.asarray(out[3]["components"]), np.asarray(threads["components"]))
    assert out[3]["explained_variance"] == threads["explained_variance"]
    assert out[3]["feature_names"] is None and out[3]["feature_order"] == "snp_id"  # the server reads no .bim
    assert threads["feature_names"] == ids and all(out[i]["feature_names"] == ids for i in range(3))
    assert len(out[3]["snp_digests"]) == 2


def test_party_processes_with_iterates_sites_equal_the_threads_run(tmp_path):
    """``--iterates sites`` over TLS: provider0 leads the iterations (masked sums to it); the threads run's answer."""
    parts = split(gapped_rows(240, 24, seed=6), [90, 60, 90])
    files = []
    for i, part in enumerate(parts):
        files.append(tmp_path / f"site{i}.csv")
        np.savetxt(files[-1], part, delimiter=",", fmt="%.17g")
    solver = ["--n-components", "3", "--iterated-power", "20", "--tol", "1e-10", "--start-seed", "2",
              "--backend", "additive-masks", "--iterates", "sites", "-q"]  # fmt: skip
    all_succeed(run_parties(tmp_path, files, solver, ["--no-header"]))
    server = json.loads((tmp_path / "out3.json").read_text())
    settings = {"n_components": 3, "iterated_power": 20, "tol": 1e-10, "start_seed": 2,
                "backend": "additive-masks", "iterates": "sites"}  # fmt: skip
    threads = run_protocol(entry("pppca-randomized"), parts, settings)
    assert server["iterates"] == "sites" and server["solver"] == threads.output.solver.report()
    assert server["solver"]["stop"] == "tol"
    assert np.max(np.abs(np.asarray(server["components"]) - threads.output.components)) <= 1e-12
    assert (
        np.max(np.abs(np.asarray(server["explained_variance"]) - threads.output.explained_variance)) <= 1e-12
    )
    for rank in range(3):
        scores = np.asarray(json.loads((tmp_path / f"out{rank}.json").read_text())["scores"])
        assert np.allclose(scores, threads.run.outputs[f"provider{rank}"]["scores"], atol=1e-10)
