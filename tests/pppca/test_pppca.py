import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError

import mpc_pca.threads as pppca_module
from mpc_pca import PPPCA
from mpc_pca.data.partition import split_rows
from mpc_pca.linalg import flip_signs
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.scaling import column_exponents, sums_scale_exponent
from protocols import AdditiveBackend, FixedPointCodec
from protocols.errors import InputValidationError, RingOverflowError
from tests.helpers.oracles import align_signs

DATASETS = {"wine": load_wine().data, "iris": load_iris().data, "breast_cancer": load_breast_cancer().data}


def assert_matches_sklearn(model, X, k, tol=1e-6, n_parties=8, frac_bits=20):
    reference = PCA(n_components=k, svd_solver="full").fit(X)
    components = align_signs(model.components_, reference.components_)
    assert np.max(np.abs(components - reference.components_)) < tol
    rel = np.abs(model.explained_variance_ - reference.explained_variance_) / reference.explained_variance_
    assert np.max(rel) < tol
    assert np.max(np.abs(model.explained_variance_ratio_ - reference.explained_variance_ratio_)) < tol
    # the pooled column sums are exact up to one rounding per party, M 2^-(f+1) / N in the
    # scaled units 2^(E_j - A) of mpc_pca.pppca.scaling
    unit = np.ldexp(1.0, column_exponents(X) - sums_scale_exponent(n_parties, frac_bits))
    mean_bound = n_parties * 2.0 ** -(frac_bits + 1) * unit / X.shape[0] + 1e-12 * np.abs(reference.mean_)
    assert np.all(np.abs(model.mean_ - reference.mean_) <= mean_bound)
    assert model.n_samples_ == X.shape[0]


@given(
    name=st.sampled_from(sorted(DATASETS)),
    parties=st.integers(2, 8),
    seed=st.integers(0, 2**16),
    mode=st.sampled_from(["shares", "masks"]),
)
def test_matches_centralized_pca_for_any_uneven_split(name, parties, seed, mode):
    X = DATASETS[name]
    k = min(3, X.shape[1])
    parts = split_rows(X, parties, "random", seed)
    model = PPPCA(n_components=k, backend=AdditiveBackend(mode)).fit(parts)
    assert_matches_sklearn(model, X, k)


@pytest.mark.parametrize("parties", [2, 5, 8])
def test_a_party_with_a_single_row(wine, parties):
    parts = [wine[:1], *np.array_split(wine[1:], parties - 1)]
    model = PPPCA(n_components=4).fit(parts)
    assert_matches_sklearn(model, wine, 4)


def test_a_one_row_party_with_zeros_keeps_the_pooled_precision():
    """Regression (CI, hypothesis seed 718780678): breast_cancer row 101 is 0 in columns whose
    pooled peak is below 1 (column 17: exponent -4). A one-row provider used to publish exponent 0
    for such a column, coarsening everyone's encoding of it 16-fold (mean error 1.6e-11 > 3.3e-12)."""
    X = DATASETS["breast_cancer"]
    row = 101
    assert np.all(X[row, [6, 7, 16, 17, 26, 27]] == 0)
    rest = np.delete(X, row, axis=0)
    parts = [X[row : row + 1], *np.array_split(rest, 4)]
    model = PPPCA(n_components=3).fit(parts)
    assert_matches_sklearn(model, np.vstack(parts), 3, n_parties=5)


def test_signs_are_deterministic_and_sklearn_compatible(wine):
    model = PPPCA(n_components=5).fit(np.array_split(wine, 3))
    assert np.array_equal(model.components_, flip_signs(model.components_))
    reference = PCA(n_components=5, svd_solver="covariance_eigh").fit(wine)
    # same convention as scikit-learn: no re-alignment needed
    assert np.max(np.abs(model.components_ - reference.components_)) < 1e-6


def test_fit_transform_is_the_consumers_view_and_equals_transform(wine):
    parts = split_rows(wine, 4, "random", 3)
    model = PPPCA(n_components=3)
    projected = model.fit_transform(parts)
    assert projected.shape == (wine.shape[0], 3)
    assert np.allclose(projected, model.transform(np.vstack(parts)), atol=1e-9)
    assert "consumer" in model.report_ and model.report_["consumer"]["bytes_received"] > 0
    reference = PCA(n_components=3).fit(wine)
    pooled = align_signs(model.components_, reference.components_)
    assert np.allclose(
        np.vstack(parts) @ pooled.T,
        reference.transform(np.vstack(parts)) + reference.mean_ @ reference.components_.T,
        atol=1e-6,
    )


def test_report_covers_every_role_and_counts_traffic(wine):
    model = PPPCA(n_components=2).fit(np.array_split(wine, 3))
    assert set(model.report_) == {"provider0", "provider1", "provider2", "server"}
    d = wine.shape[1]
    triangle_bytes = 8 * d * (d + 1) // 2
    server = model.report_["server"]
    # the server received at least the three partial sums of the Gram triangle
    assert server["bytes_received"] > 3 * triangle_bytes
    assert all(r["seconds"] >= 0 and r["rounds"] >= 1 for r in model.report_.values())


def test_default_n_components_keeps_all(wine):
    model = PPPCA().fit(np.array_split(wine, 2))
    assert model.components_.shape == (wine.shape[1], wine.shape[1])
    assert np.isclose(model.explained_variance_ratio_.sum(), 1.0)


def test_large_offset_data_stays_accurate():
    """Data far from the origin triggers the exactly-centred scatter path."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 6)) * [1, 2, 3, 4, 5, 6] + 1e5
    stats = LocalStatistics.of(X)
    centred = X - X.mean(axis=0)
    assert np.allclose(stats.scatter, centred.T @ centred, rtol=1e-9)
    model = PPPCA(n_components=3, backend=AdditiveBackend(codec=FixedPointCodec(16))).fit(
        np.array_split(X, 3)
    )
    assert_matches_sklearn(model, X, 3, frac_bits=16)


def test_transform_and_inverse_transform_validate_shapes(wine):
    model = PPPCA(n_components=2).fit(np.array_split(wine, 2))
    with pytest.raises(InputValidationError, match="13"):
        model.transform(np.ones((2, 5)))
    with pytest.raises(InputValidationError, match=r"\(n, 2\)"):
        model.inverse_transform(np.ones((2, 3)))
    with pytest.raises(NotFittedError, match="not fitted"):
        PPPCA().transform(wine)


class _Spy:
    called = False


@pytest.fixture
def no_run(monkeypatch):
    """Fail the test if the protocol starts (i.e. if any party could send)."""
    spy = _Spy()

    def forbidden(*args, **kwargs):
        spy.called = True
        raise AssertionError("the protocol started although the input is invalid")

    monkeypatch.setattr(pppca_module, "run_inprocess", forbidden)
    return spy


@pytest.mark.parametrize(
    ("parts", "k", "error", "match"),
    [
        (
            [np.array([[1.0, np.nan], [2.0, 3.0]]), np.ones((2, 2))],
            1,
            InputValidationError,
            r"part 0.*nan.*\(0, 1\)",
        ),
        ([np.array([[1.0, np.inf]]), np.ones((2, 2))], 1, InputValidationError, r"part 0.*inf"),
        (
            [np.ones((3, 2)), np.ones((3, 3))],
            1,
            InputValidationError,
            "part 1 has 3 features but part 0 has 2",
        ),
        ([np.ones((1, 3))], 1, InputValidationError, "1 row.*at least 2"),
        (
            [np.ones((3, 3)), np.ones((3, 3))],
            4,
            InputValidationError,
            r"n_components=4.*between 1 and min\(n_samples, n_features\)=3",
        ),
        ([np.ones((3, 3)), np.ones((3, 3))], 0, InputValidationError, "n_components=0"),
        (
            [np.ones((3, 3)), np.ones((3, 3))],
            1.5,
            InputValidationError,
            "n_components=1.5 is invalid; it must be an integer >= 1, a variance fraction",
        ),
        ([np.ones(3), np.ones(3)], 1, InputValidationError, "part 0 has 1 dimension"),
        ([], 1, InputValidationError, "empty"),
        ([np.ones((0, 3)), np.ones((3, 3))], 1, InputValidationError, "part 0 has 0 rows"),
        ([np.full((4, 2), 3e200), np.zeros((4, 2))], 1, RingOverflowError, "overflow float64; rescale"),
        ([np.ones((3, 2), dtype=complex), np.ones((3, 2))], 1, InputValidationError, "part 0 has complex"),
        (
            [np.eye(3) + 1e12, np.eye(3) * 2 + 1e12],
            1,
            InputValidationError,
            "fewer than 20 significant bits.*subtract a rough per-column offset",
        ),
        ([np.ones((3, 3)), np.ones((3, 3))], 1, InputValidationError, "every column is constant"),
    ],
)
def test_bad_input_is_rejected_before_any_party_sends(no_run, parts, k, error, match):
    with pytest.raises(error, match=match):
        PPPCA(n_components=k).fit(parts)
    assert not no_run.called


def test_unknown_backend_is_rejected_before_any_party_sends(no_run, wine):
    with pytest.raises(InputValidationError, match="unknown backend 'ss'"):
        PPPCA(backend="ss").fit([wine, wine])
    with pytest.raises(InputValidationError, match="SecureSumBackend"):
        PPPCA(backend=42).fit([wine, wine])
    assert not no_run.called


def test_estimator_params_follow_sklearn_conventions():
    model = PPPCA(n_components=3, backend="additive-masks")
    assert model.get_params() == {
        "n_components": 3,
        "backend": "additive-masks",
        "timeout": 120.0,
        "reveal": "covariance",
        "eigengap": 0.1,
        "min_ratio": 0.01,
        "eigensolver": "subspace",
        "dealer": "server",  # who makes the hidden modes' masks (issue 39)
        "tol": 1e-6,
        "standardize": False,
        "whiten": False,
        "dropout_threshold": None,
        # scikit-learn PCA's own parameters (issue 38); svd_solver chooses the protocol (issue 37)
        "copy": True,
        "svd_solver": "auto",
        "iterated_power": "auto",
        "n_oversamples": 10,
        "power_iteration_normalizer": "auto",
        "random_state": None,
        "iterates": "server",  # who leads the randomized solver's iterations (issue 37)
    }
    assert model.set_params(n_components=2) is model and model.n_components == 2
    assert not hasattr(model, "components_")


@pytest.mark.parametrize("scale", [1e-150, 1e-6, 1e-4, 1e6, 1e12, 1e150])
def test_any_scale_matches_sklearn_with_default_settings(wine, scale):
    """Per-column power-of-two scaling: no refusal and no loss for data float64 represents well."""
    X = wine * scale
    model = PPPCA(n_components=3).fit(np.array_split(X, 3))
    reference = PCA(n_components=3, svd_solver="full").fit(X)
    assert (
        np.max(np.abs(align_signs(model.components_, reference.components_) - reference.components_)) < 1e-6
    )
    assert np.max(np.abs(model.explained_variance_ / reference.explained_variance_ - 1)) < 1e-6
    assert np.max(np.abs(model.mean_ - reference.mean_) / np.max(np.abs(X), axis=0)) < 1e-9


def test_the_suggestion_for_what_cannot_fit_is_possible():
    """An offset that dwarfs the spread is refused with advice that needs no impossible frac_bits."""
    X = np.random.default_rng(3).normal(size=(60, 3)) + 1e13
    with pytest.raises(InputValidationError, match="fewer than 20 significant bits") as info:
        PPPCA(n_components=2).fit(np.array_split(X, 3))
    assert "fractional bits" not in str(info.value)
    shifted = X - 1e13  # the advice, followed, works
    model = PPPCA(n_components=2).fit(np.array_split(shifted, 3))
    assert_matches_sklearn(model, shifted, 2, n_parties=3)


def test_more_fractional_bits_keep_accuracy(wine):
    X = wine * 1e-3
    model = PPPCA(n_components=2, backend=AdditiveBackend(codec=FixedPointCodec(36))).fit(
        np.array_split(X, 3)
    )
    assert_matches_sklearn(model, X, 2, frac_bits=36, n_parties=3)


def test_timeout_is_validated(no_run, wine):
    with pytest.raises(InputValidationError, match="timeout=-1"):
        PPPCA(n_components=2, timeout=-1).fit(np.array_split(wine, 2))


@pytest.mark.parametrize(("scale", "frac_bits"), [(1.0, 20), (1e-3, 20), (1e-3, 18), (1e-2, 12)])
def test_rounding_error_bounds_hold(wine, scale, frac_bits):
    """The reported Weyl / Davis-Kahan bounds cover the actual deviation from exact PCA."""
    X = wine * scale
    model = PPPCA(n_components=4, backend=AdditiveBackend(codec=FixedPointCodec(frac_bits))).fit(
        np.array_split(X, 3)
    )
    reference = PCA(n_components=4, svd_solver="full").fit(X)
    components = align_signs(model.components_, reference.components_)
    deviation = np.max(np.abs(components - reference.components_), axis=1)
    assert np.all(deviation <= model.component_error_bounds_ + 1e-12)
    variance_gap = np.max(np.abs(model.explained_variance_ - reference.explained_variance_))
    assert variance_gap <= model.variance_error_bound_ + 1e-9 * reference.explained_variance_[0]


def test_flip_signs_is_sklearns_svd_flip_convention():
    from sklearn.utils.extmath import svd_flip

    rng = np.random.default_rng(11)
    for shape in ((1, 1), (3, 5), (5, 5), (2, 40)):
        v = rng.normal(size=shape)
        v[0, :] *= -1
        ours = flip_signs(v)
        assert np.array_equal(ours, svd_flip(None, v.copy(), u_based_decision=False)[1])
        assert np.all(ours[np.arange(shape[0]), np.argmax(np.abs(ours), axis=1)] > 0)
    # ties go to the first largest entry; an all-zero row stays zero
    assert flip_signs(np.array([[0.5, -0.5], [0.0, 0.0]])).tolist() == [[0.5, -0.5], [0.0, 0.0]]
