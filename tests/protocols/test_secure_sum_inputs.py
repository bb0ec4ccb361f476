"""Issue 35: ``run_secure_sum`` takes a backend object or a backend name; anything else is refused."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.backends import BACKEND_NAMES
from protocols.errors import InputValidationError
from protocols.secure_sum import run_secure_sum

VALUES = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.5])}


@pytest.mark.parametrize("name", ["additive", "additive-masks", "additive-sparse-masks"])
def test_a_backend_name_is_built_with_make_backend(name):
    total, run = run_secure_sum(VALUES, receiver="a", backend=name)
    np.testing.assert_allclose(total, [4.0, 6.5])
    assert run.reports["b"].bytes_sent > 0


@pytest.mark.parametrize("backend", [3, b"additive", object()])
def test_another_type_is_refused_naming_it_and_the_accepted_ones(backend):
    with pytest.raises(InputValidationError) as info:
        run_secure_sum(VALUES, receiver="a", backend=backend)
    message = str(info.value)
    assert f"backend={backend!r} ({type(backend).__name__}) is not a backend" in message
    assert "SecureSumBackend" in message and all(name in message for name in BACKEND_NAMES)


def test_an_unknown_name_is_refused_naming_the_known_ones():
    with pytest.raises(InputValidationError, match=r"unknown backend 'additve'; choose one of \['additive'"):
        run_secure_sum(VALUES, receiver="a", backend="additve")
