"""Flower's real SuperLink and SuperNodes run FedAvg through SecureSumWorkflow / secure_sum_mod.

Skipped without the ``flower`` extra. The aggregate must equal the plain
weighted mean of the nodes' updates within the round's stated fixed-point
bound (``RoundOutcome.mean_error_bound``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr", reason='needs the flower extra (pip install "mpc-pca[flower]")')
pytestmark = pytest.mark.slow

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrations" / "flower_app"))
from cryptography.hazmat.primitives.serialization import Encoding  # noqa: E402
from securesum_app.client_app import PCA_MAX_ABS, rows, update  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402

from mpc_pca.integrations.star_sum.pca import pooled_pca, statistics_bound  # noqa: E402
from protocols.transport.certs import key_pem, make_ca, make_party  # noqa: E402
from tests.multiprocess.flower_deployment import deployment, run_app  # noqa: E402


def weighted_mean(partitions):
    weights = {p: p + 1 for p in partitions}
    total = sum(weights.values())
    return [sum(weights[p] * update(p)[i] for p in partitions) / total for i in range(2)]


def identities(work, n):
    """Node-config entries giving each of ``n`` SuperNodes a consortium certificate, key and the CA."""
    ca_key, ca = make_ca("flower consortium", 1)
    (work / "ca.pem").write_bytes(ca.public_bytes(Encoding.PEM))
    entries = []
    for i in range(n):
        key, cert = make_party(f"site{i}", ca_key, ca, 1)
        (work / f"site{i}.pem").write_bytes(cert.public_bytes(Encoding.PEM))
        (work / f"site{i}.key").write_bytes(key_pem(key))
        entries.append(
            f'mpc-pca-cert="{work / f"site{i}.pem"}" mpc-pca-key="{work / f"site{i}.key"}" '
            f'mpc-pca-ca="{work / "ca.pem"}"'
        )
    return entries


def test_signed_fedavg_names_a_client_whose_update_breaks_the_plan_and_sums_the_others(tmp_path):
    # Signed keys and a wrong-shape client in one deployment (each Flower process test costs a minute).
    with deployment(tmp_path, ["ok", "bad-shape", "ok", "ok"], identities(tmp_path, 4)) as dep:
        result = run_app(dep, {"nodes": 4, "num-server-rounds": 1, "threshold": 0.6, "signed": True})
    (outcome,) = result["outcomes"]
    assert outcome["error"] is None and len(outcome["survivors"]) == 3 and outcome["signed"] is True
    ((node, reason),) = outcome["dropped"].items()
    assert f"node {node}: array 1 of the update has shape (4,), the agreed shape is (5,)" in reason
    assert "stage 'keys'" in reason  # refused before the node sent any key
    assert 0 < outcome["mean_error_bound"] < 1e-10  # SecAgg+ defaults: a step of about 4e-6
    expected = weighted_mean([0, 2, 3])
    for got, want in zip(result["parameters"], expected, strict=True):
        assert np.max(np.abs(np.asarray(got) - want)) <= outcome["mean_error_bound"]


def test_a_sparse_signed_plan_where_one_peer_list_omits_a_ca_member_sums_the_others(tmp_path):
    # One deployment for two things (each Flower process test costs a minute or more):
    # - the sparse plan's plumbing (graph seed in the signed plan, keys relayed per neighbourhood); four
    #   nodes are too few for a graph sparser than complete;
    # - node 0's mpc-pca-peers omits site3, which holds a certificate of the same CA: node 0 refuses
    #   the round naming it, and the other three are summed.
    entries = identities(tmp_path, 4)
    entries[0] += " mpc-pca-peers='site0,site1,site2'"
    config = {"nodes": 4, "num-server-rounds": 1, "threshold": 0.75, "signed": True}
    with deployment(tmp_path, ["ok"] * 4, entries) as dep:
        result = run_app(dep, {**config, "graph": "sparse", "max-colluders": 0})
    (outcome,) = result["outcomes"]
    assert outcome["error"] is None and len(outcome["survivors"]) == 3, outcome
    assert outcome["graph"] == "sparse" and outcome["neighbours"] == 3 and outcome["signed"] is True
    ((node, reason),) = outcome["dropped"].items()
    assert reason.startswith("stage 'shares'") and f"node {node} refuses the round" in reason
    assert "names party 'site3', which is not on this node's list" in reason
    expected = weighted_mean([1, 2, 3])
    for got, want in zip(result["parameters"], expected, strict=True):
        assert np.max(np.abs(np.asarray(got) - want)) <= outcome["mean_error_bound"]


def test_a_node_killed_mid_round_is_left_out_and_the_next_round_completes_while_it_is_still_listed(tmp_path):
    # Node 3's SuperNode is killed when the 'masked' stage reaches it, after it sent its keys and shares.
    # Round 2 starts seconds later, long before the SuperLink expires the dead node's heartbeat: the dead
    # node is still listed, so it is sampled again and dropped at 'keys' for not answering.
    with deployment(tmp_path, ["ok", "ok", "ok", "die-at-masked"]) as dep:
        result = run_app(dep, {"nodes": 3, "num-server-rounds": 2, "threshold": 0.6, "timeout": 20.0})
    first, second = result["outcomes"]
    for outcome in (first, second):
        assert outcome["error"] is None and len(outcome["survivors"]) == 3, outcome
    dead = sorted(set(first["sampled"]) - set(first["survivors"]))
    assert len(dead) == 1 and "no answer at stage 'masked'" in first["dropped"][dead[0]]
    assert len(first["listed"]) == 4 and dead[0] in first["listed"]
    assert dead[0] in second["listed"] and dead[0] in second["sampled"], second
    assert second["dropped"] == {dead[0]: "no answer at stage 'keys'"}
    assert second["survivors"] == first["survivors"]
    expected = weighted_mean(range(3))  # the survivors' updates are the same every round
    for got, want in zip(result["parameters"], expected, strict=True):
        assert np.max(np.abs(np.asarray(got) - want)) <= second["mean_error_bound"]


def test_too_few_left_fails_naming_the_dead_aggregates_nothing_and_the_next_round_fails_named(tmp_path):
    # Threshold 3 of 4; nodes 2 and 3 die at 'masked': 2 masked inputs remain, below the threshold.
    # The next round samples the 4 listed nodes again; 2 answer, so it fails too, naming the same two.
    with deployment(tmp_path, ["ok", "ok", "die-at-masked", "die-at-masked"]) as dep:
        result = run_app(dep, {"nodes": 4, "num-server-rounds": 2, "threshold": 0.6, "timeout": 20.0})
    first, second = result["outcomes"]
    dead = sorted(node for node, why in first["dropped"].items() if why == "no answer at stage 'masked'")
    assert len(dead) == 2 and len(first["sampled"]) == 4
    assert first["error"] is not None and "stage 'masked': only 2 of 4 nodes answered" in first["error"]
    assert f"nodes {dead} did not answer" in first["error"]
    assert first["survivors"] == [] and first["total_weight"] == 0
    assert set(dead) <= set(second["listed"]) and set(dead) <= set(second["sampled"]), second
    assert second["error"] is not None and "stage 'keys': only 2 of 4 nodes answered" in second["error"]
    assert f"nodes {dead} did not answer" in second["error"]
    for got in result["parameters"]:  # nothing was aggregated: the initial (zero) parameters remain
        assert np.all(np.asarray(got) == 0.0)


def test_federated_pca_through_the_workflow_is_the_pca_of_the_union_of_the_rows(tmp_path):
    config = {"nodes": 3, "num-server-rounds": 1, "threshold": 0.6, "task": "pca"}
    with deployment(tmp_path, ["ok"] * 3) as dep:
        result = run_app(dep, {**config, "bound": statistics_bound(PCA_MAX_ABS)})
    (outcome,) = result["outcomes"]
    assert outcome["error"] is None and outcome["total_weight"] == 30 + 40 + 50
    mean, components, variances = pooled_pca(result["parameters"], int(outcome["total_weight"]), 2)
    union = np.vstack([rows(p) for p in range(3)])
    reference = PCA(n_components=2).fit(union)
    assert np.allclose(mean, reference.mean_, rtol=0, atol=1e-10)
    assert np.allclose(variances, reference.explained_variance_, rtol=1e-9, atol=0)
    cosines = np.abs(np.sum(components * reference.components_, axis=1))
    assert np.all(cosines > 1 - 1e-9)
