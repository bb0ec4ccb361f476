"""The secure sums of the providers' answer check (checks 4 and 5 of :mod:`mpc_pca.pppca.answer_check`).

Each sum runs among the providers on :func:`~mpc_pca.pppca.answer_check.check_backend`,
opens to provider0, which forwards the opened vector to the others (one message
each); every provider then holds the same opened values. Entries are scaled by
``2^shift`` so that ``M`` summands of magnitude at most ``2 bound`` fit the ring
(:data:`~mpc_pca.pppca.scaling.RING_BITS`) at the backend's fixed-point resolution.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.scaling import RING_BITS
from mpc_pca.roles import SERVER
from protocols.backends.additive import AdditiveBackend
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.party import Party

#: Name of the check's secure sum (in errors and traces).
CHECK_NAME = "check of the server's answer"


class CheckOpening:
    """The check's secure sums among the providers, opened to provider0 and forwarded (checks 4 and 5)."""

    def __init__(
        self, party: Party, checker: AdditiveBackend, providers: tuple[str, ...], bound: float
    ) -> None:
        self.party, self.checker, self.providers, self.bound = party, checker, providers, bound
        self.first = providers[0]
        self.shift = (
            RING_BITS
            - checker.codec.frac_bits
            - math.ceil(math.log2(len(providers)))
            - math.ceil(math.log2(4 * bound))
        )
        #: Largest fixed-point error of an opened entry: ``M 2^-(f+1)`` ring units.
        self.noise = len(providers) * 2.0 ** -(checker.codec.frac_bits + 1 + self.shift)
        self.directions = np.zeros((0, 0))
        self.images = np.zeros((0, 0))

    def open(
        self,
        summand: NDArray[np.float64],
        attach: Callable[[NDArray[np.float64]], NDArray[np.float64]] | None = None,
        extra: int = 0,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Sum every provider's ``summand``; every provider gets the opened sum and provider0's attachment.

        Provider0 appends ``attach(opened)`` (``extra`` numbers: check 5's next
        direction) to the message that forwards the opened sum, so a power step
        costs one message per other provider.
        """
        party, first = self.party, self.first
        limit = 2.0 * self.bound
        if not np.all(np.abs(summand) <= limit):
            raise ProtocolError(
                f"{SERVER!r} sent a wrong answer: {party.name}'s rows alone give check values up to "
                f"{float(np.max(np.abs(summand))):.3g}, above {limit:.3g}, so the claimed largest eigenvalue "
                f"is below the data's spread (or its mean is off); refusing to use its T"
            )
        try:
            opened = self.checker.secure_sum(
                party,
                np.ldexp(summand, self.shift),
                contributors=self.providers,
                receiver=first,
                name=CHECK_NAME,
            )
        except InputValidationError as exc:  # cannot happen with the bound above; never a traceback
            raise ProtocolError(f"the check of the server's answer could not be encoded: {exc}") from exc
        size = summand.shape[0]
        if party.name == first:
            if opened is None:
                raise ProtocolError(f"the {CHECK_NAME} gave {first} no result")
            values = np.ldexp(opened, -self.shift)
            attachment = np.zeros(0) if attach is None else attach(values)
            message = np.concatenate([opened, attachment])
            for provider in self.providers[1:]:
                party.send(provider, message)
            return values, attachment
        message = expect_real_array(party.recv(first), first, (size + extra,), "the opened check")
        return np.ldexp(message[:size], -self.shift), message[size:]
