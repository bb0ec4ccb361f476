"""All-or-nothing outputs: no party of a process run writes a result or exits 0 unless every party finished.

Each test starts the five ``mpc-pca party`` processes of a 3-provider PPPCA
run on wine (TLS links, the test hosts the rendezvous as in
``tests/multiprocess/test_faults.py``), every one with ``--output``. One
provider is killed at a named point (``tests/helpers/quitting_party.py``);
every other party must then stop by itself within its deadline, exit with the
protocol-failure status, name the dead provider and leave no output file (nor
a temporary one) behind. The honest run is the control: all five exit 0 and
write their results. The final confirmation round is what makes the killed
runs fail (``protocols.transport.confirmation``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.cli.options import EXIT_PROTOCOL
from mpc_pca.deploy.local import PARTY_PRELOAD, child_environment, host_rendezvous
from mpc_pca.pppca.deployment import pppca_ranks
from protocols.backends.crypten_compat import crypten_available
from protocols.runtime.launcher import ProcessOutcome, PythonEntry, launch
from tests.helpers.torch_helpers import check_pppca_outputs, party_commands

QUITTING_PARTY = Path(__file__).resolve().parents[1] / "helpers" / "quitting_party.py"
#: Phase deadline of every party (seconds without progress); generous on a loaded 2-core machine.
TIMEOUT = 8.0
#: The launcher's grace after the first failure before it kills a party that did not end by itself.
GRACE = 5.0
#: Join window of the rendezvous and of every party: it starts before the five interpreters do and
#: must outlast their start-up at a load of 18 (33 s did not); a run whose parties all join ends no later.
JOIN = 120.0


def run_five(
    tmp_path: Path, wine: np.ndarray, quitting: dict[str, str] | None = None, backend: str = "additive"
) -> tuple[dict[str, ProcessOutcome], dict[str, Path], list[np.ndarray]]:
    """Run the five parties, ``quitting`` (name -> mode of quitting_party.py) as their own scripts.

    ``backend="crypten"``: the gloo path (``--insecure``, a store hosted here), every party its own interpreter.
    """
    parts = np.array_split(wine, 3)
    gloo = backend == "crypten"
    _keep, port = host_rendezvous(pppca_ranks(3), tmp_path, insecure=gloo, gloo=gloo, timeout=JOIN)
    commands, outputs = party_commands(
        tmp_path, parts, f"127.0.0.1:{port}", backend=backend, timeout=TIMEOUT, connect_timeout=JOIN - 3,
        tls_dir=None if gloo else tmp_path / "tls",
    )  # fmt: skip
    started: dict[str, list[str] | PythonEntry] = {}
    for name, command in commands.items():
        options = command[4:]  # after: python -m mpc_pca.cli party
        if quitting and name in quitting:
            started[name] = [sys.executable, str(QUITTING_PARTY), quitting[name], *options]
        elif gloo:
            started[name] = command  # torch and gloo are not fork-safe: a new interpreter
        else:
            started[name] = PythonEntry("mpc_pca.cli.app", "main", ("party", *options))
    outcomes = launch(started, timeout=TIMEOUT, env=child_environment(), grace=GRACE, preload=PARTY_PRELOAD)
    return outcomes, outputs, parts


def check_nothing_written(
    tmp_path: Path, outcomes: dict[str, ProcessOutcome], outputs: dict[str, Path], dead: str
) -> None:
    """Every party but ``dead`` ended by itself with status 4, naming ``dead``; no result file anywhere."""
    assert outcomes[dead].returncode == -9, outcomes[dead].stderr[
        -2000:
    ]  # killed (by itself or the launcher)
    for name, outcome in outcomes.items():
        assert not outputs[name].exists(), f"{name} wrote a result of a run that did not finish"
        if name == dead:
            continue
        assert outcome.returncode == EXIT_PROTOCOL, (name, outcome.returncode, outcome.stderr[-2000:])
        assert not outcome.killed_by_launcher, name
        # within its own deadline of the death (the launcher would have killed it after TIMEOUT + GRACE)
        assert outcome.seconds < outcomes[dead].seconds + TIMEOUT + 3, (name, outcome.seconds)
        line = outcome.error_line()
        assert f"'{dead}' (rank {pppca_ranks(3)[dead]})" in line, (name, line)
    leftovers = sorted(p.name for p in tmp_path.glob("*.json*")) + sorted(
        p.name for p in tmp_path.glob(".*.tmp")
    )
    assert leftovers == [], leftovers


def test_honest_run_writes_every_output_and_exits_0(tmp_path, wine):
    start = time.monotonic()
    outcomes, outputs, parts = run_five(tmp_path, wine)
    for name, outcome in outcomes.items():
        assert outcome.returncode == 0, (name, outcome.stderr[-2000:])
        assert outputs[name].exists(), name
    check_pppca_outputs(outputs, parts)
    assert time.monotonic() - start < 60


BACKENDS = [
    "additive",
    pytest.param(
        "crypten",
        marks=[
            pytest.mark.crypten,
            pytest.mark.torch,
            pytest.mark.skipif(not crypten_available(), reason="crypten is not installed"),
        ],
    ),
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_provider_killed_during_the_projection_leaves_no_output(tmp_path, wine, backend):
    """The issue's case: the server and providers 0 and 2 had finished their roles and exited 0 with results."""
    outcomes, outputs, _ = run_five(tmp_path, wine, {"provider1": "die-projecting"}, backend)
    check_nothing_written(tmp_path, outcomes, outputs, "provider1")
    for name in (
        "provider0",
        "provider2",
        "server",
    ):  # their roles were over: the confirmation round stops them
        assert "writes no result" in outcomes[name].error_line(), outcomes[name].error_line()
    if backend != "crypten":
        for name in ("provider0", "provider2", "server", "consumer"):
            assert "closed the connection" in outcomes[name].error_line(), outcomes[name].error_line()


@pytest.mark.parametrize("backend", BACKENDS)
def test_provider_killed_right_before_the_confirmation_round_leaves_no_output(tmp_path, wine, backend):
    """Everything it had to send was sent and every other party confirmed, but it never confirmed it finished."""
    outcomes, outputs, _ = run_five(tmp_path, wine, {"provider1": "die-before-confirming"}, backend)
    check_nothing_written(tmp_path, outcomes, outputs, "provider1")
    for name in ("provider0", "provider2", "server", "consumer"):
        line = outcomes[name].error_line()
        assert "writes no result" in line, (name, line)
        if backend != "crypten":
            assert "before confirming that it finished" in line, (name, line)


def test_provider_stalled_during_the_projection_is_named_and_nothing_is_written(tmp_path, wine):
    """It stops answering instead of dying: the consumer blames it at its deadline, the others quote that."""
    outcomes, outputs, _ = run_five(tmp_path, wine, {"provider1": "stall-projecting"})
    assert outcomes["provider1"].killed_by_launcher  # it never ends by itself
    check_nothing_written(tmp_path, outcomes, outputs, "provider1")
    line = outcomes["consumer"].error_line()
    assert "PeerTimeoutError" in line and "'provider1' (rank 1) did not send within the deadline" in line, (
        line
    )
    for name in ("provider0", "provider2", "server"):  # done with their roles, waiting for confirmations
        line = outcomes[name].error_line()
        assert "writes no result" in line and "did not send within the deadline" in line, (name, line)
        assert "'consumer' (rank 4) did not send" not in line, (name, line)
