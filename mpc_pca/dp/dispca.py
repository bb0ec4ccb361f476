"""DPdisPCA: differentially private distributed PCA (Imtiaz & Sarwate, ICASSP 2018, Alg. 1).

Roles and messages (S sites holding disjoint rows, one untrusted aggregator):

1. site ``s`` (steps 2-7): ``A_s = X_s^T X_s / N_s`` (the paper's
   ``X_s X_s^T / N_s`` with samples as columns), ``Â_s = A_s + E_s`` with
   Analyze-Gauss noise of scale ``s_s`` calibrated to ``Delta_s`` (analytic Gaussian by default, or the
   paper's ``Delta_s sqrt(2 ln(1.25/delta)) / epsilon``),
   ``Delta_s`` the sensitivity of ``A_s`` (:mod:`mpc_pca.dp.mechanisms`; the paper's
   ``1/N_s`` is the ``add-remove`` choice). The SVD ``Â_s = U Σ U^T`` gives
   ``P_s = U_R Σ_R^{1/2}`` (``D x R``), sent with ``N_s`` to the aggregator.
   For a symmetric matrix the SVD is the eigendecomposition ordered by
   ``|eigenvalue|``, which is how it is computed here.
2. aggregator (steps 9-11): ``A_c = sum_s w_s P_s P_s^T`` with ``w_s = 1/S``
   (the paper) or ``N_s / N`` (``weights="samples"``), top-``K``
   eigenvectors ``V_K`` of ``A_c``, released to every site.

``full=True`` is the paper's ``q_full`` comparison (§3 "Limit on performance"):
each site sends the whole ``Â_s`` (its upper triangle, ``D(D+1)/2`` numbers
instead of ``D R``) and the aggregator averages them.

Privacy (Thm 1): every site's message is ``(epsilon, delta)``-DP for its own
rows (the full budget at every site; the sites' data are disjoint) and the
rest is post-processing, whatever the aggregator does. ``N_s`` is sent in the
clear. The aggregator picks the top-``K`` eigenvectors of ``A_c`` by
eigenvalue (``A_c`` is positive semi-definite unless ``full=True``, where the
largest eigenvalues, not the largest magnitudes, are the PCA directions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mpc_pca.base import ParamCheck, boolean, integer, one_of
from mpc_pca.dp.common import (
    AGGREGATOR,
    DPSubspaceMixin,
    check_intermediate_dim,
    check_privacy,
    dp_constraints,
    expect_count,
    expect_symmetric,
    prepare_parts,
)
from mpc_pca.dp.mechanisms import (
    Neighbour,
    RandomState,
    gaussian_noise_scale,
    parse_neighbour,
    second_moment_sensitivity,
    symmetric_gaussian_noise,
)
from mpc_pca.fitting import ProtocolEstimator
from mpc_pca.linalg import top_eigenpairs, upper_triangle
from mpc_pca.roles import provider_names
from mpc_pca.threads import ThreadsRun
from protocols.dp.accounting import PrivacyAccountant, charge_gaussian, fit_accountant
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.party import Party

if TYPE_CHECKING:
    from mpc_pca.dp.dispca_deploy import DisPCADeployment

WEIGHTINGS = ("equal", "samples")
SITE_FACTORS = ("svd", "psd")


@dataclass(frozen=True)
class DisPCAConfig:
    """What every party agrees on before a DPdisPCA run."""

    n_parties: int
    n_features: int
    n_components: int
    intermediate_dim: int
    epsilon: float
    delta: float
    neighbour: Neighbour
    full: bool = False
    weights: str = "equal"
    site_factor: str = "svd"
    noise_calibration: str = "analytic"

    @property
    def sites(self) -> tuple[str, ...]:
        return provider_names(self.n_parties)


@dataclass
class DisPCASite:
    """What a site holds after the run (never sent except as ``P_s`` or ``Â_s``)."""

    n_samples: int
    noise_scale: float
    noisy_second_moment: NDArray[np.float64]
    components: NDArray[np.float64]


@dataclass
class DisPCAModel:
    """What the aggregator computes (steps 9-11)."""

    components: NDArray[np.float64]
    explained_variance: NDArray[np.float64]
    second_moment: NDArray[np.float64]
    site_samples: list[int]
    weights: NDArray[np.float64]


def noisy_local_second_moment(
    data: NDArray[np.float64],
    epsilon: float,
    delta: float,
    neighbour: Neighbour | str,
    rng: np.random.Generator,
    calibration: str = "analytic",
) -> tuple[NDArray[np.float64], float]:
    """Alg. 1 steps 2-4: ``Â_s = X_s^T X_s / N_s + E_s`` and the noise scale used.

    Also the "local" baseline of ICASSP 2018 (PCA of one site's ``Â_s``).
    """
    n_s = data.shape[0]
    scale = gaussian_noise_scale(second_moment_sensitivity(n_s, neighbour), epsilon, delta, calibration)
    a_s = data.T @ data / n_s
    return a_s + symmetric_gaussian_noise(data.shape[1], scale, rng), scale


def partial_square_root(matrix: NDArray[np.float64], rank: int, factor: str = "svd") -> NDArray[np.float64]:
    """Alg. 1 steps 5-6: ``P = U_R Σ_R^{1/2}`` of a symmetric matrix.

    ``factor="svd"`` (the paper): from the SVD. The singular values of a
    symmetric matrix are its eigenvalues' magnitudes and its left singular
    vectors its eigenvectors, so ``P P^T`` keeps the ``R`` eigen-directions
    of largest ``|eigenvalue|`` with weight ``|eigenvalue|`` (a strongly
    negative noise direction enters with a positive weight).

    ``factor="psd"`` (a variant, not in the paper): the ``R`` largest
    eigenvalues, negative ones set to 0, so ``P P^T`` is the best positive
    semi-definite rank-``R`` approximation. Both are post-processing of
    ``Â_s``: the privacy guarantee is the same.
    """
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2.0)
    if factor == "psd":
        order = np.argsort(values)[::-1][:rank]
        return vectors[:, order] * np.sqrt(np.clip(values[order], 0.0, None))
    order = np.argsort(np.abs(values))[::-1][:rank]
    return vectors[:, order] * np.sqrt(np.abs(values[order]))


# -- role functions -------------------------------------------------------------------


def site_role(
    party: Party, data: NDArray[np.float64], config: DisPCAConfig, rng: np.random.Generator
) -> DisPCASite:
    """Site ``s`` (Alg. 1 steps 2-7): perturb ``A_s``, send ``P_s`` (or ``Â_s``), receive ``V_K``."""
    if data.ndim != 2 or data.shape[1] != config.n_features:
        raise InputValidationError(
            f"{party.name} holds data of shape {data.shape}, expected (n, {config.n_features})"
        )
    noisy, scale = noisy_local_second_moment(
        data, config.epsilon, config.delta, config.neighbour, rng, config.noise_calibration
    )
    payload = (
        upper_triangle(noisy)
        if config.full
        else partial_square_root(noisy, config.intermediate_dim, config.site_factor)
    )
    party.send(AGGREGATOR, {"n_samples": int(data.shape[0]), "proxy": payload})
    components = expect_real_array(
        party.recv(AGGREGATOR), AGGREGATOR, (config.n_components, config.n_features)
    )
    return DisPCASite(int(data.shape[0]), scale, noisy, components)


def aggregator_role(party: Party, config: DisPCAConfig) -> DisPCAModel:
    """Aggregator (Alg. 1 steps 9-11): combine the proxies, release the top-``K`` subspace."""
    d = config.n_features
    counts: list[int] = []
    matrices: list[NDArray[np.float64]] = []
    for site in config.sites:
        message = party.recv(site)
        if not isinstance(message, dict) or set(message) != {"n_samples", "proxy"}:
            raise ProtocolError(f"{site} sent a malformed DPdisPCA message")
        counts.append(expect_count(message["n_samples"], site))
        if config.full:
            matrices.append(expect_symmetric(message["proxy"], site, d))
        else:
            proxy = expect_real_array(message["proxy"], site, (d, config.intermediate_dim))
            matrices.append(proxy @ proxy.T)
    n_total = sum(counts)
    if config.weights == "samples":
        weights = np.asarray(counts, dtype=np.float64) / n_total
    else:
        weights = np.full(len(counts), 1.0 / len(counts))
    combined = np.zeros((d, d))
    for w, m in zip(weights, matrices, strict=True):
        combined += w * m
    values, components, _ = top_eigenpairs(combined, config.n_components)
    for site in config.sites:
        party.send(site, components)
    return DisPCAModel(components, values, combined, counts, weights)


# -- estimator ----------------------------------------------------------------------------


class DPdisPCA(DPSubspaceMixin, ProtocolEstimator):
    """Differentially private distributed PCA (Imtiaz & Sarwate, ICASSP 2018, Alg. 1).

    Parameters
    ----------
    n_components : int, optional
        ``K``; ``None`` keeps all ``D`` directions.
    epsilon : float, default=1.0
        Privacy parameter of every site (``inf`` disables the noise).
    delta : float, default=1e-5
        Privacy parameter in ``(0, 1)``; the paper's experiments use 0.01.
    intermediate_dim : int, optional
        ``R`` with ``K <= R <= D``; ``None`` gives ``min(2K, D)`` as in the paper.
    full : bool, default=False
        Send the whole ``Â_s`` instead of ``P_s`` (the paper's ``q_full``).
    neighbour : {"replace-one", "add-remove"}, default="replace-one"
        Neighbour relation; sensitivity ``sqrt(2)/N_s`` or ``1/N_s`` (the paper's).
    weights : {"equal", "samples"}, default="equal"
        Aggregator weights ``1/S`` (the paper) or ``N_s/N``.
    site_factor : {"svd", "psd"}, default="svd"
        ``P_s`` from the SVD of ``Â_s`` (the paper) or from its ``R`` largest
        eigenvalues clipped at 0 (a variant; see :func:`partial_square_root`).
    row_norm : {"clip", "error"}, default="clip"
        How sites enforce ``||x|| <= 1`` (:mod:`mpc_pca.dp.preprocessing`).
    random_state : int, SeedSequence, Generator or None
        Seed of the DP noise; ``None`` draws one from :mod:`secrets`. For
        reproducible experiments only; a run with a known seed is not private.
    timeout : float, default=120
        Receive timeout of every party, in seconds.
    noise_calibration : {"analytic", "classical"}, default="analytic"
        Gaussian noise calibration of every site (Balle & Wang 2018, or the
        paper's ``sqrt(2 ln(1.25/delta))/epsilon``, refused for ``epsilon >= 1``).
    accountant : PrivacyAccountant, optional
        Charged once per run before anything is sent (sites hold disjoint rows).
        ``None`` (the default): the estimator's own accountant without a budget,
        created on its first fit and kept across its fits
        (:func:`~protocols.dp.accounting.fit_accountant`). After a fit,
        ``accountant_`` is the accountant that fit charged (``spent_budget``
        lists every fit).

    Attributes
    ----------
    components_ : ndarray of shape (K, D)
        The released ``V_K^T``, each row's largest entry positive.
    explained_variance_ : ndarray of shape (K,)
        Top eigenvalues of the aggregator's ``A_c`` (DP, post-processing).
    mean_ : ndarray of shape (D,)
        Zeros: second-moment PCA, no centring (see :mod:`mpc_pca.dp.common`).
    intermediate_dim_ : int
        ``R`` used.
    noise_scales_ : ndarray of shape (S,)
        Each site's Analyze-Gauss standard deviation.
    n_samples_, n_features_in_, n_components_ : int
    report_ : dict
        Per-role bytes, messages, rounds and seconds.

    Notes
    -----
    scikit-learn's ``PCA`` parameters ``svd_solver``, ``iterated_power``, ``n_oversamples``,
    ``power_iteration_normalizer`` and ``tol`` do not apply: the aggregator eigendecomposes the
    weighted sum of the sites' noisy rank-``R`` proxies (Alg. 1), computed from statistics
    aggregated over the parties (no party holds the pooled rows that scikit-learn's SVD solvers work
    on); ``copy`` does not apply either (``fit`` never changes the rows) and ``whiten`` is PPPCA's
    only. ``random_state`` here seeds the DP noise, not a solver.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> parts = [rng.normal(size=(200, 6)) / 6 for _ in range(3)]
    >>> DPdisPCA(n_components=2, epsilon=1.0, random_state=0).fit(parts).components_.shape
    (2, 6)
    """

    _parameter_constraints: ClassVar[dict[str, ParamCheck]] = dp_constraints(
        "n_components",
        "epsilon",
        "delta",
        "neighbour",
        "row_norm",
        "random_state",
        "timeout",
        "noise_calibration",
        "accountant",
        intermediate_dim=integer(1, none=True),
        full=boolean(),
        weights=one_of(*WEIGHTINGS),
        site_factor=one_of(*SITE_FACTORS),
    )

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        intermediate_dim: int | None = None,
        full: bool = False,
        neighbour: str = "replace-one",
        weights: str = "equal",
        site_factor: str = "svd",
        row_norm: str = "clip",
        random_state: RandomState = None,
        timeout: float = 120.0,
        noise_calibration: str = "analytic",
        accountant: PrivacyAccountant | None = None,
    ) -> None:
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.noise_calibration = noise_calibration
        self.accountant = accountant
        self.intermediate_dim = intermediate_dim
        self.full = full
        self.neighbour = neighbour
        self.weights = weights
        self.site_factor = site_factor
        self.row_norm = row_norm
        self.random_state = random_state
        self.timeout = timeout

    def _protocol(self) -> DisPCADeployment:
        # imported here: the deployment imports this module's roles
        from mpc_pca.dp.dispca_deploy import DisPCADeployment

        return DisPCADeployment(
            "dispca-full" if self.full else "dispca", weights=self.weights, site_factor=self.site_factor
        )

    def _settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {
            # K as checked by _prepare: the settings' fill-in would take None for its default, not D
            "n_components": self._run_components,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "neighbour": parse_neighbour(self.neighbour).value,
            "noise_calibration": self.noise_calibration,
            # _prepare bounded the rows by row_norm already: the parties check them, so none is clipped twice
            "row_norm": "error",
        }
        if not self.full:
            settings["intermediate_dim"] = self.intermediate_dim
        return settings

    def _prepare(self, parts: list[Any]) -> list[Any]:
        """Check everything, then charge the accountant once (sites hold disjoint rows: parallel composition)."""
        accountant = fit_accountant(self)
        eps, dlt, _ = check_privacy(self.epsilon, self.delta, self.neighbour, self.noise_calibration)
        arrays, k = prepare_parts(parts, self.n_components, self.row_norm)
        check_intermediate_dim(self.intermediate_dim, k, arrays[0].shape[1])
        unit = gaussian_noise_scale(1.0, eps, dlt, self.noise_calibration)
        charge_gaussian(accountant, eps, dlt, unit, "DPdisPCA")
        self._run_components = k
        return arrays

    def _store(self, run: ThreadsRun) -> None:
        model: DisPCAModel = run.output
        config: DisPCAConfig = run.config.config
        self._store_fit(model.components, model.explained_variance, sum(model.site_samples), run.run)
        self.intermediate_dim_ = model.components.shape[1] if self.full else config.intermediate_dim
        self.noise_scales_ = np.array([run.run.outputs[site].noise_scale for site in config.sites])
