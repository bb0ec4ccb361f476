"""Privacy-preserving and differentially private PCA over horizontally partitioned data.

Packages and modules (imports point down: ``cli`` and ``data`` use ``pppca``
and ``dp``, which use the shared plumbing and :mod:`protocols`; ``pppca`` and
``dp`` never import each other)
-------------------------------------------------------------------------------
cli
    The ``mpc-pca`` command line.
studies
    Reproducible studies and their reports (``mpc-pca study``, ``mpc-pca report``).
data
    Data input: bundled data sets, files, row partitions.
pppca
    PPPCA (Liu et al., AAAI 2020): roles, estimator, local statistics,
    its protocol object.
wide
    Wide-data PCA (``pppca-randomized``): randomized subspace iteration on the
    pooled covariance with no ``d x d`` matrix; it reuses ``pppca``'s scaling and chunked parts.
registry
    One line per protocol: its name and its protocol object.
deployment, deploy
    The protocol object (:class:`~mpc_pca.deployment.Deployment`: settings,
    result fields, capabilities, roles) and the floor (:mod:`mpc_pca.deploy`:
    PartySpec, run_party, run_threads, launch_local) that runs any protocol
    between organisations; ``deployment_kit`` holds the checks the protocol
    objects share.
threads, fitting, floor
    The threads runner of a protocol object (:func:`~mpc_pca.threads.run_protocol`),
    the one ``fit`` of every estimator (:class:`~mpc_pca.fitting.ProtocolEstimator`)
    and the floor's keys of every announcement.
dp
    The differentially private family: mechanisms, samplers, curator
    baselines, DPdisPCA, capePCA, DPDPCA, metrics.
roles
    Every role name.
base, params, validation, linalg, row_norms, sparse_rows, noise_seeds
    Estimator plumbing, input checks, linear algebra, row-norm clipping,
    the statistics of scipy.sparse rows and the DP noise seeds, shared by
    ``pppca`` and ``dp``.
lazy
    The packages' exports are imported on first use, so a party process
    imports no estimator and no scikit-learn.
integrations
    Optional extras that put the secure sum inside other frameworks (Flower);
    nothing else imports them.
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
    from mpc_pca.pppca.dp_estimator import PPPCADP
    from mpc_pca.pppca.estimator import PPPCA

#: Public name -> the module that defines it, imported on first use (mpc_pca.lazy).
_EXPORTS = {
    "DPDPCA": "mpc_pca.dp.dpdpca_estimator",
    "AnalyzeGaussPCA": "mpc_pca.dp.baselines",
    "CapeAGN": "mpc_pca.dp.capeagn_estimator",
    "CapePCA": "mpc_pca.dp.cape_estimator",
    "DPdisPCA": "mpc_pca.dp.dispca",
    "ExponentialMechanismPCA": "mpc_pca.dp.mechanism_baselines",
    "LocalPCA": "mpc_pca.dp.baselines",
    "PooledPCA": "mpc_pca.dp.baselines",
    "PrivatePowerMethodPCA": "mpc_pca.dp.mechanism_baselines",
    "RetractedSNPCA": "mpc_pca.dp.mechanism_baselines",
    "PPPCA": "mpc_pca.pppca.estimator",
    "PPPCADP": "mpc_pca.pppca.dp_estimator",
}

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


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
