"""Survive a dropped provider (issue 26): ``mpc-pca party`` processes, one provider SIGKILLed mid-sum.

Five providers, a server and a consumer, each its own ``mpc-pca party``
process over TLS, with ``--backend additive-masks --dropout-threshold T``.
The providers run by :mod:`tests.helpers.dropout_party` deal their keys and
Shamir shares, then kill themselves with ``SIGKILL`` right before their
masked input of the mean secure sum.

* ``T = 3``, one killed: the run completes over the other four, every output
  names the dropped provider, and the model is the four survivors' PCA (the
  in-process 4-provider run, and scikit-learn on their rows).
* ``T = 4``, two killed: every surviving party ends with the protocol-error
  exit code, naming both; no output is written and no share was revealed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.cli.options import EXIT_PROTOCOL
from mpc_pca.deploy.local import child_environment, host_rendezvous
from mpc_pca.pppca.deployment import pppca_ranks, read_projection
from protocols.runtime.launcher import launch
from tests.helpers.torch_helpers import party_commands

pytestmark = pytest.mark.slow

DROPOUT_PARTY = Path(__file__).resolve().parents[1] / "helpers" / "dropout_party.py"
TIMEOUT = 20.0
CONNECT = 30.0
N_PROVIDERS = 5


@pytest.fixture(scope="module")
def wine_parts() -> list[np.ndarray]:
    from sklearn.datasets import load_wine

    return np.array_split(np.asarray(load_wine().data, dtype=np.float64), N_PROVIDERS)


def _run(tmp_path: Path, parts: list[np.ndarray], threshold: int, killed: tuple[str, ...]):
    _keep, port = host_rendezvous(
        pppca_ranks(N_PROVIDERS), tmp_path, insecure=False, gloo=False, timeout=CONNECT + 5
    )
    commands, outputs = party_commands(
        tmp_path, parts, f"127.0.0.1:{port}", backend="additive-masks", timeout=TIMEOUT,
        connect_timeout=CONNECT, tls_dir=tmp_path / "tls",
    )  # fmt: skip
    for name, command in commands.items():
        command += ["--dropout-threshold", str(threshold)]
        if name in killed:
            options = command[command.index("party") + 1 :]
            commands[name] = [sys.executable, str(DROPOUT_PARTY), *options]
    outcomes = launch(commands, timeout=TIMEOUT, env=child_environment(), grace=CONNECT)
    for name in killed:
        assert outcomes[name].returncode == -9, (name, outcomes[name].stderr[-2000:])
        assert "dropout_party: dying at input" in outcomes[name].stderr
    return outcomes, outputs


def test_a_provider_killed_after_dealing_is_dropped_and_the_run_completes_over_four(tmp_path, wine_parts):
    from sklearn.decomposition import PCA

    from protocols.backends.additive import AdditiveBackend
    from tests.helpers.pppca_threads import run_pppca

    outcomes, outputs = _run(tmp_path, wine_parts, threshold=3, killed=("provider2",))
    for name, outcome in outcomes.items():
        if name != "provider2":
            assert outcome.ok, (name, outcome.stderr[-3000:])
    survivors = [part for i, part in enumerate(wine_parts) if i != 2]
    rows = np.vstack(survivors)
    server = json.loads(outputs["server"].read_text())
    assert server["dropped_providers"] == ["provider2"]
    assert server["n_samples"] == rows.shape[0]
    model, _, _ = run_pppca(survivors, 2, AdditiveBackend("masks"), with_consumer=False)
    assert np.allclose(server["mean"], model.mean, rtol=0, atol=1e-9)
    assert np.allclose(server["explained_variance"], model.explained_variance, rtol=1e-9)
    assert np.allclose(server["components"], model.components, rtol=0, atol=1e-6)
    reference = PCA(2).fit(rows)
    assert np.allclose(server["explained_variance"], reference.explained_variance_, rtol=1e-6)
    assert np.allclose(np.abs(server["components"]), np.abs(reference.components_), atol=1e-5)
    consumer = json.loads(outputs["consumer"].read_text())
    assert consumer["dropped_providers"] == ["provider2"]
    labels, projection = read_projection(consumer["projection"])
    assert projection.shape == (rows.shape[0], 2)
    assert sorted(set(labels)) == ["provider0", "provider1", "provider3", "provider4"]
    for name in ("provider0", "provider1", "provider3", "provider4"):
        result = json.loads(outputs[name].read_text())
        assert result["dropped_providers"] == ["provider2"] and result["dropped"] is False, name
    assert not outputs["provider2"].exists()


def test_two_killed_below_the_threshold_fail_cleanly_naming_both(tmp_path, wine_parts):
    outcomes, outputs = _run(tmp_path, wine_parts, threshold=4, killed=("provider1", "provider3"))
    for name in ("provider0", "provider2", "provider4", "server", "consumer"):
        outcome = outcomes[name]
        line = outcome.error_line()
        assert outcome.returncode == EXIT_PROTOCOL, (name, outcome.returncode, outcome.stderr[-3000:])
        assert not outcome.killed_by_launcher, name
        assert "Traceback" not in outcome.stderr, (name, outcome.stderr[-3000:])
        assert "DropoutError" in line and "['provider1', 'provider3']" in line, (name, line)
        assert "below the threshold 4" in line and "no share was revealed" in line, (name, line)
    for path in outputs.values():
        assert not path.exists(), f"{path.name} was written"
