"""Provider parts read in chunks (Parquet, CSV) or computed on a Dask cluster."""

import numpy as np
import pytest

from mpc_pca import PPPCA
from mpc_pca.pppca.chunked import CSVPart, DaskPart, ParquetPart
from protocols.errors import InputValidationError
from tests.helpers.oracles import align_signs


def _data(n=2500, d=6, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + 50.0


def _write_parquet(path, x):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({f"f{j}": x[:, j] for j in range(x.shape[1])})
    pq.write_table(table, path, row_group_size=700)


def test_parquet_and_csv_parts_give_the_in_memory_fit(tmp_path):
    x = _data()
    parts = np.array_split(x, 3)
    _write_parquet(tmp_path / "a.parquet", parts[0])
    np.savetxt(
        tmp_path / "b.csv", parts[1], delimiter=",", header=",".join(f"f{j}" for j in range(6)), comments=""
    )
    chunked = [
        ParquetPart(tmp_path / "a.parquet", chunk_rows=300),
        CSVPart(tmp_path / "b.csv", chunk_rows=256),
        parts[2],
    ]
    expected = PPPCA(3).fit(parts)
    model = PPPCA(3).fit(chunked)
    np.testing.assert_allclose(model.mean_, expected.mean_, rtol=1e-12)
    np.testing.assert_allclose(model.explained_variance_, expected.explained_variance_, rtol=1e-6)
    np.testing.assert_allclose(
        align_signs(model.components_, expected.components_), expected.components_, atol=1e-6
    )
    # the chunked statistics really came in several blocks: row groups of 700 and 134
    # rows, each cut into chunks of at most 300
    assert [c.shape[0] for c in chunked[0].chunks()] == [300, 300, 100, 134]


def test_projection_is_streamed_for_chunked_parts(tmp_path):
    x = _data(n=900)
    _write_parquet(tmp_path / "a.parquet", x[:500])
    est = PPPCA(2)
    projected = est.fit_transform([ParquetPart(tmp_path / "a.parquet", chunk_rows=128), x[500:]])
    np.testing.assert_allclose(projected, (x - est.mean_) @ est.components_.T, atol=1e-6)


def test_bad_chunked_parts_are_refused(tmp_path):
    with pytest.raises(InputValidationError, match="no Parquet file"):
        ParquetPart(tmp_path / "missing.parquet")
    x = _data(n=100)
    x[57, 2] = np.nan
    _write_parquet(tmp_path / "nan.parquet", x)
    with pytest.raises(InputValidationError, match=r"rows 50\.\.99"):
        PPPCA(2).fit([ParquetPart(tmp_path / "nan.parquet", chunk_rows=50), _data(n=10)])
    with pytest.raises(InputValidationError, match="no column"):
        ParquetPart(tmp_path / "nan.parquet", columns=["f0", "zz"])
    with pytest.raises(InputValidationError, match="feature counts"):
        PPPCA(2).fit([ParquetPart(tmp_path / "nan.parquet", columns=["f0", "f1"]), _data(n=10)])


def test_dask_part_on_a_local_cluster():
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    x = _data(n=4000, seed=1)
    parts = np.array_split(x, 2)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        array = da.from_array(parts[0], chunks=(450, 6))
        part = DaskPart(array)
        with distributed.get_task_stream(client) as stream:
            model = PPPCA(3).fit([part, parts[1]])
        # the 5 blocks' statistics (and their merges) ran on the cluster's workers
        assert sum(1 for task in stream.data if "_block_statistics" in task["key"]) == array.numblocks[0] == 5
    expected = PPPCA(3).fit(parts)
    np.testing.assert_allclose(model.explained_variance_, expected.explained_variance_, rtol=1e-8)
    np.testing.assert_allclose(
        align_signs(model.components_, expected.components_), expected.components_, atol=1e-7
    )
