"""The plaintext reference of pppca-randomized: exact on a gapped spectrum, its stop rule's bound, chunked products."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.wide.site import site_product, site_scores, site_sums
from mpc_pca.wide.subspace import STOP_ITERATIONS, STOP_TOL, auto_power, pooled_moments
from protocols.errors import InputValidationError
from tests.wide.helpers import (
    BlocksPart,
    aligned,
    dense_covariance,
    gapped_rows,
    reference,
    split,
    subspace_sine,
    top_eigh,
)

K = 5


@pytest.mark.parametrize("standardize", [False, True])
def test_the_reference_equals_eigh_of_the_pooled_covariance_on_a_gapped_spectrum(standardize):
    rows = gapped_rows(1500, 200, seed=1)
    parts = split(rows, [100, 900, 7, 493])
    result = reference(parts, K, standardize=standardize, iterated_power=200, tol=1e-13, seed=3)
    values, vectors = top_eigh(dense_covariance(rows, standardize), K)
    assert result.stop == STOP_TOL
    assert subspace_sine(result.components, vectors) <= 1e-8
    assert np.max(np.abs(aligned(result.components, vectors) - vectors)) <= 1e-8
    assert np.max(np.abs(result.eigenvalues - values) / values) <= 1e-10
    # deterministic signs: each component's largest entry is positive (mpc_pca.linalg.flip_signs)
    pivots = result.components[np.arange(K), np.argmax(np.abs(result.components), axis=1)]
    assert np.all(pivots > 0)


def test_standardizing_is_the_covariance_of_the_standardized_rows():
    rows = gapped_rows(600, 40, seed=2)
    plain = reference([rows], 3, iterated_power=100, tol=1e-12)
    scaled = reference([rows], 3, standardize=True, iterated_power=100, tol=1e-12)
    exact, _ = top_eigh(dense_covariance(rows, standardize=True), 3)
    assert np.allclose(scaled.eigenvalues, exact, rtol=1e-10)
    assert not np.allclose(plain.eigenvalues, exact, rtol=1e-2)  # the uneven column scales matter


@pytest.mark.parametrize("tol", [1e-4, 1e-7, 1e-11])
def test_when_the_stop_rule_says_converged_its_residuals_are_true_and_bound_the_eigenvalues(tol):
    rows = gapped_rows(800, 120, seed=4)
    covariance = dense_covariance(rows)
    result = reference(split(rows, [300, 500]), K, iterated_power=300, tol=tol, seed=9)
    assert result.stop == STOP_TOL and result.n_products <= 301
    assert result.residual_bound <= tol
    assert result.value_change <= tol
    # the residuals it reports are the exact ||C v - theta v|| ...
    true = np.linalg.norm(covariance @ result.components.T - result.components.T * result.eigenvalues, axis=0)
    assert np.allclose(result.residuals, true, rtol=1e-6, atol=1e-12 * result.eigenvalues[0])
    assert result.residual_bound == pytest.approx(np.max(true) / result.eigenvalues[0], rel=1e-6, abs=1e-14)
    # ... and each Ritz value is within its residual of an eigenvalue of C (here, the matching one)
    values, _ = top_eigh(covariance, K)
    assert np.all(np.abs(result.eigenvalues - values) <= result.residuals * (1 + 1e-9) + 1e-12 * values[0])


def test_without_tol_or_short_of_it_the_run_makes_iterated_power_plus_one_products():
    rows = gapped_rows(300, 50, seed=5)
    fixed = reference([rows], 2, iterated_power=3)
    assert (fixed.stop, fixed.n_products) == (STOP_ITERATIONS, 4)
    unreachable = reference([rows], 2, iterated_power=6, tol=1e-300)
    assert (unreachable.stop, unreachable.n_products) == (STOP_ITERATIONS, 7)
    assert unreachable.residual_bound > 1e-300
    auto = reference([rows], 2)  # scikit-learn's "auto": 7 if k < 0.1 min(N, d)
    assert auto.n_products == auto_power(2, 300, 50) + 1 == 8


def test_the_block_is_k_plus_the_oversampling_and_the_start_is_the_seeds():
    rows = gapped_rows(200, 30, seed=6)
    a = reference([rows], 3, n_oversamples=4, iterated_power=1, seed=11)
    b = reference(split(rows, [50, 150]), 3, n_oversamples=4, iterated_power=1, seed=11)
    c = reference([rows], 3, n_oversamples=4, iterated_power=1, seed=12)
    assert a.block_size == 7 and reference([rows], 3, n_oversamples=100, iterated_power=0).block_size == 30
    assert np.allclose(a.components, b.components, atol=1e-12)  # the split changes nothing but rounding
    assert not np.allclose(a.components, c.components, atol=1e-6)  # one power iteration: the start shows


@pytest.mark.parametrize("chunk", [1, 7, 64, 333, 1000])
def test_chunked_products_sums_and_scores_equal_the_whole_ones(chunk):
    rows = gapped_rows(999, 25, seed=7)
    block = np.random.default_rng(0).normal(size=(25, 6))
    mean = rows.mean(axis=0) + 0.1
    centred = rows - mean
    whole = centred.T @ (centred @ block)
    scale = rows.std(axis=0)
    components = np.linalg.qr(np.random.default_rng(1).normal(size=(25, 3)))[0].T
    for source in (rows, BlocksPart(rows, chunk)):
        assert np.allclose(site_product(source, block, mean, chunk_rows=chunk), whole, rtol=1e-12, atol=1e-9)
        assert np.allclose(site_product(source, block, chunk_rows=chunk), rows.T @ (rows @ block), rtol=1e-12)
        sums = site_sums(source, chunk_rows=chunk)
        assert sums.n_rows == 999 and sums.peak == np.max(np.abs(rows))
        assert np.allclose(sums.sums, rows.sum(axis=0)) and np.allclose(sums.squares, (rows**2).sum(axis=0))
        scores = site_scores(source, mean, scale, components, chunk_rows=chunk)
        assert np.allclose(scores, (centred / scale) @ components.T, atol=1e-12)


def test_a_site_refuses_nan_no_rows_and_a_value_above_the_agreed_bound():
    rows = np.random.default_rng(8).normal(size=(50, 4))
    rows[17, 2] = np.nan
    with pytest.raises(
        InputValidationError, match=r"rows 0\.\.49 contains a non-finite entry nan at index \(17, 2\)"
    ):
        site_sums(rows, name="site")
    with pytest.raises(InputValidationError, match="holds no rows"):
        site_sums(np.empty((0, 4)), name="site")
    with pytest.raises(InputValidationError, match="not below the agreed bound 4"):
        site_product(np.full((3, 4), 5.0), np.eye(4)[:, :2], peak=4.0)


def test_a_constant_column_is_left_unscaled_when_standardizing():
    moments = pooled_moments(np.array([6.0, 3.0]), 3, np.array([12.0, 5.0]))
    assert moments.scale[0] == 1.0  # 2, 2, 2: variance 0
    assert moments.scale[1] == pytest.approx(np.sqrt(5 / 3 - 1))
    with pytest.raises(InputValidationError, match="needs at least 2"):
        pooled_moments(np.zeros(2), 1)


class GeneratedPart(BlocksPart):
    """Rows made chunk by chunk from a seed and never stored: a file far larger than one chunk."""

    def __init__(self, n: int, d: int, chunk: int) -> None:
        self.n, self.chunk, self.n_features = n, chunk, d

    def chunks(self):
        for start in range(0, self.n, self.chunk):
            rng = np.random.default_rng(start)
            yield rng.normal(size=(min(self.chunk, self.n - start), self.n_features))


def test_a_site_holds_one_chunk_and_o_of_d_b_numbers_whatever_its_row_count():
    import tracemalloc

    n, d, b, chunk = 40_000, 400, 12, 500  # 128 MB of rows, chunks of 1.6 MB
    part = GeneratedPart(n, d, chunk)
    block = np.linalg.qr(np.random.default_rng(0).normal(size=(d, b)))[0]
    mean = np.full(d, 0.01)
    chunk_bytes, block_bytes = 8 * chunk * d, 8 * d * b
    tracemalloc.start()
    try:
        sums = site_sums(part)
        product = site_product(part, block, mean)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sums.n_rows == n and product.shape == (d, b)
    assert peak <= 2 * chunk_bytes + 8 * block_bytes + 8 * 8 * d, (peak, chunk_bytes, block_bytes)
    assert peak < 8 * n * d / 20  # far below the rows held whole
