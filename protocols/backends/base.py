"""The secure-sum interface every backend implements.

Every party of a secure sum calls :meth:`SecureSumBackend.secure_sum` with the
same set of ``contributors`` (in any order) and the same ``receiver``. Each
contributor passes its own array; the receiver, if it is not also a
contributor, passes ``None``. Only the receiver gets the sum back; everybody
else gets ``None``. Consecutive secure sums over the same group must be made
in the same order by every member (backends keep per-run state such as keys
and stream counters in ``party.context``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError
from protocols.party import Party


def real_input(value: ArrayLike, name: str = "value") -> NDArray[np.float64]:
    """A party's own summand as float64, refusing what a float conversion would silently change.

    A complex array would lose its imaginary part (numpy only warns), and
    strings or objects would be parsed or turn into NaN; all are refused,
    naming the value, before anything is sent. Booleans and integers are exact.

    Examples
    --------
    >>> real_input([1, 2.5]).tolist()
    [1.0, 2.5]
    >>> real_input(np.array([1 + 2j]), "gram")
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: gram is complex (dtype complex128); a secure sum takes real values
    """
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InputValidationError(f"{name} is not an array of numbers: {exc}") from exc
    if array.dtype.kind == "c":
        raise InputValidationError(f"{name} is complex (dtype {array.dtype}); a secure sum takes real values")
    if array.dtype.kind not in "biuf":
        raise InputValidationError(f"{name} must be real numbers, got dtype {array.dtype}")
    return array.astype(np.float64, copy=False)


class SecureSumBackend(ABC):
    """Sum arrays held by several parties so that only a receiver learns the total.

    Parameters
    ----------
    codec : FixedPointCodec, optional
        Fixed-point encoding of reals into Z_{2^64}; 20 fractional bits by default.
        Backends that compute in another ring (e.g. CrypTen's) document their own.
    """

    #: Short name used on the command line and in reports (never to ask for a capability).
    name: str = "abstract"
    #: Capabilities, asked by attribute, never by name:
    #: the parties must be separate processes (it cannot run in-process as threads);
    needs_processes: bool = False
    #: its own traffic is gloo collectives over ``torch.distributed`` (no TLS: ``insecure=True`` only);
    runs_over_gloo: bool = False
    #: sums in the 64-bit fixed-point ring of :mod:`protocols.encoding` (integer noise can be added there);
    fixed_point_ring: bool = True
    #: the secret-shared tensor engine its parties use for products and eigensolves
    #: (``"native"``: :mod:`protocols.tensor`; ``"crypten"``: CrypTen's Beaver code).
    tensor_engine: str = "native"

    def __init__(self, codec: FixedPointCodec | None = None) -> None:
        self.codec = FixedPointCodec() if codec is None else codec

    @classmethod
    def max_bytes_per_entry(cls, key_bits: int | None = None) -> int:
        """Most bytes one summed entry can take on the wire (a ring element: 8).

        For sizing message caps from the agreed settings, before any backend
        exists; ``key_bits`` is the agreed key size of a backend with keys.
        """
        return 8

    def __repr__(self) -> str:
        return f"{type(self).__name__}(codec={self.codec!r})"

    def settings(self) -> dict[str, object]:
        """The settings every party of a sum must share (:mod:`protocols.agreement` compares them).

        The backend's name and the codec's ``frac_bits``; backends with more
        add theirs (wire-safe values: ``None``, ``bool``, ``int``, ``str``).
        """
        return {"backend": self.name, "frac_bits": self.codec.frac_bits}

    def sum_error_bound(self, n_summands: int) -> float:
        """The most a decoded sum may differ, per entry, from the exact real sum.

        Rounding each of ``n_summands`` inputs to the nearest multiple of
        ``2^-f`` costs up to ``2^-(f+1)`` each; the ring sum and the decoding
        are exact (up to float64's own rounding of the result). Backends that
        lose more (e.g. truncation) override this; the conformance kit
        (:func:`protocols.testing.check_secure_sum_backend`) holds every
        backend to the bound it states here.

        Examples
        --------
        >>> from protocols.backends import make_backend
        >>> make_backend("additive", frac_bits=20).sum_error_bound(4) == 4 * 2.0**-21
        True
        """
        if n_summands < 1:
            raise InputValidationError(f"n_summands must be at least 1, got {n_summands}")
        return n_summands * self.codec.resolution / 2

    # -- validation --------------------------------------------------------------
    def check_input(self, value: NDArray[np.float64], n_summands: int, name: str = "value") -> None:
        """Raise before sending if ``value`` is not finite or could overflow the ring.

        The default checks the fixed-point range for ``n_summands`` summands;
        backends with a different plaintext space override it.
        """
        self.codec.check_range(np.asarray(value, dtype=np.float64), n_summands, name)

    def check_group(self, party: Party, contributors: tuple[str, ...], receiver: str) -> None:
        """Raise before sending if this party cannot take part in a sum of this group.

        The base checks the group (non-empty, distinct names, the caller a
        member); backends add what they would refuse before their first send,
        so that :func:`protocols.secure_sum.secure_sum` can refuse it before
        the settings agreement sends anything.
        """
        if not contributors:
            raise InputValidationError("a secure sum needs at least one contributor")
        if len(set(contributors)) != len(contributors):
            raise InputValidationError(f"contributors must be distinct, got {list(contributors)}")
        if party.name not in contributors and party.name != receiver:
            raise InputValidationError(
                f"party {party.name!r} is neither a contributor {list(contributors)} "
                f"nor the receiver {receiver!r} of this secure sum"
            )

    def secure_sum(
        self,
        party: Party,
        value: ArrayLike | None,
        *,
        contributors: Sequence[str],
        receiver: str,
        name: str = "value",
    ) -> NDArray[np.float64] | None:
        """Take part in one secure sum; return the sum at ``receiver``, ``None`` elsewhere.

        Parameters
        ----------
        party : Party
            The calling party.
        value : array_like or None
            This party's summand if it is a contributor, else ``None``.
        contributors : sequence of str
            Names of the parties whose arrays are summed; every party must name
            the same set (the order is irrelevant: it is sorted).
        receiver : str
            The only party that learns the sum. It may also be a contributor.
        name : str
            Name of the value, used in error messages.
        """
        # One canonical order for every party, whatever order each caller lists the
        # contributors in: backends derive roles (mask signs, the aggregator) from it.
        contributors = tuple(sorted(contributors))
        SecureSumBackend.check_group(self, party, contributors, receiver)
        is_contributor = party.name in contributors
        if is_contributor:
            if value is None:
                raise InputValidationError(f"contributor {party.name!r} must pass an array, got None")
            array = real_input(value, name)
            self.check_input(array, len(contributors), name)
        else:
            if value is not None:
                raise InputValidationError(
                    f"receiver {party.name!r} is not a contributor and must pass value=None"
                )
            array = None
        return self._run(party, array, contributors, receiver)

    @abstractmethod
    def _run(
        self,
        party: Party,
        value: NDArray[np.float64] | None,
        contributors: tuple[str, ...],
        receiver: str,
    ) -> NDArray[np.float64] | None:
        """Backend-specific protocol; inputs are already validated."""
