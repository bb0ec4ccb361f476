"""One intake for every exported estimator (issue 23).

``fit(parts)`` and ``fit(X, groups=...)`` go through ``mpc_pca.base.split_parts``:
DataFrame columns are aligned by name (a provider's permuted columns give the
same result; different names are refused with both lists), ``groups`` splits
one array into parties, parameters after ``n_components`` are keyword-only and
every parameter is checked against its declared constraint before any party
starts.
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from mpc_pca import CapeAGN
from mpc_pca.base import validate_params
from protocols.errors import InputValidationError
from tests.helpers.estimators import fast_instances, name_of

ESTIMATORS = fast_instances()
BY_NAME = {name_of(e): e for e in ESTIMATORS}
SUBSPACE_ESTIMATORS = [e for e in ESTIMATORS if not isinstance(e, CapeAGN)]
COLUMNS = ["f0", "f1", "f2", "f3", "f4"]
#: The provider whose columns the tests permute or rename (LocalPCA fits on it alone).
PROVIDER = 2


def _frames() -> list[pd.DataFrame]:
    """Three providers' rows; columns of clearly different spread, rows of norm <= 1."""
    rng = np.random.default_rng(7)
    spread = np.array([1.0, 0.7, 0.45, 0.25, 0.1])
    frames = []
    for n in (40, 30, 50):
        rows = rng.normal(size=(n, len(COLUMNS))) * spread
        rows /= 1.5 * max(1.0, float(np.max(np.linalg.norm(rows, axis=1))))
        frames.append(pd.DataFrame(rows, columns=COLUMNS))
    return frames


def _fresh(estimator):
    model = clone(estimator)
    if "site" in model.get_params():
        model.set_params(site=PROVIDER)
    return model


def _result(model) -> list[np.ndarray]:
    fitted = [model.components_]
    if isinstance(model, CapeAGN):
        fitted.append(model.weights_)
    return fitted


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=name_of)
def test_a_providers_permuted_columns_give_the_same_result(estimator):
    frames = _frames()
    reference = _fresh(estimator).fit(frames)
    permuted = list(frames)
    order = ["f3", "f0", "f4", "f2", "f1"]
    permuted[PROVIDER] = frames[PROVIDER][order]
    model = _fresh(estimator).fit(permuted)
    assert list(model.feature_names_in_) == COLUMNS and model.n_features_in_ == len(COLUMNS)
    for got, want in zip(_result(model), _result(reference), strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # the data make the permutation matter: stacking the same blocks by position gives another result
    by_position = _fresh(estimator).fit([f.to_numpy() for f in permuted])
    assert (
        max(np.max(np.abs(g - w)) for g, w in zip(_result(by_position), _result(reference), strict=True))
        > 1e-3
    )


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=name_of)
def test_different_column_names_are_refused_with_both_lists(estimator):
    frames = _frames()
    renamed = ["f0", "f1", "area", "f3", "f4"]
    frames[PROVIDER] = frames[PROVIDER].set_axis(renamed, axis=1)
    with pytest.raises(InputValidationError) as info:
        _fresh(estimator).fit(frames)
    message = str(info.value)
    assert str(COLUMNS) in message and str(renamed) in message, message


@pytest.mark.parametrize("estimator", SUBSPACE_ESTIMATORS, ids=name_of)
def test_transform_checks_the_fitted_feature_names(estimator):
    frames = _frames()
    model = _fresh(estimator).fit(frames)
    rows = pd.concat(frames, ignore_index=True)
    assert model.transform(rows).shape == (len(rows), 2)
    with pytest.raises(InputValidationError, match="feature names"):
        model.transform(rows.set_axis(["f0", "f1", "area", "f3", "f4"], axis=1))
    with pytest.raises(InputValidationError, match=r"4 features, but \w+ is expecting 5"):
        model.transform(rows.to_numpy()[:, :4])


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=name_of)
def test_fit_with_groups_equals_fit_on_parts(estimator):
    X = pd.concat(_frames(), ignore_index=True).to_numpy()
    groups = np.random.default_rng(0).choice(["c", "a", "b"], size=len(X))  # parties' rows interleaved
    arrays = [X[groups == g] for g in ("a", "b", "c")]  # parties in sorted label order
    by_groups = _fresh(estimator).fit(X, groups=groups)
    by_parts = _fresh(estimator).fit(arrays)
    for got, want in zip(_result(by_groups), _result(by_parts), strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert by_groups.n_features_in_ == 5 and not hasattr(by_groups, "feature_names_in_")
    with pytest.raises(InputValidationError, match="pass groups only with a single X"):
        _fresh(estimator).fit(arrays, groups=groups)
    with pytest.raises(InputValidationError, match="one label per row of X"):
        _fresh(estimator).fit(X, groups=groups[:-1])


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=name_of)
def test_fit_on_one_array_is_one_partys_rows(estimator):
    frames = _frames()
    rows = frames[PROVIDER]
    alone = _fresh(estimator).set_params(**({"site": 0} if "site" in estimator.get_params() else {}))
    one = alone.fit(rows)
    assert list(one.feature_names_in_) == COLUMNS
    listed = clone(alone).fit([rows])
    for got, want in zip(_result(one), _result(listed), strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=name_of)
def test_parameters_after_n_components_are_keyword_only(estimator):
    parameters = list(inspect.signature(type(estimator).__init__).parameters.values())[1:]
    assert parameters[0].name == "n_components"
    assert parameters[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    positional = [p.name for p in parameters[1:] if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert positional == []
    with pytest.raises(TypeError, match="positional argument"):
        type(estimator)(2, 1.0)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=name_of)
def test_every_parameter_has_a_declared_constraint(estimator):
    declared = set(type(estimator)._parameter_constraints)
    assert declared == set(estimator.get_params())
    validate_params(estimator)  # the test instance itself is valid


class _Bad:
    """A value no parameter accepts, with a recognizable repr."""

    def __repr__(self) -> str:
        return "<bad value>"


@pytest.mark.parametrize(
    ("estimator", "parameter"),
    [(e, p) for e in ESTIMATORS for p in sorted(e.get_params())],
    ids=lambda x: x if isinstance(x, str) else name_of(x),
)
def test_a_bad_parameter_is_refused_naming_it_and_its_value(estimator, parameter):
    model = clone(estimator).set_params(**{parameter: _Bad()})
    with pytest.raises(InputValidationError) as info:
        model.fit(_frames())
    message = str(info.value)
    assert parameter in message and "<bad value>" in message, message


@pytest.mark.parametrize(
    ("estimator", "parameter", "value", "allowed"),
    [
        (BY_NAME["AnalyzeGaussPCA"], "epsilon", -1.0, "must be > 0"),
        (BY_NAME["AnalyzeGaussPCA"], "delta", 1.5, "0 < delta < 1"),
        (BY_NAME["AnalyzeGaussPCA"], "row_norm", "none", "choose one of ['clip', 'error']"),
        (BY_NAME["AnalyzeGaussPCA"], "neighbour", "swap", "choose one of ['replace-one', 'add-remove']"),
        (BY_NAME["DPdisPCA"], "weights", "rows", "choose one of ['equal', 'samples']"),
        (BY_NAME["LocalPCA"], "ordering", "size", "choose one of ['eigenvalue', 'magnitude']"),
        (BY_NAME["ExponentialMechanismPCA"], "n_sweeps", 0, "an integer >= 1"),
        (BY_NAME["CapeAGN"], "budget_split", 1.0, "strictly between 0 and 1"),
        (BY_NAME["PPPCA"], "standardize", "yes", "True or False"),
        (BY_NAME["PPPCA"], "eigengap", 1.0, ">= 1e-08 and <= 0.9"),
        (BY_NAME["PPPCADP"], "min_honest", 1.5, "an integer or None"),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_a_constraint_says_what_is_allowed(estimator, parameter, value, allowed):
    model = clone(estimator).set_params(**{parameter: value})
    with pytest.raises(InputValidationError) as info:
        model.fit(_frames())
    message = str(info.value)
    assert parameter in message and repr(value) in message and allowed in message, message
