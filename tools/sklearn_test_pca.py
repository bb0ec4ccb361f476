"""Run scikit-learn's own ``test_pca.py`` against PPPCA (issue 38; not in CI: 3 to 4 minutes).

The installed ``sklearn/decomposition/tests/test_pca.py`` is imported as it is
and run by pytest with its module-level name ``PCA`` bound to
:class:`PooledRowsPCA`: a :class:`~mpc_pca.PPPCA` that takes ``PCA``'s
positional ``n_components`` and splits the rows it is given over three
providers (unequal blocks) before the protocol runs. Nothing of scikit-learn's
code is copied; the tests' own assertions judge the results.

Usage::

    PYTHONPATH=$PWD python tools/sklearn_test_pca.py [-k EXPR] [--tb line] [--quiet-ids]

prints the number of passed, failed and skipped cases and the id of every
failing case (``--tb line``: with the reason). Why each case fails, and which
are deliberate: docs/howto/estimator.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sklearn
from scipy.sparse import issparse

from mpc_pca import PPPCA

TEST_FILE = Path(sklearn.__file__).parent / "decomposition" / "tests" / "test_pca.py"


def _three_parts(X: Any) -> Any:
    """Three providers' rows (unequal, the last gets the remainder); ``X`` itself if it has under three rows."""
    if isinstance(X, (list, tuple)) or not hasattr(X, "shape") or len(X.shape) != 2 or X.shape[0] < 3:
        return X
    if issparse(X) and X.format not in ("csr", "csc"):
        X = X.tocsr()  # COO and friends cannot be sliced by rows
    n = X.shape[0]
    cuts = [max(1, n // 4), max(2, n // 2)]
    return [X[: cuts[0]], X[cuts[0] : cuts[1]], X[cuts[1] :]]


class PooledRowsPCA(PPPCA):
    """PPPCA fitted on the rows split over three providers; ``PCA``'s positional ``n_components``."""

    def fit(self, X: Any, y: None = None, groups: Any = None) -> PooledRowsPCA:
        """Fit on three providers' blocks of ``X``."""
        super().fit(_three_parts(X) if groups is None else X, y, groups)
        return self

    def fit_transform(self, X: Any, y: None = None, groups: Any = None) -> np.ndarray:
        """``fit_transform`` on three providers' blocks; rows come back in ``X``'s order."""
        return super().fit_transform(_three_parts(X) if groups is None else X, y, groups)


class _BindPCA:
    """pytest plugin: bind the test module's ``PCA`` to :class:`PooledRowsPCA` once it is collected."""

    def __init__(self) -> None:
        self.outcomes: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            module = getattr(item, "module", None)
            if module is not None and module.__name__.endswith("test_pca"):
                module.PCA = PooledRowsPCA

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.outcomes[report.outcome].append(report.nodeid.split("::", 1)[-1])


def main(argv: list[str] | None = None) -> int:
    """Run the cases; print the counts and the failing ids."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default=None, help="pytest -k expression to run a subset")
    parser.add_argument("--tb", default="no", help="pytest traceback style for the failures")
    parser.add_argument("--quiet-ids", action="store_true", help="print only the counts")
    args = parser.parse_args(argv)
    plugin = _BindPCA()
    options = [str(TEST_FILE), "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--no-header", "-rN"]
    options += ["--tb=" + args.tb, "-o", "addopts=", "--rootdir", str(TEST_FILE.parents[2])]
    if args.k:
        options += ["-k", args.k]
    pytest.main(options, plugins=[plugin])
    counts = {name: len(ids) for name, ids in plugin.outcomes.items()}
    print(
        f"test_pca.py against PPPCA: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['skipped']} skipped, of {sum(counts.values())}"
    )
    if not args.quiet_ids:
        for case in plugin.outcomes["failed"]:
            print(f"FAILED {case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
