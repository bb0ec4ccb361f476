"""Federated PCA over the star-topology secure sum (mpc_pca.integrations.star_sum.pca), without Flower."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA

from mpc_pca.integrations.star_sum import client, server
from mpc_pca.integrations.star_sum.pca import (
    local_statistics,
    pooled_pca,
    statistics_bound,
    statistics_shapes,
)
from mpc_pca.integrations.star_sum.protocol import SumPlan
from protocols.errors import InputValidationError

NODES = ["7", "8", "9"]


def partitions():
    rng = np.random.default_rng(5)
    mixing = rng.normal(size=(5, 5))
    return {n: np.clip(rng.normal(size=(20 + 7 * i, 5)) @ mixing / 3, -2, 2) for i, n in enumerate(NODES)}


def secure_weighted_mean(parts):
    plan = SumPlan.make(1, NODES, 2, statistics_shapes(5), statistics_bound(2.0), 1000.0)
    srv = server.ServerSum(plan)
    states, keys = {}, {}
    for n in NODES:
        arrays, weight = local_statistics(parts[n])
        states[n], k = client.start(n, plan, arrays, weight)
        keys[n] = (k["mask_pk"], k["enc_pk"])
    srv.take_keys(keys)
    srv.take_shares({n: client.share(states[n], srv.mask_pks, srv.enc_pks) for n in NODES})
    survivors = srv.take_masked({n: client.mask(states[n], srv.shares_for(n)) for n in NODES})
    total = srv.finish(survivors, {n: client.answer(states[n], survivors) for n in survivors})
    return [total[1:6] / total[0], (total[6:] / total[0]).reshape(5, 5)], round(float(total[0]))


def test_the_pooled_pca_is_scikit_learns_pca_of_the_union():
    parts = partitions()
    arrays, n_rows = secure_weighted_mean(parts)
    mean, components, variances = pooled_pca(arrays, n_rows, 3)
    reference = PCA(n_components=3).fit(np.vstack([parts[n] for n in NODES]))
    assert n_rows == 20 + 27 + 34
    assert np.allclose(mean, reference.mean_, rtol=0, atol=1e-12)
    assert np.allclose(variances, reference.explained_variance_, rtol=1e-10, atol=0)
    assert np.all(np.abs(np.sum(components * reference.components_, axis=1)) > 1 - 1e-10)


def test_rows_outside_the_agreed_range_are_refused_by_the_plan():
    plan = SumPlan.make(1, NODES, 2, statistics_shapes(2), statistics_bound(1.0), 1000.0)
    arrays, weight = local_statistics(np.array([[0.5, 1.5], [0.1, 0.2]]))
    with pytest.raises(InputValidationError, match=r"node 7: array 1 .* outside the agreed range"):
        client.start("7", plan, arrays, weight)


@pytest.mark.parametrize(
    ("arrays", "n_rows", "k", "message"),
    [
        ([np.zeros(3), np.zeros((2, 2))], 5, 1, "second moment"),
        ([np.zeros(3), np.eye(3)], 1, 1, "N >= 2"),
        ([np.zeros(3), np.eye(3)], 5, 4, "n_components <= 3"),
    ],
)
def test_pooled_pca_refuses_inconsistent_inputs(arrays, n_rows, k, message):
    with pytest.raises(InputValidationError, match=message):
        pooled_pca(arrays, n_rows, k)


def test_local_statistics_refuse_rows_that_are_not_a_finite_table():
    with pytest.raises(InputValidationError, match="non-empty finite 2-D"):
        local_statistics(np.array([[1.0, np.inf]]))
