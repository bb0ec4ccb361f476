"""Privacy-preserving and differentially private PCA over horizontally partitioned data.

Packages and modules (imports point down: ``cli`` and ``data`` use ``pppca``
and ``dp``, which use the shared plumbing and :mod:`protocols`; ``pppca`` and
``dp`` never import each other)
-------------------------------------------------------------------------------
cli
    The ``mpc-pca`` command line.
data
    Data input: bundled data sets, files, row partitions.
pppca
    PPPCA (Liu et al., AAAI 2020): roles, estimator, local statistics,
    distributed runner.
dp
    The differentially private family: mechanisms, samplers, curator
    baselines, DPdisPCA, capePCA, DPDPCA, metrics.
roles
    Every role name.
base, validation, linalg
    Estimator plumbing, input checks and linear algebra shared by ``pppca``
    and ``dp``.
"""

from mpc_pca.dp import (
    DPDPCA,
    AnalyzeGaussPCA,
    CapeAGN,
    CapePCA,
    DPdisPCA,
    ExponentialMechanismPCA,
    LocalPCA,
    PooledPCA,
    PrivatePowerMethodPCA,
    RetractedSNPCA,
)
from mpc_pca.pppca import PPPCA, PPPCADP

__all__ = [
    "DPDPCA",
    "PPPCA",
    "PPPCADP",
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
