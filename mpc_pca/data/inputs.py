"""Resolve the data specs (``mpc-pca``'s ``data``) into one table per data provider.

The specs are either

* one file per provider: ``["h0.csv", "h1.csv", "h2.csv"]``, a directory (its
  ``.csv``/``.tsv``/``.txt``/``.parquet`` files, optionally compressed, in name
  order) or a glob (``'site_*.csv'``, matches in name order); or
* one file, ``builtin:NAME`` or ``synthetic:stm|mog[:N[:SEED]]`` whose rows are split among ``parties``
  simulated providers by ``split`` (``even`` or ``random``).

``parties`` and ``split`` belong to the second form; with several files
``parties`` may only repeat their number.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mpc_pca.data.columns import agree_tables
from mpc_pca.data.datasets import builtin_names
from mpc_pca.data.partition import split_rows
from mpc_pca.data.tables import Table, read_table, table_from_array
from protocols.errors import InputValidationError

#: File names a directory given as a data spec contributes (lower-case suffixes).
DATA_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq")
COMPRESSED = ("", ".gz", ".bz2", ".xz", ".zip")


@dataclass(frozen=True)
class ReadOptions:
    """How to read every table (``header``, ``delimiter``, ... as :func:`~mpc_pca.data.tables.read_table` takes them)."""

    header: bool | None = None
    delimiter: str | None = None
    encoding: str | None = None
    columns: tuple[str, ...] | None = None
    drop_na: bool = False


@dataclass(frozen=True)
class ProviderData:
    """Every provider's table with the agreed column names."""

    tables: list[Table]
    #: Where the rows came from: one entry per file, or the single source that was split.
    sources: list[str]
    names: tuple[str, ...]
    notes: list[str]

    @property
    def parts(self) -> list[np.ndarray]:
        return [t.values for t in self.tables]


def _is_data_file(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and any(name.endswith(s + c) for s in DATA_SUFFIXES for c in COMPRESSED)


def expand_specs(specs: Sequence[str]) -> list[str]:
    """Expand directories and globs into file names (sorted); keep ``builtin:`` and plain paths.

    Raises
    ------
    InputValidationError
        For an empty directory or a glob that matches nothing.
    """
    out: list[str] = []
    for spec in specs:
        if spec.startswith(("builtin:", "synthetic:")):
            out.append(spec)
        elif Path(spec).is_dir():
            files = sorted(str(p) for p in Path(spec).iterdir() if _is_data_file(p))
            if not files:
                raise InputValidationError(
                    f"directory {spec!r} holds no data files (names ending in {', '.join(DATA_SUFFIXES)}, "
                    "optionally .gz/.bz2/.xz/.zip)"
                )
            out += files
        elif glob.has_magic(spec):
            files = sorted(p for p in glob.glob(spec) if Path(p).is_file())
            if not files:
                raise InputValidationError(f"the pattern {spec!r} matches no file")
            out += files
        else:
            out.append(spec)
    return out


def check_distinct_files(files: Sequence[str]) -> None:
    """Refuse one file named twice, by identity (device and inode), not by spelling.

    ``h0.csv``, ``./h0.csv``, its absolute path, a symbolic link to it and a
    hard link of it are the same provider's rows: counting them twice would
    double that provider's weight in the PCA without any error.

    Raises
    ------
    InputValidationError
        Naming every spelling of the file given more than once.
    """
    seen: dict[tuple[int, int] | str, list[str]] = {}
    for name in files:
        identity: tuple[int, int] | str
        if name.startswith(("builtin:", "synthetic:")):
            identity = name
        else:
            try:
                info = os.stat(name)
            except OSError:
                continue  # reading it reports the problem with its name
            identity = (info.st_dev, info.st_ino)
        seen.setdefault(identity, []).append(name)
    repeated = [names for names in seen.values() if len(names) > 1]
    if repeated:
        listed = "; ".join(" = ".join(names) for names in repeated)
        raise InputValidationError(
            f"the data given names the same file more than once ({listed}): give each provider's file once"
        )


def load_table(spec: str, options: ReadOptions) -> Table:
    """One table: ``builtin:NAME`` (with scikit-learn's feature names), ``synthetic:...`` or a file."""
    if spec.startswith("synthetic:"):
        from mpc_pca.data.latent import load_synthetic

        values = load_synthetic(spec)
        table = table_from_array(spec, values)
    elif spec.startswith("builtin:"):
        name = spec.split(":", 1)[1]
        if name not in builtin_names():
            raise InputValidationError(
                f"unknown built-in data set {name!r}; choose one of {list(builtin_names())}"
            )
        from sklearn import datasets

        bunch = getattr(datasets, f"load_{name}")()
        table = table_from_array(spec, np.asarray(bunch.data, dtype=np.float64), bunch.feature_names)
    elif spec.lower().endswith(".bed"):  # PLINK 1 genotypes, the genotype extra
        from mpc_pca.data.plink import bed_table

        table = bed_table(spec)
    else:
        table = read_table(
            spec,
            header=options.header,
            delimiter=options.delimiter,
            encoding=options.encoding,
            drop_na=options.drop_na,
        )
    return table if options.columns is None else table.select(options.columns)


def provider_data(
    specs: Sequence[str],
    options: ReadOptions,
    *,
    parties: int | None = None,
    split: str | None = None,
    seed: int | None = None,
) -> ProviderData:
    """Resolve the data ``specs`` (and ``parties``/``split``) into one table per provider.

    Raises
    ------
    InputValidationError
        For unreadable tables, disagreeing column names, ``split`` with one
        file per provider, or a ``parties`` that contradicts the number of files.
    """
    files = expand_specs(specs)
    if len(files) == 1:
        table = load_table(files[0], options)
        n_parties = 3 if parties is None else parties
        parts = split_rows(table.values, n_parties, split or "even", seed)  # type: ignore[arg-type]
        tables = [Table(f"{table.source}[part {i}]", table.names, p) for i, p in enumerate(parts)]
        return ProviderData(tables, [table.source], table.names, list(table.notes))
    if split is not None:
        raise InputValidationError(
            f"split={split!r} applies to one file split among parties; got {len(files)} files, one per provider"
        )
    if parties is not None and parties != len(files):
        raise InputValidationError(
            f"parties={parties} but {len(files)} files are given (one per provider): {files}"
        )
    check_distinct_files(files)
    if all(f.lower().endswith(".bed") for f in files):  # SNP sets, ids, positions, alleles: before any read
        from mpc_pca.data.snp_alignment import align_bed_files

        align_bed_files(files)
    tables = [load_table(f, options) for f in files]
    notes = [note for t in tables for note in t.notes]
    aligned, align_notes = agree_tables(tables)
    return ProviderData(aligned, files, aligned[0].names, notes + align_notes)
