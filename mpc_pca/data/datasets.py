"""Data loading for the command line: CSV files and data sets shipped with scikit-learn.

No data set is downloaded at run time; the built-in names map to loaders whose
data is bundled inside the installed scikit-learn package.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from protocols.encoding import check_finite
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


def load_csv(path: str | Path, delimiter: str = ",") -> NDArray[np.float64]:
    """Load a numeric CSV file; a first row that is not numeric is taken as a header.

    Raises
    ------
    InputValidationError
        If the file is missing or empty, a cell is not a number, rows have
        different lengths, or a value is NaN/inf.
    """
    path = Path(path)
    if not path.is_file():
        raise InputValidationError(f"data file {str(path)!r} does not exist")
    with path.open(newline="") as handle:
        rows = [row for row in csv.reader(handle, delimiter=delimiter) if row and any(c.strip() for c in row)]
    if rows and not _is_numeric_row(rows[0]):
        rows = rows[1:]
    if not rows:
        raise InputValidationError(f"data file {str(path)!r} holds no data rows")
    width = len(rows[0])
    values = []
    for line_no, row in enumerate(rows, start=1):
        if len(row) != width:
            raise InputValidationError(
                f"{path}: data row {line_no} has {len(row)} columns, the first has {width}"
            )
        try:
            values.append([float(cell) for cell in row])
        except ValueError as exc:
            raise InputValidationError(f"{path}: data row {line_no} has a non-numeric cell ({exc})") from exc
    data = np.asarray(values, dtype=np.float64)
    check_finite(data, str(path))
    return data


def _is_numeric_row(row: list[str]) -> bool:
    try:
        [float(cell) for cell in row]
    except ValueError:
        return False
    return True


def load_data(spec: str) -> NDArray[np.float64]:
    """Load ``builtin:NAME``, ``synthetic:stm|mog[:N[:SEED]]`` (:mod:`mpc_pca.data.latent`) or a CSV path."""
    if spec.startswith("synthetic:"):
        from mpc_pca.data.latent import load_synthetic

        return load_synthetic(spec)
    if spec.startswith("builtin:"):
        return load_builtin(spec.split(":", 1)[1])
    return load_csv(spec)
