"""scikit-learn ``PCA``'s ``n_components`` contract per ``svd_solver`` on PPPCA (issue 38).

scikit-learn's test_pca.py (test_pca_validation, test_n_components_none,
test_n_components_mle_error) pins these; they are restated here on our own
data, not by importing that file.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA

from mpc_pca import PPPCA
from protocols.errors import InputValidationError
from tests.helpers.estimators import TIMEOUT


def _parts(n: int, d: int, seed: int = 0) -> list[np.ndarray]:
    rows = np.random.default_rng(seed).normal(size=(n, d)) @ np.diag(np.linspace(3.0, 1.0, d))
    cut = [n // 4, n // 2]
    return [rows[: cut[0]], rows[cut[0] : cut[1]], rows[cut[1] :]]


@pytest.mark.parametrize(("n", "d"), [(40, 5), (5, 12)])
def test_arpack_none_keeps_one_fewer_than_min_as_scikit_learn(n, d):
    parts = _parts(n, d)
    fitted = PPPCA(svd_solver="arpack", timeout=TIMEOUT).fit(parts)
    expected = PCA(svd_solver="arpack", random_state=0).fit(np.vstack(parts)).n_components_
    assert fitted.n_components_ == expected == min(n, d) - 1
    full = PPPCA(n_components=min(n, d) - 1, svd_solver="full", timeout=TIMEOUT).fit(parts)
    np.testing.assert_allclose(fitted.explained_variance_, full.explained_variance_, rtol=1e-9)


@pytest.mark.parametrize(("n", "d"), [(40, 5), (5, 12)])
def test_arpack_refuses_min_components_in_scikit_learns_words(n, d):
    limit = min(n, d)
    pattern = (
        rf"n_components={limit} must be strictly less than min\(n_samples, n_features\)={limit} "
        r"with svd_solver='arpack'"
    )
    with pytest.raises(ValueError, match=pattern):
        PCA(n_components=limit, svd_solver="arpack").fit(np.vstack(_parts(n, d)))
    with pytest.raises(InputValidationError, match=pattern):
        PPPCA(n_components=limit, svd_solver="arpack", timeout=TIMEOUT).fit(_parts(n, d))


@pytest.mark.parametrize("solver", ["arpack", "randomized"])
def test_mle_is_refused_by_the_truncated_solvers_in_scikit_learns_words(solver):
    pattern = f"n_components='mle' cannot be a string with svd_solver='{solver}'"
    with pytest.raises(ValueError, match=pattern):
        PCA(n_components="mle", svd_solver=solver).fit(np.vstack(_parts(60, 5)))
    with pytest.raises(InputValidationError, match=pattern):
        PPPCA(n_components="mle", svd_solver=solver, timeout=TIMEOUT).fit(_parts(60, 5))


def test_arpack_refuses_a_variance_ratio_as_scikit_learn():
    pattern = (
        r"n_components=0\.5 must be between 1 and min\(n_samples, n_features\)=5 with svd_solver='arpack'"
    )
    with pytest.raises(ValueError, match=pattern):
        PCA(n_components=0.5, svd_solver="arpack").fit(np.vstack(_parts(60, 5)))
    with pytest.raises(InputValidationError, match=pattern):
        PPPCA(n_components=0.5, svd_solver="arpack", timeout=TIMEOUT).fit(_parts(60, 5))


def test_full_still_keeps_min_components_and_mle():
    parts = _parts(60, 5)
    assert PPPCA(svd_solver="full", timeout=TIMEOUT).fit(parts).n_components_ == 5
    assert PPPCA(n_components=5, svd_solver="full", timeout=TIMEOUT).fit(parts).n_components_ == 5
    assert PPPCA(n_components="mle", svd_solver="full", timeout=TIMEOUT).fit(parts).n_components_ >= 1


@pytest.mark.parametrize("solver", ["full", "arpack", "randomized"])
def test_a_numpy_integer_n_components_fits_as_the_int(solver):
    # scikit-learn's test_pca_solver_equivalence passes np.minimum(n_samples, n_features) - 1
    parts = _parts(60, 5)
    as_numpy = PPPCA(n_components=np.int64(3), svd_solver=solver, random_state=0, timeout=TIMEOUT).fit(parts)
    as_int = PPPCA(n_components=3, svd_solver=solver, random_state=0, timeout=TIMEOUT).fit(parts)
    assert as_numpy.n_components_ == 3
    np.testing.assert_array_equal(as_numpy.components_, as_int.components_)
