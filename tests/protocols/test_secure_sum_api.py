"""The embeddable secure-sum entry points: names in errors, symmetric sums, forwarded options.

Covers :func:`protocols.secure_sum.secure_sum` and
:func:`protocols.secure_sum.secure_sum_symmetric` naming the refused value in the
error (their documented defaults ``"value"`` and ``"symmetric matrix"``, or the
caller's ``name``), the symmetric sum against a plain-numpy oracle (the strict lower
triangle of every input ignored), a malformed summed triangle reported as a
:class:`~protocols.errors.ProtocolError` naming the value and the cause, and
:func:`protocols.secure_sum.run_secure_sum` handing its ``timeout`` to the runtime.
"""

import re

import numpy as np
import pytest

from protocols import AdditiveBackend, Party
from protocols.backends.base import SecureSumBackend
from protocols.errors import InputValidationError, ProtocolError
from protocols.runtime import run_inprocess
from protocols.secure_sum import run_secure_sum, secure_sum, secure_sum_symmetric
from protocols.transport.inprocess import InProcessNetwork


def lone_party(name="a", peers=("a", "b", "s")):
    """A party whose network is never used: every call below fails before sending."""
    return Party(name, InProcessNetwork(list(peers), timeout=5).channel(name))


def symmetric_sum_alone(matrix, **kwargs):
    """``secure_sum_symmetric`` at contributor "a" of ("a", "b") summing to "s" (fails before sending)."""
    return secure_sum_symmetric(
        lone_party(), matrix, contributors=["a", "b"], receiver="s", backend=AdditiveBackend(), **kwargs
    )


def test_secure_sum_names_a_non_finite_input_value_by_default():
    with pytest.raises(InputValidationError, match=r"^value contains a non-finite entry nan at index \(1,\)"):
        secure_sum(
            lone_party(), [1.0, np.nan], contributors=["a", "b"], receiver="s", backend=AdditiveBackend()
        )


def test_secure_sum_names_a_non_finite_input_by_the_callers_name():
    with pytest.raises(InputValidationError, match=r"^blood pressure contains a non-finite entry inf"):
        secure_sum(
            lone_party(),
            [np.inf],
            contributors=["a", "b"],
            receiver="s",
            backend=AdditiveBackend(),
            name="blood pressure",
        )


def test_symmetric_sum_names_a_non_finite_matrix_by_default():
    matrix = np.eye(3)
    matrix[0, 2] = np.nan
    with pytest.raises(
        InputValidationError, match=r"^symmetric matrix contains a non-finite entry nan at index \(2,\)"
    ):
        symmetric_sum_alone(matrix)


def test_symmetric_sum_names_a_non_finite_matrix_by_the_callers_name():
    matrix = np.full((2, 2), -np.inf)
    with pytest.raises(InputValidationError, match=r"^gram matrix contains a non-finite entry -inf"):
        symmetric_sum_alone(matrix, name="gram matrix")


def test_symmetric_sum_equals_the_plain_sum_of_the_upper_triangles():
    rng = np.random.default_rng(20240611)
    d = 4
    inputs = {f"c{i}": rng.normal(size=(d, d)) for i in range(3)}  # lower triangles differ from upper
    backend = AdditiveBackend()

    def role(name):
        return lambda party: secure_sum_symmetric(
            party, inputs.get(name), contributors=list(inputs), receiver="s", backend=backend
        )

    run = run_inprocess({name: role(name) for name in [*inputs, "s"]}, timeout=30)
    upper = np.triu(sum(inputs.values()))
    expected = upper + np.triu(upper, 1).T
    total = run.outputs["s"]
    assert total.shape == (d, d)
    np.testing.assert_allclose(total, expected, rtol=0, atol=backend.sum_error_bound(3))
    assert np.array_equal(total, total.T)
    assert all(run.outputs[name] is None for name in inputs)


class FiveEntryBackend(SecureSumBackend):
    """Delivers a 'sum' of 5 entries, which is no packed triangle (3 or 6 would be)."""

    def _run(self, party, value, contributors, receiver):
        return np.arange(5.0) if party.name == receiver else None


def test_malformed_summed_triangle_is_a_protocol_error_naming_value_and_cause():
    party = lone_party("a", peers=("a",))
    with pytest.raises(
        ProtocolError, match=r"^the summed triangle of gram matrix is malformed: 5 entries are not"
    ):
        secure_sum_symmetric(
            party, np.eye(2), contributors=["a"], receiver="a", backend=FiveEntryBackend(), name="gram matrix"
        )
    party = lone_party("a", peers=("a",))
    with pytest.raises(ProtocolError, match=r"^the summed triangle of symmetric matrix is malformed"):
        secure_sum_symmetric(party, np.eye(2), contributors=["a"], receiver="a", backend=FiveEntryBackend())


def test_symmetric_sum_returns_none_at_a_party_that_gets_no_sum():
    party = lone_party("a", peers=("a", "s"))
    assert (
        secure_sum_symmetric(party, np.eye(2), contributors=["a"], receiver="s", backend=FiveEntryBackend())
        is None
    )


@pytest.mark.parametrize("timeout", [0, -1.0, float("inf")])
def test_run_secure_sum_hands_its_timeout_to_the_runtime(timeout):
    with pytest.raises(InputValidationError, match=rf"^timeout={timeout!r} is invalid"):
        run_secure_sum({"a": [1.0], "b": [2.0]}, receiver="s", timeout=timeout)


def test_run_secure_sum_with_an_explicit_timeout_still_sums():
    total, run = run_secure_sum({"a": [1.0, 2.5], "b": [2.0, -0.5]}, receiver="a", timeout=7.5)
    np.testing.assert_allclose(total, [3.0, 2.0], atol=2 * 2.0**-21)
    assert set(run.outputs) == {"a", "b"}


@pytest.mark.parametrize(
    "summand", [[1.0 + 2.0j], np.array([1.0 + 2.0j]), np.array([1.0], dtype=np.complex64)]
)
def test_run_secure_sum_refuses_complex_summands_instead_of_dropping_the_imaginary_part(summand):
    with pytest.raises(InputValidationError, match=r"^a is complex \(dtype complex(128|64)\)"):
        run_secure_sum({"a": summand, "b": [2.0]}, receiver="s")


@pytest.mark.parametrize(
    ("summand", "dtype"), [(["1.0"], "<U3"), ([1.0, None], "object"), (np.array([b"2"]), "|S1")]
)
def test_secure_sum_refuses_text_and_objects_instead_of_parsing_them(summand, dtype):
    with pytest.raises(
        InputValidationError, match="^blood pressure must be real numbers, got dtype " + re.escape(dtype)
    ):
        secure_sum(
            lone_party(), summand, contributors=["a", "b"], receiver="s", backend=AdditiveBackend(),
            name="blood pressure",
        )  # fmt: skip


def test_symmetric_sum_refuses_a_complex_matrix_instead_of_dropping_the_imaginary_part():
    matrix = np.array([[1.0, 2.0j], [0.0, 1.0]])
    with pytest.raises(InputValidationError, match=r"^gram is complex"):
        symmetric_sum_alone(matrix, name="gram")
