"""The ladder's offline plan covers what dealer-mode runs take; a dealer-free eigensolve equals the dealer's."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from protocols.errors import InputValidationError
from protocols.runtime import run_inprocess
from protocols.tensor import TensorSession, share_input
from protocols.tensor.fast_eig import ladder_eigenvectors
from protocols.tensor.fast_eig_math import MAX_POWER_INDEX, F
from protocols.tensor.offline_plan import ladder_plan
from protocols.tensor.offline_store import Request

HOLDERS = ("h0", "h1", "h2")


def covariance(d: int, k: int, gap: float, seed: int) -> np.ndarray:
    """A covariance whose top-k eigenvalues stand ``gap`` (relative) above the rest."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    top = np.linspace(4.0, 3.0, k)
    rest = np.linspace(3.0 * (1 - gap), 0.1, d - k)
    return (basis * np.r_[top, rest]) @ basis.T


def dealer_run(cov: np.ndarray, k: int, **solver) -> tuple[Counter, dict]:
    """The items holder 0 took in a dealer-mode ladder run, as plan requests (bits dropped), and the plan."""
    d = cov.shape[0]

    def role(party):
        session = TensorSession(
            party, holders=HOLDERS, dealer="server", frac_bits=F, rotations="every-holder"
        )
        shared = share_input(session, cov if party.name == "h0" else None, owner="h0", shape=(d, d))
        result = ladder_eigenvectors(shared, k, to="server", accept_tol=0.99, **solver)
        return session.ledger.requests if party.name == "h0" else result

    out = run_inprocess({name: role for name in [*HOLDERS, "server"]}, timeout=300).outputs
    taken = Counter(Request(kind, shapes, mask=mask) for kind, shapes, _bits, mask in out["h0"].values())
    return taken, out["server"].plan.as_dict()


@pytest.mark.parametrize(("gap", "max_iterations"), [(0.5, 12), (0.02, 12), (0.002, 4)])
def test_the_plan_covers_every_item_a_run_takes(gap, max_iterations):
    d, k = 9, 2
    taken, done = dealer_run(covariance(d, k, gap, seed=3), k, max_iterations=max_iterations)
    planned = Counter(ladder_plan(d, k, n_holders=3, max_iterations=max_iterations))
    assert not taken - planned, f"run took more than planned: {taken - planned}"
    # the plan is tight where the run is not data-dependent: a run to the cap with every squaring takes it all
    squarings = len(done["normaliser_exponents"])
    spare = planned - taken
    square = Request("matmul", ((d, d), (d, d)))
    assert spare[square] == MAX_POWER_INDEX - squarings
    if done["iterations"] == max_iterations:
        assert set(spare) <= {square, Request("truncation", ((d, d),))}


def test_the_plan_refuses_impossible_settings():
    with pytest.raises(InputValidationError, match="1 <= k <= d"):
        ladder_plan(4, 5, n_holders=3)
    with pytest.raises(InputValidationError, match="M >= 2"):
        ladder_plan(4, 2, n_holders=1)
    with pytest.raises(InputValidationError, match="rotations="):
        ladder_plan(4, 2, n_holders=3, rotations="server")  # type: ignore[arg-type]


def dealer_free_run(cov: np.ndarray, k: int, keys, **solver):
    """The ladder with every item from the holders' offline phase (planned, generated, then consumed)."""
    from protocols.tensor.offline_store import generate_offline
    from protocols.tensor.provider_products import exchange_keys

    d = cov.shape[0]
    plan = ladder_plan(d, k, n_holders=len(HOLDERS), **solver)

    def role(party):
        store = None
        if party.name in HOLDERS:
            group = exchange_keys(
                party, HOLDERS, key_bits=512, keypair=keys[party.name], allow_insecure_key_size=True
            )
            store = generate_offline(group, plan)  # before the data is read
        session = TensorSession(
            party,
            holders=HOLDERS,
            dealer="server",
            frac_bits=F,
            rotations="every-holder",
            randomness="providers",
            offline=store,
        )
        shared = share_input(session, cov if party.name == "h0" else None, owner="h0", shape=(d, d))
        result = ladder_eigenvectors(shared, k, to="server", **solver)
        return result if store is None else (store.remaining, len(store))

    return run_inprocess({name: role for name in [*HOLDERS, "server"]}, timeout=600).outputs


@pytest.fixture(scope="module")
def keys():
    from protocols.paillier.keys import generate_keypair

    return {h: generate_keypair(512, allow_insecure_key_size=True) for h in HOLDERS}


def test_a_dealer_free_ladder_finds_the_top_components(keys):
    d, k = 8, 2
    cov = covariance(d, k, 0.3, seed=5)
    out = dealer_free_run(cov, k, keys, max_iterations=8)
    result = out["server"]
    values, vectors = np.linalg.eigh(cov)
    top = vectors[:, ::-1][:, :k].T
    aligned = result.components * np.sign(np.sum(result.components * top, axis=1, keepdims=True))
    assert np.max(np.abs(aligned - top)) < 1e-5
    assert np.allclose(result.eigenvalues, values[::-1][:k], rtol=1e-5)
    remaining, made = out["h0"]
    assert 0 < made - remaining < made  # it took items from the store, and left the unneeded worst case
    assert out["h1"] == out["h0"]  # every holder took the same items


def test_a_session_needs_a_store_exactly_at_the_holders_of_a_dealer_free_run():
    from protocols.party import Party
    from protocols.tensor.offline_store import OfflineStore

    def session(name, **kwargs):
        return TensorSession(Party(name, None), holders=HOLDERS, dealer="server", **kwargs)  # type: ignore[arg-type]

    store = OfflineStore([])
    with pytest.raises(InputValidationError, match="needs its offline store"):
        session("h1", randomness="providers")
    with pytest.raises(
        InputValidationError, match="only holders keep an offline store; this party is the dealer"
    ):
        session("server", randomness="providers", offline=store)
    with pytest.raises(InputValidationError, match="randomness='dealer' takes no offline store"):
        session("h0", offline=store)
    with pytest.raises(InputValidationError, match="randomness='server' is not one of"):
        session("h0", randomness="server")
    assert session("server", randomness="providers").dealer_free
    assert not session("h0").dealer_free


def test_the_spectrum_plan_is_exactly_what_a_spectrum_run_takes():
    from protocols.tensor.offline_plan import spectrum_plan
    from protocols.tensor.spectrum_eig import spectrum_eigenvectors

    d, k = 7, 2
    cov = covariance(d, k, 0.3, seed=1)

    def role(party):
        session = TensorSession(
            party, holders=HOLDERS, dealer="server", frac_bits=F, rotations="every-holder"
        )
        shared = share_input(session, cov if party.name == "h0" else None, owner="h0", shape=(d, d))
        spectrum_eigenvectors(shared, k, to="server")
        return session.ledger.requests

    out = run_inprocess({name: role for name in [*HOLDERS, "server"]}, timeout=120).outputs
    taken = Counter(Request(kind, shapes, mask=mask) for kind, shapes, _bits, mask in out["h0"].values())
    assert taken == Counter(spectrum_plan(d, n_holders=len(HOLDERS)))
