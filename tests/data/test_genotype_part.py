"""A streamed ``.bed`` provider (``BedPart``, ``mpc-pca party --data site.bed``) equals the file read whole."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.data.inputs import ReadOptions, load_table
from mpc_pca.data.plink import GENOTYPE_INSTALL
from mpc_pca.deploy.spec import FileSource, load_rows
from mpc_pca.pppca.local_stats import LocalStatistics
from protocols.errors import InputValidationError
from tests.helpers.genotypes import genotypes, write

pytest.importorskip("bed_reader", reason=f"the genotype extra is not installed: {GENOTYPE_INSTALL}")


@pytest.mark.parametrize("chunk_rows", [None, 1, 7, 50])
def test_a_streaming_party_holds_a_bed_part_with_the_whole_reads_statistics(tmp_path, chunk_rows):
    path = write(tmp_path / "site.bed", genotypes(23, 5, seed=2))
    rows = load_rows(FileSource(str(path), chunk_rows=chunk_rows), stream=True)
    part = rows.values
    assert type(part).__name__ == "BedPart" and rows.names == tuple(f"rs{j}" for j in range(5))
    whole = load_table(str(path), ReadOptions())
    assert all(chunk.shape[0] <= (chunk_rows or 23) for chunk in part.chunks())
    np.testing.assert_allclose(np.vstack(list(part.chunks())), whole.values, rtol=0, atol=1e-15)
    expected = LocalStatistics.of(whole.values)
    got = part.statistics()
    assert got.n_rows == 23
    np.testing.assert_allclose(got.column_sums, expected.column_sums, rtol=1e-13)
    np.testing.assert_allclose(got.scatter_triangle, expected.scatter_triangle, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(part.column_peaks(), np.abs(whole.values).max(axis=0))
    assert rows.notes == tuple(whole.notes) and "this site's own mean" in rows.notes[0]


def test_columns_select_snps_by_id_in_the_given_order(tmp_path):
    values = genotypes(9, 4, seed=1)
    path = write(tmp_path / "site.bed", values)
    options = ReadOptions(columns=("rs3", "rs0"))
    rows = load_rows(FileSource(str(path), options, chunk_rows=4), stream=True)
    assert rows.names == ("rs3", "rs0")
    np.testing.assert_array_equal(
        np.vstack(list(rows.values.chunks())), load_table(str(path), options).values
    )
    with pytest.raises(
        InputValidationError, match=r"columns=\['rs9'\] names \['rs9'\] that it does not have"
    ):
        load_rows(FileSource(str(path), ReadOptions(columns=("rs9",))), stream=True)


def test_a_bed_on_a_dask_scheduler_is_refused_naming_the_fix(tmp_path):
    path = write(tmp_path / "site.bed", genotypes(4, 2))
    with pytest.raises(InputValidationError, match=r"is a PLINK \.bed file, which this party streams itself"):
        load_rows(FileSource(str(path), dask_scheduler="127.0.0.1:8786"), stream=True)
