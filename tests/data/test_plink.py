"""PLINK 1 genotype input: values, imputation, chunking, SNP alignment, and every bad fileset refused by name."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

from mpc_pca.data.plink import GENOTYPE_INSTALL, BedFile
from mpc_pca.data.plink_files import Snps, read_bim
from mpc_pca.data.snp_alignment import align_snps
from protocols.errors import InputValidationError
from tests.helpers.genotypes import genotypes, write

pytest.importorskip("bed_reader", reason=f"the genotype extra is not installed: {GENOTYPE_INSTALL}")


def site_mean_imputed(values: np.ndarray) -> np.ndarray:
    out = values.copy()
    means = np.nanmean(values, axis=0)
    rows, cols = np.nonzero(np.isnan(out))
    out[rows, cols] = means[cols]
    return out


@pytest.fixture
def written(tmp_path):
    values = genotypes(37, 11)
    return write(tmp_path / "site.bed", values), values


def test_whole_read_is_what_was_written_with_missing_calls_at_the_sites_snp_mean(written):
    path, values = written
    site = BedFile(path)
    assert site.snps.ids == tuple(f"rs{j}" for j in range(11))
    assert site.samples == tuple(f"person{i}" for i in range(37))
    assert site.snps.allele_1 == ("A",) * 11 and site.snps.position.tolist() == [
        1000 + 10 * j for j in range(11)
    ]
    read = site.read()
    called = ~np.isnan(values)
    assert called.sum() < values.size  # the file really has missing calls
    np.testing.assert_array_equal(read[called], values[called])
    np.testing.assert_allclose(read, site_mean_imputed(values), rtol=0, atol=1e-15)
    assert read.dtype == np.float64 and read.flags.c_contiguous
    (note,) = site.notes
    assert f"{(~called).sum():,} missing call(s)" in note and "this site's own mean" in note


@pytest.mark.parametrize("chunk_rows", [1, 5, 8, 36, 37, 100])
def test_chunks_concatenate_to_the_whole_read_and_never_exceed_the_chunk(written, chunk_rows):
    path, values = written
    site = BedFile(path)
    chunks = list(site.chunks(chunk_rows))
    assert all(1 <= c.shape[0] <= chunk_rows and c.shape[1] == 11 for c in chunks)
    assert len(chunks) == -(-37 // chunk_rows)
    np.testing.assert_array_equal(np.vstack(chunks), site.read())
    raw = np.vstack(list(site.raw_chunks(chunk_rows)))
    np.testing.assert_array_equal(np.isnan(raw), np.isnan(values))


def test_chunk_bound_holds_for_many_shapes(tmp_path):
    """A property over sizes: every chunk has at most ``chunk_rows`` rows and together they are the file."""
    rng = np.random.default_rng(7)
    for case in range(6):
        n, d = int(rng.integers(1, 30)), int(rng.integers(1, 9))
        values = genotypes(n, d, seed=case)
        site = BedFile(write(tmp_path / f"s{case}.bed", values))
        whole = site.read()
        for chunk_rows in {1, 2, 3, max(1, n - 1), n, n + 4}:
            chunks = list(site.chunks(chunk_rows))
            assert max(c.shape[0] for c in chunks) <= chunk_rows, (n, d, chunk_rows)
            np.testing.assert_array_equal(np.vstack(chunks), whole)


def test_default_chunk_is_bounded_in_bytes(monkeypatch, written):
    import mpc_pca.data.plink as plink

    path, _ = written
    monkeypatch.setattr(plink, "DEFAULT_CHUNK_BYTES", 8 * 11 * 4)  # four rows of 11 SNPs
    assert {c.shape[0] for c in BedFile(path).chunks()} == {4, 1}  # 9 chunks of 4, then 1


class CountingReader:
    """``bed-reader``'s reader, recording the rows of every read."""

    def __init__(self, inner):
        self.inner, self.rows = inner, []

    def read(self, index, **options):
        self.rows.append(index[0].stop - index[0].start)
        return self.inner.read(index, **options)


def test_the_site_means_pass_reads_in_the_chunk_rows_given(written):
    """37 individuals in chunks of 5: 8 reads of at most 5 rows for the means, 8 for the values (not 1 + 8)."""
    from mpc_pca.data.genotype_part import BedPart
    from mpc_pca.data.inputs import ReadOptions

    path, values = written
    site = BedFile(path)
    site._reader = counter = CountingReader(site._reader)
    chunks = list(site.chunks(5))
    assert counter.rows == [5] * 7 + [2] + [5] * 7 + [2]
    np.testing.assert_array_equal(np.vstack(chunks), site_mean_imputed(values))
    part = BedPart(path, ReadOptions(), chunk_rows=3)
    part.file._reader = counter = CountingReader(part.file._reader)
    part.scan()  # the means' pass a party makes before it announces
    assert counter.rows == [3] * 12 + [1]
    part.scan()  # kept: nothing read again
    assert len(counter.rows) == 13


def test_a_given_fill_replaces_the_sites_mean(written):
    path, values = written
    fill = np.linspace(0.1, 1.9, 11)
    read = BedFile(path, fill=fill).read()
    rows, cols = np.nonzero(np.isnan(values))
    np.testing.assert_array_equal(read[rows, cols], fill[cols])
    with pytest.raises(InputValidationError, match=r"fill of SNP 'rs0' is 3\.0; a dosage is in \[0, 2\]"):
        BedFile(path, fill=np.full(11, 3.0))
    with pytest.raises(InputValidationError, match=r"fill has shape \(10,\), expected \(11,\)"):
        BedFile(path, fill=np.ones(10))


def test_a_snp_without_any_call_at_the_site_is_refused_by_name(tmp_path):
    values = genotypes(6, 3)
    values[:, 1] = np.nan
    site = BedFile(write(tmp_path / "site.bed", values))
    with pytest.raises(
        InputValidationError, match=r"site\.bed: 1 SNP\(s\) have no call at this site.*\['rs1'\]"
    ):
        site.read()
    assert BedFile(tmp_path / "site.bed", fill=[1.0, 1.0, 1.0]).read()[:, 1].tolist() == [1.0] * 6


def test_a_site_with_fewer_samples_than_k_is_a_valid_file(tmp_path):
    values = genotypes(2, 12, missing=0.0)
    site = BedFile(write(tmp_path / "tiny.bed", values))
    assert site.n_samples == 2 < 10  # fewer than a k = 10 the solver would refuse; the reader does not
    np.testing.assert_array_equal(site.read(), values)
    assert site.notes == []


def test_shuffled_snp_orders_align_to_the_same_matrix(tmp_path):
    """Three sites, each with its own .bim order: aligned by id they give the first site's columns."""
    d = 9
    pooled = genotypes(30, d, seed=3)
    ids = [f"rs{j}" for j in range(d)]
    rng = np.random.default_rng(4)
    sites, parts = [], [(0, 10), (10, 17), (17, 30)]
    for s, (a, b) in enumerate(parts):
        order = rng.permutation(d) if s else np.arange(d)
        path = write(tmp_path / f"site{s}.bed", pooled[a:b][:, order], ids=[ids[j] for j in order])
        sites.append(BedFile(path, fill=np.ones(d)))
    reference, orders = align_snps([site.snps for site in sites])
    assert reference == tuple(ids) and orders[0] is None and all(o is not None for o in orders[1:])
    aligned = np.vstack(
        [np.vstack(list(site.chunks(4, order))) for site, order in zip(sites, orders, strict=True)]
    )
    np.testing.assert_array_equal(aligned, np.where(np.isnan(pooled), 1.0, pooled))
    np.testing.assert_array_equal(
        np.vstack([site.read(order) for site, order in zip(sites, orders, strict=True)]), aligned
    )


def snps(source, ids, alleles=None, positions=None, chromosome="1"):
    d = len(ids)
    a1, a2 = zip(*(alleles or [("A", "G")] * d), strict=True)
    position = np.array(positions or [100 * (j + 1) for j in range(d)], dtype=np.int64)
    return Snps(source, tuple(ids), (chromosome,) * d, position, tuple(a1), tuple(a2))


def test_different_snp_sets_are_refused_with_what_each_site_lacks():
    a = snps("a.bim", ["rs1", "rs2", "rs3", "rs4"])
    b = snps("b.bim", ["rs1", "rs2", "rs3"])
    c = snps("c.bim", ["rs2", "rs1", "rs3", "rs4", "rs9"])
    with pytest.raises(InputValidationError) as error:
        align_snps([a, b, c])
    message = str(error.value)
    assert "3 SNPs common to every site, 5 in all" in message
    assert "a.bim (4 SNPs) lacks 1: ['rs9']" in message
    assert "b.bim (3 SNPs) lacks 2: ['rs4', 'rs9']" in message
    assert "c.bim" not in message  # it has every SNP
    assert "plink --extract" in message


def test_the_same_id_with_other_alleles_or_position_is_refused_with_both_records():
    a = snps("a.bim", ["rs1", "rs2", "rs3"])
    swapped = snps(
        "b.bim",
        ["rs3", "rs2", "rs1"],
        alleles=[("A", "G"), ("G", "A"), ("A", "G")],
        positions=[300, 200, 100],
    )
    with pytest.raises(
        InputValidationError,
        match=r"b\.bim and a\.bim describe 1 SNP.*rs2: 1:200 A/G vs 1:200 G/A \(alleles swapped",
    ):
        align_snps([a, swapped])
    moved = snps("c.bim", ["rs1", "rs2", "rs3"], positions=[100, 200, 999])
    with pytest.raises(InputValidationError, match=r"rs3: 1:300 A/G vs 1:999 A/G"):
        align_snps([a, moved])
    other = snps("d.bim", ["rs1", "rs2", "rs3"], chromosome="2")
    with pytest.raises(
        InputValidationError, match=r"describe 3 SNP\(s\) differently.*rs1: 1:100 A/G vs 2:100 A/G"
    ):
        align_snps([a, other])


def test_alignment_of_identical_lists_needs_no_reordering():
    a = snps("a.bim", ["rs1", "rs2"])
    assert align_snps([a, snps("b.bim", ["rs1", "rs2"])]) == (("rs1", "rs2"), [None, None])
    with pytest.raises(InputValidationError, match=r"x\.bim: SNP id\(s\) repeated: \['rs1'\]"):
        align_snps([a, snps("x.bim", ["rs1", "rs1"])])


# Bad filesets: each refused before any genotype is decoded, naming the file, the value and the limit.


def test_a_missing_bim_or_fam_is_named(written):
    path, _ = written
    for suffix, role in ((".bim", "SNP list"), (".fam", "individuals")):
        companion = path.with_suffix(suffix)
        kept = companion.read_bytes()
        companion.unlink()
        with pytest.raises(
            InputValidationError, match=rf"{re.escape(str(companion))} does not exist: the {role}"
        ):
            BedFile(path)
        companion.write_bytes(kept)
    BedFile(path)  # restored: readable again


def test_a_truncated_bed_is_refused_with_both_sizes(written):
    path, _ = written
    data = path.read_bytes()
    assert len(data) == 3 + 11 * 10
    path.write_bytes(data[:-7])
    with pytest.raises(InputValidationError) as error:
        BedFile(path)
    assert str(error.value).startswith(f"{path}: 106 bytes, but its .bim lists 11 SNPs and its .fam 37")
    assert "3 + 11 x 10 = 113 bytes: the file is truncated" in str(error.value)


def test_a_fam_whose_count_disagrees_is_refused(written):
    path, _ = written
    fam = path.with_suffix(".fam")
    lines = fam.read_text().splitlines()
    fam.write_text("\n".join([*lines, *(f"extra p{i} 0 0 0 -9" for i in range(37, 41))]) + "\n")
    with pytest.raises(
        InputValidationError, match=r"its \.fam 41 individuals, which need 3 \+ 11 x 11 = 124 bytes"
    ):
        BedFile(path)
    fam.write_text("\n".join(lines[:-1]) + "\n")  # 36 individuals: 9 bytes per SNP, not 10
    with pytest.raises(
        InputValidationError,
        match=r"\.fam 36 individuals, which need 3 \+ 11 x 9 = 102 bytes: the file is longer",
    ):
        BedFile(path)


def test_a_repeated_snp_id_is_refused_with_the_file_and_id(tmp_path):
    path = write(tmp_path / "dup.bed", genotypes(5, 3), ids=["rs1", "rs2", "rs1"], positions=[1, 2, 3])
    with pytest.raises(InputValidationError, match=r"dup\.bim: 1 SNP id\(s\) repeated: \['rs1'\]"):
        BedFile(path)


@pytest.mark.parametrize(
    ("head", "message"),
    [
        (b"\x00\x00\x01", r"starts with bytes 00 00, not 6c 1b: not a PLINK 1 \.bed file"),
        (b"\x6c\x1b\x00", r"mode byte 00, not 01: only SNP-major \.bed files are read"),
    ],
    ids=["bad-magic", "individual-major"],
)
def test_a_bed_that_is_not_snp_major_plink1_is_refused(written, head, message):
    path, _ = written
    path.write_bytes(head + path.read_bytes()[3:])
    with pytest.raises(InputValidationError, match=rf"{re.escape(str(path))}: {message}"):
        BedFile(path)


def test_malformed_bim_lines_are_named(tmp_path):
    bim = tmp_path / "x.bim"
    bim.write_text("1 rs1 0 100 A G\n1 rs2 0 200 C\n")
    with pytest.raises(InputValidationError, match=r"x\.bim: line 2 has fewer than 6 fields"):
        read_bim(bim)
    bim.write_text("1 rs1 0 100 A G\n1 rs2 0 2e5 C T\n")
    with pytest.raises(
        InputValidationError, match=r"x\.bim: line 2 has position '2e5'; column 4 must be an integer"
    ):
        read_bim(bim)
    bim.write_text("")
    with pytest.raises(
        InputValidationError, match=r"x\.bim: the file is empty; it must list at least one SNP"
    ):
        read_bim(bim)


def test_without_the_extra_the_error_names_pip_install_and_the_extra(written, monkeypatch):
    path, _ = written
    monkeypatch.setitem(sys.modules, "bed_reader", None)  # `import bed_reader` now raises ImportError
    with pytest.raises(InputValidationError) as error:
        BedFile(path)
    assert (
        str(error.value)
        == f"reading {path} needs bed-reader, which is not installed: pip install 'mpc-pca[genotype]'"
    )


# `--data site.bed`: the data-input dispatch (mpc_pca.data.inputs).


def test_data_bed_files_are_aligned_sites_with_their_notes(tmp_path):
    from mpc_pca.data.inputs import ReadOptions, provider_data

    d = 6
    pooled = genotypes(20, d, seed=5)
    ids = [f"rs{j}" for j in range(d)]
    order = [3, 0, 5, 1, 4, 2]
    a = write(tmp_path / "a.bed", pooled[:8], ids=ids)
    b = write(tmp_path / "b.bed", pooled[8:][:, order], ids=[ids[j] for j in order])
    data = provider_data([str(a), str(b)], ReadOptions())
    assert data.names == tuple(ids) and [t.values.shape for t in data.tables] == [(8, d), (12, d)]
    expected = np.vstack([site_mean_imputed(pooled[:8]), site_mean_imputed(pooled[8:])])
    np.testing.assert_allclose(np.vstack(data.parts), expected, rtol=0, atol=1e-15)
    assert sum("this site's own mean" in note for note in data.notes) == 2


def test_data_bed_files_with_different_alleles_are_refused_before_any_genotype_is_read(tmp_path, monkeypatch):
    import mpc_pca.data.plink as plink
    from mpc_pca.data.inputs import ReadOptions, provider_data

    values = genotypes(5, 3)
    a = write(tmp_path / "a.bed", values)
    b = write(tmp_path / "b.bed", values, alleles=("G", "A"))
    monkeypatch.setattr(plink, "BedFile", None)  # reading a genotype now fails loudly
    with pytest.raises(
        InputValidationError, match=r"b\.bim and .*a\.bim describe 3 SNP\(s\) differently.*alleles swapped"
    ):
        provider_data([str(a), str(b)], ReadOptions())


# Between hosts: each `mpc-pca party` announces its SNP list's digests; pppca-randomized refuses a site whose
# .bim describes a SNP differently (swapped alleles named as such) before any sum is sent.


def _party_run(paths, settings, chunk_rows=7):
    """Every party's ``prepare`` and ``build``, as its process runs them, on its own ``.bed``; the roles as threads."""
    from mpc_pca.deploy import FileSource, LinkOptions, PartySpec
    from mpc_pca.deploy.party import prepare
    from mpc_pca.registry import deployment as registered
    from protocols.runtime import run_inprocess

    deployment = registered("pppca-randomized")
    links = LinkOptions("127.0.0.1:1", insecure=True)
    layout = deployment.layout(len(paths))
    sources = [FileSource(str(p), chunk_rows=chunk_rows) for p in paths]
    specs = {
        name: PartySpec(
            "pppca-randomized", name, len(paths), links, sources[i] if i < len(paths) else None, settings
        )
        for i, name in enumerate(layout)
    }
    prepared = {name: prepare(spec, deployment) for name, spec in specs.items()}
    views = {name: p[2] for name, p in prepared.items()}
    built = {name: p[3](views) for name, p in prepared.items()}  # refusals raise here, before any role runs
    run = run_inprocess({name: role for name, (_config, role) in built.items()}, timeout=60)
    return views, {name: deployment.result(name, built[name][0], run.outputs[name]) for name in layout}


WIDE = {"n_components": 3, "iterated_power": 20, "tol": 1e-12, "start_seed": 5, "standardize": True}


def test_uneven_party_sites_in_their_own_snp_orders_equal_the_in_process_run(tmp_path):
    """Sites of 1, 2 (fewer than k = 3) and 40 individuals, one in another .bim order, with missing calls."""
    from mpc_pca.registry import entry
    from mpc_pca.threads import run_protocol

    d = 12
    pooled = genotypes(43, d, seed=8)
    pooled[0, :] = np.where(np.isnan(pooled[0, :]), 1.0, pooled[0, :])  # the one-row site calls every SNP
    ids = [f"rs{j}" for j in range(d)]
    order = [5, 2, 11, 0, 9, 1, 7, 3, 10, 4, 8, 6]
    paths = [
        write(tmp_path / "one.bed", pooled[:1], ids=ids),
        write(tmp_path / "two.bed", pooled[1:3][:, order], ids=[ids[j] for j in order]),
        write(tmp_path / "forty.bed", pooled[3:], ids=ids),
    ]
    views, results = _party_run(paths, WIDE)
    assert (
        views["provider0"]["snp_digests"]
        == views["provider1"]["snp_digests"]
        == views["provider2"]["snp_digests"]
    )
    assert "snp_digests" not in views["server"]
    assert all(views[f"provider{i}"]["columns"] is None for i in range(3))  # no SNP id is announced
    canonical = sorted(range(d), key=ids.__getitem__)  # each site reads its SNPs by id: rs0, rs1, rs10
    parts = [site_mean_imputed(p)[:, canonical] for p in (pooled[:1], pooled[1:3], pooled[3:])]
    threads = run_protocol(entry("pppca-randomized"), parts, WIDE)
    np.testing.assert_allclose(results["server"]["components"], threads.output.components, rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        results["server"]["explained_variance"], threads.output.explained_variance, rtol=1e-10
    )
    for i in range(3):
        np.testing.assert_allclose(
            results[f"provider{i}"]["scores"],
            threads.run.outputs[f"provider{i}"]["scores"],
            rtol=0,
            atol=1e-10,
        )
    assert all(results[f"provider{i}"]["feature_names"] == [ids[j] for j in canonical] for i in range(3))
    assert results["server"]["feature_order"] == "snp_id"
    assert results["server"]["snp_digests"] == views["provider0"]["snp_digests"]
    assert np.shape(results["provider0"]["scores"]) == (1, 3) and np.shape(
        results["provider1"]["scores"]
    ) == (2, 3)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"alleles": ("G", "A")},
            "swapped (allele_1 and allele_2 exchanged): its dosages would count the other",
        ),
        ({"alleles": ("A", "T")}, "at least one SNP with another chromosome, position or allele pair"),
        (
            {"positions": [1000, 1010, 1021]},
            "at least one SNP with another chromosome, position or allele pair",
        ),
    ],
)
def test_party_sites_whose_bim_records_differ_are_refused_from_their_digests(tmp_path, change, said):
    values = genotypes(9, 3, seed=4)
    a = write(tmp_path / "a.bed", values[:5])
    b = write(tmp_path / "b.bed", values[5:], **change)
    with pytest.raises(InputValidationError) as caught:
        _party_run([a, b], WIDE)
    message = str(caught.value)
    assert message.startswith("provider1's .bim and provider0's describe the agreed SNPs differently")
    assert said in message and "before any sum is sent" in message and "align_bed_files" in message
    # in process, the same files are refused by the .bim comparison with the SNP and both records named
    with pytest.raises(InputValidationError, match=r"rs\d: 1:10\d0 A/G vs 1:10\d\d [AGT]/[AGT]"):
        align_snps([read_bim(a.with_suffix(".bim")), read_bim(b.with_suffix(".bim"))])


def test_swapped_alleles_are_refused_before_anything_is_sent(tmp_path):
    from mpc_pca.data.genotype_part import BedPart
    from mpc_pca.data.inputs import ReadOptions
    from mpc_pca.registry import entry
    from mpc_pca.threads import run_protocol
    from protocols.testing.recording import Recorder

    values = genotypes(12, 4, seed=6)
    parts = [
        BedPart(write(tmp_path / "a.bed", values[:6]), ReadOptions(), 4),
        BedPart(write(tmp_path / "b.bed", values[6:], alleles=("G", "A")), ReadOptions(), 4),
    ]
    recorder = Recorder()
    with pytest.raises(InputValidationError, match=r"provider1.s \.bim and provider0.s .*alleles swapped"):
        run_protocol(entry("pppca-randomized"), parts, WIDE, wrap_channel=recorder.wrap)
    assert recorder.deliveries == []  # refused before anything is sent


def test_a_party_with_a_truncated_bed_or_a_bim_of_other_snps_stops_before_it_announces(tmp_path):
    from mpc_pca.deploy import FileSource, LinkOptions, PartySpec
    from mpc_pca.deploy.party import prepare
    from mpc_pca.registry import deployment as registered

    values = genotypes(10, 8, seed=2)
    path = write(tmp_path / "site.bed", values)
    spec = PartySpec("pppca-randomized", "provider0", 2, LinkOptions("127.0.0.1:1", insecure=True),
                     FileSource(str(path), chunk_rows=4), WIDE)  # fmt: skip
    bim = path.with_suffix(".bim")
    lines = bim.read_text().splitlines()
    bim.write_text("\n".join(lines[:-1]) + "\n")  # a .bim not written with this .bed: one SNP fewer
    with pytest.raises(
        InputValidationError,
        match=r"its \.bim lists 7 SNPs and its \.fam 10 .* = 24 bytes: the file is longer",
    ):
        prepare(spec, registered("pppca-randomized"))  # prepare: everything a party does before it sends
    bim.write_text("\n".join(lines) + "\n")
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(
        InputValidationError, match=r"site\.bed: 26 bytes, .* = 27 bytes: the file is truncated"
    ):
        prepare(spec, registered("pppca-randomized"))


def test_a_pppca_randomized_party_on_a_bed_never_reads_d_by_d_statistics(tmp_path, monkeypatch):
    """A site of d SNPs keeps O(d) sums: the d x d scatter PPPCA's providers read is never computed."""
    from mpc_pca.pppca.chunked import ChunkedPart

    def refused(self):
        raise AssertionError("a pppca-randomized site computed d x d statistics")

    values = genotypes(20, 30, seed=9)
    paths = [write(tmp_path / "a.bed", values[:8]), write(tmp_path / "b.bed", values[8:])]
    monkeypatch.setattr(ChunkedPart, "statistics", refused)
    _views, results = _party_run(paths, WIDE)
    assert np.shape(results["server"]["components"]) == (3, 30)
