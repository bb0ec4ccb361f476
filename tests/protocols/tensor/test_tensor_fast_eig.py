"""The tens-of-rounds eigensolvers of protocols.tensor.fast_eig and spectrum_eig, and their batched openings."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.linalg import subspace_angles

from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError
from protocols.runtime import run_inprocess
from protocols.sharing import split
from protocols.tensor import TensorSession, from_share
from protocols.tensor.batched import open_products, truncate_many
from protocols.tensor.fast_eig import ladder_eigenvectors
from protocols.tensor.fast_eig_math import F
from protocols.tensor.joint_rotation import haar_rotation
from protocols.tensor.spectrum_eig import spectrum_eigenvectors

HOLDERS = ["h0", "h1", "h2"]


def _close_gap_matrix(d: int, k: int, seed: int = 0) -> np.ndarray:
    """Gram matrix of 20,000 rows with the issue's top eigenvalues 9.09 ... 8.615 over a flat bulk."""
    rng = np.random.default_rng(seed)
    spectrum = np.ones(d)
    spectrum[:k] = np.linspace(9.09, 8.615, k)
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    rows = (rng.standard_normal((20_000, d)) * np.sqrt(spectrum)) @ basis.T
    rows -= rows.mean(axis=0)
    gram = rows.T @ rows
    return (gram + gram.T) / 2.0


def _run(matrix: np.ndarray, solve, gram_bits: int = 20):
    d = matrix.shape[0]
    shares = split(FixedPointCodec(gram_bits).encode(matrix, name="matrix"), len(HOLDERS))

    def role(name):
        def run(party):
            session = TensorSession(party, holders=HOLDERS, dealer="dealer", frac_bits=F)
            share = shares[HOLDERS.index(name)] if name in HOLDERS else None
            return solve(from_share(session, share, (d, d), gram_bits))

        return run

    run = run_inprocess({name: role(name) for name in [*HOLDERS, "dealer"]}, timeout=300)
    return run.outputs["dealer"], run


def _reference(matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    values, vectors = np.linalg.eigh(matrix)
    order = np.argsort(values)[::-1]
    return values[order], vectors[:, order[:k]].T


def test_ladder_resolves_close_eigenvalues_in_tens_of_rounds():
    d, k = 48, 8
    matrix = _close_gap_matrix(d, k)
    result, run = _run(matrix, lambda c: ladder_eigenvectors(c, k, to="dealer"))
    values, vectors = _reference(matrix, k)
    np.testing.assert_allclose(result.eigenvalues, values[:k], rtol=1e-6)
    # the subspace is within the reported bound, which is within tol
    angle = np.max(subspace_angles(result.components.T, vectors.T))
    assert np.tan(angle) <= result.plan.achieved_tol <= result.plan.tol
    # each component (gaps 0.068 between neighbours) well inside 1e-4
    signs = np.sign(np.sum(result.components * vectors, axis=1))[:, None]
    assert np.max(np.abs(result.components * signs - vectors)) < 1e-4
    assert max(run.reports[h].rounds for h in HOLDERS) <= 70
    assert result.plan.normaliser_exponents  # the ladder squared at least once


def test_spectrum_mode_returns_every_eigenvalue():
    d, k = 40, 5
    matrix = _close_gap_matrix(d, k, seed=2)
    result, run = _run(matrix, lambda c: spectrum_eigenvectors(c, k, to="dealer"))
    values, vectors = _reference(matrix, k)
    np.testing.assert_allclose(result.spectrum, values, rtol=1e-6)
    signs = np.sign(np.sum(result.components * vectors, axis=1))[:, None]
    assert np.max(np.abs(result.components * signs - vectors)) < 1e-5
    # constant rounds: symmetry check, trace, scaled copy, Q C (open, truncate), Q C Q^T, two reveals
    assert max(run.reports[h].rounds for h in HOLDERS) <= 9


def test_receivers_are_checked_before_anything_is_sent():
    matrix = np.eye(4)
    with pytest.raises(InputValidationError, match="must not be a holder"):
        _run(matrix, lambda c: spectrum_eigenvectors(c, 2, to="h1"))
    with pytest.raises(InputValidationError, match="reveals to the dealer"):
        _run(matrix, lambda c: ladder_eigenvectors(c, 2, to="h1"))


def test_batched_products_and_truncations_are_exact():
    """One round opens several Beaver products (exact in the ring) and truncations (floor or floor + 1)."""
    rng = np.random.default_rng(7)
    codec = FixedPointCodec(F)
    x = rng.uniform(-1, 1, (5, 4))
    y = rng.uniform(-1, 1, (4, 3))
    xs, ys = split(codec.encode(x), 3), split(codec.encode(y), 3)

    def role(name):
        def run(party):
            session = TensorSession(party, holders=HOLDERS, dealer="dealer", frac_bits=F)
            i = HOLDERS.index(name) if name in HOLDERS else None
            a = from_share(session, None if i is None else xs[i], x.shape)
            b = from_share(session, None if i is None else ys[i], y.shape)
            prod, prod_t = open_products([(a, b), (b.T, a.T)])
            cut, cut_t = truncate_many([(prod, F), (prod_t, F + 3)])
            return [t.share for t in (prod, prod_t, cut, cut_t)]

        return run

    run = run_inprocess({name: role(name) for name in [*HOLDERS, "dealer"]}, timeout=60)
    assert run.reports["h0"].rounds == 3  # seeds, one product round, one truncation round
    totals = [sum(run.outputs[h][i] for h in HOLDERS) for i in range(4)]
    xi, yi = codec.encode(x), codec.encode(y)
    np.testing.assert_array_equal(totals[0], xi @ yi)
    np.testing.assert_array_equal(totals[1], yi.T @ xi.T)
    exact = (xi @ yi).view(np.int64).astype(object)
    for got, bits, ref in ((totals[2], F, exact), (totals[3], F + 3, exact.T)):
        floor = np.vectorize(lambda v, b=bits: v >> b)(ref)
        diff = got.view(np.int64).astype(object) - floor
        assert set(np.unique(diff.astype(np.int64)).tolist()) <= {0, 1}


def test_the_haar_rotation_is_orthogonal():
    q = haar_rotation(30)
    np.testing.assert_allclose(q.T @ q, np.eye(30), atol=1e-12)


def test_the_rotated_matrix_depends_on_the_eigenvalues_only():
    """Q C Q^T for Haar Q: the same law for two matrices with one spectrum, another for another spectrum.

    KS tests (alpha = 1e-6) on the (0, 0) and (0, 1) entries over 3,000 draws each.
    """
    d = 4
    rng = np.random.default_rng(11)
    values = np.array([4.0, 2.0, 1.0, 0.5])
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    first, second = np.diag(values), basis @ np.diag(values) @ basis.T
    other = np.diag([2.0, 2.0, 2.0, 1.5])

    def draws(matrix):
        out = np.empty((3000, 2))
        for i in range(out.shape[0]):
            q = haar_rotation(d)
            rotated = q @ matrix @ q.T
            out[i] = rotated[0, 0], rotated[0, 1]
        return out

    a, b, c = draws(first), draws(second), draws(other)
    for col in range(2):
        assert stats.ks_2samp(a[:, col], b[:, col]).pvalue > 1e-6
    assert stats.ks_2samp(a[:, 0], c[:, 0]).pvalue < 1e-6


@pytest.mark.parametrize("accept_tol", [1e-9, 1.0, float("nan")])
def test_an_accepted_bound_outside_tol_to_1_is_refused_before_anything_is_sent(accept_tol):
    with pytest.raises(InputValidationError, match="accept_tol"):
        _run(np.eye(4), lambda c: ladder_eigenvectors(c, 2, to="dealer", tol=1e-6, accept_tol=accept_tol))
