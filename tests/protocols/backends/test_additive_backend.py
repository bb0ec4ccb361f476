"""Contracts of :class:`protocols.backends.additive.AdditiveBackend` beyond "the sum is right".

Covered here:

* construction: the caller's codec is used; options of ``sparse-masks`` are
  refused for the other modes and a bad ``graph_seed`` is refused, each
  message naming the offending value; ``repr`` is exact and round-trips;
  :meth:`plan` honours ``security_bits``;
* ``masks`` mode interoperates with a contributor written here from the
  protocol description alone (signed X25519 keys bound to owner, relay and
  group; HKDF-SHA256 pair keys; the k-th sum of a run masked with ChaCha20
  stream ``k``): the signed statement, the key derivation and the stream
  numbering are a wire format that engines at different sites must share;
* masks are never reused within a run, keys are agreed once per group per
  run (one message per contributor per later sum) and never leak between
  two groups of the same run;
* a fixed ``graph_seed`` is what the receiver publishes, and a receiver that
  publishes another one is caught;
* malformed messages (a short share seed, a float partial sum, a bad key
  list, a bad key, a replayed own key), a share seed replayed from an earlier
  sum of the run, and a channel without identities are refused with a :class:`ProtocolError` naming the party at fault.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from protocols import AdditiveBackend, FixedPointCodec, Party, secure_sum
from protocols.agreement import settings_message
from protocols.backends.sparse_masks import mask_graph, plan_graph
from protocols.errors import InputValidationError, ProtocolError
from protocols.runtime import run_inprocess
from protocols.testing.recording import Recorder, run_recorded
from protocols.transport.inprocess import InProcessNetwork

SEED = bytes(range(32))


def _contributor(backend, values, contributors, receiver="server"):
    """A role summing each of ``values`` in turn (one run, one context)."""

    def role(party):
        return [
            secure_sum(party, v, contributors=contributors, receiver=receiver, backend=backend)
            for v in values
        ]

    return role


def _receiver(backend, n_sums, contributors, receiver="server"):
    def role(party):
        return [
            secure_sum(party, None, contributors=contributors, receiver=receiver, backend=backend)
            for _ in range(n_sums)
        ]

    return role


# -- construction ---------------------------------------------------------------------


def test_the_given_codec_sets_the_precision_of_the_sum():
    backend = AdditiveBackend(codec=FixedPointCodec(8))
    assert backend.codec.frac_bits == 8
    party = Party("a", InProcessNetwork(["a"], timeout=1).channel("a"))
    total = secure_sum(party, [0.3, -0.3], contributors=["a"], receiver="a", backend=backend)
    assert total.tolist() == [77 / 256, -77 / 256]  # 0.3 * 256 = 76.8 rounds to 77


@pytest.mark.parametrize("mode", ["shares", "masks"])
@pytest.mark.parametrize(
    "option", [{"max_colluders": 1}, {"neighbours": 3}, {"security_bits": 30}, {"graph_seed": SEED}]
)
def test_sparse_options_are_refused_outside_sparse_masks(mode, option):
    with pytest.raises(InputValidationError, match=r"apply to mode='sparse-masks' only, not '" + mode + "'$"):
        AdditiveBackend(mode, **option)


@pytest.mark.parametrize("seed", [b"abc", bytes(33), "0" * 32], ids=["short", "long", "str"])
def test_a_graph_seed_must_be_32_bytes(seed):
    with pytest.raises(
        InputValidationError, match="^" + re.escape(f"graph_seed must be 32 bytes, got {seed!r}") + "$"
    ):
        AdditiveBackend("sparse-masks", graph_seed=seed)
    assert AdditiveBackend("sparse-masks", graph_seed=SEED).graph_seed == SEED


def test_repr_is_exact_and_round_trips():
    namespace = {"AdditiveBackend": AdditiveBackend, "FixedPointCodec": FixedPointCodec}
    shares = AdditiveBackend()
    assert repr(shares) == "AdditiveBackend(mode='shares', codec=FixedPointCodec(frac_bits=20))"
    masks = AdditiveBackend("masks", FixedPointCodec(16))
    assert repr(masks) == "AdditiveBackend(mode='masks', codec=FixedPointCodec(frac_bits=16))"
    sparse = AdditiveBackend("sparse-masks", max_colluders=2, security_bits=30)
    assert repr(sparse) == (
        "AdditiveBackend(mode='sparse-masks', codec=FixedPointCodec(frac_bits=20), "
        "max_colluders=2, neighbours=None, security_bits=30)"
    )
    for backend in (shares, masks, sparse):
        assert repr(eval(repr(backend), namespace)) == repr(backend)


def test_plan_uses_the_configured_security_level():
    default = AdditiveBackend("sparse-masks").plan(100)
    weaker = AdditiveBackend("sparse-masks", security_bits=20).plan(100)
    assert weaker == plan_graph(100, security_bits=20)
    assert weaker.log2_failure <= -20 and weaker.neighbours < default.neighbours
    # that degree is enough at 20 bits and too few at the default 40
    assert AdditiveBackend("sparse-masks", neighbours=weaker.neighbours, security_bits=20).plan(100) == weaker
    with pytest.raises(InputValidationError, match=r"above 2\^-40"):
        AdditiveBackend("sparse-masks", neighbours=weaker.neighbours).plan(100)


# -- masks mode as a wire format ------------------------------------------------------

_INFO = b"mpc-pca additive pairwise mask v1"


def _chacha_words(key: bytes, stream: int, n: int) -> np.ndarray:
    nonce = bytes(4) + stream.to_bytes(12, "little")  # block counter 0, then the stream number
    raw = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor().update(bytes(8 * n))
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64)


def _reference_masks_contributor(values, contributors, receiver):
    """A ``masks`` contributor written from the protocol description, not from the library."""
    group = "|".join(sorted(contributors)).encode()

    def statement(owner: str, public: bytes) -> bytes:
        return b"|".join([_INFO, b"key", owner.encode(), receiver.encode(), group, public])

    def role(party):
        me, identity = party.name, party.channel.identity
        # every sum starts with the settings: backend name, then the other settings in sorted-key order
        settings = ["additive-masks", None, 20, None, None, None, None, 40]
        party.send(receiver, settings)
        private = X25519PrivateKey.generate()
        public = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        party.send(receiver, {"key": public, "sig": identity.sign(statement(me, public))})
        keys = {}
        for peer, entry in party.recv(receiver).items():
            if peer == me:
                continue
            if not identity.verify(peer, statement(peer, entry["key"]), entry["sig"]):
                raise AssertionError(f"{peer}'s key statement is not the documented one")
            low, high = sorted((me, peer))
            info = _INFO + b"|" + low.encode() + b"|" + high.encode()
            shared = private.exchange(X25519PublicKey.from_public_bytes(entry["key"]))
            keys[peer] = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(shared)
        for k, value in enumerate(values):
            if k > 0:
                party.send(receiver, settings)
            word = np.rint(np.asarray(value) * 2.0**20).astype(np.int64).view(np.uint64)
            for peer, key in keys.items():
                mask = _chacha_words(key, k, word.size)
                word = word + mask if me < peer else word - mask
            party.send(receiver, word)

    return role


def test_masks_mode_interoperates_with_an_independent_contributor():
    contributors = ["p0", "p1", "p2"]
    base = {"p0": np.array([1.5, -2.25]), "p1": np.array([0.125, 3.0]), "p2": np.array([-4.0, 0.5])}
    values = {name: [v * (k + 1) for k in range(3)] for name, v in base.items()}
    backend = AdditiveBackend("masks")
    roles = {c: _contributor(backend, values[c], contributors) for c in ("p0", "p2")}
    roles["p1"] = _reference_masks_contributor(values["p1"], contributors, "server")
    roles["server"] = _receiver(backend, 3, contributors)
    totals = run_inprocess(roles, timeout=10).outputs["server"]
    expected = sum(base.values())  # dyadic values: the encoding is exact
    assert [t.tolist() for t in totals] == [(expected * (k + 1)).tolist() for k in range(3)]


def test_masks_are_fresh_for_every_sum_of_a_run():
    """Summing zeros three times: the receiver must see three unrelated masked arrays per contributor."""
    backend = AdditiveBackend("masks")
    contributors = ["p0", "p1"]
    roles = {c: _contributor(backend, [np.zeros(32)] * 3, contributors) for c in contributors}
    roles["server"] = _receiver(backend, 3, contributors)
    recorder = Recorder()
    run = run_inprocess(roles, timeout=10, wrap_channel=recorder.wrap)
    assert all(t.tolist() == [0.0] * 32 for t in run.outputs["server"])
    arrays = [d.message for d in recorder.sent_by("p0") if isinstance(d.message, np.ndarray)]
    assert len(arrays) == 3
    for i in range(3):
        for j in range(i + 1, 3):
            assert np.count_nonzero(arrays[i] == arrays[j]) == 0


@pytest.mark.parametrize("mode", ["masks", "sparse-masks"])
def test_keys_are_agreed_once_per_group_and_run(mode):
    backend = AdditiveBackend(mode)
    contributors = ["p0", "p1", "p2"]
    values = [np.full(3, float(k)) for k in range(4)]
    roles = {c: _contributor(backend, values, contributors) for c in contributors}
    roles["server"] = _receiver(backend, 4, contributors)
    run = run_inprocess(roles, timeout=10)
    assert [t.tolist() for t in run.outputs["server"]] == [[3.0 * k] * 3 for k in range(4)]
    for c in contributors:  # masks: one public key; sparse masks (3 parties: every pair an edge):
        # a key to each larger-named contributor; then one array per sum
        agreement = 1 if mode == "masks" else sum(peer > c for peer in contributors)
        assert run.reports[c].messages_sent == agreement + 4 + 4  # and the settings, once per sum


@pytest.mark.parametrize("mode", ["masks", "sparse-masks"])
def test_two_groups_in_one_run_keep_their_own_keys(mode):
    backend = AdditiveBackend(mode)
    big, small = ["a", "b", "c"], ["a", "b"]
    x = {"a": np.array([1.0, 2.0]), "b": np.array([10.0, 20.0]), "c": np.array([100.0, 200.0])}

    def member(name):
        def role(party):
            first = secure_sum(party, x[name], contributors=big, receiver="s", backend=backend)
            if name in small:
                secure_sum(party, x[name], contributors=small, receiver="s", backend=backend)
            return first

        return role

    def receiver(party):
        return [
            secure_sum(party, None, contributors=group, receiver="s", backend=backend)
            for group in (big, small)
        ]

    roles = {name: member(name) for name in big}
    roles["s"] = receiver
    first, second = run_inprocess(roles, timeout=10).outputs["s"]
    assert first.tolist() == [111.0, 222.0]
    assert second.tolist() == [11.0, 22.0]


# -- sparse-masks graph seed ----------------------------------------------------------


def test_a_fixed_graph_seed_is_the_one_the_receiver_publishes():
    backend = AdditiveBackend("sparse-masks", graph_seed=SEED)
    contributors = ["p0", "p1", "p2", "p3"]
    roles = {c: _contributor(backend, [np.ones(2)], contributors) for c in contributors}
    roles["server"] = _receiver(backend, 1, contributors)
    recorder = Recorder()
    run = run_inprocess(roles, timeout=10, wrap_channel=recorder.wrap)
    assert run.outputs["server"][0].tolist() == [4.0, 4.0]
    graph = mask_graph(SEED, tuple(contributors), backend.plan(4).edge_probability)
    for delivery in recorder.sent_by("server"):
        assert delivery.message == {"seed": SEED}  # the receiver relays no key
    for c in contributors:  # each edge key goes from its smaller end to its larger end, directly
        edges = {d.receiver for d in recorder.sent_by(c) if isinstance(d.message, bytes)}
        assert edges == {peer for peer in graph[c] if peer > c}


def test_a_receiver_publishing_another_graph_seed_is_caught():
    backend = AdditiveBackend("sparse-masks", graph_seed=SEED)
    contributors = ["p0", "p1", "p2"]
    other = bytes(32)

    def cheating_receiver(party):
        for c in contributors:
            party.send(c, {"seed": other})

    roles = {c: _contributor(backend, [np.ones(2)], contributors) for c in contributors}
    roles["server"] = cheating_receiver
    run = run_recorded(roles, timeout=10)
    assert set(run.errors) == set(contributors)
    for error in run.errors.values():
        assert isinstance(error, ProtocolError)
        assert "'server' sent a mask-graph seed other than the one fixed for this run" in str(error)


# -- malformed messages -------------------------------------------------------------


def test_a_short_share_seed_is_refused_naming_its_sender():
    backend = AdditiveBackend("shares")

    def faulty(party):
        party.send("a", bytes(31))
        party.recv("a")

    roles = {"a": _contributor(backend, [np.ones(2)], ["a", "b"]), "b": faulty}
    roles["server"] = _receiver(backend, 1, ["a", "b"])
    run = run_recorded(roles, timeout=5)
    assert isinstance(run.errors["a"], ProtocolError)
    assert str(run.errors["a"]) == "'b' sent a malformed share seed; expected 32 bytes"


def replay_first_seed_to(victim: str):
    """A fault: the sender's first share seed to ``victim`` is sent again in place of every later one."""
    first: list[bytes] = []

    def fault(to, message):
        if to != victim or not isinstance(message, bytes):
            return message
        if not first:
            first.append(message)
            return message
        return first[0]

    return fault


def test_a_replayed_share_seed_is_refused_naming_its_sender():
    """p1 replays its first-sum seed to p2 in the second sum: p2 refuses it naming p1, nobody ends with a sum.

    Without the check every party ends normally and the second sum is wrong
    (the share p2 expands is not the one p1 subtracted).
    """
    backend = AdditiveBackend("shares")
    contributors = ["p0", "p1", "p2"]
    values = [np.arange(4.0), np.ones(4)]
    roles = {c: _contributor(backend, values, contributors) for c in contributors}
    roles["server"] = _receiver(backend, len(values), contributors)
    run = run_recorded(roles, timeout=10, faults={"p1": replay_first_seed_to("p2")})
    seeds = [d.message for d in run.recorder.sent_by("p1") if d.receiver == "p2"]
    assert len(seeds) == 2 and seeds[0] == seeds[1]  # the replay did happen
    error = run.errors.get("p2")
    assert isinstance(error, ProtocolError), run.errors or run.outputs
    assert str(error) == (
        "'p2': 'p1' sent a share seed it already sent in an earlier sum of this run; expected a fresh "
        "seed per sum (a replayed seed would make the sum silently wrong)"
    )
    assert "server" not in run.outputs  # no silently wrong result


def test_fresh_share_seeds_over_many_sums_pass_the_replay_check():
    backend = AdditiveBackend("shares")
    contributors = ["p0", "p1", "p2"]
    values = [np.full(3, float(k)) for k in range(5)]
    roles = {c: _contributor(backend, values, contributors) for c in contributors}
    roles["server"] = _receiver(backend, len(values), contributors)
    result = run_inprocess(roles, timeout=10)
    for k, total in enumerate(result.outputs["server"]):
        assert np.allclose(total, 3.0 * k)


def test_a_partial_sum_of_the_wrong_dtype_is_refused_naming_its_sender():
    backend = AdditiveBackend("shares")

    def faulty(party):
        party.send("server", settings_message(backend))
        party.send("a", bytes(32))
        party.recv("a")
        party.send("server", np.zeros(2))

    roles = {"a": _contributor(backend, [np.ones(2)], ["a", "b"]), "b": faulty}
    roles["server"] = _receiver(backend, 1, ["a", "b"])
    run = run_recorded(roles, timeout=5)
    assert isinstance(run.errors["server"], ProtocolError)
    assert str(run.errors["server"]) == "expected dtype uint64 from 'b', got float64"


def test_masks_mode_needs_identities_and_says_so_before_sending():
    network = InProcessNetwork(["p0", "p1", "server"], timeout=1)
    channel = network.channel("p0")
    channel.identity = None  # a transport that sets up no identities
    party = Party("p0", channel)
    with pytest.raises(
        ProtocolError, match=r"^'p0': masks mode needs party identities .* this channel has none$"
    ):
        secure_sum(
            party, np.ones(2), contributors=["p0", "p1"], receiver="server", backend=AdditiveBackend("masks")
        )
    assert channel.meter.bytes_sent == 0


def _run_with_relay(relay):
    backend = AdditiveBackend("masks")
    contributors = ["p0", "p1"]
    roles = {c: _contributor(backend, [np.ones(2)], contributors) for c in contributors}
    roles["server"] = relay
    return run_recorded(roles, timeout=5)


def _read_settings(party, contributors=("p0", "p1")):
    """A fake receiver's first step: the settings message of every contributor (the agreement)."""
    for c in contributors:
        assert party.recv(c) == settings_message(AdditiveBackend("masks"))


def test_a_relayed_key_list_that_is_not_the_groups_is_refused():
    def relay(party):
        _read_settings(party)
        publics = {c: party.recv(c) for c in ("p0", "p1")}
        party.send("p0", {"p0": publics["p0"]})  # p1's key left out
        party.send("p1", [publics["p0"], publics["p1"]])  # not a mapping

    run = _run_with_relay(relay)
    assert str(run.errors["p0"]) == "'p0' got a malformed public-key list from 'server'"
    assert str(run.errors["p1"]) == "'p1' got a malformed public-key list from 'server'"


def test_a_malformed_relayed_key_is_refused_naming_its_owner_and_the_relay():
    def relay(party):
        _read_settings(party)
        publics = {c: party.recv(c) for c in ("p0", "p1")}
        publics["p1"] = {"key": publics["p1"]["key"][:31], "sig": publics["p1"]["sig"]}
        for c in ("p0", "p1"):
            party.send(c, publics)

    run = _run_with_relay(relay)
    for c in ("p0", "p1"):
        assert isinstance(run.errors[c], ProtocolError)
        assert str(run.errors[c]) == "public key of 'p1' relayed by 'server' is malformed"


def test_a_relay_replaying_a_contributors_own_earlier_key_is_caught():
    """p0 signs a second key for the same group (fresh context); the relay hands it back the first one."""
    backend = AdditiveBackend("masks")
    contributors = ["p0", "p1"]

    def member(party):
        for _ in range(2):  # a fresh Party on the same channel: the key agreement is redone
            fresh = Party(party.name, party.channel)
            secure_sum(fresh, np.ones(2), contributors=contributors, receiver="server", backend=backend)

    def relay(party):
        _read_settings(party)
        first = {c: party.recv(c) for c in contributors}
        for c in contributors:
            party.send(c, first)
        for c in contributors:
            party.recv(c)  # the masked arrays of the first sum
        _read_settings(party)
        second = {c: party.recv(c) for c in contributors}
        second["p0"] = first["p0"]
        for c in contributors:
            party.send(c, second)

    run = run_recorded({"p0": member, "p1": member, "server": relay}, timeout=5)
    assert isinstance(run.errors["p0"], ProtocolError)
    assert str(run.errors["p0"]) == "the relay 'server' returned a different public key for 'p0'"


@pytest.mark.parametrize("mode", ["masks", "sparse-masks"])
@pytest.mark.parametrize("names", [("a|b", "c", "s"), ("a", "b", "s|t")])
def test_a_name_with_the_key_statements_separator_is_refused_before_sending(mode, names):
    """``("a|b", "c")`` and ``("a", "b|c")`` would sign the same key statement and share a key cache."""
    *contributors, receiver = names
    network = InProcessNetwork(list(names), timeout=5)
    party = Party(contributors[0], network.channel(contributors[0]))
    with pytest.raises(
        InputValidationError,
        match=re.escape(f"party name {next(n for n in names if '|' in n)!r} contains '|'"),
    ):
        secure_sum(party, [1.0], contributors=contributors, receiver=receiver, backend=AdditiveBackend(mode))
    assert all(network._queues[key].empty() for key in network._queues)  # nothing was sent
