"""Aligning the sites' SNPs by identifier, as provider columns are aligned by name.

Column ``j`` of every site's genotype matrix must be the same SNP counted on
the same allele, or the secure sums add different things. The sites compare
only public metadata, the ``.bim``'s SNP identifiers with their chromosome,
position and alleles (never a genotype). As for table columns
(:func:`mpc_pca.validation.align_columns`), the first site's order is the
reference and a site whose SNPs are a permutation of it reads its columns in
that order. A different SNP set is refused with the SNPs only some sites
have named; the same identifier on a different chromosome or position, or
with other alleles (including the two alleles swapped, which would count the
other allele), is refused with both records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.data.plink_files import Snps, listed, read_bim
from protocols.errors import InputValidationError


def _repeated(snps: Snps) -> None:
    if len(set(snps.ids)) != len(snps.ids):
        seen: set[str] = set()
        repeated = sorted({i for i in snps.ids if i in seen or seen.add(i)})  # type: ignore[func-returns-value]
        raise InputValidationError(f"{snps.source}: SNP id(s) repeated: {listed(repeated)}")


def _set_differences(sites: Sequence[Snps]) -> str | None:
    """Which SNPs only some sites have, per site; ``None`` if every site has the same set."""
    sets = [set(s.ids) for s in sites]
    union = set().union(*sets)
    common = set.intersection(*sets)
    if len(common) == len(union):
        return None
    order = {snp: i for i, snp in enumerate(i for s in sites for i in s.ids)}  # first appearance
    lines = []
    for site, ids in zip(sites, sets, strict=True):
        lacks = sorted(union - ids, key=order.__getitem__)
        if lacks:
            lines.append(f"{site.source} ({len(ids):,} SNPs) lacks {len(lacks):,}: {listed(lacks)}")
    return (
        f"the sites' SNP sets differ ({len(common):,} SNPs common to every site, {len(union):,} in all): "
        + "; ".join(lines)
        + ". Restrict every site to the common SNPs (e.g. plink --extract common.txt --make-bed)"
    )


def _fields(snps: Snps, order: list[int] | None) -> list[NDArray[Any]]:
    """Chromosome, position and both alleles of every SNP, in ``order`` (default the site's own)."""
    columns = [snps.chromosome, snps.position, snps.allele_1, snps.allele_2]
    arrays = [np.asarray(c, dtype=object) for c in columns]
    if order is None:
        return arrays
    index = np.asarray(order, dtype=np.intp)
    return [a[index] for a in arrays]


def _shown(fields: list[NDArray[Any]], j: int) -> str:
    chromosome, position, a1, a2 = (f[j] for f in fields)
    return f"{chromosome}:{position} {a1}/{a2}"


def _record_differences(reference: Snps, site: Snps, order: list[int] | None) -> str | None:
    """The SNPs whose chromosome, position or alleles differ between ``reference`` and ``site`` (aligned)."""
    mine, theirs = _fields(reference, None), _fields(site, order)
    differs = np.zeros(len(reference), dtype=bool)
    for a, b in zip(mine, theirs, strict=True):
        differs |= a != b
    if not differs.any():
        return None
    shown = []
    for j in np.flatnonzero(differs)[:5]:
        same_place = mine[0][j] == theirs[0][j] and mine[1][j] == theirs[1][j]
        swapped = same_place and mine[2][j] == theirs[3][j] and mine[3][j] == theirs[2][j]
        why = " (alleles swapped: the dosages would count the other allele)" if swapped else ""
        shown.append(f"{reference.ids[j]}: {_shown(mine, j)} vs {_shown(theirs, j)}{why}")
    count = int(differs.sum())
    more = f" and {count - len(shown):,} more" if count > len(shown) else ""
    return (
        f"{site.source} and {reference.source} describe {count:,} SNP(s) differently "
        f"(chromosome:position allele_1/allele_2): {shown}{more}. Every site must count the same "
        "allele on the same build (e.g. plink --a1-allele, or lift over to one build)"
    )


def align_snps(sites: Sequence[Snps]) -> tuple[tuple[str, ...], list[list[int] | None]]:
    """The common SNP order and, per site, the column positions that put its SNPs in it.

    Parameters
    ----------
    sites : sequence of Snps
        Each site's SNPs in its own ``.bim`` order (public metadata only).

    Returns
    -------
    reference : tuple of str
        The agreed SNP identifiers: the first site's order.
    orders : list
        Per site, ``None`` when already in that order, else the ``.bim``
        positions to read (``BedFile.chunks(columns=order)``).

    Raises
    ------
    InputValidationError
        If a site repeats a SNP id; if the sites' SNP sets differ (each site's
        missing SNPs named, with the counts); or if one id has a different
        chromosome, position or alleles at two sites (both records named).

    Examples
    --------
    >>> import numpy as np
    >>> def site(name, ids):
    ...     n = len(ids)
    ...     return Snps(name, tuple(ids), ("1",) * n, np.zeros(n, dtype=np.int64), ("A",) * n, ("G",) * n)
    >>> align_snps([site("a.bim", ["rs1", "rs2", "rs3"]), site("b.bim", ["rs3", "rs1", "rs2"])])
    (('rs1', 'rs2', 'rs3'), [None, [1, 2, 0]])
    """
    if not sites:
        raise InputValidationError("no site to align")
    for site in sites:
        _repeated(site)
    differences = _set_differences(sites)
    if differences is not None:
        raise InputValidationError(differences)
    reference = sites[0]
    orders: list[list[int] | None] = []
    for site in sites:
        order = None
        if site.ids != reference.ids:  # the same set (checked above), in another order
            mine = np.asarray(site.ids, dtype=str)
            sorter = np.argsort(mine, kind="stable")
            order = sorter[
                np.searchsorted(mine, np.asarray(reference.ids, dtype=str), sorter=sorter)
            ].tolist()
        problem = None if site is reference else _record_differences(reference, site, order)
        if problem is not None:
            raise InputValidationError(problem)
        orders.append(order)
    return reference.ids, orders


def snp_digests(snps: Snps, columns: Sequence[int] | None = None) -> list[str]:
    """What a site announces between hosts about its SNP records: two SHA-256 digests, naming no SNP.

    The records of the SNPs (``columns``, ``.bim`` positions; default every
    SNP), sorted by identifier so that the sites' orders do not matter. The
    first digest covers ``(id, chromosome, position, allele_1, allele_2)``;
    the second the same with the two alleles unordered. Equal first digests:
    every SNP is described the same and counts the same allele. Equal second
    digests but different first ones: some SNP's alleles are swapped
    (:func:`mpc_pca.deployment_kit.check_snp_digests` says which it is).

    Examples
    --------
    >>> def site(a1, a2):
    ...     return Snps("x.bim", ("rs1", "rs2"), ("1", "1"), np.array([10, 20]), a1, a2)
    >>> same = snp_digests(site(("A", "C"), ("G", "T")))
    >>> reordered = snp_digests(Snps("y.bim", ("rs2", "rs1"), ("1", "1"), np.array([20, 10]), ("C", "A"), ("T", "G")))
    >>> swapped = snp_digests(site(("A", "T"), ("G", "C")))
    >>> same == reordered, same[0] == swapped[0], same[1] == swapped[1]
    (True, False, True)
    """
    picked = range(len(snps)) if columns is None else columns
    records = sorted(
        (snps.ids[j], snps.chromosome[j], int(snps.position[j]), snps.allele_1[j], snps.allele_2[j])
        for j in picked
    )
    oriented, unoriented = hashlib.sha256(), hashlib.sha256()
    for snp, chromosome, position, a1, a2 in records:
        place = f"{snp}\t{chromosome}\t{position}\t"
        oriented.update(f"{place}{a1}\t{a2}\n".encode())
        unoriented.update(f"{place}{min(a1, a2)}\t{max(a1, a2)}\n".encode())
    return [oriented.hexdigest(), unoriented.hexdigest()]


def align_bed_files(paths: Sequence[str | Path]) -> tuple[tuple[str, ...], list[list[int] | None]]:
    """:func:`align_snps` of the ``.bim`` beside each ``.bed`` in ``paths`` (read, not the genotypes).

    Raises
    ------
    InputValidationError
        For a missing or malformed ``.bim``, or as :func:`align_snps` does.
    """
    sites = []
    for path in paths:
        bim = Path(path).with_suffix(".bim")
        if not bim.is_file():
            raise InputValidationError(f"{bim} does not exist: the SNP list of {Path(path).name}")
        sites.append(read_bim(bim))
    return align_snps(sites)


__all__ = ["align_bed_files", "align_snps", "snp_digests"]
