"""Symmetric noise tensors and the robust tensor power method (capeAGN building blocks)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from mpc_pca.dp.agn_core import EIGENVALUE_FLOOR, NoSignalWarning, whitening_from_second_moment
from mpc_pca.dp.tensor_power import robust_tensor_power_method
from mpc_pca.dp.tensors import (
    multilinear,
    n_unique_entries,
    pack_symmetric3,
    rank_one_sum,
    symmetric_gaussian_tensor,
    unique_indices,
    unpack_symmetric3,
)
from protocols.errors import InputValidationError, ProtocolError


def test_pack_unpack_round_trip_and_entry_count():
    rng = np.random.default_rng(0)
    for k in (1, 2, 5):
        values = rng.normal(size=n_unique_entries(k))
        assert unique_indices(k).shape == (k * (k + 1) * (k + 2) // 6, 3)
        np.testing.assert_array_equal(pack_symmetric3(unpack_symmetric3(values, k)), values)


def test_noise_tensor_is_symmetric_with_the_stated_per_entry_variance():
    """Every entry of the K x K x K noise tensor has variance scale^2 (chi-square test).

    4000 tensors, K = 4, scale = 0.7, seed 11. For each of the 20 unique entries,
    (n - 1) s^2 / scale^2 ~ chi2(n - 1); two-sided test at alpha = 0.01 overall
    (Bonferroni: 0.01 / 20 per entry). Off-diagonal positions are copies, so
    symmetry is checked exactly, and distinct unique entries must be
    uncorrelated (|r| below the same-level normal bound).
    """
    k, scale, n = 4, 0.7, 4000
    rng = np.random.default_rng(11)
    draws = np.stack([symmetric_gaussian_tensor(k, scale, rng) for _ in range(n)])
    for perm in itertools.permutations(range(3)):
        np.testing.assert_array_equal(draws, np.transpose(draws, (0, *(p + 1 for p in perm))))
    idx = unique_indices(k)
    packed = draws[:, idx[:, 0], idx[:, 1], idx[:, 2]]
    alpha = 0.01 / idx.shape[0]
    statistic = (n - 1) * packed.var(axis=0, ddof=1) / scale**2
    low, high = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], n - 1)
    assert np.all((statistic > low) & (statistic < high)), statistic / (n - 1)
    corr = np.corrcoef(packed.T)[np.triu_indices(idx.shape[0], 1)]
    bound = stats.norm.ppf(1 - 0.01 / (2 * corr.size)) / np.sqrt(n)
    assert np.max(np.abs(corr)) < bound


def test_power_method_recovers_an_orthogonally_decomposable_tensor_to_1e_8():
    rng = np.random.default_rng(3)
    for dim, k in ((5, 5), (8, 4), (3, 1)):
        basis, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
        vectors = basis[:, :k].T
        weights = rng.uniform(0.5, 4.0, size=k)
        tensor = rank_one_sum(weights, vectors)
        values, found = robust_tensor_power_method(tensor, k, np.random.default_rng(1))
        for lam, v in zip(values, found, strict=True):
            match = int(np.argmax(np.abs(vectors @ v)))
            assert abs(lam - weights[match]) < 1e-8
            assert np.max(np.abs(v - vectors[match])) < 1e-8
        assert sorted(np.round(values, 8)) == sorted(np.round(weights, 8))


def test_power_method_rejects_bad_arguments():
    rng = np.random.default_rng(0)
    tensor = rank_one_sum(np.ones(2), np.eye(2))
    with pytest.raises(InputValidationError, match="n_components=3 exceeds the tensor dimension K=2"):
        robust_tensor_power_method(tensor, 3, rng)
    with pytest.raises(InputValidationError, match="n_restarts=0"):
        robust_tensor_power_method(tensor, 1, rng, n_restarts=0)
    bad = tensor.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(InputValidationError, match="NaN"):
        robust_tensor_power_method(bad, 1, rng)


def test_whitening_gives_identity_without_noise():
    rng = np.random.default_rng(5)
    means = rng.normal(size=(3, 7))
    weights = np.array([0.2, 0.3, 0.5])
    m2 = (means.T * weights) @ means
    white = whitening_from_second_moment(m2, 3)
    np.testing.assert_allclose(white.matrix.T @ m2 @ white.matrix, np.eye(3), atol=1e-10)
    # and the whitened M3 is orthogonally decomposable with eigenvalues 1 / sqrt(w_k)
    m3 = rank_one_sum(weights, means)
    whitened = multilinear(m3, white.matrix, white.matrix, white.matrix)
    values, _ = robust_tensor_power_method(whitened, 3, rng)
    np.testing.assert_allclose(np.sort(values), np.sort(1 / np.sqrt(weights)), rtol=1e-9)


def test_whitening_without_a_positive_eigenvalue_warns_and_stays_finite():
    """Noise that swamps M2 gives a (signal-free) whitening and a NoSignalWarning, not an error after the release."""
    m2 = -np.diag([0.5, 0.2, 0.1, 0.05])
    with pytest.warns(NoSignalWarning, match=r"no positive eigenvalue \(largest -0.05\)"):
        white = whitening_from_second_moment(m2, 2)
    assert np.all(np.isfinite(white.matrix)) and white.floored
    np.testing.assert_allclose(white.eigenvalues, [EIGENVALUE_FLOOR * 0.5] * 2)
    with pytest.raises(ProtocolError, match="M2 is zero"):
        whitening_from_second_moment(np.zeros((3, 3)), 2)
