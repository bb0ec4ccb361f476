"""The trusted-curator protocol behind the centralized DP baselines.

Each provider sends its row count and the upper triangle of ``X_s^T X_s`` to
the curator, which pools ``A = X^T X / N`` (no centring, as in the papers),
applies a mechanism and sends the components back. The protocol object
that runs these roles is :class:`~mpc_pca.dp.curator_deploy.CuratorDeployment`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.dp.common import CURATOR, expect_count, expect_symmetric
from mpc_pca.linalg import upper_triangle
from mpc_pca.roles import provider_names
from protocols.errors import ProtocolError
from protocols.messages import expect_real_array
from protocols.party import Party


@dataclass(frozen=True)
class Release:
    """What a curator's mechanism releases, and what it reports about itself.

    Attributes
    ----------
    components : ndarray of shape (K, D)
    explained_variance : ndarray of shape (K,)
    fitted : dict
        Fitted estimator attributes the mechanism determined (e.g.
        ``noise_scale_``), stored on the estimator after the run by its
        ``fit``, never by the curator's thread.
    """

    components: NDArray[np.float64]
    explained_variance: NDArray[np.float64]
    fitted: dict[str, Any] = field(default_factory=dict)


#: A curator mechanism: ``(A, N, rng) -> Release`` on the pooled second-moment matrix.
Mechanism = Callable[[NDArray[np.float64], int, np.random.Generator], Release]


@dataclass(frozen=True)
class CuratorConfig:
    """What every party agrees on before a centralized run."""

    n_parties: int
    n_features: int
    n_components: int

    @property
    def providers(self) -> tuple[str, ...]:
        return provider_names(self.n_parties)


@dataclass
class CuratorModel:
    """The curator's output."""

    components: NDArray[np.float64]
    explained_variance: NDArray[np.float64]
    n_samples: int
    fitted: dict[str, Any] = field(default_factory=dict)


def provider_role(party: Party, data: NDArray[np.float64], config: CuratorConfig) -> NDArray[np.float64]:
    """Provider: send ``N_s`` and the Gram matrix to the trusted curator; receive the components."""
    party.send(CURATOR, {"n_samples": int(data.shape[0]), "gram": upper_triangle(data.T @ data)})
    return expect_real_array(party.recv(CURATOR), CURATOR, (config.n_components, config.n_features))


def curator_role(
    party: Party, config: CuratorConfig, mechanism: Mechanism, rng: np.random.Generator
) -> CuratorModel:
    """Trusted curator: pool ``A = sum_s X_s^T X_s / N``, apply the mechanism, release the components."""
    d = config.n_features
    total = np.zeros((d, d))
    n = 0
    for provider in config.providers:
        message = party.recv(provider)
        if not isinstance(message, dict) or set(message) != {"n_samples", "gram"}:
            raise ProtocolError(f"{provider} sent a malformed message")
        n += expect_count(message["n_samples"], provider)
        total += expect_symmetric(message["gram"], provider, d)
    release = mechanism(total / n, n, rng)
    for provider in config.providers:
        party.send(provider, release.components)
    return CuratorModel(release.components, release.explained_variance, n, release.fitted)
