"""Secure subspace iteration: accuracy, the convergence bound, the plan, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.linalg import subspace_angles

from protocols.errors import InputValidationError, ProtocolError
from protocols.tensor.eig import IterationPlan, plan_iterations, poly_steps_for, run_top_eigenvectors


def planted(d: int, eigenvalues: list[float], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric PSD matrix with the given leading eigenvalues (rest 0.1) and its eigenvectors."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    spectrum = np.full(d, 0.1)
    spectrum[: len(eigenvalues)] = eigenvalues
    matrix = (basis * spectrum) @ basis.T
    matrix = np.round((matrix + matrix.T) / 2, 12)
    return (matrix + matrix.T) / 2, basis


def test_matches_numpy_on_a_random_covariance():
    rng = np.random.default_rng(5)
    data = rng.standard_normal((60, 7)) * np.arange(1, 8)
    cov = np.cov(data.T)
    cov = (cov + cov.T) / 2
    result, run = run_top_eigenvectors(cov, 3, n_holders=3)
    values, vectors = np.linalg.eigh(cov)
    ref = vectors[:, ::-1][:, :3].T
    comps = result.components * np.sign(np.sum(result.components * ref, axis=1))[:, None]
    assert np.max(np.abs(comps - ref)) < 1e-4
    np.testing.assert_allclose(result.eigenvalues, values[::-1][:3], rtol=1e-5)
    assert result.trace == pytest.approx(np.trace(cov), rel=1e-6)
    assert run.reports["dealer"].rounds >= 1


def test_subspace_error_obeys_the_convergence_bound():
    """tan(theta_T) <= (lambda_{k+1}/lambda_k)^T tan(theta_0) plus a rounding floor."""
    d, k, iterations = 8, 2, 12
    matrix, basis = planted(d, [3.0, 2.0, 1.6, 1.5], seed=2)  # lambda_3 / lambda_2 = 0.8
    plan = IterationPlan(iterations, poly_steps_for(0.01), 6, 0.2, 0.01, 1e-6)
    result, _ = run_top_eigenvectors(matrix, k, n_holders=2, plan=plan)
    q0, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((d, k)))  # the public start (seed 0)
    tan0 = np.tan(np.max(subspace_angles(q0, basis[:, :k])))
    bound = 0.8**iterations * tan0
    error = np.tan(np.max(subspace_angles(result.components.T, basis[:, :k])))
    assert error <= bound + 1e-5
    assert error > 0.05 * bound  # the bound is not vacuous here: we are still converging


def test_plan_follows_the_gap():
    tight = plan_iterations(64, 5, eigengap=0.05)
    loose = plan_iterations(64, 5, eigengap=0.2)
    assert tight.iterations > 2 * loose.iterations
    assert 0.95**tight.iterations * 64 <= 1e-6 < 0.95 ** (tight.iterations - 1) * 64
    assert poly_steps_for(0.001) > poly_steps_for(0.1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_components": 0}, "out of range"),
        ({"n_components": 5}, "out of range"),
        ({"n_components": 2.0}, "must be an integer"),
        ({"n_components": 1, "n_holders": 1}, "n_holders"),
    ],
)
def test_bad_arguments_are_refused(kwargs, match):
    matrix, _ = planted(4, [2.0, 1.0], seed=1)
    with pytest.raises(InputValidationError, match=match):
        run_top_eigenvectors(matrix, **kwargs)


def test_non_symmetric_and_non_finite_matrices_are_refused():
    matrix, _ = planted(4, [2.0, 1.0], seed=1)
    skew = matrix.copy()
    skew[0, 1] += 0.5
    with pytest.raises(InputValidationError, match="symmetric"):
        run_top_eigenvectors(skew, 1)
    bad = matrix.copy()
    bad[1, 1] = np.nan
    with pytest.raises(InputValidationError, match="non-finite"):
        run_top_eigenvectors(bad, 1)
    with pytest.raises(InputValidationError, match="min_ratio"):
        plan_iterations(4, 2, min_ratio=0.9)
    with pytest.raises(InputValidationError, match="eigengap"):
        plan_iterations(4, 2, eigengap=1.0)


def test_a_direction_weaker_than_min_ratio_is_reported():
    matrix = np.diag([1.0, 1e-4, 1e-4, 1e-4])
    plan = IterationPlan(3, poly_steps_for(0.05), 2, 0.5, 0.05, 1e-6)
    with pytest.raises(ProtocolError, match="min_ratio"):
        run_top_eigenvectors(matrix, 2, plan=plan)


def test_ring_overflow_of_the_trace_is_reported():
    matrix = np.diag([2.0**36, 2.0**36])  # trace 2^37: the scaling factor would fall below 256
    with pytest.raises(ProtocolError, match="too large"):
        run_top_eigenvectors(matrix, 1, plan=IterationPlan(1, 1, 0, 0.5, 0.05, 1e-6))


def test_trace_scale_factor_scales_below_one_over_the_trace_and_names_the_limits():
    from protocols.tensor.eig import trace_scale_factor

    f = 20
    assert trace_scale_factor(1.0, f) == 2**41
    k = trace_scale_factor(3.0, f)
    assert k == math.floor(2**41 / 3) and 1 / 3 * (1 - 2**-8) < k * 2.0 ** (f - 61) <= 1 / 3
    assert trace_scale_factor(2.0**41 / 256, f) == 256  # the smallest factor allowed
    with pytest.raises(ProtocolError, match=r"factor would be 255 < 256"):
        trace_scale_factor(2.0**41 / 255.5, f)
    with pytest.raises(ProtocolError, match="too small for the ring"):
        trace_scale_factor(2.0**-30, f)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ProtocolError, match="trace > 0"):
            trace_scale_factor(bad, f)
