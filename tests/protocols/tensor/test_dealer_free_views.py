"""View test of the dealer-free ladder: the server with two providers learns nothing of the third's data.

Issue 39: for ``M = 3`` holders, the *joint* view of the server and any two
providers must not depend on the third provider's data beyond the outputs;
and the same test must fail when the server deals the correlated randomness
(``randomness="dealer"``), so that it can fail. Two coalitions are tested:
the server with ``h0`` and ``h1`` against ``h2``'s data, and the server with
``h1`` and ``h2`` against ``h0``'s (``h0`` adds the openings' offset and leads
the holders' decisions, so it is the one provider not like the others); the
docstring below says it for the first.

The view kit (:func:`protocols.testing.views.check_view_independence`) tests
each received message slot on its own, so a leak that needs several
parties' knowledge together is made visible as a slot by an *adversary
observer*. For every value the holders open against a mask it computes what
the coalition can unmask:

* a Beaver product opens ``E = X - A`` and ``F = Y - B``; the leaves are
  ``E + A_known`` and ``F + B_known``;
* a truncation opens ``c = x + 2^62 + r``; the leaf is ``c - r_known``.

``A_known`` is what the coalition knows of the mask: with a dealer, the whole
mask (the server recomputes every holder's share from the seeds it dealt,
:meth:`~protocols.tensor.session.TensorSession.dealer_streams`), so the leaf
is ``X`` itself; without one, ``a_0 + a_1`` (h0's and h1's shares), so the
leaf is ``X - a_2``, uniform. After the run ``h0`` sends the party
``observer`` the number of items, then one message per item with its leaves
(``uint64``), and the kit tests the observer's view (homogeneity between the
data sets A and B, uniformity of the ring words) along with the server's,
h0's and h1's own views.

The bookkeeping wraps ``Triple.consume`` and ``TruncationPair.consume`` (each
holder's share of the item's mask, in the order the items are used) and the
opening function ``_open`` where :mod:`protocols.tensor.ops` and
:mod:`protocols.tensor.batched` call it: the masked arrays of an opening come
first, two per triple (``E``, ``F``) and one per truncation, in the order the
items were consumed (``open_products``, ``truncate_many``). Arrays opened
against no mask are left out of the observer's slots: the ``k x k`` Gram
matrices ``X^T X`` and ``X_prev^T X`` revealed to the holders each iteration
(``truncate_many(..., reveal_to_holders=...)``). So are the reveals that do not
go through ``_open`` (``C - C^T`` to the holders, the trace and the squarings'
normalisers to every member, the masked basis and Ritz matrix to the server).
All are allowed leakage listed in docs/secure_tensor.md. A self-check
(:func:`_assert_bookkeeping`) confirms that every leaf plus the rest of its
mask (``h2``'s share) is a small fixed-point value: the arrays and masks are
paired correctly, and exactly ``2`` unmasked arrays are opened per iteration.

Data pairs with equal outputs: holder ``i`` inputs a symmetric PSD ``C_i``;
the ladder runs on ``C = C_0 + C_1 + C_2`` (``d = 8``, ``k = 2``, a clear
gap). Data set B changes ``h2``'s matrix only, ``C_2' = C_2 + eps (v v^T - w w^T)``
for the two bottom eigenvectors ``v``, ``w`` of ``C``: the trace and the top-k
eigenpairs stay as they are. The server's output is the run's public plan
(iterations, powers, normaliser exponents), so the kit also checks that A and
B take the same steps.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from protocols.tensor import TensorSession, batched, ops, share_input
from protocols.tensor.correlated import Triple, TruncationPair
from protocols.tensor.fast_eig import ladder_eigenvectors
from protocols.tensor.fast_eig_math import F
from protocols.tensor.offline_plan import ladder_plan
from protocols.tensor.offline_store import generate_offline
from protocols.tensor.provider_products import exchange_keys
from protocols.tensor.shared import SharedTensor
from protocols.testing.views import check_view_independence

KEY_BITS = 512
HOLDERS = ("h0", "h1", "h2")
SERVER, OBSERVER = "server", "observer"
#: The providers whose data varies, one per test: with ``h2`` the coalition holds ``h0``, which adds
#: the openings' offset and leads the decisions; with ``h0`` it does not.
HONEST = ("h2", "h0")


def coalition_of(honest: str) -> tuple[str, ...]:
    """The providers colluding with the server: every provider but ``honest``."""
    return tuple(h for h in HOLDERS if h != honest)


def parties_of(honest: str) -> tuple[str, ...]:
    """Whose views are tested: the coalition's own, and the observer's (what the coalition unmasks together)."""
    return (SERVER, *coalition_of(honest), OBSERVER)


D, K = 8, 2
SOLVER = {"max_iterations": 4, "eigengap": 0.5, "tol": 1e-4, "accept_tol": 0.99}
#: Data pairs (one per seed); the runs of each input set cycle through them.
SEEDS = (11, 12)
#: Runs per input set: 16-word leaves (``d x k``) pool to 80 words, enough for the kit's 16-bin tests.
REPEATS = 5
_U = np.uint64
_TOP = 1 << 62


# -- data ---------------------------------------------------------------------------------


def _on_grid(x: np.ndarray) -> np.ndarray:
    """Symmetric and a multiple of ``2^-20`` (exactly encoded, so traces add up exactly)."""
    x = (x + x.T) / 2.0
    return np.rint(x * 2.0**20) / 2.0**20


def data_pair(seed: int, honest: str = "h2") -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each holder's matrix on data sets A and B; B changes ``honest``'s only, keeping trace and top-k eigenpairs.

    ``C`` has eigenvalues ``4, 3.5`` above ``1 .. 0.5``; the coalition's two matrices are random PSD
    matrices of norm ``0.2``, so the honest one, ``C`` minus them, is PSD as well (Weyl). Every
    matrix lies on the ``2^-20`` grid, and B's trace is A's exactly; the top-k eigenpairs agree up
    to the grid. Returned in holder order.
    """
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((D, D)))
    values = np.r_[4.0, 3.5, np.linspace(1.0, 0.5, D - K)]
    small = []
    for _ in coalition_of(honest):
        w = rng.standard_normal((D, D))
        p = w @ w.T
        small.append(_on_grid(0.2 * p / np.linalg.eigvalsh(p)[-1]))
    c2 = _on_grid((basis * values) @ basis.T - small[0] - small[1])
    v, w = basis[:, -1], basis[:, -2]
    eps = 0.1 * (values[-2] - values[-1])
    c2b = _on_grid(c2 + eps * (np.outer(v, v) - np.outer(w, w)))
    c2b[0, 0] += np.trace(c2) - np.trace(c2b)  # exact on the grid: the revealed trace is the same
    assert np.trace(c2b) == np.trace(c2) and np.linalg.eigvalsh(c2)[0] > 0
    at = HOLDERS.index(honest)
    return [*small[:at], c2, *small[at:]], [*small[:at], c2b, *small[at:]]


# -- the adversary observer's bookkeeping -----------------------------------------------------


@dataclass
class RunLog:
    """What one run's holders opened against which masks, and everything needed to unmask it.

    Attributes
    ----------
    shares : dict
        Per holder, item number to its shares of the opened masks (``[A_i, B_i]`` or ``[r_i]``).
    openings : dict
        Per holder, in order: ``(item number, "triple" or "truncation", opened arrays)``.
    unmasked : dict
        Per holder, how many arrays it opened against no mask.
    server : TensorSession or None
        The server's session (its dealer seeds, if it dealt).
    iterations : int
        The ladder's iterations (from the server's plan).
    coalition : tuple of str
        The providers colluding with the server; the first reports to the observer.
    """

    coalition: tuple[str, ...] = ("h0", "h1")

    shares: dict[str, dict[int, list[np.ndarray]]] = field(default_factory=dict)
    openings: dict[str, list[tuple[int, str, list[np.ndarray]]]] = field(default_factory=dict)
    unmasked: dict[str, int] = field(default_factory=dict)
    pending: dict[str, list[Triple | TruncationPair]] = field(default_factory=dict)
    server: TensorSession | None = None
    iterations: int = -1
    finished: dict[str, threading.Event] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.finished = {name: threading.Event() for name in (*self.coalition[1:], SERVER)}

    @property
    def reporter(self) -> str:
        """The coalition member that sends the observer the leaves."""
        return self.coalition[0]

    def consumed(self, name: str, item: Triple | TruncationPair) -> None:
        masks = [item.a, item.b] if isinstance(item, Triple) else [item.r]
        self.shares.setdefault(name, {})[item.ident] = [m.copy() for m in masks]
        self.pending.setdefault(name, []).append(item)

    def opened(self, session: TensorSession, opened: list[np.ndarray]) -> None:
        """Pair the first arrays of an opening with the items consumed since the last one."""
        name = session.party.name
        position = 0
        for item in self.pending.pop(name, []):
            if isinstance(item, Triple):
                kind = session.ledger.requests[item.ident][0]
                assert kind in ("mul", "matmul"), f"the observer does not cover {kind!r} triples"
                arrays, label = opened[position : position + 2], "triple"
            else:
                arrays, label = opened[position : position + 1], "truncation"
            self.openings.setdefault(name, []).append((item.ident, label, [a.copy() for a in arrays]))
            position += len(arrays)
        assert position <= len(opened)
        self.unmasked[name] = self.unmasked.get(name, 0) + len(opened) - position

    def known_masks(self, ident: int, kind: str, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
        """The part of item ``ident``'s masks the coalition knows: all of it if the server dealt it."""
        if self.server is not None and not self.server.dealer_free:
            # as correlated.triple / truncation_pair expand them at the dealer: A then B, or r first
            known = [np.zeros(shape, dtype=_U) for shape in shapes]
            for stream in self.server.dealer_streams(ident):
                for total, shape in zip(known, shapes, strict=True):
                    total += stream.ring_elements(shape)
            return known
        return [sum(self.shares[h][ident][n] for h in self.coalition) for n in range(len(shapes))]

    def leaves(self) -> list[list[np.ndarray]]:
        """Per item the reporter opened, what the coalition unmasks: ``E + A_known`` (``F + B_known``), ``c - r_known``."""
        out = []
        for ident, kind, opened in self.openings.get(self.reporter, []):
            known = self.known_masks(ident, kind, [a.shape for a in opened])
            if kind == "triple":
                out.append([o + m for o, m in zip(opened, known, strict=True)])
            else:
                out.append([opened[0] - known[0]])
        return out


#: The sessions of the runs under observation (the wrappers ignore every other session).
_TRACKED: weakref.WeakKeyDictionary[TensorSession, RunLog] = weakref.WeakKeyDictionary()


def install_observer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrap ``consume`` of triples and truncation pairs and the opening function to fill each run's log."""
    real_open = ops._open

    def observed_open(session, arrays):
        opened = real_open(session, arrays)
        log = _TRACKED.get(session)
        if log is not None and session.is_holder:
            log.opened(session, opened)
        return opened

    def consuming(real: Callable[[Any], None]) -> Callable[[Any], None]:
        def consume(item):
            real(item)
            log = _TRACKED.get(item.session)
            if log is not None:
                log.consumed(item.session.party.name, item)

        return consume

    monkeypatch.setattr(ops, "_open", observed_open)
    monkeypatch.setattr(batched, "_open", observed_open)
    monkeypatch.setattr(Triple, "consume", consuming(Triple.consume))
    monkeypatch.setattr(TruncationPair, "consume", consuming(TruncationPair.consume))


@pytest.fixture
def observed(monkeypatch):
    install_observer(monkeypatch)


# -- the runs -----------------------------------------------------------------------------------


def _total(session: TensorSession, matrices: list[np.ndarray]) -> SharedTensor:
    """``C_0 + C_1 + C_2``, each ``C_i`` shared by its holder."""
    me = session.party.name
    parts = [
        share_input(session, matrices[i] if me == h else None, owner=h, shape=(D, D))
        for i, h in enumerate(HOLDERS)
    ]
    return parts[0] + parts[1] + parts[2]


def _roles(matrices: list[np.ndarray], keys: dict | None, randomness: str, log: RunLog) -> dict:
    """The ladder among h0, h1, h2 and the server (dealer or output receiver), plus the observer."""
    plan = ladder_plan(D, K, n_holders=len(HOLDERS), max_iterations=SOLVER["max_iterations"])

    def session_of(party, store=None) -> TensorSession:
        session = TensorSession(
            party,
            holders=HOLDERS,
            dealer=SERVER,
            frac_bits=F,
            rotations="every-holder",
            randomness=randomness,  # type: ignore[arg-type]
            offline=store,
        )
        _TRACKED[session] = log
        return session

    def holder(party):
        store = None
        if randomness == "providers":
            assert keys is not None
            group = exchange_keys(
                party, HOLDERS, key_bits=KEY_BITS, keypair=keys[party.name], allow_insecure_key_size=True
            )
            store = generate_offline(group, plan)  # before the data is read
        session = session_of(party, store)
        ladder_eigenvectors(_total(session, matrices), K, to=SERVER, **SOLVER)
        if party.name in log.finished:
            log.finished[party.name].set()
        elif party.name == log.reporter:
            for name, event in log.finished.items():
                assert event.wait(120), f"{name} did not finish"
            items = log.leaves()
            party.send(OBSERVER, len(items))
            for leaves in items:
                party.send(OBSERVER, leaves)
        return None

    def server(party):
        session = session_of(party)
        log.server = session
        result = ladder_eigenvectors(_total(session, matrices), K, to=SERVER, **SOLVER)
        done = result.plan.as_dict()
        log.iterations = int(done["iterations"])
        log.finished[SERVER].set()
        return done["iterations"], done["powers"], done["normaliser_exponents"]

    def observer(party):
        for _ in range(party.recv(log.reporter)):
            party.recv(log.reporter)
        return None

    return {**dict.fromkeys(HOLDERS, holder), SERVER: server, OBSERVER: observer}


def _check(
    randomness: str,
    keys: dict | None,
    logs: list[RunLog],
    honest: str = "h2",
    parties: tuple[str, ...] | list[str] | None = None,
):
    """The view check over the data pairs of :data:`SEEDS` (run ``i`` of A and of B on pair ``i mod n``)."""
    pairs = [data_pair(seed, honest) for seed in SEEDS]

    def source(which: int) -> Callable[[], dict]:
        count = itertools.count()

        def roles() -> dict:
            log = RunLog(coalition=coalition_of(honest))
            logs.append(log)
            return _roles(pairs[next(count) % len(pairs)][which], keys, randomness, log)

        return roles

    tested = parties_of(honest) if parties is None else parties
    return check_view_independence(source(0), source(1), parties=tested, repeats=REPEATS, timeout=120)


def _assert_bookkeeping(log: RunLog) -> None:
    """Every leaf plus the rest of its mask is a small value, so arrays and masks were paired right.

    Also: no item masks two openings, a dealer's recomputed masks are the holders' sums of shares,
    and the only arrays opened against no mask are the two Gram matrices of each iteration.
    """
    first, second = log.coalition
    h0 = log.openings[first]
    idents = [ident for ident, _, _ in h0]
    assert idents == [ident for ident, _, _ in log.openings[second]]
    assert len(set(idents)) == len(idents), "an item masked two openings"
    assert len(h0) > 20
    for ident, kind, opened in h0:
        full = [sum(log.shares[h][ident][n] for h in HOLDERS) for n in range(len(opened))]
        if log.server is not None and not log.server.dealer_free:  # the server recomputes the whole mask
            known = log.known_masks(ident, kind, [a.shape for a in opened])
            assert all(np.array_equal(k, m) for k, m in zip(known, full, strict=True)), ident
        if kind == "triple":  # E + A = X, a shared fixed-point value: |X| < 2^62
            for e, a in zip(opened, full, strict=True):
                assert np.all(np.abs((e + a).view(np.int64)) < _TOP), ident
        else:  # c - r = x + 2^62 in [0, 2^63)
            assert np.all(opened[0] - full[0] < _U(2 * _TOP)), ident
    # the only arrays opened against no mask: X^T X and X_prev^T X, revealed to the holders per iteration
    assert log.unmasked[first] == 2 * log.iterations


@pytest.fixture(scope="module")
def keys():
    from protocols.paillier.keys import generate_keypair

    return {h: generate_keypair(KEY_BITS, allow_insecure_key_size=True) for h in HOLDERS}


@pytest.mark.slow
@pytest.mark.parametrize("honest", HONEST)
def test_the_server_and_two_providers_learn_nothing_of_the_third_providers_data(keys, observed, honest):
    logs: list[RunLog] = []
    report = _check("providers", keys, logs, honest)
    assert len(logs) == 2 * REPEATS
    for log in logs:
        _assert_bookkeeping(log)
    tested = {t.party for t in report.tests}
    assert set(parties_of(honest)) <= tested
    # the observer's leaves (about 40 items a run) are tested, all but the smallest (k x k and d x k
    # truncations pool too few words in 5 runs)
    observer = [t for t in report.tests if t.party == OBSERVER]
    assert len({t.slot for t in observer if "uniformity" in t.test}) >= 40
    assert len({t.slot for t in observer if "homogeneity" in t.test}) >= 40


@pytest.mark.parametrize("honest", HONEST)
def test_the_same_view_test_fails_when_the_server_deals(observed, honest):
    logs: list[RunLog] = []
    with pytest.raises(AssertionError, match=r"view independence failed(.|\n)*party .observer."):
        _check("dealer", None, logs, honest)
    for log in logs:
        _assert_bookkeeping(log)
    # each party alone still sees nothing: only the coalition's joint view (the observer's) fails
    alone = [SERVER, *coalition_of(honest)]
    report = _check("dealer", None, [], honest, parties=alone)
    assert {t.party for t in report.tests} == set(alone)
