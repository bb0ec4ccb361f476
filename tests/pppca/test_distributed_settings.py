"""The settings agreement of ``mpc-pca party`` covers the column names and the column scaling."""

import pytest

from mpc_pca.pppca.announcement import agree_columns as _agree_columns
from mpc_pca.pppca.announcement import agree_views as _agree
from protocols.errors import InputValidationError


def views(names, exponents, standardize=(False, False, False, False, False)):
    out = {}
    for i, (h, e) in enumerate(zip(names, exponents, strict=True)):
        out[f"provider{i}"] = {"n_features": 2, "columns": h, "column_exponents": e}
    out["server"], out["consumer"] = {}, {}
    for name, flag in zip(out, standardize, strict=False):
        out[name].update(protocol="pppca-ss", n_parties=3, n_components=1, backend="additive",
                         frac_bits=20, key_bits=None, standardize=flag)  # fmt: skip
    return out


def test_same_names_agree_and_exponents_take_the_maximum():
    h = ["age", "bmi"]
    agreed = _agree_columns(views([h, h, h], [[3, -20], [5, -22], [1, -19]]), 3)
    assert agreed == ((5, -19), ("age", "bmi"))


def test_a_provider_with_other_column_names_stops_everyone():
    h, other = ["age", "bmi"], ["bmi", "age"]
    with pytest.raises(InputValidationError, match="ordered column names differ") as info:
        _agree_columns(views([h, other, h], [[0, 0]] * 3), 3)
    assert "'provider1': ['bmi', 'age']" in str(info.value)


def test_standardize_is_part_of_the_agreement():
    h = ["a", "b"]
    with pytest.raises(InputValidationError, match="disagree on standardize"):
        _agree(views([h, h, h], [[0, 0]] * 3, standardize=(False, True, False, False, False)), 3)


def test_the_dealer_is_part_of_the_agreement():
    """One party announcing dealer='providers' while the others keep the server as dealer stops everyone."""
    h = ["a", "b"]
    announced = views([h, h, h], [[0, 0]] * 3)
    for name, view in announced.items():
        view.update(reveal="components", dealer="server" if name != "provider2" else "providers")
    with pytest.raises(InputValidationError, match="disagree on dealer"):
        _agree(announced, 3)
    for name, view in announced.items():
        view.update(dealer="providers", **({"n_rows": 10} if name.startswith("provider") else {}))
    assert _agree(announced, 3) == 2
