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
from typing import TYPE_CHECKING, Any

import numpy as np

from mpc_pca.roles import SERVER
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.party import Party
from protocols.tensor.offline_plan import ladder_plan, spectrum_plan
from protocols.tensor.offline_store import OfflineStore, Request, generate_offline
from protocols.tensor.provider_products import exchange_keys

if TYPE_CHECKING:
    from mpc_pca.pppca.config import PPPCAConfig

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
    plan = offline_plan(n_features, n_components, len(providers), max_iterations, reveal)
    leader = party.name == providers[0]

    def progress(done: int, total: int) -> None:
        party.iteration(PHASE_OFFLINE, done, total)
        if leader:  # the server waits for the shares: tell it the phase is alive, item by item
            party.send(SERVER, np.array([float(done), float(total)]))

    return generate_offline(group, plan, on_item=progress)


def offline_plan(d: int, k: int, n_providers: int, max_iterations: int, reveal: str) -> list[Request]:
    """The items of one eigensolve: the ladder's worst case, or the spectrum solver's fixed list."""
    if reveal == "spectrum":
        return spectrum_plan(d, n_holders=n_providers)
    return ladder_plan(d, k, n_holders=n_providers, max_iterations=max_iterations)


def await_offline_phase(party: Party, leader: str, total: int, relay_to: str | None = None) -> None:
    """Take ``leader``'s report after each of the ``total`` items (the server; the consumer via the server).

    Each wait is bounded by the run's receive timeout, so a phase that is
    long in all (minutes at d = 100) does not time a waiting party out while
    it advances, and a stalled one still does. ``relay_to`` (the server's
    consumer) gets each report on.

    Raises
    ------
    ProtocolError
        A report that is not the next item's number out of ``total``.
    """
    for expected in range(1, total + 1):
        done, told = expect_real_array(party.recv(leader), leader, (2,), "the offline phase's progress")
        if (done, told) != (float(expected), float(total)):
            raise ProtocolError(
                f"{leader!r} reported offline item {done:g} of {told:g}; expected {expected} of {total}"
            )
        if relay_to is not None:
            party.send(relay_to, np.array([done, told]))
        party.iteration(PHASE_OFFLINE, expected, total)


def await_consumer_offline(party: Party, config: PPPCAConfig) -> None:
    """The consumer's wait through the providers' offline phase, on the server's relayed reports."""
    components = config.components
    total = len(
        offline_plan(
            config.n_features,
            config.n_components,
            len(config.providers),
            components.iteration_cap(),
            config.reveal,
        )
    )
    with party.phase(PHASE_OFFLINE):
        await_offline_phase(party, SERVER, total)


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
