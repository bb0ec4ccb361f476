"""scikit-learn integration of the estimators, standardization, and any scale of data (issue 10)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator
from sklearn.utils.validation import check_is_fitted

from mpc_pca import PPPCA, AnalyzeGaussPCA, CapePCA, DPdisPCA
from mpc_pca.data.partition import split_rows
from protocols.errors import InputValidationError
from tests.helpers.oracles import align_signs

#: check_estimator's checks PPPCA cannot pass, with the reason (none fail today; array-API
#: input is skipped by scikit-learn itself unless SCIPY_ARRAY_API is set).
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


@pytest.mark.parametrize("standardize", [False, True])
def test_check_estimator(standardize):
    results = check_estimator(
        PPPCA(n_components=2, standardize=standardize),
        expected_failed_checks=EXPECTED_FAILED_CHECKS,
        on_fail=None,
    )
    failed = {r["check_name"]: repr(r["exception"]) for r in results if r["status"] == "failed"}
    assert not failed, failed
    assert sum(r["status"] == "passed" for r in results) >= 40


def test_fitted_state_repr_clone_and_errors():
    model = PPPCA(n_components=3, backend="additive-masks")
    assert repr(model) == "PPPCA(backend='additive-masks', n_components=3)"
    with pytest.raises(NotFittedError, match="not fitted"):
        model.transform(np.ones((2, 4)))
    with pytest.raises(NotFittedError):
        check_is_fitted(model)
    X = load_wine().data
    model.fit(np.array_split(X, 3))
    check_is_fitted(model)
    twin = clone(model)
    assert twin.get_params() == model.get_params() and not hasattr(twin, "components_")
    assert list(model.get_feature_names_out()) == ["pppca0", "pppca1", "pppca2"]


@pytest.mark.parametrize(
    "estimator", [AnalyzeGaussPCA(2, random_state=0), CapePCA(2, random_state=0), DPdisPCA(2, random_state=0)]
)
def test_dp_estimators_are_sklearn_estimators_too(estimator):
    assert repr(estimator).startswith(type(estimator).__name__ + "(")
    with pytest.raises(NotFittedError):
        check_is_fitted(estimator)
    X = load_wine().data
    X = (X - X.mean(axis=0)) / np.max(np.linalg.norm(X - X.mean(axis=0), axis=1))
    fitted = clone(estimator).fit(np.array_split(X, 3))
    check_is_fitted(fitted)
    assert fitted.transform(X[:5]).shape == (5, 2)


def test_fit_with_groups_equals_fit_on_parts():
    X = load_wine().data
    groups = np.random.default_rng(0).integers(0, 4, size=X.shape[0])
    by_groups = PPPCA(n_components=3).fit(X, groups=groups)
    by_parts = PPPCA(n_components=3).fit([X[groups == g] for g in range(4)])
    assert (
        by_groups.report_.keys() == by_parts.report_.keys() and len(by_groups.report_) == 4 + 1
    )  # providers + server
    assert np.allclose(by_groups.components_, by_parts.components_, atol=1e-12)
    projected = PPPCA(n_components=3).fit_transform(X, groups=groups)
    assert np.allclose(projected, by_groups.transform(X), atol=1e-9)  # rows in their original order
    with pytest.raises(InputValidationError, match=r"one label per row of X: shape \(178,\), got \(3,\)"):
        PPPCA().fit(X, groups=[0, 1, 2])


def test_dataframes_are_aligned_by_name_and_feature_names_kept():
    frame = load_breast_cancer(as_frame=True).frame.drop(columns="target")
    parts = [frame.iloc[rows] for rows in np.array_split(np.arange(len(frame)), 3)]
    parts[1] = parts[1][parts[1].columns[::-1]]
    model = PPPCA(n_components=2).fit(parts)
    assert list(model.feature_names_in_) == list(frame.columns)
    reference = PCA(2).fit(frame.to_numpy())
    assert np.max(np.abs(model.components_ - reference.components_)) < 1e-6
    assert np.allclose(model.transform(frame), reference.transform(frame.to_numpy()), atol=1e-6)
    renamed = parts[2].rename(columns={"mean area": "area"})
    with pytest.raises(
        InputValidationError,
        match=r"part 2 has different column names than part 0.*missing \['mean area'\], unexpected \['area'\]",
    ):
        PPPCA().fit([parts[0], parts[1], renamed])


def test_pipeline():
    data = load_breast_cancer()
    X, y = data.data, data.target
    pipe = make_pipeline(PPPCA(n_components=5, standardize=True), LogisticRegression(max_iter=2000))
    pipe.fit(X, y)  # one provider: the data scientist's own rows
    reference = make_pipeline(StandardScaler(), PCA(5), LogisticRegression(max_iter=2000)).fit(X, y)
    assert np.mean(pipe.predict(X) == reference.predict(X)) > 0.99


@pytest.mark.parametrize("parties", [2, 3, 7, 10])
def test_standardized_equals_standard_scaler_plus_pca(parties):
    X = load_breast_cancer().data
    X[:, 3] *= 1e4  # one feature dwarfs the others
    parts = split_rows(X, parties, "random", seed=parties)
    model = PPPCA(n_components=4, standardize=True).fit(parts)
    scaler = StandardScaler().fit(X)
    reference = PCA(4, svd_solver="full").fit(scaler.transform(X))
    assert np.max(np.abs(model.components_ - reference.components_)) < 1e-6
    assert np.max(np.abs(model.explained_variance_ / reference.explained_variance_ - 1)) < 1e-6
    assert np.allclose(model.scale_, scaler.scale_, rtol=1e-9)
    assert np.max(np.abs(model.transform(X) - reference.transform(scaler.transform(X)))) < 1e-6
    assert np.allclose(
        model.inverse_transform(model.transform(X[:3])),
        reference.inverse_transform(reference.transform(scaler.transform(X[:3]))) * scaler.scale_
        + scaler.mean_,
        atol=1e-6,
    )
    assert model.variance_error_bound_ < 1e-9


def test_standardization_handles_a_constant_column():
    X = load_wine().data.copy()
    X[:, 2] = 5.0
    model = PPPCA(n_components=3, standardize=True).fit(np.array_split(X, 3))
    scaler = StandardScaler().fit(X)
    reference = PCA(3).fit(scaler.transform(X))
    assert model.scale_[2] == 1.0
    assert (
        np.max(np.abs(align_signs(model.components_, reference.components_) - reference.components_)) < 1e-6
    )


@pytest.mark.parametrize("backend", ["additive", "paillier"])
@pytest.mark.parametrize("parties", [2, 3, 5, 10])
@pytest.mark.parametrize("scale", [1.0, 1e-6, 1e6])
def test_diabetes_at_any_scale_matches_sklearn_with_default_settings(backend, parties, scale):
    X = load_diabetes().data * scale  # values ~0.05 * scale, centred
    model = PPPCA(n_components=4, backend=backend).fit(split_rows(X, parties, "even"))
    reference = PCA(4, svd_solver="full").fit(X)
    assert np.max(np.abs(model.components_ - reference.components_)) < 1e-6
    assert np.max(np.abs(model.explained_variance_ / reference.explained_variance_ - 1)) < 1e-6
    assert np.max(np.abs(model.mean_ - reference.mean_)) < 1e-9 * np.max(np.abs(X))


def test_standardize_is_validated():
    with pytest.raises(InputValidationError, match="standardize must be True or False, got 'yes'"):
        PPPCA(standardize="yes").fit(np.array_split(load_wine().data, 2))


def test_pandas_frame_single_provider_keeps_names():
    frame = pd.DataFrame(load_wine().data[:, :4], columns=list("abcd"))
    model = PPPCA(2).fit(frame)
    assert list(model.feature_names_in_) == list("abcd")
