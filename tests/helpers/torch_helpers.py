"""Helpers for the tests that start parties as real processes (not collected by pytest)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from mpc_pca.pppca.deployment import pppca_ranks

FAULTY_PARTY = Path(__file__).resolve().parent / "faulty_party.py"


def write_parts(directory: Path, parts: list[np.ndarray]) -> list[Path]:
    """Write each provider's rows to its own CSV (exact float64 round trip)."""
    paths = []
    for i, part in enumerate(parts):
        path = directory / f"provider{i}.csv"
        np.savetxt(path, part, fmt="%.17g", delimiter=",")
        paths.append(path)
    return paths


def party_commands(
    directory: Path,
    parts: list[np.ndarray],
    master: str,
    *,
    backend: str = "additive",
    timeout: float = 5.0,
    connect_timeout: float = 20.0,
    n_components: int = 2,
    external_store: bool = True,
    tls_dir: Path | None = None,
    faulty: dict[str, str] | None = None,
    python: tuple[str, ...] = (sys.executable,),
) -> tuple[dict[str, list[str]], dict[str, Path]]:
    """Command lines (``mpc-pca party``) of every party of a PPPCA run, and their output files.

    ``faulty`` maps a provider's name to a mode of ``tests/faulty_party.py``;
    ``tls_dir`` holds the parties' credentials (``None``: ``--insecure``).
    """
    faulty = faulty or {}
    ranks = pppca_ranks(len(parts))
    data = write_parts(directory, parts)
    commands, outputs = {}, {}
    for name, rank in ranks.items():
        role = "provider" if name.startswith("provider") else name
        outputs[name] = directory / f"{name}.json"
        options = [
            "--protocol", "pppca-ss", "--role", role, "--rank", str(rank),
            "--world-size", str(len(ranks)), "--master", master,
            "--n-components", str(n_components), "--backend", backend,
            "--timeout", str(timeout), "--connect-timeout", str(connect_timeout),
            "--output", str(outputs[name]),
        ]  # fmt: skip
        if external_store:
            options.append("--external-rendezvous")
        options += ["--insecure"] if tls_dir is None else ["--tls-dir", str(tls_dir)]
        if role == "provider":
            options += ["--data", str(data[rank]), "--no-header"]
        if name in faulty:
            commands[name] = [*python, str(FAULTY_PARTY), faulty[name], *options]
        else:
            commands[name] = [*python, "-m", "mpc_pca.cli", "party", *options]
    return commands, outputs


def check_pppca_outputs(outputs: dict[str, Path], parts: list[np.ndarray], n_components: int = 2) -> Any:
    """The server's and the consumer's JSON of a process run equal the in-process run on ``parts``.

    Returns the in-process :class:`~protocols.runtime.runner.RunResult` (per-party reports).
    """
    from protocols.backends.additive import AdditiveBackend
    from tests.helpers.pppca_threads import run_pppca

    server = json.loads(outputs["server"].read_text())
    model, _, reference = run_pppca(parts, n_components, AdditiveBackend(), with_consumer=True)
    assert np.allclose(server["components"], model.components, rtol=0, atol=1e-6)
    assert np.allclose(server["explained_variance"], model.explained_variance, rtol=1e-9)
    assert np.allclose(server["mean"], model.mean, rtol=0, atol=1e-9)
    consumer = json.loads(outputs["consumer"].read_text())
    from mpc_pca.pppca.deployment import read_projection

    labels, projected = read_projection(consumer["projection"])
    assert projected.shape == (sum(len(p) for p in parts), n_components)
    assert labels == [f"provider{i}" for i, p in enumerate(parts) for _ in range(len(p))]
    return reference
