"""PPPCA's ring-range check and rounding-error bounds at their limits (each kills a measured surviving mutation)."""

from __future__ import annotations

import numpy as np
import pytest

import mpc_pca.threads as pppca_module
from mpc_pca.pppca.bounds import check_ring_range, gram_entry_error, rounding_error_bounds
from mpc_pca.pppca.config import PPPCAConfig
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.scaling import gram_scale_exponent
from mpc_pca.pppca.standardize import server_matrix
from protocols.backends import make_backend
from protocols.errors import RingOverflowError
from tests.helpers.pppca_threads import run_pppca


def _parts_with_gram_diagonal(a):
    """Provider 0's centred Gram diagonal is ``16 a^2 / 9``; the other two providers hold zeros."""
    return [np.full((4, 2), a), np.zeros((4, 2)), np.zeros((4, 2))]


def test_the_gram_matrix_is_range_checked_for_every_summand():
    backend = make_backend("additive")
    f = backend.codec.frac_bits
    config = PPPCAConfig(3, 2, 1)
    shift = gram_scale_exponent(3, f, 12)
    # a shifted diagonal between the budgets for 3 summands and for 1 summand
    target = np.sqrt(backend.codec.max_abs(3) * backend.codec.max_abs(1)) / 2.0**shift
    stats = [LocalStatistics.of(p) for p in _parts_with_gram_diagonal(np.sqrt(9 * target / 16))]
    mean = sum(s.column_sums for s in stats) / 12
    diagonal = np.ldexp(stats[0].centred_gram_diagonal(mean), shift)
    assert backend.codec.max_abs(3) < diagonal.max() < backend.codec.max_abs(1)
    with pytest.raises(RingOverflowError, match=r"centred Gram.*\(diagonal\) of provider0.*3 summand"):
        check_ring_range(stats, backend, config)


def test_a_gram_matrix_too_large_for_m_summands_stops_pppca_before_anything_is_sent(monkeypatch):
    """reveal='components' has no column scaling: 1.8e6 gives a diagonal of 5.76e12, above 2^43 / 3."""

    def forbidden(*args, **kwargs):
        raise AssertionError("the protocol started: the column sums would have been exchanged")

    monkeypatch.setattr(pppca_module, "run_inprocess", forbidden)
    parts = _parts_with_gram_diagonal(1.8e6)
    with pytest.raises(RingOverflowError, match="3 summand"):
        run_pppca(parts, 1, make_backend("additive"), reveal="components")


def _worst_entry_and_eta(d, m, n, frac_bits, covariance):
    """Per-entry rounding bound of the covariance and the server's ``eta`` for it."""
    u = gram_entry_error(PPPCAConfig(m, d, 1), frac_bits, n)
    eta = server_matrix(covariance * (n - 1), n, u, standardize=False).eta
    return u[0] ** 2 / (n - 1), eta


@pytest.mark.parametrize(("d", "m", "n", "frac_bits"), [(4, 3, 11, 4), (10, 2, 50, 8), (2, 5, 7, 0)])
def test_the_eigenvalue_bound_covers_the_worst_admissible_rounding_error(d, m, n, frac_bits):
    """Each summed Gram entry may be off by u^2; all off in the same direction
    (E = c 1 1^T / (N - 1)) moves a repeated eigenvalue by d c / (N - 1): Weyl's bound needs the factor d."""
    # a covariance on the scale of the rounding error, so float64 eigenvalues resolve the shift
    unit, _ = _worst_entry_and_eta(d, m, n, frac_bits, np.eye(d))
    covariance = 3.0 * unit * np.eye(d)
    entry, eta = _worst_entry_and_eta(d, m, n, frac_bits, covariance)
    worst = covariance + entry * np.ones((d, d))
    shift = np.max(np.abs(np.linalg.eigvalsh(worst) - np.linalg.eigvalsh(covariance)))
    assert shift == pytest.approx(d * entry, rel=1e-9)
    assert shift <= eta * (1 + 1e-12)


def test_the_component_bound_covers_a_worst_case_rotation():
    """A perturbation of spectral norm eta concentrated on two close eigenvalues turns a component
    by at most what rounding_error_bounds reports."""
    d, m, n = 3, 3, 5
    eigenvalues = np.array([2.0, 1.95, 0.5])
    entry, eta = _worst_entry_and_eta(d, m, n, 6, np.diag(eigenvalues))
    assert eta == pytest.approx(d * entry)
    bounds = rounding_error_bounds(eigenvalues, 2, eta)
    perturbation = np.zeros((d, d))
    perturbation[0, 1] = perturbation[1, 0] = eta
    vectors = np.linalg.eigh(np.diag(eigenvalues) + perturbation)[1][:, ::-1]
    for i in range(2):
        v = vectors[:, i] * np.sign(vectors[i, i])
        deviation = np.max(np.abs(v - np.eye(d)[i]))
        assert deviation <= bounds[i] + 1e-12


@pytest.mark.parametrize("m", [16, 32])
def test_the_gram_entry_bound_covers_the_rounding_of_m_encodings(m):
    """The ring sum of M encodings is off by up to M half-ulps: a bound without the factor M fails.

    Every provider's scaled Gram entry sits 0.49 ulp above a grid point, so each
    encoding rounds down by 0.49 ulp and the decoded sum is off by 0.49 M ulp,
    well above one half-ulp. Measured through the backend's own codec.
    """
    backend = make_backend("additive")
    codec = backend.codec
    f = codec.frac_bits
    d, n = 2, 40 * m
    config = PPPCAConfig(m, d, 1, column_exponents=(0, 0))
    shift = gram_scale_exponent(m, f, n)  # the B each provider scales its Gram matrix by
    ulp = 2.0**-f
    rng = np.random.default_rng(m)
    grams = [(rng.integers(1, 1000, (d, d)) + 0.49) * ulp * 2.0**-shift for _ in range(m)]
    ring = np.zeros((d, d), dtype=np.uint64)
    for gram in grams:
        ring += codec.encode(np.ldexp(gram, shift), n_summands=m)
    decoded = np.ldexp(codec.decode(ring), -shift)
    measured = np.max(np.abs(decoded - np.sum(grams, axis=0)))
    u = gram_entry_error(config, f, n)
    assert measured == pytest.approx(0.49 * m * ulp * 2.0**-shift, rel=1e-6)
    assert measured <= u[0] * u[1]
