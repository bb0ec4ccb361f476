"""One site's genotypes from a PLINK 1 ``.bed`` file, as float dosages, in row chunks.

Individuals are rows and SNPs columns, as in every other provider table. A
value is the number of copies of the SNP's ``allele_1`` (column 5 of the
``.bim``) the individual carries, 0, 1 or 2, as ``bed-reader`` decodes it
(its ``count_A1=True``; PLINK 1's ``.bed`` stores calls relative to that
allele). The fileset is found and checked first
(:func:`~mpc_pca.data.plink_files.open_fileset`: the ``.bim`` and ``.fam``
beside the ``.bed``, its magic bytes, its mode and its size); the genotypes
are decoded only after that.

Missing calls are mean-imputed per SNP, as PLINK's ``--pca`` does: a
missing call of SNP ``j`` becomes the mean of SNP ``j``'s non-missing calls,
so that after centring it contributes zero. By default that mean is **this
site's own** (its non-missing calls of the SNP, over all its individuals),
which needs no other site; PLINK run on the pooled cohort would use the
pooled allele frequency (``2 p``) instead. A caller who has the pooled
frequencies (e.g. from a secure sum of every site's allele counts and call
counts) passes ``fill=2 p`` to impute with them. With the site's own means,
what was imputed (how many calls, in how many SNPs, with which mean) is one
line of :attr:`BedFile.notes`, for the user's terminal.

Reading needs ``bed-reader``, an optional dependency
(``pip install 'mpc-pca[genotype]'``); without it opening a ``.bed`` is
refused with that line (:data:`GENOTYPE_INSTALL`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.data.plink_files import Fileset, Snps, listed, open_fileset
from mpc_pca.data.tables import Table
from protocols.errors import InputValidationError

#: The ``pip install`` line of the optional dependency that decodes ``.bed`` files.
GENOTYPE_INSTALL = "pip install 'mpc-pca[genotype]'"
#: Bytes of one float64 row chunk when no ``chunk_rows`` is given (at least one row).
DEFAULT_CHUNK_BYTES = 64 << 20


def open_bed_reader(path: Path) -> Any:
    """``bed_reader.open_bed`` on a checked ``.bed`` (its counts are already known).

    Raises
    ------
    InputValidationError
        If ``bed-reader`` is not installed, naming the ``pip install`` line.
    """
    try:
        from bed_reader import open_bed
    except ImportError:
        raise InputValidationError(
            f"reading {path} needs bed-reader, which is not installed: {GENOTYPE_INSTALL}"
        ) from None
    return open_bed(path, count_A1=True)


def rows_per_chunk(n_columns: int, chunk_rows: int | None) -> int:
    """Rows per chunk: ``chunk_rows``, or as many as fit :data:`DEFAULT_CHUNK_BYTES` of float64 (at least 1).

    Raises
    ------
    InputValidationError
        For a ``chunk_rows`` that is not a positive integer.

    Examples
    --------
    >>> rows_per_chunk(100_000, None), rows_per_chunk(100_000, 10)
    (83, 10)
    """
    if chunk_rows is None:
        return max(1, DEFAULT_CHUNK_BYTES // (8 * max(1, n_columns)))
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
        raise InputValidationError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    return chunk_rows


class BedFile:
    """One site's PLINK 1 fileset, checked, read in row chunks of imputed float64 dosages.

    Parameters
    ----------
    path : str or Path
        The ``.bed`` file; its ``.bim`` and ``.fam`` have the same stem beside it.
    fill : array_like of shape (n_snps,), optional
        The value of a missing call of each SNP (in ``.bim`` order), e.g. the
        pooled ``2 p``; each in ``[0, 2]``. Default: the site's own mean of the
        SNP's non-missing calls, computed in one pass over the file.

    Attributes
    ----------
    fileset : Fileset
        The three paths, the SNPs and the individuals.
    snps : Snps
        The SNPs in ``.bim`` order: identifiers, chromosomes, positions, alleles.
    samples : tuple of str
        The individual ids of the ``.fam``, one per row.
    notes : list of str
        What was imputed with the site's own means (after their pass, if a call was missing).

    Raises
    ------
    InputValidationError
        For a missing ``.bed``, ``.bim`` or ``.fam``, a malformed ``.bim`` or
        ``.fam`` (a repeated SNP id), a ``.bed`` that is not SNP-major PLINK 1
        or whose size disagrees with the ``.bim`` and ``.fam``, a bad ``fill``,
        or a missing ``bed-reader``.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from bed_reader import to_bed
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     to_bed(f"{tmp}/site.bed", np.array([[0, 1], [2, np.nan], [1, 2]]),
    ...            properties={"sid": ["rs1", "rs2"]})
    ...     site = BedFile(f"{tmp}/site.bed")
    ...     values = site.read()
    >>> site.snps.ids, values.tolist()
    (('rs1', 'rs2'), [[0.0, 1.0], [2.0, 1.5], [1.0, 2.0]])
    """

    def __init__(self, path: str | Path, *, fill: ArrayLike | None = None) -> None:
        self.fileset: Fileset = open_fileset(path)
        self.path = self.fileset.bed
        self.snps: Snps = self.fileset.snps
        self.samples = self.fileset.samples
        self.notes: list[str] = []
        self._reader = open_bed_reader(self.path)
        self._fill = None if fill is None else self._checked_fill(fill)
        self._own_mean = fill is None

    def __repr__(self) -> str:
        return f"BedFile({str(self.path)!r}, n={self.n_samples}, d={self.n_snps})"

    @property
    def n_samples(self) -> int:
        return len(self.samples)

    @property
    def n_snps(self) -> int:
        return len(self.snps)

    def _checked_fill(self, fill: ArrayLike) -> NDArray[np.float64]:
        values = np.asarray(fill, dtype=np.float64)
        if values.shape != (self.n_snps,):
            raise InputValidationError(
                f"{self.path}: fill has shape {values.shape}, expected ({self.n_snps},), one value per SNP"
            )
        bad = np.flatnonzero(~((values >= 0) & (values <= 2)))
        if bad.size:
            raise InputValidationError(
                f"{self.path}: fill of SNP {self.snps.ids[bad[0]]!r} is {values[bad[0]]}; a dosage is in [0, 2]"
            )
        return values

    def raw_chunks(
        self, chunk_rows: int | None = None, columns: Sequence[int] | None = None
    ) -> Iterator[NDArray[np.float64]]:
        """The dosages as written, ``NaN`` for a missing call, at most ``chunk_rows`` rows at a time.

        ``columns`` selects and orders SNPs by their ``.bim`` positions (an
        alignment's order); default every SNP in ``.bim`` order.
        """
        width = self.n_snps if columns is None else len(columns)
        rows = rows_per_chunk(width, chunk_rows)
        picked: Any = slice(None) if columns is None else np.asarray(columns, dtype=np.intp)
        for start in range(0, self.n_samples, rows):
            stop = min(start + rows, self.n_samples)
            yield self._reader.read(np.s_[start:stop, picked], dtype="float64", order="C")

    def fill_values(self, chunk_rows: int | None = None) -> NDArray[np.float64]:
        """The value of a missing call of each SNP (``.bim`` order): ``fill``, or the site's own means.

        The site's means take one pass over the file, ``chunk_rows`` rows at a
        time (default: row chunks of :data:`DEFAULT_CHUNK_BYTES`), counted per
        SNP: the sum and the number of its non-missing calls over every
        individual of this site. They are kept: a later call reads nothing.

        Raises
        ------
        InputValidationError
            If, without ``fill``, a SNP has no non-missing call at this site (named).
        """
        if self._fill is not None:
            return self._fill
        sums, calls = np.zeros(self.n_snps), np.zeros(self.n_snps, dtype=np.int64)
        for chunk in self.raw_chunks(chunk_rows):
            missing = np.isnan(chunk)
            calls += chunk.shape[0] - missing.sum(axis=0)
            chunk[missing] = 0.0  # the block is this pass's own: zeroed in place, no second copy
            sums += chunk.sum(axis=0)
            del chunk, missing  # freed before the next block is read: one block at a time
        empty = [self.snps.ids[j] for j in np.flatnonzero(calls == 0)]
        if empty:
            raise InputValidationError(
                f"{self.path}: {len(empty):,} SNP(s) have no call at this site, so their mean is undefined: "
                f"{listed(empty)}; remove them at every site (plink --geno) or pass fill= (e.g. pooled 2p)"
            )
        self._fill = sums / calls
        n_missing = self.n_samples * self.n_snps - int(calls.sum())
        if n_missing:
            affected = int(np.count_nonzero(calls < self.n_samples))
            self.notes.append(
                f"{self.path}: {n_missing:,} missing call(s) in {affected:,} of {self.n_snps:,} SNPs imputed with "
                "this site's own mean of each SNP's non-missing calls (not the pooled allele frequency)"
            )
        return self._fill

    def chunks(
        self, chunk_rows: int | None = None, columns: Sequence[int] | None = None
    ) -> Iterator[NDArray[np.float64]]:
        """The imputed dosages, C-contiguous ``(rows, SNPs)`` float64 blocks of at most ``chunk_rows`` rows.

        Parameters
        ----------
        chunk_rows : int, optional
            Rows per block; default as many as fit :data:`DEFAULT_CHUNK_BYTES`.
        columns : sequence of int, optional
            The SNPs (``.bim`` positions) and their order, e.g. an alignment's.

        Notes
        -----
        Memory: one block (``rows x SNPs`` float64, plus ``bed-reader``'s
        buffers) and ``O(SNPs)`` counts, whatever the number of individuals.
        Without ``fill`` the site's means are computed first, one more pass
        (in blocks of the same ``chunk_rows``).
        """
        fill = self.fill_values(chunk_rows)
        if columns is not None:
            fill = fill[np.asarray(columns, dtype=np.intp)]
        for chunk in self.raw_chunks(chunk_rows, columns):
            missing = np.isnan(chunk)
            if missing.any():
                chunk[missing] = np.broadcast_to(fill, chunk.shape)[missing]
            yield chunk

    def read(self, columns: Sequence[int] | None = None) -> NDArray[np.float64]:
        """The whole imputed matrix, ``(n_samples, SNPs)`` float64 (for files that fit in memory)."""
        fill = self.fill_values()
        if columns is not None:
            fill = fill[np.asarray(columns, dtype=np.intp)]
        (values,) = self.raw_chunks(max(1, self.n_samples), columns)
        missing = np.isnan(values)
        values[missing] = np.broadcast_to(fill, values.shape)[missing]
        return values


def is_bed(spec: str) -> bool:
    """Whether a data spec names a PLINK 1 ``.bed`` file (by its suffix, any case)."""
    return spec.lower().endswith(".bed")


def bed_table(path: str | Path) -> Table:
    """A ``.bed`` file read whole as a :class:`~mpc_pca.data.tables.Table` (a data spec ``site.bed``).

    The columns are the SNPs in ``.bim`` order, named by their identifiers;
    missing calls are imputed with the site's own SNP means (the note says so).
    """
    site = BedFile(path)
    values = site.read()
    return Table(str(site.path), site.snps.ids, values, list(site.notes))


__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "GENOTYPE_INSTALL",
    "BedFile",
    "bed_table",
    "is_bed",
    "open_bed_reader",
    "rows_per_chunk",
]
