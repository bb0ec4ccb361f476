"""A table read in chunks (``TablePart``) is checked exactly as the same table read whole (``load_table``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mpc_pca.data.inputs import ReadOptions, load_table
from mpc_pca.data.streaming import TablePart
from mpc_pca.pppca.local_stats import LocalStatistics
from protocols.errors import InputValidationError

OPTIONS = [
    ReadOptions(),
    ReadOptions(columns=("c", "a")),
    ReadOptions(drop_na=True),
    ReadOptions(drop_na=True, columns=("d",)),
]


def frame(n: int = 1_000) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(rng.normal(size=(n, 4)) * [1, 10, 100, 1e-3], columns=list("abcd"))


def write(data: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".parquet":
        data.to_parquet(path, row_group_size=300, index=False)
    else:
        data.to_csv(path, index=False, float_format="%.17g")
    return path


def outcome(read):
    """``(names, rows, notes)`` or the error message."""
    try:
        return read()
    except InputValidationError as exc:
        return str(exc)


def whole(path: Path, options: ReadOptions):
    table = load_table(str(path), options)
    return table.names, table.values, list(table.notes)


def chunked(path: Path, options: ReadOptions):
    part = TablePart(path, options, chunk_rows=77)
    part.scan()
    rows = np.vstack(list(part.chunks()))
    return part.names, rows, part.notes


def assert_same(path: Path, options: ReadOptions) -> None:
    a, b = outcome(lambda: whole(path, options)), outcome(lambda: chunked(path, options))
    if isinstance(a, str) or isinstance(b, str):
        # a missing cell's message counts the missing cells of the block read, and says so
        assert isinstance(a, str) and isinstance(b, str)
        assert re.sub(r"\(\d+ missing cell\(s\) in \d+ row\(s\)[^)]*\)", "(N)", a) == re.sub(
            r"\(\d+ missing cell\(s\) in \d+ row\(s\)[^)]*\)", "(N)", b
        )
        return
    assert a[0] == b[0] and a[2] == b[2]
    np.testing.assert_array_equal(a[1], b[1])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("options", OPTIONS)
def test_clean_missing_and_non_finite_tables_read_alike(tmp_path, suffix, options):
    data = frame()
    assert_same(write(data, tmp_path / f"clean{suffix}"), options)
    holes = data.copy()
    holes.iloc[[500, 501, 777], [2, 0, 3]] = np.nan
    assert_same(write(holes, tmp_path / f"holes{suffix}"), options)
    infinite = holes.copy()
    infinite.iloc[900, 1] = np.inf  # found after rows dropped for missing cells
    assert_same(write(infinite, tmp_path / f"inf{suffix}"), options)


def test_statistics_and_peaks_are_the_whole_tables(tmp_path):
    path = write(frame(), tmp_path / "t.parquet")
    table = load_table(str(path), ReadOptions(columns=("b", "d")))
    part = TablePart(path, ReadOptions(columns=("b", "d")), chunk_rows=64)
    stats, ref = part.statistics(), LocalStatistics.of(table.values)
    assert stats.n_rows == ref.n_rows
    np.testing.assert_allclose(stats.column_sums, ref.column_sums, rtol=1e-12)
    np.testing.assert_allclose(stats.scatter_triangle, ref.scatter_triangle, rtol=1e-10)
    np.testing.assert_array_equal(part.column_peaks(), np.max(np.abs(table.values), axis=0))


def test_csv_text_errors_read_alike(tmp_path):
    cases = {
        "typo.csv": "a;b\n1;2\n3;2.O\n",
        "headerless.csv": "1,2\n3,4\n",
        "header_only.csv": "a,b\n",
        "ragged.csv": "a,b\n1,2\n3,4,5\n",
        "empty.csv": "",
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        for options in (ReadOptions(), ReadOptions(header=False), ReadOptions(columns=("b",))):
            assert_same(path, options)
    path = tmp_path / "latin.csv"
    path.write_bytes("caf\xe9,b\n1,2\n".encode("latin-1"))
    assert_same(path, ReadOptions())
    assert_same(path, ReadOptions(encoding="latin-1"))
