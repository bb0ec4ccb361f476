"""Contracts of :class:`protocols.backends.base.SecureSumBackend` that every backend inherits.

Covered here, with a probe backend whose ``_run`` only records what it was given:

* the codec: 20 fractional bits by default, a caller's codec kept, and a
  ``repr`` that names the concrete class and round-trips through ``eval``;
* :meth:`sum_error_bound` is ``n * 2^-(f+1)``, is attained (so it is the exact
  worst case, not a loose one), and refuses fewer than one summand by name;
* :meth:`check_input` names the offending value (``"value"`` by default), and
  reads a missing entry (``None``) as a non-finite number, not as a crash;
* :meth:`secure_sum` validates before ``_run``: the error messages of an empty
  group, a receiver passing data and a bad input name what went wrong, and
  ``_run`` always receives a float64 array and the contributors sorted.
"""

from __future__ import annotations

import numpy as np
import pytest

from protocols import AdditiveBackend, FixedPointCodec, Party
from protocols.backends.base import SecureSumBackend, real_input
from protocols.errors import InputValidationError, RingOverflowError
from protocols.secure_sum import run_secure_sum
from protocols.transport.inprocess import InProcessNetwork


class ProbeBackend(SecureSumBackend):
    """Records each ``_run`` call and hands the value back unchanged (no messages)."""

    name = "probe"

    def __init__(self, codec: FixedPointCodec | None = None) -> None:
        super().__init__(codec)
        self.calls: list[tuple] = []

    def _run(self, party, value, contributors, receiver):
        self.calls.append((party.name, value, contributors, receiver))
        return value


def _party(name: str, names=("a", "b", "s")) -> Party:
    return Party(name, InProcessNetwork(list(names), timeout=1).channel(name))


def test_default_codec_has_20_fractional_bits_and_a_given_codec_is_used():
    assert ProbeBackend().codec.frac_bits == 20
    codec = FixedPointCodec(7)
    backend = ProbeBackend(codec)
    assert backend.codec is codec
    assert backend.sum_error_bound(1) == 2.0**-8


def test_repr_names_the_concrete_class_and_round_trips():
    backend = ProbeBackend(FixedPointCodec(12))
    assert repr(backend) == "ProbeBackend(codec=FixedPointCodec(frac_bits=12))"
    again = eval(repr(backend), {"ProbeBackend": ProbeBackend, "FixedPointCodec": FixedPointCodec})
    assert type(again) is ProbeBackend and again.codec.frac_bits == 12


@pytest.mark.parametrize("frac_bits", [0, 8, 20, 52])
@pytest.mark.parametrize("n", [1, 2, 7])
def test_sum_error_bound_is_half_a_resolution_step_per_summand(frac_bits, n):
    assert ProbeBackend(FixedPointCodec(frac_bits)).sum_error_bound(n) == n * 2.0 ** -(frac_bits + 1)


def test_sum_error_bound_is_attained_by_values_halfway_between_grid_points():
    """Each 2^-21 sits halfway between 0 and 2^-20 and rounds (to even) to 0: the whole bound is lost."""
    backend = AdditiveBackend(codec=FixedPointCodec(20))
    values = {name: np.full(2, 2.0**-21) for name in ("a", "b", "c")}
    total, _ = run_secure_sum(values, receiver="s", backend=backend)
    exact = 3 * 2.0**-21
    assert np.all(np.abs(total - exact) == backend.sum_error_bound(3))


def test_sum_error_bound_needs_at_least_one_summand():
    backend = ProbeBackend()
    assert backend.sum_error_bound(1) > 0
    with pytest.raises(InputValidationError, match=r"^n_summands must be at least 1, got 0$"):
        backend.sum_error_bound(0)
    with pytest.raises(InputValidationError, match=r"got -3$"):
        backend.sum_error_bound(-3)


def test_check_input_names_the_value_value_by_default():
    backend = ProbeBackend()
    with pytest.raises(InputValidationError, match=r"^value contains a non-finite entry nan at index \(1,\)"):
        backend.check_input(np.array([0.0, np.nan]), 1)
    with pytest.raises(RingOverflowError, match=r"^value has an entry of magnitude 1e\+13"):
        backend.check_input(np.array([1e13]), 1)


def test_check_input_names_the_value_it_is_given():
    backend = ProbeBackend()
    with pytest.raises(
        InputValidationError, match=r"^ages contains a non-finite entry inf at index \(0, 1\)"
    ):
        backend.check_input(np.array([[1.0, np.inf]]), 3, name="ages")
    with pytest.raises(RingOverflowError, match=r"^ages has an entry .* with 2 summand\(s\)"):
        backend.check_input(np.array([-5e12]), 2, name="ages")


def test_check_input_reads_a_missing_entry_as_non_finite():
    """A list with ``None`` (a missing measurement) is refused as NaN, with its index."""
    with pytest.raises(InputValidationError, match=r"^ages contains a non-finite entry nan at index \(1,\)"):
        ProbeBackend().check_input([1.0, None], 2, name="ages")


def test_secure_sum_needs_a_contributor():
    with pytest.raises(InputValidationError, match=r"^a secure sum needs at least one contributor$"):
        ProbeBackend().secure_sum(_party("s"), None, contributors=[], receiver="s")


def test_a_receiver_that_does_not_contribute_must_pass_none():
    backend = ProbeBackend()
    with pytest.raises(
        InputValidationError, match=r"^receiver 's' is not a contributor and must pass value=None$"
    ):
        backend.secure_sum(_party("s"), np.ones(2), contributors=["a", "b"], receiver="s")
    assert backend.calls == []


def test_secure_sum_names_a_bad_input_value_by_default_or_as_told():
    backend = ProbeBackend()
    party = _party("a")
    with pytest.raises(InputValidationError, match=r"^value contains a non-finite entry"):
        backend.secure_sum(party, [np.nan], contributors=["a", "b"], receiver="s")
    with pytest.raises(InputValidationError, match=r"^clinic counts contains a non-finite entry"):
        backend.secure_sum(party, [np.nan], contributors=["a", "b"], receiver="s", name="clinic counts")
    # the range is checked for the number of contributors: 5e12 fits one summand, not two
    backend.check_input(np.array([5e12]), 1)
    with pytest.raises(RingOverflowError, match=r"^clinic counts has an entry .* with 2 summand\(s\)"):
        backend.secure_sum(party, [5e12], contributors=["b", "a"], receiver="s", name="clinic counts")
    assert backend.calls == []


def test_run_gets_a_float64_array_and_the_sorted_contributors():
    backend = ProbeBackend()
    out = backend.secure_sum(_party("b"), [3, 1, 2], contributors=["s", "b", "a"], receiver="s")
    ((name, value, contributors, receiver),) = backend.calls
    assert (name, contributors, receiver) == ("b", ("a", "b", "s"), "s")
    assert isinstance(value, np.ndarray) and value.dtype == np.float64
    assert value.tolist() == [3.0, 1.0, 2.0]
    assert out is value
    assert backend.secure_sum(_party("s"), None, contributors=["a", "b"], receiver="s") is None
    assert backend.calls[-1][1:] == (None, ("a", "b"), "s")


def test_real_input_names_the_value_by_default_and_refuses_ragged_lists():
    with pytest.raises(InputValidationError, match=r"^value is complex \(dtype complex128\)"):
        real_input([1j])
    with pytest.raises(InputValidationError, match=r"^value is not an array of numbers: .*inhomogeneous"):
        real_input([[1.0, 2.0], [3.0]])
    with pytest.raises(InputValidationError, match=r"^x must be real numbers, got dtype <U1"):
        real_input(["a"], "x")


def test_real_input_keeps_a_float64_array_and_converts_integers_exactly():
    x = np.arange(3.0)
    assert real_input(x) is x  # no copy of a summand that may be a large Gram triangle
    converted = real_input(np.array([2**53, -1], dtype=np.int64))
    assert converted.dtype == np.float64 and converted.tolist() == [2.0**53, -1.0]


def test_wire_size_per_entry_is_a_capability_that_bounds_real_ciphertexts():
    """Message caps are sized from ``max_bytes_per_entry`` of the agreed backend, never from its name."""
    from protocols.backends import backend_class
    from protocols.paillier.keys import DEFAULT_KEY_BITS, generate_keypair

    assert backend_class("additive").max_bytes_per_entry() == 8
    assert backend_class("additive-masks").max_bytes_per_entry(4096) == 8
    paillier = backend_class("paillier")
    assert paillier.max_bytes_per_entry() == paillier.max_bytes_per_entry(DEFAULT_KEY_BITS)
    key = generate_keypair(512, allow_insecure_key_size=True).public_key
    assert key.ciphertext_bytes <= paillier.max_bytes_per_entry(512) < 2 * key.ciphertext_bytes
