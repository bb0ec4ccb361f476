"""Signed key material of the Flower secure sum: consortium certificates checked by every client (issue 40)."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.integrations.star_sum import client, server
from mpc_pca.integrations.star_sum.identity import NodeIdentity
from mpc_pca.integrations.star_sum.protocol import SumPlan
from protocols.errors import InputValidationError, ProtocolError
from protocols.transport.certs import key_pem, make_ca, make_party

NODES = ["101", "202", "303", "404", "505"]
NAMES = dict(zip(NODES, ["alpha", "beta", "gamma", "delta", "epsilon"], strict=True))
SHAPES = [(3, 2), (4,)]


@pytest.fixture(scope="module")
def consortium():
    ca_key, ca = make_ca("consortium CA", 1)
    ids = {}
    for node, name in NAMES.items():
        key, cert = make_party(name, ca_key, ca, 1)
        ids[node] = NodeIdentity(cert, key, ca)
    return ca_key, ca, ids


def updates(seed=0):
    rng = np.random.default_rng(seed)
    return {n: [rng.uniform(-8, 8, s) for s in SHAPES] for n in NODES}


def keys_stage(plan, ids, seed=0):
    """Stage keys at every node and at the server; returns the server and the client states."""
    ups = updates(seed)
    srv = server.ServerSum(plan)
    states, keys, creds = {}, {}, {}
    for i, n in enumerate(NODES):
        states[n], k = client.start(n, plan, ups[n], float(i + 1), ids[n])
        keys[n], creds[n] = (k["mask_pk"], k["enc_pk"]), (k["cert"], k["signature"])
    srv.take_keys(keys, creds)
    return srv, states, ups


def relay(srv):
    return dict(srv.mask_pks), dict(srv.enc_pks), dict(srv.certs), dict(srv.signatures)


def share_all(states, ids, relayed):
    return {n: client.share(states[n], *relayed, identity=ids[n]) for n in NODES}


def refused_by_all_but(victim, states, ids, relayed, reason):
    """Every node other than ``victim`` refuses naming it, and its state shows nothing was shared."""
    for n in NODES:
        if n == victim:
            continue
        with pytest.raises(ProtocolError, match=rf"node {victim}: .*{reason}") as info:
            client.share(states[n], *relayed, identity=ids[n])
        assert "nothing was encrypted" in str(info.value)
        assert states[n]["stage"] == "keys"  # no share was made


def test_a_signed_round_sums_correctly_and_says_it_was_signed(consortium):
    _, _, ids = consortium
    plan = SumPlan.make(4, NODES, 3, SHAPES, 8.0, 100.0, signed=True)
    assert SumPlan.from_config(plan.to_config()).signed
    srv, states, ups = keys_stage(plan, ids)
    srv.take_shares(share_all(states, ids, relay(srv)))
    srv.take_masked({n: client.mask(states[n], srv.shares_for(n)) for n in NODES})
    total = srv.finish(NODES, {n: client.answer(states[n], NODES) for n in NODES[:3]})
    w = {n: float(i + 1) for i, n in enumerate(NODES)}
    flat = {n: np.concatenate([a.ravel() for a in ups[n]]) for n in NODES}
    expected = np.concatenate([[sum(w.values())], sum(w[n] * flat[n] for n in NODES)])
    assert np.max(np.abs(total - expected)) <= plan.sum_error_bound(5)


@pytest.mark.parametrize("which", ["mask_pk", "enc_pk"])
def test_a_substituted_key_with_the_original_signature_is_refused_naming_the_peer(consortium, which):
    _, _, ids = consortium
    plan = SumPlan.make(4, NODES, 3, SHAPES, 8.0, 100.0, signed=True)
    srv, states, _ = keys_stage(plan, ids)
    mask_pks, enc_pks, certs, sigs = relay(srv)
    fake = client.new_secrets()[0].public_key().public_bytes_raw()
    (mask_pks if which == "mask_pk" else enc_pks)["303"] = fake
    refused_by_all_but("303", states, ids, (mask_pks, enc_pks, certs, sigs), "does not verify")


def test_a_substituted_key_without_a_signature_is_refused(consortium):
    _, _, ids = consortium
    plan = SumPlan.make(4, NODES, 3, SHAPES, 8.0, 100.0, signed=True)
    srv, states, _ = keys_stage(plan, ids)
    mask_pks, enc_pks, certs, sigs = relay(srv)
    mask_pks["202"] = client.new_secrets()[0].public_key().public_bytes_raw()
    del sigs["202"]
    refused_by_all_but("202", states, ids, (mask_pks, enc_pks, certs, sigs), "unsigned")


def test_a_key_signed_by_a_certificate_of_another_ca_is_refused(consortium):
    _, _, ids = consortium
    other_key, other_ca = make_ca("another CA", 1)
    impostor_key, impostor_cert = make_party("gamma", other_key, other_ca, 1)
    forged = dict(ids)
    forged["303"] = NodeIdentity(impostor_cert, impostor_key, other_ca)  # the server's own SuperNode
    plan = SumPlan.make(4, NODES, 3, SHAPES, 8.0, 100.0, signed=True)
    srv, states, _ = keys_stage(plan, forged)
    refused_by_all_but("303", states, ids, relay(srv), "not issued by the consortium CA")


def test_a_bundle_moved_to_another_node_id_is_refused(consortium):
    _, _, ids = consortium
    plan = SumPlan.make(4, NODES, 3, SHAPES, 8.0, 100.0, signed=True)
    srv, states, _ = keys_stage(plan, ids)
    mask_pks, enc_pks, certs, sigs = relay(srv)
    # The server presents node 404's genuine, signed bundle (keys it could not use) as node 505's.
    for table in (mask_pks, enc_pks, certs, sigs):
        table["505"] = table["404"]
    for n in ["101", "202", "303"]:
        with pytest.raises(ProtocolError, match=r"node 505: .*does not verify"):
            client.share(states[n], mask_pks, enc_pks, certs, sigs, identity=ids[n])


def test_one_party_under_two_node_ids_is_refused(consortium):
    _, ca, ids = consortium
    # A consortium member (delta) colludes with the server and signs for a second node id, 505.
    key = ids["404"].key
    twin = dict(ids)
    twin["505"] = NodeIdentity(ids["404"].certificate, key, ca)
    plan = SumPlan.make(4, NODES, 3, SHAPES, 8.0, 100.0, signed=True)
    srv, states, _ = keys_stage(plan, twin)
    for n in ["101", "202", "303"]:
        with pytest.raises(ProtocolError, match=r"party 'delta' signs for node 404 and node 505"):
            client.share(states[n], *relay(srv), identity=ids[n])


def test_a_signature_replayed_from_another_round_is_refused(consortium):
    _, _, ids = consortium
    old = SumPlan.make(3, NODES, 3, SHAPES, 8.0, 100.0, signed=True)
    old_srv, _, _ = keys_stage(old, ids, seed=1)
    plan = SumPlan.make(4, NODES, 3, SHAPES, 8.0, 100.0, signed=True)
    srv, states, _ = keys_stage(plan, ids)
    mask_pks, enc_pks, certs, sigs = relay(srv)
    # The server replays node 202's whole bundle of round 3 (whose secrets it might hold) in round 4.
    mask_pks["202"], enc_pks["202"], sigs["202"] = (
        old_srv.mask_pks["202"],
        old_srv.enc_pks["202"],
        old_srv.signatures["202"],
    )
    refused_by_all_but("202", states, ids, (mask_pks, enc_pks, certs, sigs), "does not verify")


def test_signed_and_unsigned_nodes_refuse_each_others_plans(consortium):
    _, _, ids = consortium
    unsigned = SumPlan.make(4, NODES, 3, SHAPES, 8.0, 100.0)
    signed = SumPlan.make(4, NODES, 3, SHAPES, 8.0, 100.0, signed=True)
    ups = updates()
    with pytest.raises(ProtocolError, match="refuses an unsigned plan"):
        client.start("101", unsigned, ups["101"], 1.0, ids["101"])
    with pytest.raises(ProtocolError, match="no identity configured"):
        client.start("101", signed, ups["101"], 1.0)
    # A server that shows one node another plan (here another threshold) than its peers signed is caught.
    srv, states, _ = keys_stage(signed, ids)
    with pytest.raises(ProtocolError, match="does not verify"):
        flipped = {**states["101"], "plan.signed": True, "plan.threshold": 4}
        client.share(flipped, *relay(srv), identity=ids["101"])


def test_the_server_refuses_a_signed_round_answer_without_credentials(consortium):
    _, _, ids = consortium
    plan = SumPlan.make(4, NODES, 3, SHAPES, 8.0, 100.0, signed=True)
    srv = server.ServerSum(plan)
    _, k = client.start("101", plan, updates()["101"], 1.0, ids["101"])
    with pytest.raises(ProtocolError, match="node 101 sent no certificate"):
        srv.take_keys({"101": (k["mask_pk"], k["enc_pk"])})


def test_an_identity_whose_key_is_not_its_certificates_is_refused_at_load(consortium, tmp_path):
    _, ca, ids = consortium
    paths = {}
    for label, data in {
        "cert": ids["101"].certificate.public_bytes(serialization_pem()),
        "key": key_pem(ids["202"].key),
        "ca": ca.public_bytes(serialization_pem()),
    }.items():
        paths[label] = tmp_path / f"{label}.pem"
        paths[label].write_bytes(data)
    with pytest.raises(InputValidationError, match="does not belong to its certificate"):
        NodeIdentity.load(paths["cert"], paths["key"], paths["ca"])
    paths["key"].write_bytes(key_pem(ids["101"].key))
    assert NodeIdentity.load(paths["cert"], paths["key"], paths["ca"]).name == "alpha"


def serialization_pem():
    from cryptography.hazmat.primitives.serialization import Encoding

    return Encoding.PEM


def test_the_client_mod_reads_all_three_identity_files_or_none(consortium, tmp_path):
    pytest.importorskip("flwr", reason='needs the flower extra (pip install "mpc-pca[flower]")')
    from mpc_pca.integrations.flower.mod import node_identity

    _, ca, ids = consortium
    (tmp_path / "c.pem").write_bytes(ids["101"].certificate.public_bytes(serialization_pem()))
    (tmp_path / "k.pem").write_bytes(key_pem(ids["101"].key))
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(serialization_pem()))
    config = {"mpc-pca-cert": str(tmp_path / "c.pem"), "mpc-pca-key": str(tmp_path / "k.pem")}
    assert node_identity({"partition-id": 0}) is None
    with pytest.raises(InputValidationError, match="needs all of"):
        node_identity(config)
    identity = node_identity({**config, "mpc-pca-ca": str(tmp_path / "ca.pem")})
    assert identity is not None and identity.name == "alpha"


def test_a_node_with_a_peer_list_refuses_a_ca_issued_certificate_not_on_it_naming_it(consortium):
    _, _, ids = consortium
    plan = SumPlan.make(4, NODES, 3, SHAPES, 8.0, 100.0, signed=True)
    srv, states, _ = keys_stage(plan, ids)
    expected = {"alpha", "beta", "gamma", "delta"}  # epsilon (node 505) holds a valid CA certificate
    with pytest.raises(
        ProtocolError, match=r"node 505's certificate names party 'epsilon', which is not"
    ) as info:
        client.share(states["101"], *relay(srv), identity=ids["101"], expected=expected)
    assert "nothing was encrypted" in str(info.value) and states["101"]["stage"] == "keys"
    # On the list (this node's own name may be left out), or without a list: the round goes on.
    assert set(
        client.share(
            states["202"], *relay(srv), identity=ids["202"], expected={*expected, "epsilon"} - {"beta"}
        )
    ) == (set(NODES) - {"202"})
    assert set(client.share(states["303"], *relay(srv), identity=ids["303"])) == set(NODES) - {"303"}


def test_the_peer_list_is_read_from_the_node_config_or_a_file(tmp_path):
    mod = pytest.importorskip("mpc_pca.integrations.flower.mod", exc_type=ImportError)
    assert mod.expected_peers({}) is None and mod.expected_peers({"mpc-pca-peers": ""}) is None
    assert mod.expected_peers({"mpc-pca-peers": " alpha,beta ,"}) == {"alpha", "beta"}
    listing = tmp_path / "peers.txt"
    listing.write_text("# the consortium\nalpha\nbeta, gamma  # joined in 2026\n")
    assert mod.expected_peers({"mpc-pca-peers": f"@{listing}"}) == {"alpha", "beta", "gamma"}
    with pytest.raises(InputValidationError, match="names no party"):
        mod.expected_peers({"mpc-pca-peers": " , "})
    with pytest.raises(InputValidationError, match="cannot read"):
        mod.expected_peers({"mpc-pca-peers": f"@{tmp_path / 'missing.txt'}"})
    with pytest.raises(InputValidationError, match="has no identity"):
        mod._peers_with_identity({"mpc-pca-peers": "alpha"})
