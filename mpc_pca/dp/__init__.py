"""Differentially private PCA: mechanisms, samplers, curator baselines and distributed protocols.

Modules
-------
mechanisms
    Privacy parameters, neighbour relations, sensitivities and noise
    calibrations; Gaussian and (retracted) Wishart noise.
power_method, bingham
    The private power method (PPM) and the matrix-Bingham Gibbs sampler (PPCA).
curator, baselines, mechanism_baselines
    The trusted-curator protocol and the centralized estimators (AG, pooled,
    local; SN, PPM and PPCA).
dispca, cape, cape_estimator, dpdpca, dpdpca_estimator
    The distributed protocols: DPdisPCA (ICASSP 2018), capePCA (JSTSP 2018,
    CAPE), DPDPCA (DSC 2018, Paillier); each ``*_estimator`` holds the
    protocol's scikit-learn estimator.
capeagn, capeagn_estimator, agn_baselines, agn_core, agn_privacy, moments, tensors, tensor_power, recovery
    capeAGN (JSTSP 2018 §5): distributed DP orthogonal tensor decomposition
    of single topic models and spherical Gaussian mixtures, its baselines,
    moments and sensitivities, symmetric noise tensors, the robust tensor
    power method and the recovery error.
cape_deploy, capeagn_deploy, curator_deploy, dispca_deploy, dpdpca_deploy, local_deploy
    Each protocol's object (:class:`~mpc_pca.deployment.Deployment`): its
    settings, roles and result, run as threads by its estimator and as
    parties between organisations (:mod:`mpc_pca.deploy`).
common, preprocessing, metrics
    Shared estimator plumbing, row-norm bounding and centring, captured-energy
    metrics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mpc_pca.lazy import lazy_exports

if TYPE_CHECKING:
    from mpc_pca.dp.baselines import AnalyzeGaussPCA, LocalPCA, PooledPCA
    from mpc_pca.dp.cape_estimator import CapePCA
    from mpc_pca.dp.capeagn_estimator import CapeAGN
    from mpc_pca.dp.dispca import DPdisPCA
    from mpc_pca.dp.dpdpca_estimator import DPDPCA
    from mpc_pca.dp.mechanism_baselines import ExponentialMechanismPCA, PrivatePowerMethodPCA, RetractedSNPCA

#: Public name -> the module that defines it, imported on first use (mpc_pca.lazy).
_EXPORTS = {
    "AnalyzeGaussPCA": "mpc_pca.dp.baselines",
    "ExponentialMechanismPCA": "mpc_pca.dp.mechanism_baselines",
    "LocalPCA": "mpc_pca.dp.baselines",
    "PooledPCA": "mpc_pca.dp.baselines",
    "PrivatePowerMethodPCA": "mpc_pca.dp.mechanism_baselines",
    "RetractedSNPCA": "mpc_pca.dp.mechanism_baselines",
    "CapePCA": "mpc_pca.dp.cape_estimator",
    "CapeAGN": "mpc_pca.dp.capeagn_estimator",
    "DPdisPCA": "mpc_pca.dp.dispca",
    "DPDPCA": "mpc_pca.dp.dpdpca_estimator",
}

__all__ = [
    "DPDPCA",
    "AnalyzeGaussPCA",
    "CapeAGN",
    "CapePCA",
    "DPdisPCA",
    "ExponentialMechanismPCA",
    "LocalPCA",
    "PooledPCA",
    "PrivatePowerMethodPCA",
    "RetractedSNPCA",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
