"""Differentially private PCA: mechanisms, samplers, curator baselines and distributed protocols.

Modules
-------
mechanisms
    Privacy parameters, neighbour relations, sensitivities and noise
    calibrations; Gaussian and (retracted) Wishart noise.
power_method, bingham
    The private power method (PPM) and the matrix-Bingham Gibbs sampler (PPCA).
curator, baselines
    The trusted-curator protocol and the centralized estimators (AG, SN, PPM,
    PPCA, pooled, local).
dispca, cape, dpdpca
    The distributed protocols: DPdisPCA (ICASSP 2018), capePCA (JSTSP 2018,
    CAPE), DPDPCA (DSC 2018, Paillier).
capeagn, agn_baselines, agn_core, agn_privacy, moments, tensors, tensor_power, recovery
    capeAGN (JSTSP 2018 §5): distributed DP orthogonal tensor decomposition
    of single topic models and spherical Gaussian mixtures, its baselines,
    moments and sensitivities, symmetric noise tensors, the robust tensor
    power method and the recovery error.
common, preprocessing, metrics
    Shared estimator plumbing, row-norm bounding and centring, captured-energy
    metrics.
"""

from mpc_pca.dp.baselines import (
    AnalyzeGaussPCA,
    ExponentialMechanismPCA,
    LocalPCA,
    PooledPCA,
    PrivatePowerMethodPCA,
    RetractedSNPCA,
)
from mpc_pca.dp.cape import CapePCA
from mpc_pca.dp.capeagn import CapeAGN
from mpc_pca.dp.dispca import DPdisPCA
from mpc_pca.dp.dpdpca import DPDPCA

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
