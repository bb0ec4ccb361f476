"""The typed party specification the deploy floor runs, and how a party's rows are loaded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.data.inputs import ReadOptions
from protocols.errors import InputValidationError
from protocols.runtime.parties import LinkOptions


@dataclass(frozen=True)
class FileSource:
    """A party's rows in a file (CSV, optionally gzipped, Parquet) or ``builtin:NAME``.

    Read with :func:`mpc_pca.data.inputs.load_table` and ``options``.
    """

    path: str
    options: ReadOptions = field(default_factory=ReadOptions)


@dataclass(frozen=True)
class ArraySource:
    """A party's rows in memory, with optional column names (agreed by hash as a file's are)."""

    values: NDArray[np.float64]
    names: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Rows:
    """A party's loaded rows: the matrix, the column names if known, and notes for the user."""

    values: NDArray[np.float64]
    names: tuple[str, ...] | None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class PartySpec:
    """Everything one party of a run needs, in one typed object (no command-line argv).

    Attributes
    ----------
    protocol : str
        A deployable protocol of :mod:`mpc_pca.registry`, e.g. ``"pppca-ss"``.
    party : str
        This party's name in the protocol's layout (e.g. ``"provider0"``, ``"server"``).
    n_providers : int
        The number of data holders of the run.
    links : LinkOptions
        Rendezvous address, credentials, deadlines, ``insecure``, listen host.
    data : FileSource, ArraySource, ndarray or None
        This party's rows (data holders only).
    settings : mapping
        The protocol's settings (:meth:`mpc_pca.registry.ProtocolEntry.settings`;
        defaults are filled in); every party must be given the same ones.
    output : Path, optional
        Where the party writes its JSON result.
    noise_seed : int, optional
        Seeds the party's DP noise (reproducible experiments only: not private).
    """

    protocol: str
    party: str
    n_providers: int
    links: LinkOptions
    data: FileSource | ArraySource | NDArray[np.float64] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    output: Path | None = None
    noise_seed: int | None = None

    def __post_init__(self) -> None:
        n = self.n_providers
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputValidationError(f"n_providers must be a positive integer, got {n!r}")
        seed = self.noise_seed
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise InputValidationError(f"noise_seed must be a non-negative integer or None, got {seed!r}")


def load_rows(data: FileSource | ArraySource | NDArray[np.float64] | None) -> Rows | None:
    """The rows a party holds (``None`` for a party that holds none).

    Raises
    ------
    InputValidationError
        For an unreadable file or a value that is not a 2-D numeric array.
    """
    if data is None:
        return None
    if isinstance(data, FileSource):
        from mpc_pca.data.inputs import load_table

        table = load_table(data.path, data.options)
        return Rows(table.values, tuple(table.names), tuple(table.notes))
    if isinstance(data, ArraySource):
        values, names = data.values, data.names
    else:
        values, names = data, None
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 2:
        raise InputValidationError(f"a party's rows must be a 2-D array, got shape {array.shape}")
    if names is not None and len(names) != array.shape[1]:
        raise InputValidationError(f"{len(names)} column names for {array.shape[1]} columns: {list(names)}")
    return Rows(array, None if names is None else tuple(names))


__all__ = ["ArraySource", "FileSource", "LinkOptions", "PartySpec", "Rows", "load_rows"]
