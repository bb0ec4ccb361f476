"""Secure sums as role functions, and what the conformance checks ask of a run's messages.

Used by :mod:`protocols.testing.conformance`: :class:`SumSpec` and
:func:`sum_roles` build the runs; :func:`within_bound`, :func:`reveals_sum`
and :func:`random_payload` judge what came out of them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from protocols.backends.base import SecureSumBackend
from protocols.party import Party
from protocols.runtime import Role
from protocols.testing.recording import RecordedRun

#: Payloads at least this long are "random-looking" for the fresh-randomness check.
RANDOM_PAYLOAD_BYTES = 16


@dataclass(frozen=True)
class SumSpec:
    """One secure sum in a run: its contributors, receiver and the contributors' values."""

    contributors: tuple[str, ...]
    receiver: str
    values: Mapping[str, Any]

    @property
    def members(self) -> tuple[str, ...]:
        extra = () if self.receiver in self.contributors else (self.receiver,)
        return (*self.contributors, *extra)


def sum_roles(backend: SecureSumBackend, sums: Sequence[SumSpec]) -> dict[str, Role]:
    """Role functions that take part, in order, in each sum of ``sums`` they belong to.

    Each role returns the list of its results (one per sum it is in; ``None``
    where it is not the receiver).
    """
    names: list[str] = []
    for spec in sums:
        names.extend(n for n in spec.members if n not in names)

    def role(name: str) -> Role:
        def run(party: Party) -> list[Any]:
            out = []
            for spec in sums:
                if name in spec.members:
                    out.append(
                        backend.secure_sum(
                            party,
                            spec.values.get(name),
                            contributors=list(spec.contributors),
                            receiver=spec.receiver,
                            name=f"{name}'s value",
                        )
                    )
            return out

        return run

    return {name: role(name) for name in names}


def exact_sum(values: Iterable[np.ndarray]) -> np.ndarray:
    arrays = [np.asarray(v, dtype=np.float64) for v in values]
    stacked = np.stack([a.reshape(-1) for a in arrays])
    flat = np.array([math.fsum(stacked[:, j]) for j in range(stacked.shape[1])], dtype=np.float64)
    return flat.reshape(arrays[0].shape)


def within_bound(backend: SecureSumBackend, total: Any, values: Sequence[np.ndarray]) -> str | None:
    """``None`` if ``total`` is the sum of ``values`` within the backend's bound, else why not."""
    exact = exact_sum(values)
    if not isinstance(total, (np.ndarray, np.floating)):
        return f"the receiver got {type(total).__name__}, expected a float64 array"
    total = np.asarray(total)
    if total.shape != exact.shape:
        return f"the receiver got shape {total.shape}, expected {exact.shape}"
    bound = backend.sum_error_bound(len(values)) + np.abs(exact) * 2.0**-52
    error = np.abs(total.astype(np.float64) - exact)
    if not np.all(error <= bound):
        worst = int(np.argmax(error - bound))
        return (
            f"entry {worst} is {total.reshape(-1)[worst]!r}, the exact sum is {exact.reshape(-1)[worst]!r}: "
            f"off by {error.reshape(-1)[worst]:.6g}, more than the stated bound "
            f"{np.broadcast_to(bound, exact.shape).reshape(-1)[worst]:.6g} "
            f"(sum_error_bound({len(values)}) = {backend.sum_error_bound(len(values)):.6g})"
        )
    return None


def party_names(m: int) -> tuple[str, ...]:
    return tuple(f"p{i}" for i in range(m))


def first_error(run: RecordedRun) -> str:
    if not run.errors:
        return "no party failed"
    name, exc = next(iter(run.errors.items()))
    return f"party {name!r} raised {type(exc).__name__}: {exc}"


def reveals_sum(leaf: Any, total: np.ndarray, encoded: np.ndarray, bound: float) -> bool:
    """Whether one message leaf carries the sum in the clear."""
    if isinstance(leaf, np.ndarray):
        if leaf.dtype.kind == "f" and leaf.shape == total.shape:
            return bool(np.all(np.abs(leaf - total) <= bound + np.abs(total) * 2.0**-52))
        if leaf.dtype == np.uint64 and leaf.shape == encoded.shape:
            return bool(np.array_equal(leaf, encoded))
        return False
    if isinstance(leaf, (bytes, bytearray)):
        return bytes(leaf) in (total.tobytes(), encoded.tobytes())
    return False


def random_payload(leaf: Any) -> bytes | None:
    if isinstance(leaf, np.ndarray) and leaf.dtype.kind in "iu" and leaf.nbytes >= RANDOM_PAYLOAD_BYTES:
        return leaf.tobytes()
    if isinstance(leaf, (bytes, bytearray)) and len(leaf) >= RANDOM_PAYLOAD_BYTES:
        return bytes(leaf)
    return None
