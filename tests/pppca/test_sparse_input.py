"""PPPCA on scipy.sparse rows, against scikit-learn's sparse PCA path (issue 25).

scikit-learn's ``PCA(svd_solver="covariance_eigh")`` takes sparse rows and
centres on the covariance, as PPPCA's providers do
(:mod:`mpc_pca.sparse_rows`). Rows are split over three parties; the
pooled-row PCA is the reference, within 1e-6. A guard makes every
densification of the rows (``toarray``/``todense`` of more than a handful of
rows) raise, so a provider that densified its part would fail here.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
from sklearn.base import clone
from sklearn.decomposition import PCA

from mpc_pca import PPPCA
from mpc_pca.sparse_rows import as_csr, sparse_statistics
from protocols.errors import InputValidationError
from tests.helpers.estimators import TIMEOUT, fast_instances, name_of

ATOL = 1e-6
D = 8
#: Dense copies of at most this many rows are allowed (the d x d Gram matrix, a 1 x d row).
DENSE_ROWS = 16


def _values(n: int = 300, seed: int = 0) -> np.ndarray:
    """Dense rows, about 35 % non-zero, with columns of different scales and non-zero means."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(n, D)) * np.geomspace(4.0, 0.3, D) + 1.0
    values[rng.random(size=(n, D)) > 0.35] = 0.0
    return values


def _rows(n: int = 300, seed: int = 0, fmt: str = "csr") -> scipy.sparse.csr_matrix:
    """:func:`_values` stored sparse."""
    return scipy.sparse.csr_matrix(_values(n, seed)).asformat(fmt)


def _split(X):
    return [X[:90], X[90:170], X[170:]]


@pytest.fixture
def no_densify(monkeypatch):
    """Make ``toarray``/``todense`` of more than :data:`DENSE_ROWS` rows raise (a real densification)."""

    def guarded(original):
        def method(self, *args, **kwargs):
            if self.shape[0] > DENSE_ROWS:
                raise AssertionError(f"densified a sparse matrix of shape {self.shape}")
            return original(self, *args, **kwargs)

        return method

    for cls in (
        scipy.sparse.csr_matrix,
        scipy.sparse.csc_matrix,
        scipy.sparse.coo_matrix,
        scipy.sparse.csr_array,
        scipy.sparse.csc_array,
        scipy.sparse.coo_array,
    ):
        for name in ("toarray", "todense"):
            monkeypatch.setattr(cls, name, guarded(getattr(cls, name)))


def _close(got, want) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=ATOL)


def test_the_guard_catches_a_densification(no_densify):
    with pytest.raises(AssertionError, match="densified"):
        _rows().toarray()


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_fit_on_sparse_parts_matches_sklearn_sparse_pca_without_densifying(no_densify, fmt):
    X = _rows(fmt=fmt)
    theirs = PCA(n_components=3, svd_solver="covariance_eigh").fit(X)
    ours = PPPCA(n_components=3, timeout=TIMEOUT).fit(_split(X.tocsr()))
    _close(ours.mean_, theirs.mean_)
    _close(ours.components_, theirs.components_)
    _close(ours.explained_variance_, theirs.explained_variance_)
    _close(ours.explained_variance_ratio_, theirs.explained_variance_ratio_)
    _close(ours.singular_values_, theirs.singular_values_)
    _close(ours.noise_variance_, theirs.noise_variance_)
    projected = ours.transform(X)
    assert isinstance(projected, np.ndarray) and projected.shape == (X.shape[0], 3)
    _close(projected, theirs.transform(X))


def test_fit_transform_of_one_sparse_x_with_groups_matches_sklearn(no_densify):
    X = _rows(seed=1)
    groups = np.random.default_rng(2).integers(0, 3, size=X.shape[0])
    theirs = PCA(n_components=2, svd_solver="covariance_eigh").fit(X)
    _close(PPPCA(n_components=2, timeout=TIMEOUT).fit_transform(X, groups=groups), theirs.transform(X))


def test_sparse_and_dense_parts_mix_and_transform_takes_the_parts(no_densify):
    X = _rows(seed=3)
    mixed = [_values(seed=3)[:90], *_split(X)[1:]]  # the first provider's rows are dense
    theirs = PCA(n_components=3, svd_solver="covariance_eigh").fit(X)
    ours = PPPCA(n_components=3, timeout=TIMEOUT).fit(mixed)
    _close(ours.components_, theirs.components_)
    _close(ours.transform(mixed), theirs.transform(X))


def test_standardized_sparse_fit_matches_the_dense_fit(no_densify):
    X, dense = _rows(seed=4), _values(seed=4)
    want = PPPCA(n_components=2, standardize=True, timeout=TIMEOUT).fit(_split(dense))
    got = PPPCA(n_components=2, standardize=True, timeout=TIMEOUT).fit(_split(X))
    _close(got.scale_, want.scale_)
    _close(got.components_, want.components_)
    _close(got.transform(X), want.transform(dense))


def test_float32_sparse_rows_give_float32_attributes_and_projections():
    X = _rows(seed=5).astype(np.float32)
    ours = PPPCA(n_components=2, timeout=TIMEOUT).fit(_split(X))
    theirs = PCA(n_components=2, svd_solver="covariance_eigh").fit(X)
    assert ours.components_.dtype == theirs.components_.dtype == np.float32
    assert ours.mean_.dtype == np.float32
    assert ours.transform(X).dtype == theirs.transform(X).dtype == np.float32
    np.testing.assert_allclose(ours.components_, theirs.components_, atol=1e-4)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_stored_entries_are_refused_naming_the_part_and_entry(bad):
    X = _rows(seed=6).tolil()
    X[100, 5] = bad
    parts = _split(X.tocsr())
    with pytest.raises(
        InputValidationError, match=rf"part 1 contains a non-finite entry {bad} at index \(10, 5\)"
    ):
        PPPCA(n_components=2, timeout=TIMEOUT).fit(parts)


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (scipy.sparse.csr_matrix((0, 4)), "part 1 has 0 rows; every party needs at least 1 row"),
        (scipy.sparse.csr_matrix((3, 0)), "part 1 has 0 features; at least 1 is needed"),
        (scipy.sparse.csr_matrix(np.ones((3, 4)) * 1j), "part 1 has complex values"),
    ],
)
def test_a_sparse_block_of_the_wrong_shape_or_kind_is_refused_naming_it(block, message):
    parts = [scipy.sparse.csr_matrix(_rows(seed=8)[:20, :4]), block]
    with pytest.raises(InputValidationError, match=message):
        PPPCA(n_components=1, timeout=TIMEOUT).fit(parts)


def test_statistics_of_sparse_rows_equal_the_dense_ones_and_duplicates_are_summed():
    rng = np.random.default_rng(7)
    rows, cols = rng.integers(0, 40, size=200), rng.integers(0, D, size=200)
    values = rng.normal(size=200)
    coo = scipy.sparse.coo_matrix((values, (rows, cols)), shape=(40, D))  # repeated (row, col) pairs
    dense = coo.toarray()  # sums the duplicates
    sums, peaks, gram = sparse_statistics(as_csr(coo, "part 0"))
    np.testing.assert_allclose(sums, dense.sum(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(peaks, np.max(np.abs(dense), axis=0))
    np.testing.assert_allclose(gram, dense.T @ dense, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("estimator", [e for e in fast_instances() if not isinstance(e, PPPCA)], ids=name_of)
def test_the_other_estimators_refuse_sparse_rows_naming_themselves(estimator):
    X = _rows(seed=8)
    name = type(estimator).__name__
    with pytest.raises(TypeError, match=rf"^{name} does not accept scipy.sparse input \(X sparse\).*toarray"):
        clone(estimator).fit(X)
    with pytest.raises(
        TypeError, match=rf"^{name} does not accept scipy.sparse input \(parts \[1\] sparse\)"
    ):
        clone(estimator).fit([_values(seed=8)[:150], X[150:]])


@pytest.mark.parametrize(
    "estimator",
    [e for e in fast_instances() if hasattr(e, "transform") and not isinstance(e, PPPCA)],
    ids=name_of,
)
def test_every_estimator_projects_sparse_rows_as_their_dense_copy(no_densify, estimator):
    dense = _values(seed=9)
    dense /= np.max(np.linalg.norm(dense, axis=1))  # rows of norm <= 1, as the DP estimators assume
    model = clone(estimator).fit(_split(dense))
    _close(model.transform(scipy.sparse.csr_matrix(dense)), model.transform(dense))
