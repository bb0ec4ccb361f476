"""The block Krylov eigensolver (protocols.tensor.krylov_eig) on a planted small-gap spectrum, against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import subspace_angles

from protocols.errors import InputValidationError, ProtocolError
from protocols.tensor.krylov_eig import krylov_eigenvectors
from protocols.tensor.krylov_math import (
    angle_bound,
    krylov_noise,
    next_block_coefficients,
    predicted_blocks,
    ritz_angle_bound,
    ritz_pairs,
    ritz_state,
)
from tests.protocols.tensor.test_tensor_fast_eig import HOLDERS, _reference, _run

LEADING = (9.09, 9.04, 8.99, 8.89, 8.79, 8.70, 8.62, 8.615)
#: The issue's gap: 1 - lambda_9 / lambda_8.
GAP = 0.0075
#: Rounds outside the blocks: symmetry check, trace, scaled copies, rotation seeds, tr(C^2)
#: (product, reveal), and the masked Rayleigh-Ritz step (V, V S, C B, B^T C B, reveal).
FIXED_ROUNDS = 12
ROUNDS_PER_BLOCK = 5


def _gap_matrix(d: int, n: int = 60_000, seed: int = 0) -> np.ndarray:
    """``(n - 1)`` times a covariance with LEADING, ``(1 - GAP) lambda_8`` and a bulk in [0.87, 1.13]."""
    spectrum = np.empty(d)
    spectrum[:8] = LEADING
    spectrum[8] = (1.0 - GAP) * LEADING[-1]
    spectrum[9:] = np.linspace(1.13, 0.87, d - 9)
    basis, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return (basis * spectrum) @ basis.T * (n - 1)


def _solve(matrix: np.ndarray, **kwargs):
    kwargs = {"eigengap": GAP, "accept_tol": 1e-4, **kwargs}
    return _run(matrix, lambda c: krylov_eigenvectors(c, 8, to="dealer", **kwargs), gram_bits=10)


@pytest.fixture(scope="module")
def gap_run():
    matrix = _gap_matrix(96)
    result, run = _solve(matrix)
    return matrix, result, run


def test_krylov_matches_numpy_on_the_small_gap_spectrum_within_its_bound(gap_run):
    matrix, result, _ = gap_run
    values, vectors = _reference(matrix, 8)
    # eigenvalues: the solver's tan bound t gives lambda_1 t^2 plus fixed point (far below 1e-6 relative)
    np.testing.assert_allclose(result.eigenvalues, values[:8], rtol=1e-6)
    t = result.plan.achieved_tol
    assert np.all(np.abs(result.eigenvalues - values[:8]) <= values[0] * t * t + 1e-6 * values[:8])
    # the subspace: within the stop rule's bound, which the answer check accepts
    angle = np.max(subspace_angles(result.components.T, vectors.T))
    assert np.tan(angle) <= t <= 1e-4
    assert result.plan.method == "krylov" and result.plan.block_size == 16


def test_rounds_are_five_per_block_and_within_the_chebyshev_prediction(gap_run):
    matrix, result, run = gap_run
    blocks = len(result.plan.powers)
    rounds = max(run.reports[h].rounds for h in HOLDERS)
    assert rounds == FIXED_ROUNDS + ROUNDS_PER_BLOCK * blocks
    values = np.linalg.eigvalsh(matrix)[::-1]
    b = result.plan.block_size
    # block size b: Saad's bound with gamma = (lambda_k - lambda_(b+1)) / lambda_(b+1) from the public start Q_0
    gamma = (values[7] - values[b]) / values[b]
    q0, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((96, b)))
    top = np.linalg.eigh(matrix)[1][:, ::-1][:, :8]
    start_tan = float(np.tan(np.max(subspace_angles(q0, top))))
    # target: the stop rule's own bound divided by its Davis-Kahan factor lambda_1 / (g lambda_k) <= 1 / g
    predicted = predicted_blocks(gamma, start_tan, result.plan.achieved_tol * GAP)
    assert blocks <= predicted
    assert rounds <= FIXED_ROUNDS + ROUNDS_PER_BLOCK * predicted <= 100


def test_krylov_beats_the_subspace_count_the_gap_predicts():
    """1 / sqrt(gap) vs 1 / gap: the Chebyshev count for block size k is far below subspace iteration's."""
    gamma = GAP / (1.0 - GAP)
    krylov = predicted_blocks(gamma, 100.0, 1e-4)
    subspace = int(np.ceil(np.log(2 * 100.0 / 1e-4) / -np.log1p(-GAP)))
    assert krylov < subspace / 8


def test_a_false_gap_is_refused_before_anything_is_revealed():
    """lambda_9 = lambda_8 (no gap at all): the residual never meets the assumed gap's bound."""
    d = 40
    spectrum = np.concatenate([np.full(10, 5.0), np.linspace(1.1, 0.9, d - 10)])
    basis, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((d, d)))
    matrix = (basis * spectrum) @ basis.T * 1000.0
    with pytest.raises(ProtocolError, match=r"eigengap=0\.0075"):
        _solve(matrix, max_blocks=2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"block_size": 4}, "block_size=4"),
        ({"block_size": 97}, "block_size=97"),
        ({"max_blocks": 0}, "max_iterations=0"),
        ({"max_blocks": 101}, "max_iterations=101"),
        ({"eigengap": 0.0}, r"eigengap=0\.0"),
        ({"tol": 1.0}, r"tol=1\.0"),
    ],
)
def test_settings_are_checked_before_anything_is_sent(kwargs, message):
    with pytest.raises(InputValidationError, match=message):
        _solve(_gap_matrix(96), **kwargs)


def test_the_stop_rule_bound_is_davis_kahan_with_the_assumed_gap():
    theta = np.array([2.0, 1.0])
    # delta = g theta_k - (1 - g) |R| = 0.1 - 0.9e-3; sin = 1e-3 / delta
    sine = 1e-3 / (0.1 - 0.9e-3)
    assert angle_bound(theta, 1e-3, 0.1) == pytest.approx(sine / np.sqrt(1 - sine**2))
    assert angle_bound(theta, 0.2, 0.1) == np.inf  # delta <= 0: nothing can be said


def test_ritz_pairs_and_residuals_from_grams_equal_the_direct_computation():
    rng = np.random.default_rng(1)
    d, n = 30, 9
    a = rng.standard_normal((d, d))
    c = a @ a.T
    basis = rng.standard_normal((d, n))  # not orthonormal: S is opened as it is
    image = c @ basis
    theta, y, residuals = ritz_pairs(basis.T @ basis, basis.T @ image, image.T @ image, 3)
    np.testing.assert_allclose(y.T @ basis.T @ basis @ y, np.eye(3), atol=1e-10)
    direct = np.linalg.norm(c @ basis @ y - basis @ y * theta, axis=0)
    np.testing.assert_allclose(residuals, direct, rtol=1e-6, atol=1e-8)


def test_the_next_block_is_orthonormal_and_orthogonal_to_every_previous_block():
    rng = np.random.default_rng(2)
    d, n, b = 40, 12, 4
    k_basis, _ = np.linalg.qr(rng.standard_normal((d, n)))
    x = rng.standard_normal((d, b))
    m = next_block_coefficients(k_basis.T @ k_basis, k_basis.T @ x, x.T @ x, b)
    nxt = np.hstack([k_basis, x]) @ m
    np.testing.assert_allclose(nxt.T @ nxt, np.eye(b), atol=1e-10)
    np.testing.assert_allclose(k_basis.T @ nxt, 0.0, atol=1e-10)
    # inside span K: breakdown, the space is invariant
    assert next_block_coefficients(np.eye(n), k_basis.T @ k_basis[:, :b], np.eye(b), b) is None


def test_a_vanished_direction_is_deflated_not_a_breakdown():
    """One column of the new block inside span K: the next block keeps the other three directions."""
    rng = np.random.default_rng(5)
    d, n, b = 40, 12, 4
    k_basis, _ = np.linalg.qr(rng.standard_normal((d, n)))
    x = rng.standard_normal((d, b))
    x[:, 1] = k_basis @ rng.standard_normal(n)
    m = next_block_coefficients(k_basis.T @ k_basis, k_basis.T @ x, x.T @ x, b)
    assert m is not None and m.shape == (n + b, b - 1)
    nxt = np.hstack([k_basis, x]) @ m
    np.testing.assert_allclose(nxt.T @ nxt, np.eye(b - 1), atol=1e-8)
    np.testing.assert_allclose(k_basis.T @ nxt, 0.0, atol=1e-8)


def test_the_per_pair_bound_weighs_each_residual_against_its_own_gap():
    theta = np.array([1.0, 1e-5])
    residuals = np.array([1e-8, 1e-10])
    r = float(np.linalg.norm(residuals))
    mu = 0.9 * (1e-5 + r)
    sine = float(np.hypot(1e-8 / (1.0 - mu), 1e-10 / (1e-5 - mu)))
    assert ritz_angle_bound(theta, residuals, 0.1) == pytest.approx(sine / np.sqrt(1 - sine**2))
    # the lambda_1 pair's residual no longer counts against g theta_k: 100 times below Davis-Kahan's
    assert ritz_angle_bound(theta, residuals, 0.1) < angle_bound(theta, r, 0.1) / 100
    # equal Ritz values: the same as Davis-Kahan
    flat = np.array([2.0, 2.0])
    assert ritz_angle_bound(flat, np.array([1e-3, 0.0]), 0.1) == pytest.approx(angle_bound(flat, 1e-3, 0.1))
    assert ritz_angle_bound(theta, np.array([0.0, 1e-5]), 0.1) == np.inf


def test_the_holders_bound_on_the_full_wine_space_is_the_per_pair_one():
    """K = I (the basis spans R^13), X = the scaled wine Gram plus one 30-bit ulp of noise per entry."""
    a = _wine_gram()
    a /= np.linalg.eigvalsh(a)[-1] * 1.002
    x = a + np.random.default_rng(0).uniform(-(2.0**-30), 2.0**-30, a.shape)
    state = ritz_state((np.eye(13), x, x.T @ x), 5, 13, 0.1, 30)
    noise = np.array([krylov_noise(13, state.vectors[:, i], 30) for i in range(5)])
    assert state.bound == pytest.approx(ritz_angle_bound(state.values, state.residuals + noise, 0.1))
    dk = angle_bound(state.values, float(np.linalg.norm(state.residuals + noise)), 0.1)
    assert state.bound < dk / 2  # measured: 3.8e-3 against Davis-Kahan's 8.1e-3
    top = np.linalg.eigh(a)[1][:, ::-1][:, :5]
    assert np.tan(np.max(subspace_angles(state.vectors, top))) <= state.bound


def _wine_gram() -> np.ndarray:
    from sklearn.datasets import load_wine

    x = load_wine().data
    x = x - x.mean(axis=0)
    return x.T @ x


@pytest.mark.parametrize(("k", "accept"), [(2, 1e-4), (5, 1e-2)])
def test_wine_fills_r13_and_matches_numpy_within_its_bound(k, accept):
    """d = 13 with eigenvalues over 7 decades: the blocks fill R^13 (deflating vanished directions).

    Before the fix a direction of the third block that vanished within fixed point stopped the
    solve as if the space were invariant (k = 2: bound 0.31 after 2 blocks), and the residual
    of the lambda_1 pair, set against g theta_k, swamped the bound (k = 5: 0.021). k = 5 is
    limited by the 30-bit images (lambda_5 / lambda_1 = 1.2e-5): its bound is 3e-3 to 6e-3.
    """
    matrix = _wine_gram()
    result, _ = _run(
        matrix, lambda c: krylov_eigenvectors(c, k, to="dealer", tol=1e-4, accept_tol=accept), gram_bits=10
    )
    plan = result.plan
    assert len(plan.powers) * plan.block_size > 13  # blocks x block size exceed d: the last ones are narrower
    values, vectors = _reference(matrix, k)
    t = plan.achieved_tol
    angle = np.max(subspace_angles(result.components.T, vectors.T))
    assert np.tan(angle) <= t <= accept
    # eigenvalues: lambda_1 t^2 plus the stated fixed-point error of the Ritz matrix (in units of C)
    slack = values[0] * t * t + result.fixed_point_error / result.scale
    assert np.all(np.abs(result.eigenvalues - values[:k]) <= slack)


def test_a_spectrum_over_decades_with_more_block_columns_than_d():
    """d = 20, eigenvalues 10^0 .. 10^-7, k = 3, b = 6: four blocks (24 columns) would overfill R^20."""
    d = 20
    basis, _ = np.linalg.qr(np.random.default_rng(6).standard_normal((d, d)))
    matrix = (basis * np.logspace(0.0, -7.0, d)) @ basis.T * 1e6
    result, _ = _run(matrix, lambda c: krylov_eigenvectors(c, 3, to="dealer", tol=1e-4), gram_bits=10)
    values, vectors = _reference(matrix, 3)
    t = result.plan.achieved_tol
    assert np.tan(np.max(subspace_angles(result.components.T, vectors.T))) <= t <= 1e-4
    np.testing.assert_allclose(result.eigenvalues, values[:3], rtol=1e-5)


def _plain_block_krylov(matrix: np.ndarray, k: int, b: int, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """The same algorithm in float64: public start ``Q_0`` (seed 0), ``blocks`` blocks, Rayleigh-Ritz on all."""
    d = matrix.shape[0]
    basis, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((d, b)))
    for _ in range(blocks - 1):
        nxt = matrix @ basis[:, -b:]
        for _ in range(2):
            nxt -= basis @ (basis.T @ nxt)
        basis = np.hstack([basis, np.linalg.qr(nxt)[0]])
    values, vectors = np.linalg.eigh(basis.T @ matrix @ basis)
    order = np.argsort(values)[::-1][:k]
    return values[order], (basis @ vectors[:, order]).T


def test_an_unconverged_solve_equals_the_same_algorithm_in_plaintext():
    """Three blocks on an evenly spread spectrum (no gap; the assumed one is generous, so the bound accepts)."""
    d = 64
    basis, _ = np.linalg.qr(np.random.default_rng(4).standard_normal((d, d)))
    matrix = (basis * np.linspace(10.0, 1.0, d)) @ basis.T * 1e4
    result, _ = _solve(matrix, eigengap=0.9, max_blocks=3, accept_tol=0.99)
    assert len(result.plan.powers) == 3
    values, vectors = _plain_block_krylov(matrix, 8, 16, 3)
    exact, top = _reference(matrix, 8)
    # far from converged: the plaintext run is 2 % off, the secure run matches it, not the exact answer
    assert np.max(np.abs(values - exact[:8]) / exact[:8]) > 1e-2
    np.testing.assert_allclose(result.eigenvalues, values, rtol=1e-6)
    angle = np.max(subspace_angles(result.components.T, vectors.T))
    assert angle < 1e-4 < 0.1 < np.max(subspace_angles(result.components.T, top.T))
