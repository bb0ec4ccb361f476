"""Everything that touches CrypTen's import path or global state, in one place.

CrypTen 0.4.1 is imported lazily by :func:`import_crypten`; importing this
module has no side effect. Three problems of CrypTen 0.4.1 on this platform are
handled here:

Import on torch >= 2.5
    ``crypten.nn.onnx_converter`` imports ``torch.onnx._internal.registration``,
    which torch moved to ``torch.onnx._internal.torchscript_exporter.registration``.
    :func:`import_crypten` registers the new module under the old name in
    ``sys.modules`` (only when the old name is missing) and then imports crypten.

``FixedPointEncoder.decode`` is wrong for some negative values
    It floor-divides negative integers by ``scale - 1`` instead of ``scale``,
    so e.g. the raw value ``-131071`` (``-2 + 2^-16`` at 16 fractional bits)
    decodes to ``-2.99998`` instead of ``-1.99998``: off by exactly 1.0. It
    also converts through float32. The secure-sum backend never calls it: it
    reveals the raw ring sum and decodes it with
    :class:`protocols.encoding.FixedPointCodec` (two's complement, float64).

``FixedPointEncoder.encode`` truncates
    ``(scale * x).long()`` rounds toward zero, so the encoding error is up to
    ``2^-f`` instead of ``2^-(f+1)`` and biased toward zero. The backend
    encodes with :class:`~protocols.encoding.FixedPointCodec` (round to
    nearest, range-checked) and hands CrypTen integers with ``precision=0``,
    for which CrypTen's encoder multiplies by 1.

CrypTen's communicator and random generators are process-wide singletons
(``DistributedCommunicator.instance`` and ``crypten.generators``).
:class:`CrypTenGroupSession` builds them for one torch.distributed sub-group of
an *existing* process group and installs them only for the duration of a
``with session.active():`` block, restoring whatever was there before.
``crypten.init()`` is never called: it would create its own process group from
environment variables (``RENDEZVOUS``, ``WORLD_SIZE``, ``RANK``,
``DISTRIBUTED_BACKEND``), and its ``DistributedCommunicator`` leaves its rank
and world size unset when a process group already exists.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator, Sequence
from datetime import timedelta
from types import ModuleType
from typing import Any

_OLD_REGISTRATION = "torch.onnx._internal.registration"
_NEW_REGISTRATION = "torch.onnx._internal.torchscript_exporter.registration"
INSTALL_HINT = (
    "install it next to torch with `pip install --no-deps crypten==0.4.1` "
    "(plus pyyaml, omegaconf and onnx); see README"
)


def install_import_shim() -> bool:
    """Make ``torch.onnx._internal.registration`` importable for CrypTen.

    Returns
    -------
    bool
        True if the alias was registered, False if torch still has the old module.
    """
    try:
        importlib.import_module(_OLD_REGISTRATION)
    except ModuleNotFoundError:
        sys.modules[_OLD_REGISTRATION] = importlib.import_module(_NEW_REGISTRATION)
        return True
    return False


def import_crypten() -> ModuleType:
    """Import and return the ``crypten`` package, applying the torch import shim first.

    Raises
    ------
    ImportError
        If torch or crypten is not installed, with the installation hint.
    """
    try:
        importlib.import_module("torch")
    except ImportError as exc:
        raise ImportError(f"the crypten backend needs torch; {INSTALL_HINT}") from exc
    if "crypten" not in sys.modules:
        install_import_shim()
    try:
        return importlib.import_module("crypten")
    except ImportError as exc:
        raise ImportError(f"crypten cannot be imported ({exc}); {INSTALL_HINT}") from exc


def crypten_available() -> bool:
    """Whether :func:`import_crypten` succeeds."""
    try:
        import_crypten()
    except ImportError:
        return False
    return True


#: Point-to-point tag of the openings in :meth:`_GroupCommunicator.all_reduce` (sub-group only).
OPEN_TAG = 0x6F70656E


class _GroupCommunicator:
    """The part of CrypTen's communicator interface that sharing and seed setup use.

    Ranks are *group* ranks (0 .. size-1 in the order of the sub-group), as
    CrypTen's code assumes; every call translates them to the global ranks
    torch.distributed wants.
    """

    def __init__(self, group: Any, global_ranks: Sequence[int], my_global_rank: int, name: str) -> None:
        self._group = group
        self._global = tuple(global_ranks)
        self._rank = self._global.index(my_global_rank)
        self._name = name

    def get_rank(self) -> int:
        return self._rank

    def get_world_size(self) -> int:
        return len(self._global)

    def get_name(self) -> str:
        return self._name

    def set_name(self, name: str) -> None:
        self._name = name

    def isend(self, tensor: Any, dst: int) -> Any:
        import torch.distributed as dist

        return dist.isend(tensor.data, self._global[dst], group=self._group)

    def irecv(self, tensor: Any, src: int) -> Any:
        import torch.distributed as dist

        return dist.irecv(tensor.data, self._global[src], group=self._group)

    def broadcast(self, tensor: Any, src: int, group: Any = None, batched: bool = False) -> Any:
        import torch.distributed as dist

        if group is not None or batched:
            raise NotImplementedError("only single-tensor broadcasts within the session group are used")
        dist.broadcast(tensor.data, self._global[src], group=self._group)
        return tensor

    def all_reduce(self, input: Any, op: Any = None, batched: bool = False) -> Any:
        """Sum over the group (CrypTen's openings); a list of tensors with ``batched=True``.

        Only the sum is supported; every member learns it (it is an opening).
        Every member sends its (masked) shares to every other member in one
        step and adds what it receives, as the native engine's openings do:
        one communication step instead of the ``2 (M - 1)`` sequential steps
        of gloo's ring all-reduce, and nobody sees a partial sum it would not
        see in the ring. The tensors of a batch travel as one message.
        """
        import torch
        import torch.distributed as dist

        if op is not None and op != dist.ReduceOp.SUM:
            raise NotImplementedError("only sums are used")
        tensors = list(input) if batched else [input]
        flat = torch.cat([t.data.reshape(-1) for t in tensors])
        peers = [r for r in range(len(self._global)) if r != self._rank]
        buffers = {peer: torch.empty_like(flat) for peer in peers}
        ops = [dist.P2POp(dist.isend, flat, self._global[p], self._group, OPEN_TAG) for p in peers]
        ops += [dist.P2POp(dist.irecv, buffers[p], self._global[p], self._group, OPEN_TAG) for p in peers]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        total = flat.clone()
        for peer in peers:
            total += buffers[peer]
        results, start = [], 0
        for t in tensors:
            n = t.data.numel()
            results.append(total[start : start + n].reshape(t.data.shape))
            start += n
        return results if batched else results[0]

    # CrypTen's object paths pickle what a peer sent (``pickle.loads`` on
    # ``recv_obj``): a hostile peer would run code here. None of them is ever
    # needed by what this project computes, so every one refuses.

    def send_obj(self, obj: Any, dst: int, group: Any = None) -> None:
        refuse_pickle("send_obj")

    def recv_obj(self, src: int, group: Any = None) -> Any:
        refuse_pickle("recv_obj")

    def broadcast_obj(self, obj: Any, src: int, group: Any = None) -> Any:
        refuse_pickle("broadcast_obj")

    def all_gather_obj(self, obj: Any) -> Any:
        refuse_pickle("all_gather_obj")


#: torch.distributed collectives that pickle their payload (``_object_to_tensor``/``pickle.loads``).
OBJECT_COLLECTIVES = (
    "send_object_list",
    "recv_object_list",
    "broadcast_object_list",
    "all_gather_object",
    "gather_object",
    "scatter_object_list",
)


def refuse_pickle(what: str) -> Any:
    """Raise :class:`~protocols.errors.ProtocolError`: ``what`` would unpickle a peer's bytes."""
    from protocols.errors import ProtocolError

    raise ProtocolError(
        f"{what} pickles what a peer sends and is refused in this project's CrypTen runs; "
        "only int64 tensors and the run's own message codec are accepted"
    )


@contextlib.contextmanager
def no_object_collectives() -> Iterator[None]:
    """Replace torch.distributed's ``*_object*`` collectives by functions that raise, then restore them.

    Inside the block nothing CrypTen (or anything else in this process) calls
    can reach a pickle of a peer's bytes through torch.distributed.
    """
    import torch.distributed as dist

    saved = {name: getattr(dist, name) for name in OBJECT_COLLECTIVES if hasattr(dist, name)}

    def refuser(name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            return refuse_pickle(f"torch.distributed.{name}")

        return refuse

    try:
        for name in saved:
            setattr(dist, name, refuser(name))
        yield
    finally:
        for name, function in saved.items():
            setattr(dist, name, function)


class CrypTenGroupSession:
    """CrypTen's communicator and PRZS generators for one group of parties.

    Creating a session is a collective call of every member (and only the
    members): it creates a torch.distributed sub-group with
    ``use_local_synchronization=True`` (non-members do not take part), then
    runs CrypTen's own seed exchange (``crypten._setup_prng``: one 64-bit seed
    to the next rank, a broadcast global seed). The resulting generators are
    kept by the session and installed only inside :meth:`active`.

    Parameters
    ----------
    global_ranks : sequence of int
        Global ranks of the members, in the order that defines group ranks.
    my_global_rank : int
        This process's global rank; must be one of ``global_ranks``.
    timeout : float
        Seconds any collective of the sub-group may take.
    name : str
        Party name, for CrypTen's bookkeeping.
    """

    def __init__(self, global_ranks: Sequence[int], my_global_rank: int, timeout: float, name: str) -> None:
        import torch.distributed as dist

        self.crypten = import_crypten()
        ranks = [int(r) for r in global_ranks]
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"group ranks must be distinct, got {ranks}")
        if my_global_rank not in ranks:
            raise ValueError(f"rank {my_global_rank} is not a member of the group {ranks}")
        self.global_ranks = tuple(ranks)
        # ``sort_ranks=False`` keeps the member order: group rank i is ranks[i].
        self.group = dist.new_group(
            ranks,
            timeout=timedelta(seconds=timeout),
            use_local_synchronization=True,
            sort_ranks=False,
        )
        self.communicator = _GroupCommunicator(self.group, self.global_ranks, my_global_rank, name)
        self.generators: dict[str, dict[Any, Any]] = {key: {} for key in self.crypten.generators}
        with self.active():
            self.crypten._setup_prng()
            self.generators = {key: dict(value) for key, value in self.crypten.generators.items()}

    @property
    def rank(self) -> int:
        """This party's rank within the group."""
        return self.communicator.get_rank()

    @contextlib.contextmanager
    def active(self) -> Iterator[ModuleType]:
        """Install this session's communicator and generators in CrypTen; restore on exit."""
        from crypten.communicator import DistributedCommunicator

        crypten = self.crypten
        previous_instance = DistributedCommunicator.instance
        previous_generators = {key: dict(value) for key, value in crypten.generators.items()}
        DistributedCommunicator.instance = self.communicator
        for key, value in self.generators.items():
            crypten.generators[key].clear()
            crypten.generators[key].update(value)
        try:
            yield crypten
        finally:
            DistributedCommunicator.instance = previous_instance
            for key, value in previous_generators.items():
                crypten.generators[key].clear()
                crypten.generators[key].update(value)
