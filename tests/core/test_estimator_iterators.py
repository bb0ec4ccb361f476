"""Issue 35: an estimator given a one-pass iterator refuses it clearly instead of a numpy traceback."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca import PPPCA
from protocols.errors import InputValidationError


@pytest.fixture
def parts():
    rng = np.random.default_rng(0)
    return [rng.normal(size=(10, 4)) for _ in range(3)]


@pytest.mark.parametrize("wrap", [lambda ps: (p for p in ps), iter, lambda ps: map(np.asarray, ps)])
def test_a_generator_of_parts_is_refused_naming_its_type_and_what_is_accepted(parts, wrap):
    iterator = wrap(parts)
    with pytest.raises(
        InputValidationError, match=r"X is a one-pass iterator \((generator|list_iterator|map)\)"
    ):
        PPPCA(2).fit(iterator)
    assert next(iterator) is not None  # nothing was consumed: the caller can still list() it


def test_the_listed_parts_fit(parts):
    model = PPPCA(2).fit(list(p for p in parts))
    assert model.components_.shape == (2, 4)
