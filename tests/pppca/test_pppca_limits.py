"""PPPCA at the limits: top-k eigensolver, packed statistics, chunked merges, peak memory."""

import tracemalloc

import numpy as np
import pytest

from mpc_pca import PPPCA
from mpc_pca.linalg import leading_eigenpairs, top_eigenpairs
from mpc_pca.pppca.local_stats import LocalStatistics
from tests.helpers.oracles import align_signs


@pytest.mark.parametrize("d,k", [(1, 1), (5, 5), (40, 3), (300, 10)])
def test_leading_eigenpairs_match_full_eigh(d, k):
    rng = np.random.default_rng(d)
    a = rng.normal(size=(d + 5, d)) * np.linspace(1, 5, d)
    cov = a.T @ a
    values, components, leading, trace = leading_eigenpairs(cov.copy(), k)
    full_values, full_components, all_values = top_eigenpairs(cov, k)
    np.testing.assert_allclose(values, full_values, rtol=1e-10, atol=1e-10 * all_values[0])
    np.testing.assert_allclose(leading, all_values[: min(k + 1, d)], rtol=1e-10, atol=1e-10 * all_values[0])
    assert trace == pytest.approx(all_values.sum(), rel=1e-12)
    np.testing.assert_allclose(align_signs(components, full_components), full_components, atol=1e-8)


def test_merge_equals_statistics_of_the_union():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1000, 6)) * 3 + 10.0
    merged = LocalStatistics.of(x[:10])
    for start in range(10, 1000, 317):
        merged = merged.merge(LocalStatistics.of(x[start : start + 317]))
    whole = LocalStatistics.of(x)
    assert merged.n_rows == 1000
    np.testing.assert_allclose(merged.column_sums, whole.column_sums, rtol=1e-12)
    centred = x - x.mean(axis=0)
    np.testing.assert_allclose(merged.scatter, centred.T @ centred, rtol=1e-10, atol=1e-10 * 9e3)
    np.testing.assert_allclose(merged.scatter, whole.scatter, rtol=1e-10, atol=1e-10 * 9e3)


def test_explained_variance_ratio_uses_the_trace():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(400, 30)) @ rng.normal(size=(30, 30))
    model = PPPCA(3).fit(np.array_split(x, 3))
    cov = np.cov(x, rowvar=False)
    np.testing.assert_allclose(
        model.explained_variance_ratio_, np.sort(np.linalg.eigvalsh(cov))[::-1][:3] / np.trace(cov), rtol=1e-6
    )


@pytest.mark.parametrize("backend", ["additive", "additive-masks", "additive-sparse-masks"])
def test_peak_memory_at_most_six_d_by_d(backend):
    # Every party's buffers together (providers, server, in-process messages), traced
    # by tracemalloc above the data: at most 6 d x d float64 arrays (issue 15).
    d, parties = 400, 2
    rng = np.random.default_rng(3)
    parts = [rng.normal(size=(600, d)) for _ in range(parties)]
    estimator = PPPCA(5, backend=backend)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        estimator.fit(parts)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak <= 6 * 8 * d * d, f"peak {peak / (8 * d * d):.2f} d x d arrays"
