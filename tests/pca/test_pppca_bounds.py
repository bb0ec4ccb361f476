"""PPPCA's ring-range check and rounding-error bounds at their limits (each kills a measured surviving mutation)."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.pppca import protocol as pppca_module
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.protocol import check_ring_range, rounding_error_bounds
from protocols.backends import make_backend
from protocols.errors import RingOverflowError


def _parts_with_gram_diagonal_between_the_budgets_for_1_and_3_summands():
    """Provider 0's centred Gram diagonal is 16 a^2 / 9 = 5.76e12: below 2^43 (1 summand), above 2^43 / 3."""
    return [np.full((4, 2), 1.8e6), np.zeros((4, 2)), np.zeros((4, 2))]


def test_the_gram_matrix_is_range_checked_for_every_summand():
    backend = make_backend("additive")
    parts = _parts_with_gram_diagonal_between_the_budgets_for_1_and_3_summands()
    stats = [LocalStatistics.of(p) for p in parts]
    mean = sum(s.column_sums for s in stats) / 12
    diagonal = stats[0].centred_gram_diagonal(mean)
    assert backend.codec.max_abs(3) < diagonal.max() < backend.codec.max_abs(1)
    with pytest.raises(RingOverflowError, match=r"centred Gram.*\(diagonal\) of provider0.*3 summand"):
        check_ring_range(stats, backend)


def test_a_gram_matrix_too_large_for_m_summands_stops_pppca_before_anything_is_sent(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("the protocol started: the column sums would have been exchanged")

    monkeypatch.setattr(pppca_module, "run_inprocess", forbidden)
    parts = _parts_with_gram_diagonal_between_the_budgets_for_1_and_3_summands()
    with pytest.raises(RingOverflowError, match="3 summand"):
        pppca_module.run_pppca(parts, 1, make_backend("additive"))


@pytest.mark.parametrize(("d", "m", "n", "frac_bits"), [(4, 3, 11, 4), (10, 2, 50, 8), (2, 5, 7, 0)])
def test_the_eigenvalue_bound_covers_the_worst_admissible_rounding_error(d, m, n, frac_bits):
    """Each summed Gram entry may be off by M 2^-(f+1); all off in the same direction
    (E = c 1 1^T / (N - 1)) moves a repeated eigenvalue by d c / (N - 1): Weyl's bound needs the factor d."""
    backend = make_backend("additive", frac_bits=frac_bits)
    entry = m * backend.codec.resolution / 2 / (n - 1)
    covariance = 3.0 * np.eye(d)
    worst = covariance + entry * np.ones((d, d))
    shift = np.max(np.abs(np.linalg.eigvalsh(worst) - np.linalg.eigvalsh(covariance)))
    assert shift == pytest.approx(d * entry, rel=1e-9)
    eta, _ = rounding_error_bounds(np.linalg.eigvalsh(covariance)[::-1], 1, m, n, backend)
    assert shift <= eta * (1 + 1e-12)


def test_the_component_bound_covers_a_worst_case_rotation():
    """A perturbation of spectral norm eta concentrated on two close eigenvalues turns a component
    by at most what rounding_error_bounds reports."""
    backend = make_backend("additive", frac_bits=6)
    d, m, n = 3, 3, 5
    eigenvalues = np.array([2.0, 1.95, 0.5])
    eta, bounds = rounding_error_bounds(eigenvalues, 2, m, n, backend)
    entry = m * backend.codec.resolution / 2 / (n - 1)
    assert eta == pytest.approx(d * entry)
    perturbation = np.zeros((d, d))
    perturbation[0, 1] = perturbation[1, 0] = eta
    vectors = np.linalg.eigh(np.diag(eigenvalues) + perturbation)[1][:, ::-1]
    for i in range(2):
        v = vectors[:, i] * np.sign(vectors[i, i])
        deviation = np.max(np.abs(v - np.eye(d)[i]))
        assert deviation <= bounds[i] + 1e-12
