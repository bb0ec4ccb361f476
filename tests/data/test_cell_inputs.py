"""Issue 35: data-file inputs refused with the file, row, column, cell and the rule broken."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.cli import main
from mpc_pca.data.partition import split_rows
from mpc_pca.data.tables import read_table
from protocols.errors import InputValidationError


@pytest.mark.parametrize("cell", ["1_5", "1_000.5", "_3"])
def test_an_underscore_in_a_cell_is_refused_naming_file_line_column_and_cell(tmp_path, cell):
    path = tmp_path / "h.csv"
    path.write_text(f"a,b\n1,2\n3,{cell}\n")
    with pytest.raises(InputValidationError) as info:
        read_table(path)
    message = str(info.value)
    assert f"{path}: line 3, column 2 ('b') is not a number: {cell!r}" in message
    assert "underscore" in message


def test_an_underscore_in_the_first_row_does_not_make_it_data(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("x_1,x_2\n1,2\n")
    table = read_table(path)
    assert table.names == ("x_1", "x_2") and table.values.tolist() == [[1.0, 2.0]]


def test_a_utf16_reading_of_a_utf8_file_is_one_line_exit_3(tmp_path, capsys):
    paths = []
    for i in range(2):
        paths.append(tmp_path / f"h{i}.csv")
        paths[-1].write_text("a,b\n1,2\n3,4\n")
    argv = ["run", "--protocol", "pppca-ss", "--data", *map(str, paths), "--encoding", "utf-16"]
    assert main(argv) == 3
    err = "".join(  # the refusal comes while the files are read: a slow machine may show that progress line
        line for line in capsys.readouterr().err.splitlines(True) if not line.startswith("mpc-pca: progress:")
    )
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{paths[0]}: cannot be read as utf-16" in err and "--encoding" in err


def test_a_negative_split_seed_is_refused_naming_value_and_limit(capsys):
    with pytest.raises(InputValidationError, match=r"seed=-1 is out of range; .* integer >= 0"):
        split_rows(np.zeros((4, 2)), 2, "random", -1)
    argv = ["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--split", "random", "--seed", "-1"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--seed -1 is out of range" in err and ">= 0" in err


def test_a_negative_split_seed_is_refused_before_any_file_is_read(tmp_path, capsys):
    """Arguments first: the seed's refusal comes before the (here missing) file would be opened."""
    missing = tmp_path / "absent.csv"
    argv = ["run", "--protocol", "pppca-ss", "--data", str(missing), "--split", "random", "--seed", "-1"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "--seed -1 is out of range" in err and "absent.csv" not in err
