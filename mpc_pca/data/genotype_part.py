"""A site's ``.bed`` file as a :class:`~mpc_pca.pppca.chunked.ChunkedPart`: streamed, never held whole.

A PPPCA provider (``pppca-ss``, ``pppca-he``) whose data is ``site.bed``
reads its genotypes as :class:`BedPart`: the imputed dosages
of :class:`mpc_pca.data.plink.BedFile`, ``chunk_rows`` individuals at a
time, the SNPs (``columns``: SNP ids) in the order it announces. The
fileset is checked when the part is made; the site's SNP means take one pass
before the party announces anything. A ``pppca-ss`` or ``pppca-he`` provider
reads its ``d x d`` statistics in one more pass and its projection for the
consumer in a third; a ``pppca-randomized`` site reads ``O(d)`` sums and its
block products instead, and never makes a ``d x d`` array. Memory: one block
of ``chunk_rows x SNPs`` float64 plus what the protocol keeps.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from mpc_pca.data.inputs import ReadOptions
from mpc_pca.data.plink import BedFile, rows_per_chunk
from mpc_pca.data.snp_alignment import snp_digests
from mpc_pca.data.tables import column_index
from mpc_pca.pppca.chunked import ChunkedPart
from mpc_pca.pppca.local_stats import LocalStatistics


class BedPart(ChunkedPart):
    """A PLINK 1 ``.bed`` file's imputed dosages, ``chunk_rows`` individuals at a time.

    Parameters
    ----------
    path : str or Path
        The ``.bed``; its ``.bim`` and ``.fam`` beside it.
    options : ReadOptions
        Only ``columns`` applies (SNP ids, in order); the rest are for text tables.
    chunk_rows : int, optional
        Individuals per block; default as many as fit
        :data:`~mpc_pca.data.plink.DEFAULT_CHUNK_BYTES` of float64.

    Attributes
    ----------
    names : tuple of str
        The selected SNP ids, in order.
    notes : list of str
        What was imputed (after the first pass).
    snp_digests : list of str
        The two digests of the selected SNPs' ``.bim`` records
        (:func:`~mpc_pca.data.snp_alignment.snp_digests`), which a protocol
        announces so that every site can refuse a SNP described differently
        (swapped alleles included) before anything is sent.

    Raises
    ------
    InputValidationError
        As :class:`~mpc_pca.data.plink.BedFile` does, or for a ``columns``
        SNP id the ``.bim`` does not list.
    """

    def __init__(self, path: str | Path, options: ReadOptions, chunk_rows: int | None = None) -> None:
        self.file = BedFile(path)
        self.path = self.file.path
        ids = self.file.snps.ids
        self.columns = None if options.columns is None else column_index(str(self.path), ids, options.columns)
        self.names = ids if options.columns is None else tuple(options.columns)
        self.n_features = len(self.names)
        self.snp_digests = snp_digests(self.file.snps, self.columns)
        self.chunk_rows = rows_per_chunk(self.n_features, chunk_rows)
        self.notes = self.file.notes  # the same list: the means' pass adds the imputation's note
        self._stats: LocalStatistics | None = None

    def __repr__(self) -> str:
        return f"BedPart({str(self.path)!r}, d={self.n_features}, chunk_rows={self.chunk_rows})"

    def in_id_order(self) -> BedPart:
        """This part with its SNPs sorted by id: the canonical order every site computes alone.

        ``pppca-randomized`` between hosts reads every ``.bed`` site's SNPs in
        this order (the order :func:`~mpc_pca.data.snp_alignment.snp_digests`
        hashes), so that no site announces its SNP ids: equal digests prove
        that column ``j`` is the same SNP, counted on the same allele, at every
        site. Ids sort by code point (``"rs10"`` before ``"rs2"``). The file,
        its imputation values and its notes are shared with this part; the
        result is this part itself if it is already in that order.

        Examples
        --------
        >>> sorted(("rs2", "rs10", "rs1"))
        ['rs1', 'rs10', 'rs2']
        """
        order = sorted(range(self.n_features), key=self.names.__getitem__)
        if order == list(range(self.n_features)):
            return self
        positions = list(range(self.n_features)) if self.columns is None else list(self.columns)
        part = copy.copy(self)
        part.columns = [positions[j] for j in order]
        part.names = tuple(self.names[j] for j in order)
        part._stats = None
        return part

    def chunks(self) -> Iterator[NDArray[np.float64]]:
        return self.file.chunks(self.chunk_rows, self.columns)

    def scan(self) -> None:
        """Read the file once before anything is announced: the site's SNP means (every SNP called once).

        The ``d x d`` statistics are not read here: only a protocol that
        needs them (``pppca-ss``, ``pppca-he``) asks, with :meth:`statistics`.
        ``pppca-randomized`` never does: it keeps ``O(d)`` sums of its own
        (:func:`mpc_pca.wide.site.site_sums`), so a site of 100,000 SNPs
        holds no ``d x d`` array.
        """
        self.file.fill_values(self.chunk_rows)

    def statistics(self) -> LocalStatistics:
        """The row count, column sums and scatter (``d x d``), in one pass after the means' (kept)."""
        if self._stats is None:
            self._stats = super().statistics()
        return self._stats

    def column_peaks(self) -> NDArray[np.float64]:
        """``max |x_j|`` per SNP, from the statistics' own pass."""
        peaks = self.statistics().column_peaks
        return super().column_peaks() if peaks is None else peaks


__all__ = ["BedPart"]
