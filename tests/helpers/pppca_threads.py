"""PPPCA's protocol object as threads, returning what the tests compare: the model, the projection, the reports.

A reference for the process and host runs: the same
:class:`~mpc_pca.pppca.deployment.PPPCADeployment` run by
:func:`mpc_pca.threads.run_protocol` (no second implementation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.deployment import PPPCADeployment
from mpc_pca.pppca.protocol import PPPCAModel
from mpc_pca.threads import run_protocol
from protocols.backends import SecureSumBackend
from protocols.runtime import RunResult


def run_pppca(
    parts: list[Any],
    n_components: int | float | str | None,
    backend: SecureSumBackend,
    *,
    with_consumer: bool = False,
    timeout: float = 120.0,
    **settings: Any,
) -> tuple[PPPCAModel, NDArray[np.float64] | None, RunResult]:
    """Run PPPCA on ``parts`` as threads: the server's model, the consumer's rows (or ``None``), the reports."""
    name = "pppca-he" if backend.name == "paillier" else "pppca-ss"
    protocol = PPPCADeployment(name, lambda _: backend, with_consumer=with_consumer)
    run = run_protocol(
        protocol, parts, {"n_components": n_components, "backend": backend.name, **settings}, timeout=timeout
    )
    return run.output, protocol.projection(run.layout, run.run.outputs), run.run
