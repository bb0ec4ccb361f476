"""Reading one provider's table: every case of issue 10 with the error text it expects."""

import gzip

import numpy as np
import pandas as pd
import pytest

from mpc_pca.data.tables import read_table
from protocols.errors import InputValidationError

ROWS = [[1.5, 2.0, -3.0], [4.0, 5.25, 6.0], [7.0, 8.0, 9.5]]
TEXT = "\n".join(",".join(repr(v) for v in row) for row in ROWS) + "\n"


def write(tmp_path, name, content, encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(content.encode(encoding) if isinstance(content, str) else content)
    return path


def test_header_is_guessed_only_when_no_cell_is_a_number(tmp_path):
    table = read_table(write(tmp_path, "h.csv", "age,bmi,bp\n" + TEXT))
    assert table.names == ("age", "bmi", "bp") and table.values.tolist() == ROWS
    assert "first row taken as the header" in table.notes[0]
    table = read_table(write(tmp_path, "n.csv", TEXT))
    assert table.names == ("x0", "x1", "x2") and table.values.tolist() == ROWS
    assert "no header" in table.notes[0]


@pytest.mark.parametrize(
    ("first", "match"),
    [
        ("1.5,NA,-3.0", r"line 1, column 2 \('x1'\) is missing"),
        ("1.5,2.O,-3.0", r"line 1, column 2 \('x1'\) is not a number: '2.O'"),
    ],
)
def test_a_first_data_row_with_na_or_a_typo_is_data_not_a_header(tmp_path, first, match):
    path = write(tmp_path, "d.csv", first + "\n" + TEXT)
    with pytest.raises(InputValidationError, match=match):
        read_table(path)


def test_explicit_header_options(tmp_path):
    path = write(tmp_path, "d.csv", "1,2,3\n" + TEXT)
    assert read_table(path, header=True).names == ("1", "2", "3")
    assert read_table(path, header=True).values.tolist() == ROWS
    with pytest.raises(InputValidationError, match=r"line 1, column 1 \('x0'\) is not a number: 'a'"):
        read_table(write(tmp_path, "h.csv", "a,b,c\n" + TEXT), header=False)


def test_bom_without_header_keeps_the_first_row(tmp_path):
    path = write(tmp_path, "bom.csv", "\ufeff" + TEXT)
    assert read_table(path).values.tolist() == ROWS


def test_gzip_and_semicolons_and_tabs(tmp_path):
    path = tmp_path / "d.csv.gz"
    path.write_bytes(gzip.compress(("a;b;c\n" + TEXT.replace(",", ";")).encode()))
    table = read_table(path)
    assert table.names == ("a", "b", "c") and table.values.tolist() == ROWS
    assert read_table(write(tmp_path, "t.tsv", TEXT.replace(",", "\t"))).values.tolist() == ROWS
    assert read_table(write(tmp_path, "p.csv", TEXT.replace(",", "|")), delimiter="|").values.tolist() == ROWS


def test_latin1_needs_the_encoding_and_is_never_misread(tmp_path):
    path = write(tmp_path, "l.csv", "âge,poids,taille\n" + TEXT, encoding="latin-1")
    with pytest.raises(
        InputValidationError, match=r"byte 0xe2 at position 0 is not valid utf-8.*encoding='latin-1'"
    ):
        read_table(path)
    table = read_table(path, encoding="latin-1")
    assert table.names == ("âge", "poids", "taille") and table.values.tolist() == ROWS
    gz = tmp_path / "l.csv.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(InputValidationError, match="not valid utf-8"):
        read_table(gz)
    with pytest.raises(InputValidationError, match="unknown encoding 'klingon'"):
        read_table(path, encoding="klingon")


def test_select_columns_by_name(tmp_path):
    table = read_table(write(tmp_path, "h.csv", "a,b,c\n" + TEXT)).select(["c", "a"])
    assert table.names == ("c", "a") and table.values.tolist() == [[r[2], r[0]] for r in ROWS]
    with pytest.raises(
        InputValidationError, match=r"names \['z'\] that it does not have; its columns are \['a', 'b', 'c'\]"
    ):
        read_table(write(tmp_path, "h2.csv", "a,b,c\n" + TEXT)).select(["a", "z"])


def test_missing_cells_error_or_drop_na(tmp_path):
    path = write(tmp_path, "m.csv", "a,b\n1,2\n3,\n5,NaN\n7,8\n")
    with pytest.raises(
        InputValidationError,
        match=r"line 3, column 2 \('b'\) is missing \(2 missing cell\(s\) in 2 row\(s\)\); pass drop_na=True",
    ):
        read_table(path)
    table = read_table(path, drop_na=True)
    assert table.values.tolist() == [[1.0, 2.0], [7.0, 8.0]]
    assert "dropped 2 row(s) with missing values (lines 3, 4)" in table.notes[-1]


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("1,2\n3\n", "different numbers of fields|line 2, column 2 .* is missing"),
        ("a,b\n", "no data rows"),
        ("1,inf\n2,3\n", r"line 1, column 2 \('x1'\) holds the non-finite value inf"),
        ("", "no data rows"),
    ],
)
def test_bad_files(tmp_path, content, match):
    with pytest.raises(InputValidationError, match=match):
        read_table(write(tmp_path, "bad.csv", content))


def test_missing_file(tmp_path):
    with pytest.raises(InputValidationError, match="does not exist"):
        read_table(tmp_path / "nope.csv")


def test_parquet(tmp_path):
    frame = pd.DataFrame(ROWS, columns=["a", "b", "c"])
    path = tmp_path / "d.parquet"
    frame.to_parquet(path)
    table = read_table(path)
    assert table.names == ("a", "b", "c") and np.array_equal(table.values, np.array(ROWS))
    frame.loc[1, "b"] = np.nan
    frame.to_parquet(path)
    with pytest.raises(InputValidationError, match=r"row 2, column 2 \('b'\) is missing"):
        read_table(path)
    assert read_table(path, drop_na=True).values.shape == (2, 3)
    pd.DataFrame({"a": [1.0], "s": ["x"]}).to_parquet(path)
    with pytest.raises(InputValidationError, match="column 's' has type"):
        read_table(path)


def test_full_precision_round_trip(tmp_path):
    X = np.random.default_rng(0).normal(size=(30, 4)) * 1e-7
    path = tmp_path / "x.csv"
    np.savetxt(path, X, fmt="%.17g", delimiter=",")
    assert np.array_equal(read_table(path).values, X)
