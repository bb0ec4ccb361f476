"""PPPCA(reveal="components", eigensolver="krylov"): block Krylov through the whole protocol, and its settings."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA

from mpc_pca import PPPCA
from mpc_pca.pppca.components import (
    ComponentsSettings,
    _session,
    check_eigensolver,
    components_settings,
    default_max_blocks,
)
from protocols.errors import InputValidationError
from tests.helpers.oracles import align_signs

LEADING = (9.09, 9.04, 8.99, 8.89, 8.79, 8.70, 8.62, 8.615)


def _gap_parts(d: int = 48, n: int = 6_000, gap: float = 0.0075, seed: int = 0) -> list[np.ndarray]:
    """Three providers' rows whose sample covariance has exactly LEADING, ``(1 - gap) lambda_8``, a bulk near 1."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, d))
    z -= z.mean(axis=0)
    z = z @ np.linalg.inv(np.linalg.cholesky(np.cov(z.T)).T)
    spectrum = np.concatenate([LEADING, [(1.0 - gap) * LEADING[-1]], np.linspace(1.13, 0.87, d - 9)])
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return np.array_split((z * np.sqrt(spectrum)) @ basis.T + 5.0, 3)


def _rounds(model: PPPCA) -> int:
    return max(r["rounds"] for name, r in model.report_.items() if name.startswith("provider"))


@pytest.fixture(scope="module")
def gap_fits():
    parts = _gap_parts()
    fits = {
        method: PPPCA(8, reveal="components", eigengap=0.005, eigensolver=method).fit(parts)
        for method in ("subspace", "krylov")
    }
    return parts, fits


def test_krylov_answers_the_small_gap_within_1e6_and_its_bounds(gap_fits):
    parts, fits = gap_fits
    model = fits["krylov"]
    ref = PCA(8).fit(np.vstack(parts))
    relative = np.abs(model.explained_variance_ - ref.explained_variance_) / ref.explained_variance_
    assert np.max(relative) <= 1e-6
    assert np.all(np.abs(model.explained_variance_ - ref.explained_variance_) <= model.variance_error_bound_)
    errors = np.max(np.abs(align_signs(model.components_, ref.components_) - ref.components_), axis=1)
    assert np.all(errors <= model.component_error_bounds_)
    solve = model.model_.secure_eigensolve
    assert solve["method"] == "krylov" and solve["block_size"] == 16


def test_krylov_needs_far_fewer_rounds_than_subspace_iteration(gap_fits):
    _, fits = gap_fits
    krylov, subspace = _rounds(fits["krylov"]), _rounds(fits["subspace"])
    assert krylov <= 100 < subspace
    assert fits["subspace"].model_.secure_eigensolve["method"] == "ladder"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eigensolver": "lanczos"}, "eigensolver='lanczos' is not one of"),
        ({"eigensolver": None}, "eigensolver=None is not one of"),
    ],
)
def test_a_bad_eigensolver_is_refused_before_anything_is_sent(kwargs, match):
    with pytest.raises(InputValidationError, match=match):
        PPPCA(2, reveal="components", **kwargs).fit(_gap_parts(d=12, n=300))


def test_deployment_settings_name_the_eigensolver():
    assert components_settings({"eigensolver": "krylov"}, "components").method == "krylov"
    assert components_settings({}, "components").method == "subspace"
    with pytest.raises(InputValidationError, match="apply only with reveal='components'"):
        components_settings({"eigensolver": "krylov"}, "spectrum")
    with pytest.raises(InputValidationError, match="is not one of"):
        check_eigensolver("Krylov")


def test_the_crypten_engine_refuses_krylov_with_a_clear_message():
    with pytest.raises(InputValidationError, match="native tensor engine only; with the CrypTen engine"):
        _session(
            None, ("provider0", "provider1"), ComponentsSettings(method="krylov"), "crypten", "components"
        )


def test_the_block_cap_follows_the_chebyshev_count():
    # ln(1e8) / (2 sqrt(g)): 29.1 at g = 0.1, 212 at 0.0075 (capped at 100), at least 10
    assert default_max_blocks(0.1) == 30
    assert default_max_blocks(0.0075) == 100
    assert default_max_blocks(0.9) == 10
    assert ComponentsSettings(eigengap=0.1, method="krylov").iteration_cap() == 30
    assert ComponentsSettings(eigengap=0.1).iteration_cap() == 20  # the ladder's, unchanged


def test_a_deployment_announces_and_agrees_on_the_eigensolver():
    """Every party a thread, settings announced and agreed: ``eigensolver="krylov"`` reaches the solve."""
    from mpc_pca.deploy import run_threads

    parts = _gap_parts(d=24, n=3_000)
    settings = {"n_components": 8, "reveal": "components", "eigengap": 0.005, "eigensolver": "krylov"}
    result = run_threads("pppca-ss", parts, settings, timeout=300)
    assert result["secure_eigensolve"]["method"] == "krylov"
    ref = PCA(8).fit(np.vstack(parts))
    np.testing.assert_allclose(result["explained_variance"], ref.explained_variance_, rtol=1e-6)
    with pytest.raises(InputValidationError, match="apply only with reveal='components'"):
        run_threads("pppca-ss", parts, {**settings, "reveal": "covariance"}, timeout=60)


def test_wine_over_three_providers_equals_subspace_iteration_and_numpy():
    """The lead's case: d = 13, eigenvalues 99,201 .. 0.008; the Krylov blocks must fill R^13."""
    from scipy.linalg import subspace_angles
    from sklearn.datasets import load_wine

    from protocols.tensor.fast_eig_math import ladder_fixed_point_error

    x = load_wine().data
    parts = np.array_split(x, 3)
    model = PPPCA(2, reveal="components", eigensolver="krylov").fit(parts)
    values, vectors = np.linalg.eigh(np.cov(x.T))
    top = vectors[:, ::-1][:, :2]
    # the Ritz matrix's stated fixed-point error is in units of C / tr(C)
    atol = ladder_fixed_point_error(13) * float(np.sum(values))
    np.testing.assert_allclose(model.explained_variance_, values[::-1][:2], rtol=1e-6, atol=atol)
    assert np.tan(np.max(subspace_angles(model.components_.T, top))) <= 1e-4
