"""PPPCA: privacy-preserving PCA (Liu et al., AAAI 2020), Algorithms 1 and 2.

Modules
-------
local_stats
    Each provider's column sums, row count and centred Gram matrix, computed
    once, before anything is sent.
scaling
    The per-column power-of-two fixed-point scaling agreed by all parties.
standardize
    The server's matrix (covariance or standardized covariance) and its
    rounding-error bound.
protocol
    The role functions of the providers and the consumer (and, re-exported, the server's).
server
    The server's role: open the sums, check ``N``, eigendecompose or deal the eigensolve.
config
    What every party agrees on (:class:`~mpc_pca.pppca.config.PPPCAConfig`), the
    server's result (:class:`~mpc_pca.pppca.config.PPPCAModel`), the phases and
    step 1's backend.
bounds
    The fixed-point error bounds and the ring-range and precision checks.
preflight
    Every check before anything is sent (:func:`~mpc_pca.pppca.preflight.preflight`);
    the protocol object (:class:`~mpc_pca.pppca.deployment.PPPCADeployment`) runs it
    in every runner (threads: :func:`mpc_pca.threads.run_protocol`).
sklearn_params
    scikit-learn ``PCA``'s solver parameters and ``copy`` on :class:`~mpc_pca.PPPCA`:
    validated in scikit-learn's wording.
randomized
    ``svd_solver``: the exact covariance path or ``pppca-randomized`` (``"auto"``
    by width), its refusals, settings and fitted attributes.
estimator, probabilistic
    :class:`PPPCA`, the scikit-learn-style estimator; its probabilistic-PCA
    methods (``score``, ``get_covariance``, ``get_precision``).
answer_check
    The providers' check of the server's answer (``T``, its eigenvalues, ``N``,
    the total variance, the scales and the mean) before they use it.
top_k_check, check_opening
    The check that the eigenpairs sent are the top ``k`` (secure power steps,
    with its detection guarantee), and the check's secure sums among the providers.
column_residual
    Check 4's residual of every column of ``T`` (``(R V - V Λ) / λ_1``) and its per-column tolerance.
ritz_verdict
    ``reveal="components"``: the error when the check's Ritz residual shows the assumed
    eigengap was false (or the server deviated).
dropout_payload
    Dropout mode's one masked input: column sums, row count and Gram matrix in two limbs.
chunked
    Provider parts larger than memory: statistics chunk by chunk, or on Dask.
components
    ``reveal="components"``: the eigensolve on shares; nobody sees the covariance.
dealer_free
    ``dealer="providers"``: the providers make the eigensolve's masks in an offline phase.
dp_sum, dp_estimator, dp_rounding
    pppca-dp: discrete-Gaussian DP noise added by the providers inside the
    secure sum (:class:`PPPCADP`); the fewest ``frac_bits`` its row rounding allows.
deployment, announcement, projection_table, dp_deploy
    :class:`~mpc_pca.pppca.deployment.PPPCADeployment`: the protocol object of
    ``pppca-ss``/``pppca-he``, run as threads by :class:`PPPCA` and as OS
    processes or hosts through the deploy floor (:mod:`mpc_pca.deploy`;
    ``mpc-pca party``, ``mpc-pca run`` with ``transport='processes'``); what its parties
    announce and how they agree (``announcement``); the consumer's labelled
    rows (``projection_table``); ``dp_deploy`` is pppca-dp's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mpc_pca.lazy import lazy_exports

if TYPE_CHECKING:
    from mpc_pca.pppca.bounds import rounding_error_bounds
    from mpc_pca.pppca.config import PPPCAConfig, PPPCAModel
    from mpc_pca.pppca.dp_estimator import PPPCADP
    from mpc_pca.pppca.estimator import PPPCA, resolve_backend
    from mpc_pca.pppca.preflight import preflight
    from mpc_pca.pppca.protocol import consumer_role, provider_role
    from mpc_pca.pppca.server import server_role

#: Public name -> the module that defines it, imported on first use (mpc_pca.lazy).
_EXPORTS = {
    "PPPCADP": "mpc_pca.pppca.dp_estimator",
    "PPPCA": "mpc_pca.pppca.estimator",
    "resolve_backend": "mpc_pca.pppca.estimator",
    "PPPCAConfig": "mpc_pca.pppca.config",
    "PPPCAModel": "mpc_pca.pppca.config",
    "consumer_role": "mpc_pca.pppca.protocol",
    "preflight": "mpc_pca.pppca.preflight",
    "provider_role": "mpc_pca.pppca.protocol",
    "rounding_error_bounds": "mpc_pca.pppca.bounds",
    "server_role": "mpc_pca.pppca.server",
}

__all__ = [
    "PPPCA",
    "PPPCADP",
    "PPPCAConfig",
    "PPPCAModel",
    "consumer_role",
    "preflight",
    "provider_role",
    "resolve_backend",
    "rounding_error_bounds",
    "server_role",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
