"""PPPCA against scikit-learn's ``PCA(svd_solver="full")`` on the pooled rows (issue 25).

Rows are split over three parties; every fitted attribute and every method
scikit-learn's PCA has is compared numerically with PCA fitted on all rows
(up to the fixed-point rounding of the secure sums, far below the
tolerances). ``n_components`` as a variance fraction or ``"mle"`` is chosen
by the covariance-mode server from the whole spectrum; the component-mode
server does not hold it, and refuses them by name.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.decomposition._pca import _assess_dimension, _infer_dimension
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from mpc_pca import PPPCA, CapeAGN
from mpc_pca.linalg import assess_dimension, components_for_ratio, infer_dimension
from protocols.errors import InputValidationError
from tests.helpers.estimators import TIMEOUT, fast_instances, name_of

RTOL = 1e-7


def _split(X: np.ndarray) -> list[np.ndarray]:
    """Three parties' rows, of unequal sizes."""
    n = X.shape[0]
    return [X[: n // 4], X[n // 4 : n // 2 + 3], X[n // 2 + 3 :]]


def _data(n: int = 150, d: int = 6, seed: int = 0) -> np.ndarray:
    """Correlated rows with a clearly decreasing spectrum and a non-zero mean."""
    rng = np.random.default_rng(seed)
    spread = np.geomspace(3.0, 0.2, d)
    basis, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return (rng.normal(size=(n, d)) * spread) @ basis + rng.normal(size=d)


def _low_rank(n: int = 400, d: int = 10, rank: int = 3, seed: int = 1) -> np.ndarray:
    """``rank`` strong directions plus small isotropic noise: Minka's MLE finds ``rank``."""
    rng = np.random.default_rng(seed)
    signal = rng.normal(size=(n, rank)) @ (rng.normal(size=(rank, d)) * 2.0)
    return signal + 0.1 * rng.normal(size=(n, d))


def _pair(X: np.ndarray, **params) -> tuple[PPPCA, PCA]:
    ours = PPPCA(timeout=TIMEOUT, **params).fit(_split(X))
    theirs = PCA(svd_solver="full", **params).fit(X)
    return ours, theirs


def _close(got, want, rtol: float = RTOL) -> None:
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(want)))))


ATTRIBUTES = [
    "components_",
    "explained_variance_",
    "explained_variance_ratio_",
    "singular_values_",
    "noise_variance_",
    "mean_",
    "n_components_",
    "n_samples_",
    "n_features_in_",
]


@pytest.mark.parametrize("whiten", [False, True])
@pytest.mark.parametrize("n_components", [1, 3, 6, None, 0.5, 0.8, 0.95, 0.999])
def test_fitted_attributes_match_sklearn(n_components, whiten):
    ours, theirs = _pair(_data(), n_components=n_components, whiten=whiten)
    for name in ATTRIBUTES:
        _close(getattr(ours, name), getattr(theirs, name))


@pytest.mark.parametrize("whiten", [False, True])
@pytest.mark.parametrize("n_components", [2, 0.9, None])
def test_methods_match_sklearn(n_components, whiten):
    X = _data()
    ours, theirs = _pair(X, n_components=n_components, whiten=whiten)
    new = _data(n=40, seed=5)  # rows not in the fit
    _close(ours.transform(new), theirs.transform(new))
    _close(ours.inverse_transform(ours.transform(new)), theirs.inverse_transform(theirs.transform(new)))
    _close(ours.get_covariance(), theirs.get_covariance())
    _close(ours.get_precision(), theirs.get_precision(), rtol=1e-6)
    _close(ours.score_samples(new), theirs.score_samples(new), rtol=1e-6)
    _close(ours.score(new), theirs.score(new), rtol=1e-6)
    fitted = clone(ours).fit_transform(_split(X))
    _close(fitted, theirs.transform(X))
    _close(fitted, ours.transform(X), rtol=1e-9)


def test_whiten_gives_unit_variance_components_and_inverts():
    X = _data()
    model = PPPCA(n_components=3, whiten=True, timeout=TIMEOUT).fit(_split(X))
    projected = model.transform(X)
    np.testing.assert_allclose(np.var(projected, axis=0, ddof=1), 1.0, rtol=1e-7)
    unwhitened = PPPCA(n_components=3, timeout=TIMEOUT).fit(_split(X)).transform(X)
    np.testing.assert_allclose(projected * np.sqrt(model.explained_variance_), unwhitened, rtol=1e-9)
    np.testing.assert_allclose(
        model.inverse_transform(projected),
        PCA(3).fit(X).inverse_transform(PCA(3).fit(X).transform(X)),
        atol=1e-8,
    )


def test_noise_variance_uses_min_of_samples_and_features():
    """Fewer rows than features: the discarded eigenvalues are ``min(n, d) - k``, not ``d - k``."""
    X = _data(n=9, d=14, seed=3)
    for k in (2, 5, 7):  # k = 8 = n - 1 leaves only a zero eigenvalue: a singular model
        ours, theirs = _pair(X, n_components=k)
        assert theirs.noise_variance_ > 0
        _close(ours.noise_variance_, theirs.noise_variance_)
        _close(ours.score_samples(X), theirs.score_samples(X), rtol=1e-6)
    full, reference = _pair(X, n_components=9)  # k = min(n, d): no noise left
    assert full.noise_variance_ == reference.noise_variance_ == 0.0


def test_mle_chooses_the_rank_sklearn_chooses():
    X = _low_rank()
    ours, theirs = _pair(X, n_components="mle")
    assert ours.n_components_ == theirs.n_components_ == 3
    for name in ATTRIBUTES:
        _close(getattr(ours, name), getattr(theirs, name))
    _close(ours.score(X), theirs.score(X), rtol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_minka_likelihood_equals_sklearns(seed):
    rng = np.random.default_rng(seed)
    spectrum = np.sort(rng.exponential(size=9))[::-1]
    for rank in range(1, 9):
        assert assess_dimension(spectrum, rank, 60) == pytest.approx(
            _assess_dimension(spectrum, rank, 60), rel=1e-12
        )
    assert infer_dimension(spectrum, 60) == _infer_dimension(spectrum, 60)


def test_a_variance_fraction_keeps_strictly_more_than_it():
    spectrum = np.array([5.0, 3.0, 2.0])  # cumulative ratios 0.5, 0.8, 1.0
    assert components_for_ratio(spectrum, 0.5) == 2  # exactly 0.5 is not more than 0.5
    assert components_for_ratio(spectrum, 0.49) == 1
    assert components_for_ratio(spectrum, 0.81) == 3


def test_a_fraction_read_off_the_fitted_ratios_selects_as_in_sklearn():
    """scikit-learn #15669: the cumulative ratio of k components as the fraction keeps k + 1."""
    X = _data()
    ratios = PPPCA(timeout=TIMEOUT).fit(_split(X)).explained_variance_ratio_
    for k in (1, 3, 5):
        fraction = float(np.cumsum(ratios)[k - 1])
        assert PPPCA(n_components=fraction, timeout=TIMEOUT).fit(_split(X)).n_components_ == k + 1


def test_transform_of_the_fitted_parts_stacks_them_in_part_order():
    X = _data()
    parts = _split(X)
    model = PPPCA(n_components=3, timeout=TIMEOUT)
    fitted = model.fit_transform(parts)
    by_parts = model.transform(parts)
    np.testing.assert_allclose(by_parts, model.transform(X), rtol=0, atol=1e-12)
    np.testing.assert_allclose(by_parts, fitted, rtol=1e-9, atol=1e-9)
    _close(model.score(parts), model.score(X), rtol=1e-12)


def test_transform_of_dataframe_parts_aligns_their_columns():
    X = _data()
    columns = [f"c{i}" for i in range(X.shape[1])]
    frames = [pd.DataFrame(p, columns=columns) for p in _split(X)]
    model = PPPCA(n_components=2, timeout=TIMEOUT).fit(frames)
    permuted = list(frames)
    permuted[1] = frames[1][columns[::-1]]
    stacked = pd.concat(frames, ignore_index=True)
    np.testing.assert_allclose(model.transform(permuted), model.transform(stacked), rtol=0, atol=1e-12)
    renamed = list(frames)
    renamed[2] = frames[2].set_axis(["x", *columns[1:]], axis=1)
    with pytest.raises(InputValidationError, match="feature names"):
        model.transform(renamed)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transform_keeps_the_rows_dtype_as_sklearn(dtype):
    X = _data().astype(dtype)
    ours, theirs = _pair(X, n_components=2)
    assert ours.transform(X).dtype == theirs.transform(X).dtype == dtype
    for name in ("components_", "explained_variance_", "mean_", "singular_values_"):
        assert getattr(ours, name).dtype == getattr(theirs, name).dtype == dtype, name
    assert ours.model_.components.dtype == np.float64  # the protocol's own output
    assert clone(ours).fit_transform(_split(X)).dtype == theirs.fit_transform(X).dtype == dtype
    _close(ours.transform(X), theirs.transform(X), rtol=1e-4 if dtype == np.float32 else RTOL)


@pytest.mark.parametrize("n_components", [0.9, "mle"])
def test_a_spectrum_rule_is_refused_when_the_server_has_no_spectrum(n_components):
    model = PPPCA(n_components=n_components, reveal="components", timeout=TIMEOUT)
    with pytest.raises(InputValidationError) as info:
        model.fit(_split(_data()))
    message = str(info.value)
    assert f"n_components={n_components!r}" in message and "reveal='components'" in message, message
    assert "spectrum" in message


@pytest.mark.parametrize("n_components", [7, 0, 1.0, 0.0, -0.5, 1.5, "auto", True])
def test_an_invalid_n_components_names_the_value_and_the_limit(n_components):
    if isinstance(n_components, int) and not isinstance(n_components, bool):
        allowed = "must be between 1 and min(n_samples, n_features)" + ("=6" if n_components == 7 else "")
    else:
        allowed = "an integer >= 1, a variance fraction (a float > 0 and < 1), 'mle' or None"
    with pytest.raises(InputValidationError) as info:
        PPPCA(n_components=n_components, timeout=TIMEOUT).fit(_split(_data()))
    message = str(info.value)
    assert f"n_components={n_components!r}" in message and allowed in message, message


#: scikit-learn's own PCA tests (sklearn/decomposition/tests/test_pca.py: test_pca_validation,
#: test_fit_mle_too_few_samples) expect these texts; ours contain them, with the values.
SKLEARN_MESSAGES = [
    ("arpack", 0, np.array([[0.0, 1, 0], [1, 0, 0]]), r"must be between 1 and min\(n_samples, n_features\)"),
    (
        "arpack",
        0,
        np.array([[0.0, 1, 0], [1, 0, 0]]).T,
        r"must be between 1 and min\(n_samples, n_features\)",
    ),
    (
        "full",
        3,
        np.array([[0.0, 1, 0], [1, 0, 0]]),
        # scikit-learn's "full" solver admits 0 components ("between 0 and"); every estimator here keeps >= 1
        r"n_components=3 .*must be between [01] and min\(n_samples, n_features\)=2",
    ),
    ("full", "mle", _data(n=20, d=21), r"n_components='mle' is only supported if n_samples >= n_features"),
]


@pytest.mark.parametrize(("solver", "n_components", "X", "pattern"), SKLEARN_MESSAGES)
def test_errors_contain_scikit_learns_wording(solver, n_components, X, pattern):
    with pytest.raises(ValueError, match=pattern):  # scikit-learn's own text (their test's solver)
        PCA(n_components=n_components, svd_solver=solver).fit(X)
    with pytest.raises(InputValidationError, match=pattern):
        PPPCA(n_components=n_components, timeout=TIMEOUT).fit(X)


@pytest.mark.parametrize(
    "estimator", [e for e in fast_instances() if not isinstance(e, (PPPCA, CapeAGN))], ids=name_of
)
def test_every_estimator_words_an_out_of_range_n_components_as_scikit_learn(estimator):
    X = _data(n=40, d=4) / 10.0
    with pytest.raises(
        InputValidationError, match=r"n_components=0 is out of range; it must be between 1 and min\("
    ):
        clone(estimator).set_params(n_components=0).fit(_split(X))
    with pytest.raises(
        InputValidationError, match=r"n_components=5 is out of range; it must be between 1 and "
    ):
        clone(estimator).set_params(n_components=5).fit(_split(X))


def test_assess_dimension_refuses_a_rank_outside_scikit_learns_range():
    for rank in (0, 5):
        with pytest.raises(ValueError, match=r"should be in \[1, n_features - 1\]"):
            assess_dimension(np.array([1.0, 1e-30, 1e-30, 1e-30]), rank, 10)


@pytest.mark.parametrize(
    "estimator", [e for e in fast_instances() if not isinstance(e, CapeAGN)], ids=name_of
)
def test_docstring_says_which_scikit_learn_parameters_do_not_apply_and_why(estimator):
    notes = " ".join(type(estimator).__doc__.split("\n    Notes\n    -----\n", 1)[1].split())
    missing = sorted(set(PCA().get_params()) - set(estimator.get_params()) - {"whiten"})
    assert "do not apply" in notes, notes
    assert any(
        why in notes for why in ("eigendecompos", "eigenvectors", "Gibbs sample", "power iterations")
    ), notes
    for name in missing:
        assert f"``{name}``" in notes, f"{name} is not mentioned in {type(estimator).__name__}'s Notes"


def test_mle_needs_at_least_as_many_rows_as_features():
    with pytest.raises(InputValidationError, match=r"n_samples >= n_features \(n_samples=9, n_features=14\)"):
        PPPCA(n_components="mle", timeout=TIMEOUT).fit(_split(_data(n=9, d=14)))


def test_score_samples_refuses_sparse_rows_as_sklearn_does():
    """Sparse rows are fitted and projected (tests/pppca/test_sparse_input.py); the likelihood needs dense rows."""
    X = _data()
    sparse = scipy.sparse.csr_matrix(X)
    theirs = PCA(n_components=2, svd_solver="covariance_eigh").fit(sparse)
    ours = PPPCA(n_components=2, timeout=TIMEOUT).fit(_split(X))
    with pytest.raises(TypeError, match=r"toarray"):
        theirs.score_samples(sparse)
    with pytest.raises(TypeError, match=r"toarray"):
        ours.score_samples(sparse)


def test_standardized_scores_are_those_of_a_scaler_then_pca():
    X = _data() * np.array([1.0, 10.0, 0.1, 5.0, 1.0, 2.0])
    ours = PPPCA(n_components=2, standardize=True, timeout=TIMEOUT).fit(_split(X))
    theirs = make_pipeline(StandardScaler(), PCA(n_components=2, svd_solver="full")).fit(X)
    _close(ours.transform(X), theirs.transform(X))
    _close(ours.score_samples(X), theirs.score_samples(X), rtol=1e-6)
    _close(ours.get_covariance(), theirs[-1].get_covariance())


def test_component_mode_has_the_same_probabilistic_model():
    X = _data()
    secure = PPPCA(n_components=2, reveal="components", timeout=TIMEOUT).fit(_split(X))
    theirs = PCA(n_components=2, svd_solver="full").fit(X)
    _close(secure.noise_variance_, theirs.noise_variance_, rtol=1e-5)
    _close(secure.singular_values_, theirs.singular_values_, rtol=1e-5)
    _close(secure.score(X), theirs.score(X), rtol=1e-5)


@pytest.mark.filterwarnings("ignore:.*NOT private", "ignore:.*NOT differentially private")
@pytest.mark.parametrize("estimator", [e for e in fast_instances() if hasattr(e, "transform")], ids=name_of)
def test_every_subspace_estimator_sits_in_a_pipeline_with_groups(estimator):
    X = _data() / 10.0
    X /= 1.5 * max(1.0, float(np.max(np.linalg.norm(X, axis=1))))  # rows of norm <= 1 for the DP ones
    groups = np.repeat(["a", "b", "c"], [50, 40, 60])
    params = {"site": 0} if "site" in estimator.get_params() else {}
    pipeline = make_pipeline(clone(estimator).set_params(**params), StandardScaler())
    step = pipeline.steps[0][0]
    out = pipeline.fit(X, **{f"{step}__groups": groups}).transform(X)
    assert out.shape == (len(X), 2)
    direct = clone(estimator).set_params(**params).fit(X, groups=groups)
    np.testing.assert_allclose(pipeline[0].components_, direct.components_, rtol=0, atol=1e-12)


def test_a_server_chosen_k_reaches_providers_and_consumer_through_chunks(monkeypatch):
    """The providers learn k from T and the consumer from the first chunk; chunk sizes then agree."""
    from mpc_pca.pppca import protocol

    X = _data()
    reference = PCA(n_components=0.9, svd_solver="full").fit(X)
    k = reference.n_components_
    monkeypatch.setattr(protocol, "PROJECTION_CHUNK_BYTES", 5 * 8 * k)  # 5 rows a chunk
    parts = _split(X)
    assert [len(p) for p in parts] == [37, 41, 72] and k == 3
    model = PPPCA(n_components=0.9, timeout=TIMEOUT)
    _close(model.fit_transform(parts), reference.transform(X))
    # provider1 and provider2 differ only by their chunks (provider0 also leads the answer check)
    sent = model.report_["provider2"]["messages_sent"] - model.report_["provider1"]["messages_sent"]
    assert sent == 72 // 5 - 41 // 5  # the chunks, as with an agreed k


#: scikit-learn ``PCA`` solver arguments (issue 38): accepted, validated as scikit-learn does, no effect on the
#: exact path (``svd_solver="randomized"`` runs pppca-randomized: tests/wide/test_estimator.py).
SOLVER_ARGUMENTS = [
    {"svd_solver": "covariance_eigh", "random_state": 0, "iterated_power": 3, "n_oversamples": 5},
    {"svd_solver": "arpack", "tol": 0.0, "random_state": np.random.RandomState(1)},
    {"svd_solver": "full", "power_iteration_normalizer": "QR", "copy": False},
]


@pytest.mark.parametrize("params", SOLVER_ARGUMENTS, ids=lambda p: p["svd_solver"])
def test_solver_arguments_are_accepted_and_change_nothing(params):
    X = _data()
    reference = PPPCA(n_components=3, timeout=TIMEOUT).fit(_split(X))
    ours = PPPCA(n_components=3, timeout=TIMEOUT, **params).fit(_split(X))
    for name in ("components_", "explained_variance_", "mean_", "noise_variance_"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(reference, name))
    _close(ours.transform(X), PCA(n_components=3, svd_solver="full").fit(X).transform(X), 1e-6)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("svd_solver", "lapack"),
        ("tol", -1.0),
        ("iterated_power", -1),
        ("n_oversamples", 0),
        ("power_iteration_normalizer", "SVD"),
        ("random_state", "seed"),
        ("copy", "yes"),
    ],
)
def test_an_invalid_solver_argument_is_refused_with_scikit_learns_wording(name, value):
    X = _data(n=30, d=4)
    with pytest.raises(ValueError) as theirs:
        PCA(n_components=2, **{name: value}).fit(X)
    with pytest.raises(InputValidationError) as ours:
        PPPCA(n_components=2, timeout=TIMEOUT, **{name: value}).fit(_split(X))
    expected = str(theirs.value).replace(" parameter of PCA ", " parameter of PPPCA ")
    assert str(ours.value) == expected


def test_tol_zero_is_refused_where_the_secure_eigensolver_needs_a_tolerance():
    with pytest.raises(InputValidationError, match=r"tol=0.* reveal='components'"):
        PPPCA(n_components=2, reveal="components", tol=0.0, timeout=TIMEOUT).fit(_split(_data()))


@pytest.mark.parametrize("copy", [True, False])
def test_the_rows_are_never_changed_whatever_copy(copy):
    X = _data()
    parts = _split(X)
    before = [p.copy() for p in parts]
    model = PPPCA(n_components=2, whiten=True, copy=copy, timeout=TIMEOUT)
    model.fit(parts)
    model.fit_transform(parts)
    model.transform(X)
    model.score(X)
    model.fit(X, groups=np.arange(X.shape[0]) % 3)
    for part, original in zip(parts, before, strict=True):
        np.testing.assert_array_equal(part, original)
    np.testing.assert_array_equal(X, np.vstack(before))
