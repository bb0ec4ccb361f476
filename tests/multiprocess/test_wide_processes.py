"""pppca-randomized with every party its own process over TLS gives the threads run's answer exactly."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.deploy import launch_local
from mpc_pca.registry import entry
from mpc_pca.threads import run_protocol
from tests.wide.helpers import gapped_rows, split


def test_processes_over_tls_equal_the_threads_run():
    parts = split(gapped_rows(500, 40, seed=3), [100, 2, 398])
    settings = {"n_components": 3, "iterated_power": 30, "tol": 1e-10, "start_seed": 4, "standardize": True}
    result = launch_local("pppca-randomized", parts, settings, timeout=120)
    threads = run_protocol(entry("pppca-randomized"), parts, settings).output
    assert np.array_equal(np.asarray(result["components"]), threads.components)
    assert np.array_equal(np.asarray(result["explained_variance"]), threads.explained_variance)
    assert result["solver"] == threads.solver.report() and result["solver"]["stop"] == "tol"


def test_party_processes_stream_their_csv_files_in_chunks_and_equal_the_threads_run(tmp_path):
    import json
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    import pandas as pd

    from mpc_pca.cli import main as cli

    root = Path(__file__).resolve().parents[2]
    parts = split(gapped_rows(300, 30, seed=5), [120, 180])
    files = []
    for i, part in enumerate(parts):
        path = tmp_path / f"site{i}.csv"
        pd.DataFrame(part, columns=[f"c{j}" for j in range(30)]).to_csv(
            path, index=False, float_format="%.17g"
        )
        files.append(path)
    assert cli(["certs", "--parties", "provider0,provider1,server", "--out", str(tmp_path / "tls")]) == 0
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        master = f"127.0.0.1:{sock.getsockname()[1]}"
    solver = ["--n-components", "3", "--iterated-power", "30", "--tol", "1e-10", "--start-seed", "8"]
    processes = []
    for rank in range(3):
        argv = [sys.executable, "-m", "mpc_pca", "party", "--protocol", "pppca-randomized", "--rank", str(rank),
                "--world-size", "3", "--master", master, "--tls-dir", str(tmp_path / "tls"), "-q", *solver,
                "--output", str(tmp_path / f"out{rank}.json")]  # fmt: skip
        if rank < 2:
            argv += ["--data", str(files[rank]), "--chunk-rows", "37"]
        env = {**os.environ, "PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1"}
        processes.append(
            subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        )
    for process in processes:
        _, stderr = process.communicate(timeout=180)
        assert process.returncode == 0, stderr.decode()
    server = json.loads((tmp_path / "out2.json").read_text())
    settings = {"n_components": 3, "iterated_power": 30, "tol": 1e-10, "start_seed": 8}
    threads = run_protocol(entry("pppca-randomized"), parts, settings)
    assert np.max(np.abs(np.asarray(server["components"]) - threads.output.components)) <= 1e-12
    for rank in range(2):
        scores = np.asarray(json.loads((tmp_path / f"out{rank}.json").read_text())["scores"])
        assert np.allclose(scores, threads.run.outputs[f"provider{rank}"]["scores"], atol=1e-10)


def test_party_processes_on_bed_files_with_swapped_alleles_all_stop_before_any_sum(tmp_path):
    """Over TLS, provider1's .bim counts the other allele: every party stops naming it, none writes a result."""
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("bed_reader", reason="the genotype extra is not installed")
    from mpc_pca.cli import main as cli
    from tests.helpers.genotypes import genotypes, write

    root = Path(__file__).resolve().parents[2]
    values = genotypes(30, 12, seed=7)
    files = [
        write(tmp_path / "a.bed", values[:20]),
        write(tmp_path / "b.bed", values[20:], alleles=("G", "A")),
    ]
    assert cli(["certs", "--parties", "provider0,provider1,server", "--out", str(tmp_path / "tls")]) == 0
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        master = f"127.0.0.1:{sock.getsockname()[1]}"
    processes = []
    for rank in range(3):
        argv = [sys.executable, "-m", "mpc_pca", "party", "--protocol", "pppca-randomized", "--rank", str(rank),
                "--world-size", "3", "--master", master, "--tls-dir", str(tmp_path / "tls"), "-q",
                "--n-components", "2", "--output", str(tmp_path / f"out{rank}.json")]  # fmt: skip
        if rank < 2:
            argv += ["--data", str(files[rank]), "--chunk-rows", "8"]
        env = {**os.environ, "PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1"}
        processes.append(
            subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        )
    codes = []
    for process in processes:
        _, stderr = process.communicate(timeout=180)
        codes.append(process.returncode)  # 3: refused it itself; 4: a peer's refusal reached it first
        assert process.returncode in (3, 4), stderr.decode()
        assert "provider1's .bim and provider0's describe the agreed SNPs differently" in stderr.decode()
        assert "alleles swapped" in stderr.decode() and "before any sum is sent" in stderr.decode()
    assert 3 in codes and not any((tmp_path / f"out{rank}.json").exists() for rank in range(3))


def test_party_processes_on_bed_files_wider_than_65536_snps_equal_mpc_pca_run(tmp_path):
    """70,000 SNPs between hosts (no id list sent), one site's .bim shuffled: mpc-pca run's answer exactly."""
    import json
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("bed_reader", reason="the genotype extra is not installed")
    from mpc_pca.cli import main as cli
    from tests.helpers.genotypes import genotypes, write

    root = Path(__file__).resolve().parents[2]
    d, rows = 70_000, 12
    values = genotypes(3 * rows, d, seed=11)
    ids = [f"rs{j:06d}" for j in range(d)]  # id order is .bim order at sites 0 and 2
    shuffled = np.random.default_rng(2).permutation(d)
    files = [
        write(tmp_path / "a.bed", values[:rows], ids=ids),
        write(tmp_path / "b.bed", values[rows : 2 * rows][:, shuffled], ids=[ids[j] for j in shuffled]),
        write(tmp_path / "c.bed", values[2 * rows :], ids=ids),
    ]
    parties = "provider0,provider1,provider2,server"
    assert cli(["certs", "--parties", parties, "--out", str(tmp_path / "tls")]) == 0
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        master = f"127.0.0.1:{sock.getsockname()[1]}"
    solver = ["--n-components", "2", "--iterated-power", "3", "--start-seed", "6", "-q"]
    processes = []
    for rank in range(4):
        argv = [sys.executable, "-m", "mpc_pca", "party", "--protocol", "pppca-randomized", "--rank", str(rank),
                "--world-size", "4", "--master", master, "--tls-dir", str(tmp_path / "tls"), *solver,
                "--output", str(tmp_path / f"out{rank}.json")]  # fmt: skip
        if rank < 3:
            argv += ["--data", str(files[rank])]
        env = {**os.environ, "PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1"}
        processes.append(
            subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        )
    for process in processes:
        _, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr.decode()
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
    import json
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    from mpc_pca.cli import main as cli

    root = Path(__file__).resolve().parents[2]
    parts = split(gapped_rows(240, 24, seed=6), [90, 60, 90])
    files = []
    for i, part in enumerate(parts):
        files.append(tmp_path / f"site{i}.csv")
        np.savetxt(files[-1], part, delimiter=",", fmt="%.17g")
    parties = "provider0,provider1,provider2,server"
    assert cli(["certs", "--parties", parties, "--out", str(tmp_path / "tls")]) == 0
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        master = f"127.0.0.1:{sock.getsockname()[1]}"
    solver = ["--n-components", "3", "--iterated-power", "20", "--tol", "1e-10", "--start-seed", "2",
              "--backend", "additive-masks", "--iterates", "sites"]  # fmt: skip
    processes = []
    for rank in range(4):
        argv = [sys.executable, "-m", "mpc_pca", "party", "--protocol", "pppca-randomized", "--rank", str(rank),
                "--world-size", "4", "--master", master, "--tls-dir", str(tmp_path / "tls"), "-q", *solver,
                "--output", str(tmp_path / f"out{rank}.json")]  # fmt: skip
        if rank < 3:
            argv += ["--data", str(files[rank]), "--no-header"]
        env = {**os.environ, "PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1"}
        processes.append(
            subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        )
    for process in processes:
        _, stderr = process.communicate(timeout=180)
        assert process.returncode == 0, stderr.decode()
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
