"""The typed party specification the deploy floor runs, and how a party's rows are loaded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.data.inputs import ReadOptions
from mpc_pca.pppca.chunked import ChunkedPart
from protocols.errors import InputValidationError
from protocols.runtime.parties import LinkOptions


@dataclass(frozen=True)
class FileSource:
    """A party's rows in a file (CSV, optionally gzipped, Parquet) or ``builtin:NAME``.

    A data holder of a protocol that streams its rows
    (:attr:`~mpc_pca.deployment.Deployment.streams_rows`: ``pppca-ss``,
    ``pppca-he``) reads a file ``chunk_rows`` rows at a time
    (:class:`~mpc_pca.data.streaming.TablePart`), or on the Dask cluster at
    ``dask_scheduler``; every other party, and ``chunk_rows=0``, reads it
    whole with :func:`mpc_pca.data.inputs.load_table`. The same ``options``
    and checks apply either way.

    Attributes
    ----------
    path : str
    options : ReadOptions
    chunk_rows : int, optional
        Rows per block (default :data:`~mpc_pca.data.streaming.DEFAULT_STREAM_ROWS`);
        ``0`` reads the whole table into memory.
    dask_scheduler : str, optional
        ``HOST:PORT`` of a Dask scheduler whose workers read ``path``.
    connect_timeout : float, optional
        Seconds the Dask scheduler may take to answer
        (:func:`mpc_pca.data.dask_client.connect_scheduler`).
    """

    path: str
    options: ReadOptions = field(default_factory=ReadOptions)
    chunk_rows: int | None = None
    dask_scheduler: str | None = None
    connect_timeout: float | None = None

    def __post_init__(self) -> None:
        if self.dask_scheduler is not None:
            from mpc_pca.data.dask_client import scheduler_address

            scheduler_address(self.dask_scheduler)  # refused before any party starts
        rows = self.chunk_rows
        if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
            raise InputValidationError(f"chunk_rows must be a non-negative integer, got {rows!r}")
        if self.dask_scheduler is not None and rows == 0:
            raise InputValidationError("dask_scheduler reads the file on the cluster; drop chunk_rows=0")

    @property
    def streams(self) -> bool:
        """Whether this source can be read in chunks (a file, not ``builtin:``/``synthetic:``, nor ``chunk_rows=0``)."""
        return self.chunk_rows != 0 and not self.path.startswith(("builtin:", "synthetic:"))


@dataclass(frozen=True)
class ArraySource:
    """A party's rows in memory, with optional column names (agreed by hash as a file's are)."""

    values: NDArray[np.float64]
    names: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Rows:
    """A party's loaded rows: the matrix (or a part read in chunks), the column names if known, notes."""

    values: NDArray[np.float64] | ChunkedPart
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


def load_rows(
    data: FileSource | ArraySource | NDArray[np.float64] | None, *, stream: bool = False
) -> Rows | None:
    """The rows a party holds (``None`` for a party that holds none).

    Parameters
    ----------
    data : FileSource, ArraySource, ndarray or None
    stream : bool, default=False
        Whether the party may hold its rows as a
        :class:`~mpc_pca.pppca.chunked.ChunkedPart`: a streamable
        :class:`FileSource` is then read once here (every row checked, the
        statistics kept) and never held whole. Otherwise a ``dask_scheduler``
        is refused.

    Raises
    ------
    InputValidationError
        For an unreadable file or a value that is not a 2-D numeric array.
    """
    if data is None:
        return None
    if isinstance(data, FileSource) and data.dask_scheduler is not None:
        if data.path.lower().endswith(".bed"):
            raise InputValidationError(
                f"dask_scheduler reads CSV or Parquet files; {data.path} is a PLINK .bed file, which this "
                "party streams itself: give no dask_scheduler"
            )
        if not (stream and data.streams):
            raise InputValidationError(
                "dask_scheduler applies to the providers of pppca-ss and pppca-he reading a CSV or "
                f"Parquet file; this party reads {data.path!r} whole in its own memory"
            )
        from mpc_pca.data.streaming import dask_table_part

        cluster = dask_table_part(
            data.path, data.options, data.dask_scheduler, data.chunk_rows, data.connect_timeout
        )
        cluster.statistics()  # every block checked, on the cluster, before anything is announced
        return Rows(cluster, cluster.names, tuple(cluster.notes))
    if isinstance(data, FileSource) and stream and data.streams:
        from mpc_pca.data.genotype_part import BedPart
        from mpc_pca.data.streaming import TablePart

        is_bed = data.path.lower().endswith(".bed")  # PLINK 1 genotypes (the genotype extra)
        part = (BedPart if is_bed else TablePart)(data.path, data.options, data.chunk_rows)
        part.scan()
        return Rows(part, part.names, tuple(part.notes))
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
