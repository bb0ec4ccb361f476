"""Every DP protocol between organisations: each party its own process over TLS, as in-process.

For a fixed noise seed, :func:`mpc_pca.deploy.launch_local` (one process per
party, mutually authenticated TLS 1.3 links, settings agreed over them, each
child handed its :class:`~mpc_pca.deploy.PartySpec`) returns the JSON that
:func:`mpc_pca.deploy.run_threads` returns, field for field, and every
party's traffic (bytes, messages, rounds) is the same; ``run_threads`` in
turn equals the protocols' own in-process drivers
(``tests/dp/test_deployments.py``), and for capePCA this file also checks
the estimator directly. ``mpc-pca run --transport processes`` is the same
path from the command line.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpc_pca.cli import main
from mpc_pca.deploy import launch_local, run_threads
from mpc_pca.dp import CapePCA

#: protocol -> settings (small and fast; the same for both runs)
CASES: dict[str, dict[str, object]] = {
    "capepca": {"epsilon": 2.0, "delta": 1e-3},
    "dispca": {"epsilon": 2.0, "delta": 1e-3},
    "dispca-full": {"epsilon": 2.0, "delta": 1e-3},
    "ag": {"epsilon": 2.0, "delta": 1e-3},
    "pooled": {},
    "dpdpca": {"epsilon": 2.0, "delta": 1e-3},
    "pppca-dp": {"epsilon": 2.0, "delta": 1e-3},
    "capeagn": {"epsilon": 2.0, "delta": 1e-3, "model": "mog", "sigma": 0.3},
}
TRAFFIC = ("bytes_sent", "bytes_received", "messages_sent", "messages_received", "rounds")
NOISE_SEED = 20261125


@pytest.fixture(scope="module")
def parts() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(150, 5)) * np.array([3.0, 2.0, 1.0, 0.5, 0.2])
    X /= 1.05 * np.linalg.norm(X, axis=1).max()  # rows of norm < 1: nothing is clipped
    return [np.ascontiguousarray(p) for p in np.array_split(X, 3)]


def _without_timing(result: dict) -> tuple[dict, dict]:
    fields = {k: v for k, v in result.items() if k != "report"}
    traffic = {name: {k: rep[k] for k in TRAFFIC} for name, rep in result["report"].items()}
    return fields, traffic


@pytest.mark.parametrize("protocol", sorted(CASES))
def test_processes_over_tls_give_the_in_process_result_for_a_fixed_noise_seed(protocol, parts):
    settings = CASES[protocol]
    threads = run_threads(protocol, parts, settings, NOISE_SEED, timeout=60)
    processes = launch_local(protocol, parts, settings, noise_seed=NOISE_SEED, timeout=60, connect_timeout=30)
    got, got_traffic = _without_timing(processes)
    want, want_traffic = _without_timing(threads)
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    assert got_traffic == want_traffic
    assert set(processes["report"]) == set(threads["report"])  # every party ran, none more


def test_capepca_over_processes_equals_the_estimator(parts):
    processes = launch_local("capepca", parts, CASES["capepca"], noise_seed=NOISE_SEED, timeout=60)
    model = CapePCA(2, epsilon=2.0, delta=1e-3, random_state=NOISE_SEED).fit(parts)
    assert np.array_equal(np.asarray(processes["components"]), model.components_)
    assert np.array_equal(np.asarray(processes["explained_variance"]), model.explained_variance_)


def test_a_different_noise_seed_gives_other_noise(parts):
    a = launch_local("ag", parts, CASES["ag"], noise_seed=1, timeout=60)
    b = launch_local("ag", parts, CASES["ag"], noise_seed=2, timeout=60)
    assert not np.allclose(a["components"], b["components"])


def test_cli_runs_a_dp_protocol_as_processes(tmp_path, parts):
    files = []
    for i, part in enumerate(parts):
        path = tmp_path / f"h{i}.csv"
        np.savetxt(path, part, fmt="%.17g", delimiter=",")
        files.append(str(path))
    out = tmp_path / "result.json"
    argv = [
        "run",
        "--protocol",
        "capepca",
        "--data",
        *files,
        "--no-header",
        "--epsilon",
        "2",
        "--delta",
        "1e-3",
    ]
    argv += ["--noise-seed", str(NOISE_SEED), "--output", str(out)]
    assert main([*argv, "--transport", "processes"]) == 0
    over_processes = json.loads(out.read_text())
    assert main([*argv, "--force"]) == 0
    in_process = json.loads(out.read_text())
    assert np.array_equal(over_processes["components"], in_process["components"])
    differ = {
        key for key in set(over_processes) | set(in_process) if over_processes.get(key) != in_process.get(key)
    }
    assert differ <= {"report", "transport"}, differ  # the same JSON, captured_energy_ratio included
    assert set(over_processes["report"]) == {
        "provider0",
        "provider1",
        "provider2",
        "aggregator",
        "noise-generator",
    }
