"""Data loading for the command line: CSV files and data sets shipped with scikit-learn.

No data set is downloaded at run time; the built-in names map to loaders whose
data is bundled inside the installed scikit-learn package.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from mpc_pca.data.tables import read_table
from protocols.errors import InputValidationError


def _sklearn_loader(name: str) -> Callable[[], NDArray[np.float64]]:
    def load() -> NDArray[np.float64]:
        from sklearn import datasets

        return np.asarray(getattr(datasets, f"load_{name}")().data, dtype=np.float64)

    return load


def builtin_names() -> tuple[str, ...]:
    """Names accepted after ``builtin:`` (all bundled with scikit-learn, offline)."""
    return ("wine", "iris", "breast_cancer", "digits", "diabetes")


def load_builtin(name: str) -> NDArray[np.float64]:
    """Load a bundled data set's feature matrix by name."""
    if name not in builtin_names():
        raise InputValidationError(
            f"unknown built-in data set {name!r}; choose one of {list(builtin_names())}"
        )
    return _sklearn_loader(name)()


def load_csv(path: str | Path, delimiter: str | None = None) -> NDArray[np.float64]:
    """Load a numeric CSV file with :func:`mpc_pca.data.tables.read_table` (header guessed).

    Raises
    ------
    InputValidationError
        If the file is missing or empty, a cell is not a number or missing,
        or a value is NaN/inf (each naming its line and column).
    """
    return read_table(path, delimiter=delimiter).values


def load_data(spec: str) -> NDArray[np.float64]:
    """Load ``builtin:NAME``, ``synthetic:stm|mog[:N[:SEED]]`` (:mod:`mpc_pca.data.latent`) or a CSV path.

    Column names are dropped; :mod:`mpc_pca.data.inputs` keeps them.
    """
    if spec.startswith("synthetic:"):
        from mpc_pca.data.latent import load_synthetic

        return load_synthetic(spec)
    if spec.startswith("builtin:"):
        return load_builtin(spec.split(":", 1)[1])
    return load_csv(spec)
