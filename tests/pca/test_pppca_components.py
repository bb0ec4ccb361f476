"""PPPCA(reveal="components"): scikit-learn accuracy, what the server sees, bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import subspace_angles
from sklearn import datasets
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from mpc_pca import PPPCA
from mpc_pca.pppca import run_pppca
from protocols.backends import make_backend
from protocols.errors import InputValidationError
from tests.helpers.oracles import align_signs


def standardized(name: str) -> np.ndarray:
    return StandardScaler().fit_transform(getattr(datasets, f"load_{name}")().data)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "k", "parties"),
    [("wine", 3, 2), ("breast_cancer", 3, 3), ("digits", 5, 5), ("wine", 3, 4)],
)
def test_components_match_sklearn_within_1e4(name, k, parties):
    """Default settings; 1e-4 is 1000x tighter than SPU's rtol = 0.1."""
    data = standardized(name)
    model = PPPCA(k, reveal="components").fit(np.array_split(data, parties))
    ref = PCA(k).fit(data)
    assert np.max(np.abs(align_signs(model.components_, ref.components_) - ref.components_)) < 1e-4
    np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=1e-5)
    np.testing.assert_allclose(model.explained_variance_ratio_, ref.explained_variance_ratio_, atol=1e-6)
    np.testing.assert_allclose(model.mean_, data.mean(axis=0), atol=1e-6)
    # the stated bounds hold (the default eigengap 0.1 is below these datasets' gaps)
    errors = np.max(np.abs(align_signs(model.components_, ref.components_) - ref.components_), axis=1)
    assert np.all(errors <= model.component_error_bounds_)
    solve = model.model_.secure_eigensolve
    assert solve is not None and solve["iterations"] >= 100 and solve["poly_steps"] == 4
    # every provider speaks once per opening: two rounds per secret product, plus setup and reveals
    provider_rounds = model.report_["provider0"]["rounds"]
    assert 2 * solve["secret_products"] <= provider_rounds <= 2 * solve["secret_products"] + 4 * parties + 20


@pytest.mark.slow
def test_close_eigenvalues_top_k_subspace_error_is_bounded():
    """digits, k = 9: lambda_10 / lambda_9 = 0.978, so individual convergence is slow.

    With the gap stated (eigengap = 0.02 < 1 - 0.978) the plan takes
    T = ceil(log(tol / d) / log(1 - eigengap)) iterations and the top-9
    subspace must be within tol (tan of the largest principal angle), plus
    the fixed-point floor.
    """
    data = standardized("digits")
    tol = 1e-4
    model = PPPCA(9, reveal="components", eigengap=0.02, tol=tol).fit(np.array_split(data, 2))
    ref = PCA(9).fit(data)
    angle = np.max(subspace_angles(model.components_.T, ref.components_.T))
    assert np.tan(angle) <= tol + 1e-5
    solve = model.model_.secure_eigensolve
    assert solve["iterations"] == int(np.ceil(np.log(tol / 64) / np.log(1 - 0.02)))


def test_server_never_receives_the_covariance(wine):
    """The server's whole inbound traffic is far smaller than one d x d matrix of ring words."""
    parts = np.array_split(StandardScaler().fit_transform(wine), 3)
    model = PPPCA(2, reveal="components", eigengap=0.3).fit(parts)
    d = wine.shape[1]
    received = model.report_["server"]["bytes_received"]
    # stats sum (d + 1 words per provider), k x d basis and k x k Ritz matrix per provider, trace
    assert received < 3 * 8 * (d + 1 + 2 * d + 4 + 1) + 3 * 400
    covariance_mode = PPPCA(2).fit(parts)
    assert covariance_mode.report_["server"]["bytes_received"] > received


def test_fit_transform_projects_with_the_secure_components(wine):
    data = StandardScaler().fit_transform(wine)
    parts = np.array_split(data, 2)
    model = PPPCA(2, reveal="components", eigengap=0.3)
    projected = model.fit_transform(parts)
    np.testing.assert_allclose(projected, (data - model.mean_) @ model.components_.T, atol=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"reveal": "everything"}, "reveal="),
        ({"reveal": "components", "n_components": 14}, "n_components"),
        ({"reveal": "components", "n_components": 0}, "n_components"),
        ({"reveal": "components", "eigengap": 0.0}, "eigengap"),
        ({"reveal": "components", "min_ratio": 0.9}, "min_ratio"),
        ({"reveal": "components", "standardize": True}, "standardize=True needs the pooled variances"),
    ],
)
def test_bad_options_are_refused_before_anything_is_sent(wine, kwargs, match):
    params = {"n_components": 2, **kwargs}
    with pytest.raises(InputValidationError, match=match):
        PPPCA(**params).fit(np.array_split(wine, 2))


def test_a_trace_too_large_for_the_secure_scaling_is_refused(wine):
    parts = np.array_split(wine * 300.0, 2)  # the raw wine proline column reaches ~5e5
    with pytest.raises(InputValidationError, match="trace"):
        run_pppca(parts, 2, make_backend("additive"), reveal="components")
