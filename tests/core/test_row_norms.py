"""Row clipping shared by every DP protocol: round-off of data already scaled to norm 1 is not clipping."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mpc_pca.dp import CapePCA, DPdisPCA
from mpc_pca.pppca.dp_sum import clip_rows_locally
from mpc_pca.row_norms import NORM_TOLERANCE, check_row_norms, clip_rows, row_norms
from mpc_pca.validation import RowsClippedWarning


def _readme_recipe(seed: int) -> np.ndarray:
    """The DP tutorial's PPPCADP recipe (docs/tutorials/dp-pca.md): Gaussian rows divided by the largest row norm."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(int(rng.integers(20, 400)), int(rng.integers(2, 12)))) * rng.uniform(0.1, 5.0)
    X /= np.linalg.norm(X, axis=1).max()
    return X


def test_data_scaled_by_its_largest_norm_is_never_reported_as_clipped():
    overshooting = 0
    for seed in range(200):
        X = _readme_recipe(seed)
        overshooting += int(np.any(np.linalg.norm(X, axis=1) > 1.0))
        clipped, count = clip_rows(X)
        assert count == 0, seed
        assert np.all(row_norms(clipped) <= 1.0), seed  # the bound holds exactly after the rescale
        assert np.allclose(clipped, X, rtol=0, atol=4e-16)
        check_row_norms(X, 0)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RowsClippedWarning)
            clip_rows_locally(X, 0)
    assert overshooting > 0  # the recipe really does overshoot 1 by round-off on some draws


def test_a_row_longer_than_the_tolerance_is_clipped_counted_and_refused():
    X = np.array([[0.6, 0.8 * (1 + 100 * NORM_TOLERANCE)], [0.3, 0.4]])
    clipped, count = clip_rows(X)
    assert count == 1 and row_norms(clipped)[0] <= 1.0
    with pytest.raises(Exception, match="row 0 has Euclidean norm"):
        check_row_norms(X, 0)
    with pytest.warns(RowsClippedWarning, match="provider3: 1 of 2 rows"):
        clip_rows_locally(X, 3)


@pytest.mark.parametrize("estimator", [CapePCA, DPdisPCA])
def test_dp_estimators_do_not_warn_on_the_recipe(estimator):
    X = _readme_recipe(next(s for s in range(200) if np.any(np.linalg.norm(_readme_recipe(s), axis=1) > 1)))
    parts = np.array_split(X, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RowsClippedWarning)
        estimator(2, epsilon=1.0, delta=1e-5, random_state=0).fit(parts)
