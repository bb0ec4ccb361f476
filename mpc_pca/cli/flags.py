"""The command line's names for the protocols' settings: one flag per setting, and what a result records.

Nothing below :mod:`mpc_pca.cli` names a flag: the protocols declare their
settings (:attr:`mpc_pca.deployment.Deployment.options`), and ``mpc-pca run``
and ``mpc-pca party`` turn flags into those settings here, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

#: The command-line flag of every protocol setting.
FLAGS: Mapping[str, str] = MappingProxyType(
    {
        "backend": "--backend",
        "frac_bits": "--frac-bits",
        "key_bits": "--key-bits",
        "paillier_randomness": "--paillier-randomness",
        "paillier_workers": "--paillier-workers",
        "standardize": "--standardize",
        "epsilon": "--epsilon",
        "delta": "--delta",
        "intermediate_dim": "--intermediate-dim",
        "neighbour": "--neighbour",
        "cape_calibration": "--cape-calibration",
        "row_norm": "--row-norm",
        "noise_calibration": "--noise-calibration",
        "min_honest": "--min-honest",
        "model": "--model",
        "sigma": "--sigma",
        "budget_split": "--budget-split",
        "reveal": "--reveal",
        "eigengap": "--eigengap",
        "min_ratio": "--min-ratio",
        "eigensolver": "--eigensolver",
        "dealer": "--dealer",
        "dropout_threshold": "--dropout-threshold",
        "n_oversamples": "--n-oversamples",
        "iterated_power": "--iterated-power",
        "tol": "--tol",
        "start_seed": "--start-seed",
        "iterates": "--iterates",
    }
)
#: Privacy options every DP result records; protocols that do not use one record its default.
PRIVACY_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "epsilon": 1.0,
        "delta": 1e-5,
        "neighbour": "replace-one",
        "cape_calibration": "joint",
        "row_norm": "clip",
        "intermediate_dim": None,
        "noise_calibration": "analytic",
    }
)

__all__ = ["FLAGS", "PRIVACY_DEFAULTS"]
