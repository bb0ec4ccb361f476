"""Privacy-preserving and differentially private PCA over horizontally partitioned data."""

from mpc_pca.baselines import (
    AnalyzeGaussPCA,
    ExponentialMechanismPCA,
    LocalPCA,
    PooledPCA,
    PrivatePowerMethodPCA,
    RetractedSNPCA,
)
from mpc_pca.cape import CapePCA
from mpc_pca.dispca import DPdisPCA
from mpc_pca.pppca import PPPCA

__all__ = [
    "PPPCA",
    "AnalyzeGaussPCA",
    "CapePCA",
    "DPdisPCA",
    "ExponentialMechanismPCA",
    "LocalPCA",
    "PooledPCA",
    "PrivatePowerMethodPCA",
    "RetractedSNPCA",
]
