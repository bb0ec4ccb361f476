"""The CrypTen engine: the same shared-tensor operations, with CrypTen computing the products.

:class:`CrypTenTensorSession` is a :class:`~protocols.tensor.session.TensorSession`
whose products and openings are CrypTen's. Everything in
:mod:`protocols.tensor.ops` and :mod:`protocols.tensor.eig` runs unchanged on
it; only the two steps of :class:`~protocols.tensor.engine.ProductEngine`
differ:

Products (:meth:`CrypTenEngine.product`)
    The holders wrap their ``uint64`` shares, zero-copy, as CrypTen
    ``ArithmeticSharedTensor`` s over Z_2^64 (``from_shares``, ``precision=0``,
    so CrypTen's fixed-point encoder multiplies by 1 and its off-by-one decode
    is never reached) and call CrypTen's own Beaver code,
    ``crypten.mpc.primitives.beaver.mul`` / ``.matmul`` (Beaver, CRYPTO 1991:
    open ``X - A`` and ``Y - B`` with one batched all-reduce over the holders'
    gloo sub-group, ``Z = C + E B + A F + E F``). The triple ``(A, B, C)``
    comes from :class:`DealerTupleProvider`, installed as CrypTen's provider
    for the duration of the call: it is *our* dealer's triple
    (:func:`protocols.tensor.correlated.triple`), seed-compressed (every
    holder expands its share from the ChaCha20 seed the dealer sent at
    setup; only the last holder receives one explicit correction word
    ``C - sum C_i``, as an int64 array over the run's metered channel, never
    a pickle) and numbered in the session's one-time ledger, so a triple is
    handed to CrypTen exactly once (:class:`~protocols.errors.TripleReuseError`
    otherwise). CrypTen's TFP provider (party 0 generates, and sees, every
    triple) and its TTP provider (requests and replies pickled through
    ``send_obj``/``recv_obj``) are never used.
Openings (:meth:`CrypTenEngine.open`)
    CrypTen's ``ArithmeticSharedTensor.reveal_batch``, i.e. its communicator's
    ``all_reduce`` among the holders only (the dealer and the consumer are not
    in the sub-group). The group communicator
    (:meth:`protocols.backends.crypten_compat._GroupCommunicator.all_reduce`)
    implements it in one step: every holder sends its masked shares to every
    other holder and adds what it receives, exactly the native engine's
    opening, instead of gloo's ring (``2 (M - 1)`` sequential steps).
Truncation
    :func:`protocols.tensor.ops.truncate` unchanged: the dealer deals a
    truncation pair (``r``, shares of ``r >> f`` and ``msb(r) 2^(64-f)``;
    seed-compressed, one-time), the holders open ``x + 2^62 + r`` with the
    CrypTen opening above, and the result is ``floor(x / 2^f)`` or one more:
    exact to one ulp, no failure probability, for any number of holders.
    CrypTen's own ``beaver.truncate`` (``wrap_rng`` plus a gather of
    ``x + r`` to party 0) is not used: it ignores the wrap of ``x + r``
    (a failure with probability about ``|x| / 2^64`` per entry) and CrypTen
    divides locally for 2 parties (failure probability about ``|x| / 2^63``).
Fixed left operands
    CrypTen's Beaver code opens both operands every time, so
    :func:`~protocols.tensor.ops.matmul_fixed` becomes a plain
    :func:`~protocols.tensor.ops.matmul` with a fresh triple (the same rounds;
    ``d^2`` more words opened per product by ``Ĉ``).
Reveals and inputs
    Unchanged: re-randomised by a ChaCha20 sharing of zero the dealer never
    sees and sent point to point to the named receivers over the metered
    channel. CrypTen's ``get_plain_text``/``reveal(dst=...)`` is never used
    (gloo's ``reduce`` leaves plaintext chunks at non-receivers, see
    :mod:`protocols.backends.crypten`).

No pickle from a peer
    CrypTen's communicator pickles objects in ``send_obj``, ``recv_obj``,
    ``broadcast_obj`` and ``all_gather_obj``, and torch.distributed in its
    ``*_object*`` collectives. The group communicator
    (:class:`~protocols.backends.crypten_compat.CrypTenGroupSession`) refuses the
    former, and every CrypTen call of this engine runs inside
    :func:`~protocols.backends.crypten_compat.no_object_collectives`, which
    replaces the latter by functions that raise
    :class:`~protocols.errors.ProtocolError`. Nothing here needs them.

Traffic accounting
    The gloo all-reduces do not pass through the metered channel; each opening
    is recorded in the channel's meter as the native engine's opening would be
    (one send to and one receive from every other holder of the opened words),
    so the reported rounds and bytes are those of the native engine's
    openings (the CrypTen engine opens ``Ĉ - A`` again in every product by
    ``Ĉ``, see *Fixed left operands*).

Security (honest-but-curious, as the native engine): the holders' links of
the CrypTen sub-group are plain gloo TCP, neither encrypted nor authenticated
(as for the ``crypten`` secure-sum backend; ``insecure=True`` only); the dealer
sees no data; the dealer colluding with any one holder learns every opened
value's mask and so the shared matrix.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from protocols.errors import ProtocolError
from protocols.party import Party
from protocols.tensor.correlated import Kind, Triple, product_shape, triple
from protocols.tensor.session import DEFAULT_FRAC_BITS, Rotations, TensorSession
from protocols.tensor.shared import SharedTensor

if TYPE_CHECKING:
    from protocols.backends.crypten_compat import CrypTenGroupSession

_U = np.uint64


def _as_torch(share: NDArray[np.uint64]) -> Any:
    """A ``uint64`` share as a torch int64 tensor (same bits; zero-copy when contiguous)."""
    import torch

    return torch.from_numpy(np.ascontiguousarray(share).view(np.int64))


def _as_numpy(tensor: Any) -> NDArray[np.uint64]:
    """A torch int64 tensor as a ``uint64`` array (same bits)."""
    return np.ascontiguousarray(tensor.detach().numpy()).view(_U).copy()


def _provider_base() -> type:
    from protocols.backends.crypten_compat import import_crypten

    import_crypten()
    from crypten.mpc.provider.provider import TupleProvider

    return TupleProvider


def make_dealer_provider(session: TensorSession) -> Any:
    """A :class:`DealerTupleProvider` for ``session`` (CrypTen is imported here, not at module import)."""
    base = _provider_base()

    class DealerTupleProvider(base):  # type: ignore[misc, valid-type]
        """CrypTen ``TupleProvider`` whose Beaver triples are the run's dealer's.

        ``generate_additive_triple`` (called by CrypTen's ``beaver.mul`` /
        ``beaver.matmul`` at each holder) takes the next triple of
        :func:`protocols.tensor.correlated.triple`: the holder's share expanded
        from its dealer seed, plus, at the last holder, the dealer's
        correction word received over the metered channel as an int64 array.
        The triple is consumed in the session's ledger before CrypTen sees it.
        Every other kind of correlated randomness CrypTen can ask for (square
        pairs, binary triples, ``wrap_rng``, ``B2A_rng``) is refused: the
        engine never needs it.
        """

        def __init__(self) -> None:
            super().__init__()
            self.session = session
            self.handed_out = 0

        def generate_additive_triple(
            self, size0: Any, size1: Any, op: str, device: Any = None, *args: Any, **kwargs: Any
        ) -> tuple[Any, Any, Any]:
            if op not in ("mul", "matmul") or args or kwargs:
                raise ProtocolError(f"the dealer deals only 'mul' and 'matmul' triples, not {op!r}")
            kind: Kind = "mul" if op == "mul" else "matmul"
            tri = triple(self.session, kind, tuple(size0), tuple(size1))
            if tri is None:
                raise ProtocolError("only holders ask the dealer's provider for triples")
            return self.hand_out(tri)

        def hand_out(self, tri: Triple) -> tuple[Any, Any, Any]:
            """Consume ``tri`` in the ledger and return it as CrypTen tensors (once per triple)."""
            from crypten.mpc.primitives import ArithmeticSharedTensor as Ast

            tri.consume()  # TripleReuseError the second time
            self.handed_out += 1
            return tuple(Ast.from_shares(_as_torch(v), precision=0) for v in (tri.a, tri.b, tri.c))

        def _refuse(self, what: str) -> Any:
            raise ProtocolError(
                f"CrypTen asked the dealer's provider for {what}, which this engine never deals"
            )

        def square(self, size: Any, device: Any = None) -> Any:
            return self._refuse("square pairs")

        def generate_binary_triple(self, size0: Any, size1: Any, device: Any = None) -> Any:
            return self._refuse("binary triples")

        def wrap_rng(self, size: Any, device: Any = None) -> Any:
            return self._refuse("wrap_rng pairs (truncation uses the dealer's exact pairs)")

        def B2A_rng(self, size: Any, device: Any = None) -> Any:  # noqa: N802 - CrypTen's name
            return self._refuse("B2A pairs")

    return DealerTupleProvider()


class CrypTenEngine:
    """Products by CrypTen's Beaver code with the dealer's triples; openings by CrypTen's all-reduce."""

    name = "crypten"
    fixed_operands = False

    def __init__(self, session: CrypTenTensorSession) -> None:
        self.session = session
        self.group: CrypTenGroupSession | None = None
        self.provider: Any = None

    def setup(self) -> None:
        """Create the holders' CrypTen sub-group (a collective call of the holders only)."""
        from protocols.backends.crypten_compat import CrypTenGroupSession
        from protocols.transport.torch_channel import TorchChannel

        session = self.session
        channel = session.party.channel
        if not isinstance(channel, TorchChannel):
            raise ProtocolError(
                f"the CrypTen tensor engine needs parties that are processes over torch.distributed, but "
                f"{session.party.name!r} runs on a {type(channel).__name__}; run each party in its own process "
                "(mpc_pca.deploy.launch_local(..., {'backend': 'crypten'}, insecure=True))"
            )
        ranks = [channel.rank_of(h) for h in session.holders]
        try:
            self.group = CrypTenGroupSession(ranks, channel.rank, channel.timeout, session.party.name)
        except RuntimeError as exc:  # gloo reports failures of the sub-group as RuntimeError
            raise ProtocolError(
                f"{session.party.name!r} could not set up the holders' CrypTen group: {exc}"
            ) from exc
        self.provider = make_dealer_provider(session)

    @contextlib.contextmanager
    def active(self) -> Iterator[ModuleType]:
        """CrypTen with this group's communicator, the dealer's provider and no pickle path."""
        from protocols.backends.crypten_compat import no_object_collectives

        if self.group is None:
            raise ProtocolError("the CrypTen engine is used before its group was set up")
        provider = self.provider
        with self.group.active() as crypten, no_object_collectives():
            if crypten.config.cfg.mpc.active_security:
                raise ProtocolError(
                    "CrypTen's active_security mode is not supported by the dealer's provider"
                )
            mpc = crypten.mpc
            saved = mpc.get_default_provider
            mpc.get_default_provider = lambda: provider
            try:
                yield crypten
            finally:
                mpc.get_default_provider = saved

    def _meter_opening(self, words: int) -> None:
        meter = self.session.party.channel.meter
        me = self.session.party.name
        peers = [h for h in self.session.holders if h != me]
        for peer in peers:
            meter.record_send(peer, 8 * words)
        for peer in peers:
            meter.record_recv(peer, 8 * words)

    def open(self, arrays: list[NDArray[np.uint64]]) -> list[NDArray[np.uint64]]:
        self._meter_opening(sum(int(a.size) for a in arrays))
        with self.active() as crypten:
            ast = crypten.mpc.primitives.ArithmeticSharedTensor
            shared = [ast.from_shares(_as_torch(a), precision=0) for a in arrays]
            opened = ast.reveal_batch(shared) if len(shared) > 1 else [shared[0].reveal()]
        return [_as_numpy(t).reshape(a.shape) for t, a in zip(opened, arrays, strict=True)]

    def product(self, x: SharedTensor, y: SharedTensor, kind: Kind) -> SharedTensor:
        session = self.session
        shape = product_shape(kind, x.shape, y.shape)
        bits = x.frac_bits + y.frac_bits
        if not session.is_holder:
            triple(session, kind, x.shape, y.shape)  # the dealer deals; observers do nothing
            return SharedTensor(session, None, shape, bits)
        if x.share is None or y.share is None:
            raise ProtocolError("a holder's handle has no share")
        session.stats.openings += 1
        self._meter_opening(int(x.share.size + y.share.size))
        with self.active() as crypten:
            from crypten.mpc.primitives import beaver

            ast = crypten.mpc.primitives.ArithmeticSharedTensor
            ax = ast.from_shares(_as_torch(x.share), precision=0)
            ay = ast.from_shares(_as_torch(y.share), precision=0)
            z = beaver.mul(ax, ay) if kind == "mul" else beaver.matmul(ax, ay)
        share = _as_numpy(z.share).reshape(shape)
        return SharedTensor(session, share, shape, bits)


class CrypTenTensorSession(TensorSession):
    """A :class:`~protocols.tensor.session.TensorSession` whose products run on CrypTen.

    Same parameters and collective-call discipline as the base class; the
    parties must be processes over torch.distributed
    (:class:`~protocols.transport.torch_channel.TorchChannel`). :meth:`start`
    additionally creates the holders' CrypTen sub-group (dealer and observers
    are not members). See the module docstring for what runs where.
    """

    def __init__(
        self,
        party: Party,
        *,
        holders: Sequence[str],
        dealer: str,
        frac_bits: int = DEFAULT_FRAC_BITS,
        observers: Sequence[str] = (),
        rotations: Rotations = "holder0",
    ) -> None:
        super().__init__(
            party,
            holders=holders,
            dealer=dealer,
            frac_bits=frac_bits,
            observers=observers,
            rotations=rotations,
        )
        self.crypten_engine = CrypTenEngine(self)
        self.engine = self.crypten_engine

    def start(self) -> None:
        if self._started:
            return
        super().start()
        if self.is_holder:
            self.crypten_engine.setup()
