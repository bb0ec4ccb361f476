"""One small, fast, reproducible instance of every exported estimator (``mpc_pca._EXPORTS``).

DP estimators get a fixed ``random_state`` (their noise is then reproducible;
a seeded run is not private, which is what a test wants). ``PPPCADP`` has no
seed parameter (its discrete-Gaussian noise is drawn inside the providers from
:mod:`secrets`), so its reproducible instance uses ``epsilon=inf``.
``DPDPCA`` runs with a 256-bit test key. ``CapeAGN`` learns a mixture of
spherical Gaussians here (``model="mog"``): its topic model needs word counts,
which generic test data are not.
"""

from __future__ import annotations

import math

from sklearn.base import BaseEstimator

import mpc_pca
from mpc_pca import (
    DPDPCA,
    PPPCA,
    PPPCADP,
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

TIMEOUT = 30.0


def fast_instances() -> list[BaseEstimator]:
    """A fresh instance of every exported estimator, in ``mpc_pca._EXPORTS`` order."""
    instances = [
        DPDPCA(
            n_components=2,
            key_bits=256,
            allow_insecure_key_size=True,
            frac_bits=8,
            mask_bits=40,
            row_norm="clip",
            random_state=0,
            timeout=TIMEOUT,
        ),
        AnalyzeGaussPCA(n_components=2, random_state=0, timeout=TIMEOUT),
        CapeAGN(
            n_components=2, model="mog", sigma=0.1, n_restarts=2, n_iter=20, random_state=0, timeout=TIMEOUT
        ),
        CapePCA(n_components=2, random_state=0, timeout=TIMEOUT),
        DPdisPCA(n_components=2, random_state=0, timeout=TIMEOUT),
        ExponentialMechanismPCA(n_components=2, n_sweeps=3, random_state=0, timeout=TIMEOUT),
        LocalPCA(n_components=2, random_state=0, timeout=TIMEOUT),
        PooledPCA(n_components=2, timeout=TIMEOUT),
        PrivatePowerMethodPCA(n_components=2, random_state=0, timeout=TIMEOUT),
        RetractedSNPCA(n_components=2, random_state=0, timeout=TIMEOUT),
        PPPCA(n_components=2, timeout=TIMEOUT),
        PPPCADP(n_components=2, epsilon=math.inf, timeout=TIMEOUT),
    ]
    names = [type(e).__name__ for e in instances]
    if names != list(mpc_pca._EXPORTS):
        raise AssertionError(
            f"tests/helpers/estimators.py lists {names}, mpc_pca exports {list(mpc_pca._EXPORTS)}"
        )
    return instances


def name_of(estimator: BaseEstimator) -> str:
    """Test id: the class name."""
    return type(estimator).__name__
