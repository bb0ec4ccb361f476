"""IKNP OT extension giving correlated OTs of ring words, the form of Gilboa's product.

One link per ordered pair of providers (sender ``S``, receiver ``R``), set up
by 128 base OTs in which ``R`` offered the key pairs ``(k_i^0, k_i^1)`` and
``S`` chose ``k_i^(s_i)`` with its secret ``s`` (``Delta``). A batch of ``m``
OTs for ``R``'s choice bits ``r`` (Ishai, Kilian, Nissim and Petrank,
"Extending Oblivious Transfers Efficiently", CRYPTO 2003, section 3):

1. ``R`` expands ``t_i = G(k_i^0)``, sends ``u_i = t_i xor G(k_i^1) xor r``
   (``128 x m`` bits);
2. ``S`` forms ``q_i = G(k_i^(s_i)) xor s_i u_i = t_i xor s_i r``, so row
   ``j`` of the transposed matrices satisfies ``Q_j = T_j xor r_j s``;
3. correlated OT (the sender's correlation is its ring word ``x_j``): ``S``
   keeps ``-H(j, Q_j)`` and sends ``tau_j = H(j, Q_j) - H(j, Q_j xor s) + x_j``;
   ``R`` computes ``H(j, T_j) + r_j tau_j``. The two outputs add up to
   ``r_j x_j`` mod ``2^64``: a share of the product of ``S``'s word and
   ``R``'s bit, which is Gilboa's OT multiplication (CRYPTO 1999) for a
   one-bit multiplier.

What each side sees: ``S`` sees ``u``, which is ``r`` masked by
``G(k_i^(1 - s_i))``, a key it does not have (PRG security). ``R`` sees
``tau_j``; for ``r_j = 0`` it is masked by ``H(j, T_j xor s)`` and for
``r_j = 1`` by ``H(j, T_j)`` up to the known term, and neither is computable
without ``s`` (correlation robustness of ``H``, :mod:`protocols.ot.matrix`).
Semi-honest; ``H``'s tweak ``j`` counts every OT ever run on the link, and
the PRG's counter block counts the batches, so nothing is reused.

Batches are cut into chunks of :data:`CHUNK_OTS` OTs (4 MiB of ``u`` each);
the receiver sends every chunk before it reads any answer, so a batch costs
two message rounds however long it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError
from protocols.messages import expect_array
from protocols.ot.base import ChosenKeys, OfferedKeys
from protocols.ot.matrix import ROWS, expand_all, hash_rows, transpose
from protocols.party import Party

_U = np.uint64
#: Most OTs in one message (a ``128 x CHUNK_OTS`` bit matrix is 4 MiB).
CHUNK_OTS = 1 << 18


def _chunks(m: int) -> list[tuple[int, int]]:
    return [(start, min(start + CHUNK_OTS, m)) for start in range(0, m, CHUNK_OTS)]


def _width(n_ots: int) -> int:
    """Bytes per matrix row for ``n_ots`` OTs (a whole number of bytes)."""
    return -(-n_ots // 8)


@dataclass
class ExtensionSender:
    """This provider's end of the link on which it is the sender ``S`` toward ``peer``."""

    peer: str
    delta: NDArray[np.uint8]
    keys: tuple[bytes, ...]
    done: int = 0
    batches: int = 0
    _delta_row: NDArray[np.uint8] = field(init=False, repr=False)

    @classmethod
    def from_base(cls, chosen: ChosenKeys) -> ExtensionSender:
        """The sender's state from the base OTs in which it chose with ``Delta``."""
        return cls(chosen.peer, chosen.choices, chosen.keys)

    def __post_init__(self) -> None:
        self._delta_row = np.packbits(self.delta)

    def send_correlated(self, party: Party, correlation: NDArray[np.uint64]) -> NDArray[np.uint64]:
        """Run one batch for the correlations ``x_j`` (one per OT); return this end's shares ``-H(j, Q_j)``.

        The receiver must run :meth:`ExtensionReceiver.start` and
        :meth:`ExtensionReceiver.finish` with as many choice bits.
        """
        flat = np.ascontiguousarray(correlation, dtype=_U).reshape(-1)
        out = np.empty_like(flat)
        flip = self.delta[:, None].astype(bool)
        for start, stop in _chunks(flat.size):
            n, width = stop - start, _width(stop - start)
            u = expect_array(party.recv(self.peer), sender=self.peer, shape=(ROWS, width), dtype=np.uint8)
            q = expand_all(self.keys, self.batches, width) ^ np.where(flip, u, np.uint8(0))
            rows = transpose(q)[:n]
            h0 = hash_rows(rows, self.done)
            h1 = hash_rows(rows ^ self._delta_row, self.done)
            party.send(self.peer, h0 - h1 + flat[start:stop])
            out[start:stop] = -h0
            self.done += n
            self.batches += 1
        return out.reshape(np.shape(correlation))


@dataclass
class PendingBatch:
    """What the receiver keeps between sending ``u`` and reading ``tau``: its pads and choices."""

    pads: list[NDArray[np.uint64]]
    choices: NDArray[np.uint8]
    shape: tuple[int, ...]


@dataclass
class ExtensionReceiver:
    """This provider's end of the link on which it is the receiver ``R`` toward ``peer``."""

    peer: str
    keys0: tuple[bytes, ...]
    keys1: tuple[bytes, ...]
    done: int = 0
    batches: int = 0

    @classmethod
    def from_base(cls, offered: OfferedKeys) -> ExtensionReceiver:
        """The receiver's state from the base OTs in which it offered the key pairs."""
        return cls(offered.peer, offered.keys0, offered.keys1)

    def start(self, party: Party, choices: NDArray[np.uint8]) -> PendingBatch:
        """Send ``u`` for every chunk of a batch with these choice bits (each 0 or 1)."""
        shape = np.shape(choices)
        bits = np.ascontiguousarray(choices, dtype=np.uint8).reshape(-1)
        if bits.size and int(bits.max()) > 1:
            raise InputValidationError("OT choice bits must be 0 or 1")
        pads = []
        for start, stop in _chunks(bits.size):
            n, width = stop - start, _width(stop - start)
            t = expand_all(self.keys0, self.batches, width)
            packed = np.packbits(bits[start:stop])
            party.send(self.peer, t ^ expand_all(self.keys1, self.batches, width) ^ packed)
            pads.append(hash_rows(transpose(t)[:n], self.done))
            self.done += n
            self.batches += 1
        return PendingBatch(pads, bits, shape)

    def finish(self, party: Party, pending: PendingBatch) -> NDArray[np.uint64]:
        """Read ``tau`` for every chunk; return this end's shares ``H(j, T_j) + r_j tau_j``."""
        out = np.empty(pending.choices.size, dtype=_U)
        for (start, stop), pad in zip(_chunks(pending.choices.size), pending.pads, strict=True):
            tau = expect_array(party.recv(self.peer), sender=self.peer, shape=(stop - start,), dtype=_U)
            out[start:stop] = pad + pending.choices[start:stop].astype(_U) * tau
        return out.reshape(pending.shape)
