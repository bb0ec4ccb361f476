"""Dropout mode against an equivocating server and real drops (issue 35): ``mpc-pca party`` processes.

Five providers, a server and a consumer, each its own ``mpc-pca party``
process over TLS, ``--backend additive-masks --dropout-threshold 3``. The
processes run by :mod:`tests.helpers.dropout_party` either equivocate (the
server) or die with ``SIGKILL`` at a named phase of the dropout-tolerant sum
(a provider).

* The equivocating server tells ``provider0-2`` that only they survived and
  ``provider3-4`` that everybody did (the attack of issue 35 at an allowed
  threshold): every honest party exits 4 within its deadline, the providers
  naming the server, nobody writes an output and no provider sent a share.
* A provider killed before its masked input (during the keys and shares,
  right before its input, or when it computes its Gram-matrix contribution)
  is left out: the run completes over the other four. (Before issue 35 the
  Gram matrix went in a second, intolerant sum, and a drop there ended the run.)
  Killed after its masked input counted (survivor agreement, unmasking, after
  the sum): every other party exits 4 naming it, nothing is written.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.cli.options import EXIT_PROTOCOL
from mpc_pca.deploy.local import child_environment, host_rendezvous
from mpc_pca.pppca.deployment import pppca_ranks
from protocols.runtime.launcher import launch
from tests.helpers.torch_helpers import party_commands

pytestmark = pytest.mark.slow

DROPOUT_PARTY = Path(__file__).resolve().parents[1] / "helpers" / "dropout_party.py"
TIMEOUT = 20.0
CONNECT = 30.0
N_PROVIDERS = 5
PROVIDERS = tuple(f"provider{i}" for i in range(N_PROVIDERS))


@pytest.fixture(scope="module")
def wine_parts() -> list[np.ndarray]:
    from sklearn.datasets import load_wine

    return np.array_split(np.asarray(load_wine().data, dtype=np.float64), N_PROVIDERS)


def _run(tmp_path: Path, parts: list[np.ndarray], helper: dict[str, list[str]], timeout: float = TIMEOUT):
    """Run the seven parties (phase deadline ``timeout``); ``helper[name]`` runs ``name`` through the helper."""
    _keep, port = host_rendezvous(
        pppca_ranks(N_PROVIDERS), tmp_path, insecure=False, gloo=False, timeout=CONNECT + 5
    )
    commands, outputs = party_commands(
        tmp_path, parts, f"127.0.0.1:{port}", backend="additive-masks", timeout=timeout,
        connect_timeout=CONNECT, tls_dir=tmp_path / "tls",
    )  # fmt: skip
    for name, command in commands.items():
        command += ["--dropout-threshold", "3"]
        if name in helper:
            options = command[command.index("party") + 1 :]
            commands[name] = [sys.executable, str(DROPOUT_PARTY), *helper[name], *options]
    started = time.monotonic()
    outcomes = launch(commands, timeout=timeout, env=child_environment(), grace=CONNECT)
    return outcomes, outputs, time.monotonic() - started


def test_an_equivocating_server_is_named_by_every_provider_and_nothing_is_written(tmp_path, wine_parts):
    told_alone = "provider0,provider1,provider2"
    outcomes, outputs, _ = _run(tmp_path, wine_parts, {"server": ["--equivocate", told_alone]})
    for name in (*PROVIDERS, "consumer"):
        outcome = outcomes[name]
        assert outcome.returncode == EXIT_PROTOCOL, (name, outcome.returncode, outcome.stderr[-3000:])
        assert not outcome.killed_by_launcher, name
        assert "Traceback" not in outcome.stderr, (name, outcome.stderr[-3000:])
        assert "'server'" in outcome.error_line(), (name, outcome.error_line())
    for name in PROVIDERS:
        line = outcomes[name].error_line()
        assert "'server' equivocated" in line or "'server' is the source of the disagreement" in line, (
            name,
            line,
        )
    for path in outputs.values():
        assert not path.exists(), f"{path.name} was written"


def _killed_at(tmp_path, parts, phase: str):
    outcomes, outputs, seconds = _run(tmp_path, parts, {"provider2": ["--die-at", phase]})
    assert outcomes["provider2"].returncode == -9, outcomes["provider2"].stderr[-2000:]
    assert f"dropout_party: dying at {phase}" in outcomes["provider2"].stderr
    return outcomes, outputs, seconds


@pytest.mark.parametrize("phase", ["keys", "input", "gram"])
def test_a_provider_killed_before_its_masked_input_is_left_out(tmp_path, wine_parts, phase):
    import json

    outcomes, outputs, _ = _killed_at(tmp_path, wine_parts, phase)
    for name, outcome in outcomes.items():
        if name != "provider2":
            assert outcome.ok, (name, outcome.stderr[-3000:])
    server = json.loads(outputs["server"].read_text())
    assert server["dropped_providers"] == ["provider2"]
    assert server["n_samples"] == sum(len(p) for i, p in enumerate(wine_parts) if i != 2)
    assert not outputs["provider2"].exists()


@pytest.mark.parametrize("phase", ["agreement", "unmasking", "after"])
def test_a_provider_killed_after_its_masked_input_counted_ends_the_run_naming_it(tmp_path, wine_parts, phase):
    outcomes, outputs, _ = _killed_at(tmp_path, wine_parts, phase)
    # After the sum the server needs nothing more from provider2: it too ends non-zero and writes
    # nothing because provider2 never confirms the end of the run (all-or-nothing outputs).
    honest = ("provider0", "provider1", "provider3", "provider4", "consumer", "server")
    for name in honest:
        outcome = outcomes[name]
        line = outcome.error_line()
        assert outcome.returncode == EXIT_PROTOCOL, (name, outcome.returncode, outcome.stderr[-3000:])
        assert not outcome.killed_by_launcher, name
        assert "Traceback" not in outcome.stderr, (name, outcome.stderr[-3000:])
        assert "provider2" in line, (name, line)
    for path in outputs.values():
        assert not path.exists(), f"{path.name} was written"


@pytest.mark.parametrize(("seconds", "dropped", "timeout"), [(7, [], 20.0), (60, ["provider2"], 40.0)])
def test_a_provider_stopped_while_dealing_and_resumed_does_not_fail_the_run(
    tmp_path, wine_parts, seconds, dropped, timeout
):
    """SIGSTOP after its keys reached provider0-1, SIGCONT later (issue 35's stall-and-resume failure).

    provider3-4 give up on its keys after a quarter of the phase deadline (5 s of 20 s); the server
    waits half of it for masked inputs, a deadline others' progress does not stretch (a wait for an
    excused party, protocols.transport.socket_channel). Resumed at 7 s it is counted (its masks with
    provider3-4 are opened as one-sided). Left out: the sum lasts three quarters of the phase
    deadline (the server's half, then the providers' quarter waiting for the outsider's
    confirmation), while the consumer waits for the server through all of it, and a STATUS restarts
    no deadline. With the server's wait stretched by provider3-4's late inputs the sum lasted the
    whole deadline and a loaded CI run lost the race (stop 43). The phase deadline is 40 s, a 10 s
    margin, and provider2 resumes at 60 s, when the others are done with the sum.
    """
    import json

    outcomes, outputs, _ = _run(
        tmp_path, wine_parts, {"provider2": ["--die-at", f"stall:{seconds}"]}, timeout=timeout
    )
    assert "dropout_party: resumed" in outcomes["provider2"].stderr
    for name, outcome in outcomes.items():
        if name != "provider2" or not dropped:
            assert outcome.ok, (name, outcome.stderr[-3000:])
    # Resumed after the others finished, provider2 finds their links closed: it may end with an
    # error of its own (never a traceback), and writes nothing but its "dropped" result if anything.
    assert "Traceback" not in outcomes["provider2"].stderr
    if dropped and outputs["provider2"].exists():
        assert json.loads(outputs["provider2"].read_text())["dropped"] is True
    server = json.loads(outputs["server"].read_text())
    assert server["dropped_providers"] == dropped
    rows = sum(len(p) for i, p in enumerate(wine_parts) if f"provider{i}" not in dropped)
    assert server["n_samples"] == rows
