"""What every party of a PPPCA run agrees on, the phases it runs, and what the server computes.

:class:`PPPCAConfig` (the public settings of one run), :class:`PPPCAModel`
(the server's result in step 8), the phase names the parties log and
announce, and :func:`mean_backend`, the backend of step 1's secure sum. The
role functions are in :mod:`mpc_pca.pppca.protocol` (providers, consumer) and
:mod:`mpc_pca.pppca.server`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.components import ComponentsSettings
from mpc_pca.roles import provider_names
from protocols.backends import AdditiveBackend, SecureSumBackend
from protocols.backends.dropout_agreement import check_dropout_threshold
from protocols.errors import InputValidationError

#: Phases of a run, as parties log them and announce them to their peers.
PHASE_MEAN = "mean secure sum"
PHASE_GRAM = "Gram secure sum"
PHASE_EIGENSOLVE = "eigensolve on shares"
PHASE_PROJECTION = "projection"


@dataclass(frozen=True)
class PPPCAConfig:
    """What every party agrees on before a PPPCA run."""

    n_parties: int
    n_features: int
    n_components: int
    with_consumer: bool = False
    #: Agreed per-column binary exponents ``E`` (:mod:`mpc_pca.pppca.scaling`); ``None``: all zero.
    column_exponents: tuple[int, ...] | None = None
    #: Eigendecompose the covariance of the standardized rows (:mod:`mpc_pca.pppca.standardize`).
    standardize: bool = False
    #: ``"covariance"`` (the paper) or ``"components"`` (eigensolve on shares,
    #: :mod:`mpc_pca.pppca.components`; no column scaling, no standardization).
    reveal: str = "covariance"
    components: ComponentsSettings = field(default_factory=ComponentsSettings)
    #: The row count each provider announced, in provider order (``None``: nothing announced,
    #: the in-process run). The server checks their sum against the secure sum's ``N``.
    announced_rows: tuple[int, ...] | None = None
    #: ``reveal="covariance"`` only: the server chooses ``k`` from the whole spectrum, by a
    #: variance fraction in (0, 1) or ``"mle"`` (:func:`mpc_pca.linalg.selected_eigenpairs`);
    #: ``n_components`` is then the largest ``k`` allowed, and the providers learn ``k`` from T.
    select: float | str | None = None
    #: Survive providers that drop (:mod:`protocols.backends.dropout`): the threshold ``t``
    #: (``2 t > M``) of the one dropout-tolerant sum's Shamir-shared mask seeds
    #: (:mod:`mpc_pca.pppca.dropout_payload`); ``None``: every provider must deliver.
    dropout_threshold: int | None = None
    #: Seconds the server waits for the providers' masked inputs (default: half its phase deadline).
    dropout_timeout: float | None = None
    #: The providers dropped in the dropout-tolerant sum (set by every party once it learns them).
    dropped: tuple[str, ...] = ()

    @property
    def transfer_width(self) -> int | None:
        """Columns of the ``T`` the providers expect; ``None`` when the server chooses ``k``."""
        return self.n_components if self.select is None else None

    @property
    def providers(self) -> tuple[str, ...]:
        """The providers that take part (every one, minus those dropped in the mean secure sum)."""
        return tuple(p for p in provider_names(self.n_parties) if p not in self.dropped)

    @property
    def exponents(self) -> tuple[int, ...]:
        """The column exponents, zeros when none were agreed."""
        return (0,) * self.n_features if self.column_exponents is None else self.column_exponents


@dataclass
class PPPCAModel:
    """What the server computes in step 8."""

    mean: NDArray[np.float64]
    n_samples: int
    components: NDArray[np.float64]
    explained_variance: NDArray[np.float64]
    total_variance: float
    variance_error_bound: float
    component_error_bounds: NDArray[np.float64]
    #: Pooled standard deviations the columns were divided by (ones unless standardized).
    scale: NDArray[np.float64] | None = None
    #: ``reveal="components"`` only: the iteration plan and operation counts used.
    secure_eigensolve: dict[str, Any] | None = None
    #: With dropout tolerance: the providers whose rows are not in the model (``None``: not enabled).
    dropped_providers: tuple[str, ...] | None = None

    @property
    def explained_variance_ratio(self) -> NDArray[np.float64]:
        """Share of the total variance each kept component explains."""
        if self.total_variance <= 0:
            return np.zeros_like(self.explained_variance)
        return self.explained_variance / self.total_variance

    def result_fields(self) -> dict[str, Any]:
        """The JSON fields ``mpc-pca run`` writes for this model."""
        return {
            "components": self.components.tolist(),
            "explained_variance": self.explained_variance.tolist(),
            "explained_variance_ratio": self.explained_variance_ratio.tolist(),
            "mean": self.mean.tolist(),
            "n_samples": self.n_samples,
            "variance_error_bound": self.variance_error_bound,
            "component_error_bounds": self.component_error_bounds.tolist(),
            **({} if self.scale is None else {"scale": self.scale.tolist()}),
            **({} if self.secure_eigensolve is None else {"secure_eigensolve": self.secure_eigensolve}),
            **({} if self.dropped_providers is None else {"dropped_providers": list(self.dropped_providers)}),
        }


def mean_backend(backend: SecureSumBackend, config: PPPCAConfig) -> SecureSumBackend:
    """The backend of step 1's secure sum: ``backend`` itself, or its dropout-tolerant variant.

    With ``config.dropout_threshold`` (checked: ``2 t > M``) the one sum of
    ``[column sums, row count, Gram matrix]`` survives providers that drop
    (:mod:`protocols.backends.dropout`, :mod:`mpc_pca.pppca.dropout_payload`);
    the answer check then runs over the providers it counted, where a drop
    ends the run as before.
    """
    if config.dropout_threshold is None:
        return backend
    check_dropout_threshold(config.dropout_threshold, config.n_parties)  # 2 t > M, before anything is sent
    if not isinstance(backend, AdditiveBackend) or backend.mode != "masks":
        raise InputValidationError(
            f"dropout_threshold needs the additive-masks backend, not {getattr(backend, 'name', backend)!r}"
        )
    return AdditiveBackend(
        "masks",
        backend.codec,
        dropout_threshold=config.dropout_threshold,
        dropout_timeout=config.dropout_timeout,
    )
