"""Resolving --data into one table per provider, and agreeing on column names."""

import os
from pathlib import Path

import numpy as np
import pytest

from mpc_pca.data.columns import agree_tables
from mpc_pca.data.inputs import ReadOptions, expand_specs, provider_data
from mpc_pca.data.tables import table_from_array
from protocols.errors import InputValidationError


def write_csv(path, names, X):
    path.write_text(",".join(names) + "\n" + "\n".join(",".join(repr(float(v)) for v in r) for r in X) + "\n")
    return str(path)


@pytest.fixture
def three_files(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    files = [write_csv(tmp_path / f"h{i}.csv", ["a", "b", "c"], X[10 * i : 10 * i + 10]) for i in range(3)]
    return X, files


def test_one_file_per_provider_directory_and_glob(tmp_path, three_files):
    X, files = three_files
    for specs in (files, [str(tmp_path)], [str(tmp_path / "h*.csv")]):
        data = provider_data(specs, ReadOptions())
        assert data.sources == files and data.names == ("a", "b", "c")
        assert np.array_equal(np.vstack(data.parts), X)


def test_one_file_is_split_among_parties(three_files):
    _, files = three_files
    data = provider_data(files[:1], ReadOptions(), parties=4, split="random", seed=1)
    assert len(data.parts) == 4 and sum(p.shape[0] for p in data.parts) == 10


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"split": "random"}, "split='random' applies to one file split among parties; got 3 files"),
        ({"parties": 2}, "parties=2 but 3 files are given"),
    ],
)
def test_parties_and_split_contradicting_the_files_are_refused(three_files, kwargs, match):
    with pytest.raises(InputValidationError, match=match):
        provider_data(three_files[1], ReadOptions(), **kwargs)


def test_empty_directory_glob_and_duplicates(tmp_path, three_files):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputValidationError, match="holds no data files"):
        expand_specs([str(empty)])
    with pytest.raises(InputValidationError, match="matches no file"):
        expand_specs([str(tmp_path / "z*.csv")])
    with pytest.raises(InputValidationError, match="same file more than once"):
        provider_data([three_files[1][0], three_files[1][0]], ReadOptions())


def test_one_file_under_two_spellings_is_refused(tmp_path, three_files, monkeypatch):
    first = Path(three_files[1][0])
    others = [str(p) for p in three_files[1][1:]]
    symlink = tmp_path / "alias.csv"
    symlink.symlink_to(first)
    hard = tmp_path / "hard.csv"
    os.link(first, hard)
    monkeypatch.chdir(first.parent)
    for spelling in (
        f"./{first.name}",
        first.name,
        str(symlink),
        str(hard),
        f"{first.parent}/../{first.parent.name}/{first.name}",
    ):
        with pytest.raises(InputValidationError, match="same file more than once") as info:
            provider_data([str(first), spelling, *others[:1]], ReadOptions())
        assert spelling in str(info.value) and str(first) in str(info.value)
    # a copy is another provider's file, even with the same content
    copy = tmp_path / "copy.csv"
    copy.write_bytes(first.read_bytes())
    assert len(provider_data([str(first), str(copy)], ReadOptions()).tables) == 2


def test_permuted_columns_are_aligned_by_name_and_reported(tmp_path):
    X = np.arange(12.0).reshape(4, 3)
    a = write_csv(tmp_path / "a.csv", ["x", "y", "z"], X)
    b = write_csv(tmp_path / "b.csv", ["z", "x", "y"], X[:, [2, 0, 1]])
    data = provider_data([a, b], ReadOptions())
    assert np.array_equal(data.parts[1], X)
    assert any(
        "columns reordered by name to match" in note and "['z', 'x', 'y']" in note for note in data.notes
    )


def test_different_names_are_refused_with_both_lists(tmp_path):
    X = np.arange(12.0).reshape(4, 3)
    a = write_csv(tmp_path / "a.csv", ["x", "y", "z"], X)
    b = write_csv(tmp_path / "b.csv", ["x", "y", "w"], X)
    with pytest.raises(
        InputValidationError,
        match=r"b.csv has different column names than .*a.csv: .*a.csv has \['x', 'y', 'z'\], .*b.csv has \['x', 'y', 'w'\] \(missing \['z'\], unexpected \['w'\]\)",
    ):
        provider_data([a, b], ReadOptions())
    # --columns selects the common ones, in the given order
    data = provider_data([a, b], ReadOptions(columns=("y", "x")))
    assert data.names == ("y", "x") and np.array_equal(data.parts[1], X[:, [1, 0]])


def test_repeated_names_are_refused():
    t = table_from_array("t", np.ones((2, 2)), ["a", "a"])
    with pytest.raises(InputValidationError, match=r"t has repeated column names \['a'\]"):
        agree_tables([t, t])


def test_a_reordered_wide_table_is_noted_with_its_first_names_only():
    """A .bed site may hold millions of SNPs: the note lists 50 names, then how many more."""
    from mpc_pca.data.tables import Table

    names = tuple(f"c{j}" for j in range(60))
    first = Table("a.csv", names, np.zeros((2, 60)), [])
    second = Table("b.csv", names[::-1], np.arange(120.0).reshape(2, 60), [])
    aligned, notes = agree_tables([first, second])
    assert aligned[1].names == names and aligned[1].values[0, 0] == 59.0  # really reordered
    (note,) = notes
    assert note.startswith("b.csv: columns reordered by name to match a.csv (its order was ['c59', ")
    assert note.endswith("'c10'] and 10 more)") and "'c9'" not in note
