"""Secure sum with CrypTen's ``ArithmeticSharedTensor`` over the torch.distributed process group.

Protocol (group = contributors, plus the receiver if it is not one; group rank
``i`` is the ``i``-th member in that order):

1. Once per run and group: a torch.distributed sub-group of the run's process
   group is created by the members only (the consumer or any other non-member
   never blocks on it), and CrypTen's seed exchange gives every member the
   ``prev``/``next`` generators of its pseudo-random zero sharing (PRZS).
2. Every contributor that is not the receiver sends the receiver the shape of
   its array (a short list of ints); the receiver checks they agree.
3. Every member builds, for each contributor ``c``,
   ``ArithmeticSharedTensor(x_c if me == c else None, size, precision=0, src=c)``:
   a PRZS share plus, at ``c``, its own encoded array. No communication.
   The member adds these ``M`` shares.
4. Every member other than the receiver sends its summed share (int64) to the
   receiver over the run's :class:`~protocols.transport.torch_channel.TorchChannel`;
   the receiver adds all shares (mod 2^64) and decodes.

Revealed to the receiver only
    CrypTen's ``get_plain_text(dst=...)`` is **not** used: it calls
    ``torch.distributed.reduce``, which gloo implements as a ring
    reduce-scatter followed by a gather to ``dst``, so every other member ends
    up holding one fully reduced chunk of the plaintext sum in its buffer
    (``tests/test_crypten_backend.py`` demonstrates it). Step 4 sends shares
    point to point instead: a member sees only its own share.

Encoding
    Values are encoded by :class:`~protocols.encoding.FixedPointCodec`
    (round to nearest, range-checked for ``M`` summands; 16 fractional bits by
    default, CrypTen's own default) and given to CrypTen as integers with
    ``precision=0``. The raw ring sum is decoded by the same codec; CrypTen's
    ``FixedPointEncoder`` (truncating encode, off-by-one decode for some
    negative values, see :mod:`protocols.backends.crypten_compat`) is never used.

Precision
    With ``f = 16`` fractional bits a sum of ``M`` arrays is off the float sum
    by at most ``M * 2^-17`` per entry; nothing else is lost (the ring sum and
    the decoding are exact). For PPPCA with ``N`` rows and ``d`` features this
    gives a revealed mean within ``M 2^-17 / N`` and a covariance within
    ``eta = d M 2^-17 (1 + M 2^-17 / N) / (N - 1)`` in spectral norm, so
    eigenvalues move by at most ``eta`` (Weyl) and the i-th component by at
    most ``2 sqrt(2) eta / gap_i`` (Davis-Kahan), ``gap_i`` being the distance
    of the i-th eigenvalue to its neighbours (``tests/test_crypten_backend.py``
    checks these bounds against the 20-bit in-process run).

Randomness
    The masks are CrypTen's: ``torch.randint`` on ``torch.Generator``
    (Mersenne Twister) seeded with 64 bits from ``os.urandom``. That is not a
    CSPRNG; the ``additive`` backend (ChaCha20) is the one to use where that
    matters. Only additions are computed, so no multiplication triples are
    needed and CrypTen's trusted-first-party (TFP) triple provider, under
    which party 0 would see the triples in clear, is never involved.

Traffic
    Steps 2 and 4 go through the metered channel. The one-off seed exchange in
    step 1 (a 64-bit seed to one neighbour and a broadcast 64-bit seed) uses
    the sub-group directly and is not metered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from protocols.backends.base import SecureSumBackend
from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_array
from protocols.party import Party

if TYPE_CHECKING:
    from protocols.backends.crypten_compat import CrypTenGroupSession
    from protocols.transport.torch_channel import TorchChannel

#: CrypTen's default number of fractional bits (``cfg.encoder.precision_bits``).
CRYPTEN_FRAC_BITS = 16
_MAX_NDIM = 32


class CrypTenBackend(SecureSumBackend):
    """Secure sum by CrypTen arithmetic secret sharing, revealed to one party.

    Parameters
    ----------
    codec : FixedPointCodec, optional
        Encoding into CrypTen's ring Z_{2^64}; 16 fractional bits by default.

    Notes
    -----
    Needs parties that are processes over torch.distributed
    (:func:`~protocols.runtime.gloo.run_torch_party`, as ``mpc-pca run`` starts
    them for its ``processes`` transport); it
    raises :class:`~protocols.errors.ProtocolError` on any other channel.
    The decoded sum differs from the float sum by at most ``M * 2^-(f+1)`` per
    entry (rounding at encoding; the ring sum is exact).
    """

    name = "crypten"
    needs_processes = True
    runs_over_gloo = True
    fixed_point_ring = False
    tensor_engine = "crypten"

    def __init__(self, codec: FixedPointCodec | None = None) -> None:
        super().__init__(FixedPointCodec(CRYPTEN_FRAC_BITS) if codec is None else codec)

    def _run(
        self,
        party: Party,
        value: NDArray[np.float64] | None,
        contributors: tuple[str, ...],
        receiver: str,
    ) -> NDArray[np.float64] | None:
        try:
            from protocols.transport.torch_channel import TorchChannel
        except ImportError as exc:
            raise ProtocolError(f"the crypten backend needs torch and crypten: {exc}") from exc
        channel = party.channel
        if not isinstance(channel, TorchChannel):
            raise ProtocolError(
                f"the crypten backend needs parties that are processes over torch.distributed, but "
                f"{party.name!r} runs on a {type(channel).__name__}; run each party in its own process "
                "(protocols.runtime.gloo.run_torch_party; mpc_pca.deploy.launch_local does so with insecure=True)"
            )
        members = contributors if receiver in contributors else (*contributors, receiver)
        session = _session(party, channel, members)
        encoded = None if value is None else self.codec.encode(value, n_summands=len(contributors))
        shape = _agree_shape(party, encoded, contributors, receiver)
        share = _summed_share(session, encoded, shape, contributors, members, party.name)
        if party.name != receiver:
            party.send(receiver, share)
            return None
        total = share.view(np.uint64).copy()
        for member in members:
            if member != receiver:
                part = expect_array(party.recv(member), sender=member, shape=shape, dtype=np.int64)
                total += part.view(np.uint64)
        return self.codec.decode(total)


def _session(party: Party, channel: TorchChannel, members: tuple[str, ...]) -> CrypTenGroupSession:
    """The CrypTen group session for ``members``, created on first use in this run."""
    from protocols.backends.crypten_compat import CrypTenGroupSession

    key = "crypten|" + "|".join(members)
    session = party.context.get(key)
    if session is None:
        ranks = [channel.rank_of(m) for m in members]
        try:
            session = CrypTenGroupSession(ranks, channel.rank, channel.timeout, party.name)
        except RuntimeError as exc:  # gloo reports failures of the sub-group as RuntimeError
            raise ProtocolError(
                f"{party.name!r} could not set up the CrypTen group {list(members)}: {exc}"
            ) from exc
        party.context[key] = session
    return session


def _agree_shape(
    party: Party,
    encoded: NDArray[np.uint64] | None,
    contributors: tuple[str, ...],
    receiver: str,
) -> tuple[int, ...]:
    """Let the receiver learn the (common) shape of the contributors' arrays."""
    if party.name != receiver:
        if encoded is None:  # cannot happen after validation; kept as a guard
            raise InputValidationError(f"contributor {party.name!r} has no array")
        party.send(receiver, list(encoded.shape))
        return encoded.shape
    shapes: dict[str, tuple[int, ...]] = {}
    if encoded is not None:
        shapes[receiver] = encoded.shape
    for sender in contributors:
        if sender == receiver:
            continue
        message = party.recv(sender)
        if (
            not isinstance(message, list)
            or len(message) > _MAX_NDIM
            or not all(isinstance(n, int) and 0 <= n < 2**62 for n in message)
        ):
            raise ProtocolError(f"{sender!r} sent a malformed array shape: {message!r:.200}")
        shapes[sender] = tuple(message)
    distinct = set(shapes.values())
    if len(distinct) != 1:
        raise ProtocolError(f"contributors' arrays differ in shape: {shapes}")
    return distinct.pop()


def _summed_share(
    session: CrypTenGroupSession,
    encoded: NDArray[np.uint64] | None,
    shape: tuple[int, ...],
    contributors: tuple[str, ...],
    members: tuple[str, ...],
    me: str,
) -> NDArray[np.int64]:
    """This member's share of the sum: one CrypTen PRZS sharing per contributor, added."""
    import torch

    total = None
    with session.active() as crypten:
        shared_tensor = crypten.mpc.primitives.ArithmeticSharedTensor
        for contributor in contributors:
            src = members.index(contributor)
            mine = None
            if contributor == me and encoded is not None:
                mine = torch.from_numpy(np.ascontiguousarray(encoded).view(np.int64))
            shared = shared_tensor(mine, size=torch.Size(shape), precision=0, src=src)
            total = shared if total is None else total + shared
    if total is None:
        raise ProtocolError("a CrypTen secure sum needs at least one contributor")
    return total.share.numpy().copy()
