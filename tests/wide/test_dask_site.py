"""A pppca-randomized site held as a Dask array: its products are computed where the blocks live."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.pppca.chunked import DaskPart, PermutedPart
from mpc_pca.registry import entry
from mpc_pca.threads import run_protocol
from mpc_pca.wide.site import site_product, site_scores, site_sums
from protocols.errors import InputValidationError
from tests.wide.helpers import gapped_rows, split

da = pytest.importorskip("dask.array")

SOLVER = {"n_components": 4, "iterated_power": 30, "tol": 1e-12, "start_seed": 5, "standardize": True}


class ClusterOnly(DaskPart):
    """A Dask part whose rows never come back to the site: reading its chunks here is an error."""

    def chunks(self):
        raise AssertionError("the site pulled a block of a Dask part instead of computing where it lives")


def test_a_dask_site_equals_the_same_rows_in_memory_without_pulling_a_block():
    rows = gapped_rows(640, 48, seed=3)
    parts = split(rows, [250, 390])
    in_memory = run_protocol(entry("pppca-randomized"), parts, SOLVER)
    dask_parts = [ClusterOnly(da.from_array(parts[0], chunks=(37, 48))), parts[1]]
    on_cluster = run_protocol(entry("pppca-randomized"), dask_parts, SOLVER)
    assert np.max(np.abs(in_memory.output.components - on_cluster.output.components)) <= 1e-12
    assert np.array_equal(in_memory.run.outputs["provider0"]["scores"].shape, (250, 4))
    assert np.allclose(
        in_memory.run.outputs["provider0"]["scores"],
        on_cluster.run.outputs["provider0"]["scores"],
        atol=1e-12,
    )


def test_the_reductions_keep_row_order_and_name_the_rows_of_a_bad_block():
    rows = np.random.default_rng(1).normal(size=(101, 7))
    part = ClusterOnly(da.from_array(rows, chunks=(10, 7)))
    block = np.linalg.qr(np.random.default_rng(2).normal(size=(7, 3)))[0]
    mean = rows.mean(axis=0)
    assert np.allclose(site_product(part, block, mean), (rows - mean).T @ ((rows - mean) @ block), atol=1e-10)
    sums = site_sums(part)
    assert (
        sums.n_rows == 101 and np.allclose(sums.sums, rows.sum(axis=0)) and sums.peak == np.max(np.abs(rows))
    )
    components = np.linalg.qr(np.random.default_rng(3).normal(size=(7, 2)))[0].T
    scores = site_scores(part, mean, np.ones(7), components)
    assert np.allclose(scores, (rows - mean) @ components.T, atol=1e-12)  # in row order
    # columns in another order: the permutation is applied where the blocks live
    order = [3, 0, 6, 1, 5, 2, 4]
    assert np.allclose(site_sums(PermutedPart(part, order)).sums, rows[:, order].sum(axis=0))
    bad = rows.copy()
    bad[57, 2] = np.nan
    with pytest.raises(InputValidationError, match=r"rows 50\.\.59"):
        site_sums(ClusterOnly(da.from_array(bad, chunks=(10, 7))), name="provider0")
    with pytest.raises(InputValidationError, match="not below the agreed bound"):
        site_product(part, block, mean, peak=float(np.max(np.abs(rows))) / 2)


def test_a_dask_site_runs_its_block_products_on_its_own_cluster():
    distributed = pytest.importorskip("distributed")
    rows = gapped_rows(500, 40, seed=8)
    parts = split(rows, [300, 200])
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
        distributed.get_task_stream(client) as stream,
    ):
        array = da.from_array(parts[0], chunks=(100, 40))
        done = run_protocol(entry("pppca-randomized"), [ClusterOnly(array), parts[1]], SOLVER)
    products = sum(1 for task in stream.data if "_chunk_product" in task["key"])
    # every block product ran on the cluster: 3 blocks per product, one product per iteration
    assert products == array.numblocks[0] * done.output.solver.n_products
    expected = run_protocol(entry("pppca-randomized"), parts, SOLVER).output
    assert np.max(np.abs(done.output.components - expected.components)) <= 1e-12
