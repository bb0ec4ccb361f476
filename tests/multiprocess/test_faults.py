"""Faults in a PPPCA run whose parties are processes: every survivor stops with a clear error.

Each test starts the five parties of a 3-provider run on loopback (the test
hosts the rendezvous store, as ``mpc-pca run --transport torch`` does), lets
one provider misbehave, and checks that every other party exits non-zero by
itself (the launcher never has to kill it), with a message that names what went
wrong, and that the server writes no result.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[torch]')")

from mpc_pca.pppca.distributed import child_environment
from protocols.backends.crypten_compat import crypten_available
from protocols.transport.launcher import ProcessOutcome, host_store, launch
from tests.helpers.torch_helpers import party_commands

pytestmark = pytest.mark.torch

TIMEOUT = 4.0


def run_faulty(
    tmp_path: Path,
    wine: np.ndarray,
    *,
    faulty: dict[str, str] | None = None,
    missing: tuple[str, ...] = (),
    backend: str = "additive",
    connect_timeout: float = 30.0,
) -> tuple[dict[str, ProcessOutcome], dict[str, Path], str | None]:
    parts = np.array_split(wine, 3)
    store, port = host_store(5, connect_timeout)
    commands, outputs = party_commands(
        tmp_path,
        parts,
        f"127.0.0.1:{port}",
        backend=backend,
        timeout=TIMEOUT,
        connect_timeout=connect_timeout,
        faulty=faulty,
    )
    for name in missing:
        del commands[name]
    outcomes = launch(commands, timeout=TIMEOUT, env=child_environment(), grace=3.0)
    from protocols.transport.launcher import recorded_failure

    return outcomes, outputs, recorded_failure(store)


def check_survivors(outcomes: dict[str, ProcessOutcome], culprit: str, outputs: dict[str, Path]) -> None:
    for name, outcome in outcomes.items():
        if name == culprit:
            continue
        assert outcome.returncode == 2, (name, outcome.returncode, outcome.stderr[-2000:])
        assert not outcome.killed_by_launcher, name
        assert outcome.error_line(), name
        assert not outputs[name].exists(), f"{name} wrote a result"
    assert not outputs["server"].exists()


def test_provider_killed_mid_protocol(tmp_path, wine):
    outcomes, outputs, _ = run_faulty(tmp_path, wine, faulty={"provider1": "die"})
    assert outcomes["provider1"].returncode == -9
    check_survivors(outcomes, "provider1", outputs)
    for name in ("provider0", "provider2"):
        assert "lost the link to 'provider1'" in outcomes[name].error_line()
    for name in ("server", "consumer"):
        line = outcomes[name].error_line()
        assert "PeerFailureError" in line and "'provider1'" in line, line


@pytest.mark.parametrize(
    "backend",
    [
        "additive",
        "additive-masks",
        pytest.param(
            "crypten",
            marks=[
                pytest.mark.crypten,
                pytest.mark.skipif(not crypten_available(), reason="crypten is not installed"),
            ],
        ),
    ],
)
def test_provider_sending_a_wrongly_shaped_array(tmp_path, wine, backend):
    outcomes, outputs, recorded = run_faulty(
        tmp_path, wine, faulty={"provider1": "bad-shape"}, backend=backend
    )
    assert outcomes["provider1"].returncode == 2
    check_survivors(outcomes, "provider1", outputs)
    assert recorded is not None and "shape" in recorded, recorded
    for name, outcome in outcomes.items():
        assert "shape" in outcome.error_line(), (name, outcome.error_line())


def test_provider_that_stops_responding_makes_everyone_time_out(tmp_path, wine):
    outcomes, outputs, recorded = run_faulty(tmp_path, wine, faulty={"provider1": "stall"})
    assert outcomes["provider1"].killed_by_launcher  # it never ends by itself
    check_survivors(outcomes, "provider1", outputs)
    for name in ("provider0", "provider2"):
        line = outcomes[name].error_line()
        assert line.startswith("PeerTimeoutError") and "'provider1' (rank 1)" in line, line
    # Whoever times out first is recorded (the consumer waits on provider0 all along).
    assert recorded is not None and "PeerTimeoutError" in recorded, recorded


def test_provider_that_never_connects(tmp_path, wine):
    outcomes, outputs, _ = run_faulty(tmp_path, wine, missing=("provider2",), connect_timeout=4.0)
    assert set(outcomes) == {"provider0", "provider1", "server", "consumer"}
    check_survivors(outcomes, "provider2", outputs)
    for outcome in outcomes.values():
        line = outcome.error_line()
        assert line.startswith("PeerTimeoutError") and "'provider2' (rank 2) did not join" in line, line


def test_party_started_with_other_settings_is_reported_by_everyone(tmp_path, wine):
    _store, port = host_store(5, 30)  # keep a reference: the store lives as long as this object
    commands, outputs = party_commands(
        tmp_path, np.array_split(wine, 3), f"127.0.0.1:{port}", timeout=TIMEOUT
    )
    index = commands["provider2"].index("--n-components")
    commands["provider2"][index + 1] = "3"
    outcomes = launch(commands, timeout=TIMEOUT, env=child_environment(), grace=3.0)
    for name, outcome in outcomes.items():
        assert outcome.returncode == 2, name
        assert "disagree on n_components" in outcome.error_line() and "'provider2': 3" in outcome.error_line()
    assert not outputs["server"].exists()
