"""``dealer="providers"``: the hidden-covariance eigensolve without the server as dealer (issue 39).

With ``dealer="server"`` (the default) the server deals every Beaver triple
and truncation pair of the secure eigensolve, so the server colluding with one
provider unmasks every opening and learns the covariance. With
``dealer="providers"`` the providers make that correlated randomness among
themselves in an offline phase (:mod:`protocols.tensor.offline_store`:
triples by Paillier OLE under each provider's own key, truncation pairs by OT,
:mod:`protocols.ot`), planned from ``d``, ``k``, ``M`` and the iteration budget
alone (:func:`protocols.tensor.offline_plan.ladder_plan`), before any
data-dependent message; the masking rotation is the product of one rotation
per provider. The server is then only the receiver of the outputs: no
coalition short of all providers knows a mask.

Supported with ``reveal="components"`` (the subspace (ladder) eigensolver)
and ``reveal="spectrum"`` on the native tensor engine; block Krylov and the
CrypTen engine still need the dealer and refuse the setting before anything
is sent. In spectrum mode the rotation ``Q`` the server's view is hidden
behind is then the product of one rotation per provider, so no provider
knows it either.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from protocols.errors import InputValidationError
from protocols.party import Party
from protocols.tensor.offline_plan import ladder_plan, spectrum_plan
from protocols.tensor.offline_store import OfflineStore, generate_offline
from protocols.tensor.provider_products import exchange_keys

#: Who makes the secure eigensolve's correlated randomness (``dealer=``).
DEALERS = ("server", "providers")
#: The providers' phase label while they make the correlated randomness (the server takes no part).
PHASE_OFFLINE = "offline phase among the providers"
#: Where a provider keeps what its offline phase cost (``party.context``; its role's output reports it).
OFFLINE_KEY = "offline_phase"
#: Paillier modulus of the providers' offline keys (each provider's own, used only offline).
OFFLINE_KEY_BITS = 2048


def check_dealer(dealer: object, *, reveal: str, method: str = "subspace", engine: str = "native") -> str:
    """Validate ``dealer`` against the run's mode.

    Raises
    ------
    InputValidationError
        An unknown value, or ``"providers"`` with a mode that still needs the dealer.

    Examples
    --------
    >>> check_dealer("providers", reveal="components")
    'providers'
    >>> check_dealer("providers", reveal="covariance")
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: dealer='providers' runs with reveal='components' or 'spectrum' (the covariance hidden); reveal='covariance' has no dealer
    >>> check_dealer("nobody", reveal="components")
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: dealer='nobody' is not one of ('server', 'providers')
    """
    if dealer not in DEALERS:
        raise InputValidationError(f"dealer={dealer!r} is not one of {DEALERS}")
    if dealer == "providers":
        if reveal not in ("components", "spectrum"):
            raise InputValidationError(
                f"dealer='providers' runs with reveal='components' or 'spectrum' (the covariance hidden); "
                f"reveal={reveal!r} has no dealer"
            )
        if engine != "native" or (reveal == "components" and method != "subspace"):
            raise InputValidationError(
                f"dealer='providers' runs the subspace eigensolver or the spectrum solver on the native tensor "
                f"engine; eigensolver={method!r} with the {engine} engine still needs the server as dealer"
            )
    return str(dealer)


def offline_phase(
    party: Party,
    providers: tuple[str, ...],
    n_features: int,
    n_components: int,
    max_iterations: int,
    reveal: str = "components",
) -> OfflineStore:
    """This provider's offline store for one eigensolve: keys swapped, every planned item made with the others.

    Collective among the providers (the server takes no part). Depends on the
    public ``d``, ``k``, ``M``, iteration budget and ``reveal`` only.
    """
    group = exchange_keys(party, providers, key_bits=OFFLINE_KEY_BITS)
    if reveal == "spectrum":
        plan = spectrum_plan(n_features, n_holders=len(providers))
    else:
        plan = ladder_plan(n_features, n_components, n_holders=len(providers), max_iterations=max_iterations)
    return generate_offline(group, plan)


@contextmanager
def metered_offline_phase(party: Party) -> Iterator[None]:
    """Run the block as :data:`PHASE_OFFLINE` and keep its seconds, rounds and bytes in ``party.context``."""
    meter = party.channel.meter
    before = (meter.rounds, meter.bytes_sent, meter.bytes_received)
    start = time.perf_counter()
    with party.phase(PHASE_OFFLINE):
        yield
    party.context[OFFLINE_KEY] = {
        "seconds": time.perf_counter() - start,
        "rounds": meter.rounds - before[0],
        "bytes_sent": meter.bytes_sent - before[1],
        "bytes_received": meter.bytes_received - before[2],
    }


def offline_fields(party: Party) -> dict[str, Any]:
    """A provider's result field ``offline_phase`` (seconds, rounds, bytes) when it ran one, else nothing."""
    cost = party.context.get(OFFLINE_KEY)
    return {} if cost is None else {OFFLINE_KEY: dict(cost)}
