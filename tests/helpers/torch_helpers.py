"""Helpers for the tests that start parties as real processes (not collected by pytest)."""

from __future__ import annotations

import sys
from pathlib import Path

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
