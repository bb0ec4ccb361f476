"""Cost of the providers' check of the server's answer: per-provider rounds, bytes and messages.

PPPCA (Liu et al., AAAI 2020, Alg. 2) with a consumer, M = 3 providers, k = 2,
parties as threads of this process (``mpc_pca.threads.run_protocol``); the traffic is the
run's own report (:class:`protocols.runtime.runner.PartyReport`), which counts
every message of the run, so the check's cost is the difference from a tree
without it. Runs:

* ``wine``: scikit-learn's wine (178 x 13) with ``standardize=True``,
  ``reveal="covariance"``, on ``additive`` and ``additive-masks``;
* ``d=100``: 3,000 Gaussian rows (seed 0, spectrum ``100 / j``), covariance mode,
  same backends;
* ``wine components`` / ``wine spectrum``: standardized wine with the hidden
  modes (``additive``), where check 5 does not run.

Usage: ``PYTHONPATH=$PWD python -m benchmarks.bench_answer_check`` prints one
Markdown row per run (provider0's and provider1's rounds, bytes and messages
sent, and the server's bytes). The script imports only the driver and the backends, so
it also runs against an older tree (``PYTHONPATH=<that tree>``) for a
before/after comparison.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.datasets import load_wine

from mpc_pca.pppca.deployment import PPPCADeployment
from mpc_pca.threads import run_protocol
from protocols.backends import make_backend

#: Components kept in every run.
K = 2
#: Data providers.
PROVIDERS = 3


def synthetic(d: int, rows: int, seed: int = 0) -> np.ndarray:
    """``rows`` Gaussian rows in ``d`` columns with covariance spectrum ``100 / j`` in a random basis."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    scales = np.sqrt(100.0 / np.arange(1, d + 1))
    return np.asarray(rng.standard_normal((rows, d)) * scales @ basis.T + 5.0)


def runs() -> list[tuple[str, np.ndarray, str, dict[str, Any]]]:
    """``(label, data, backend, options)`` of every measured run."""
    wine = load_wine().data
    standardized = (wine - wine.mean(axis=0)) / wine.std(axis=0)
    wide = synthetic(100, 3000)
    cases: list[tuple[str, np.ndarray, str, dict[str, Any]]] = []
    for backend in ("additive", "additive-masks"):
        cases.append((f"wine, `{backend}`", wine, backend, {"standardize": True}))
    for backend in ("additive", "additive-masks"):
        cases.append((f"d = 100, `{backend}`", wide, backend, {}))
    for reveal in ("components", "spectrum"):
        cases.append((f"wine, `additive`, reveal={reveal}", standardized, "additive", {"reveal": reveal}))
    return cases


def measure(data: np.ndarray, backend: str, options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The per-party traffic report of one run."""
    parts = np.array_split(data, PROVIDERS)
    made = make_backend(backend)
    protocol = PPPCADeployment("pppca-ss", lambda _: made)
    run = run_protocol(protocol, parts, {"n_components": K, "backend": backend, **options}, timeout=60)
    return run.run.report_dict()


def row(label: str, report: dict[str, dict[str, Any]]) -> str:
    """One Markdown row: rounds, bytes sent / received and messages sent of provider0 and provider1, server bytes."""
    cells = [label]
    for name in ("provider0", "provider1"):
        r = report[name]
        cells += [
            f"{r['rounds']}",
            f"{r['bytes_sent']:,} / {r['bytes_received']:,}",
            f"{r['messages_sent']}",
        ]
    server = report["server"]
    cells.append(f"{server['bytes_sent']:,} / {server['bytes_received']:,}")
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    print(
        "| run | provider0 rounds | provider0 bytes sent / received | provider0 messages "
        "| provider1 rounds | provider1 bytes sent / received | provider1 messages | server bytes sent / received |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, data, backend, options in runs():
        print(row(label, measure(data, backend, options)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
