"""What a pppca-randomized party announces between hosts about its columns: .bed sites no names, in id order."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.data.inputs import ReadOptions
from mpc_pca.deploy import ArraySource, FileSource, LinkOptions, PartySpec
from mpc_pca.deploy.party import prepare
from mpc_pca.registry import deployment as registered
from protocols.errors import InputValidationError

SETTINGS = {"n_components": 2, "iterated_power": 2, "start_seed": 1}


def _prepared(sources):
    """Every party's ``prepare`` (what it checks and announces before it sends anything)."""
    deployment = registered("pppca-randomized")
    links = LinkOptions("127.0.0.1:1", insecure=True)
    layout = deployment.layout(len(sources))
    return {
        name: prepare(
            PartySpec("pppca-randomized", name, len(sources), links, sources[i] if i < len(sources) else None,
                      SETTINGS),
            deployment,
        )
        for i, name in enumerate(layout)
    }  # fmt: skip


def test_a_bed_site_reads_its_snps_in_id_order_sharing_the_files_imputation(tmp_path):
    pytest.importorskip("bed_reader", reason="the genotype extra is not installed")
    from mpc_pca.data.genotype_part import BedPart
    from tests.helpers.genotypes import genotypes, write

    values = genotypes(9, 12, seed=3)
    part = BedPart(write(tmp_path / "a.bed", values), ReadOptions(), chunk_rows=4)
    part.scan()
    ordered = part.in_id_order()
    canonical = sorted(range(12), key=lambda j: f"rs{j}")  # rs0, rs1, rs10, rs11, rs2, ..
    assert ordered.names == tuple(f"rs{j}" for j in canonical) and part.names[2] == "rs2"
    assert np.array_equal(np.vstack(list(ordered.chunks())), np.vstack(list(part.chunks()))[:, canonical])
    assert ordered.snp_digests == part.snp_digests
    assert ordered.in_id_order() is ordered  # already in id order: itself


def test_a_bed_site_announces_no_snp_id_only_its_digests(tmp_path):
    pytest.importorskip("bed_reader", reason="the genotype extra is not installed")
    from tests.helpers.genotypes import genotypes, write

    values = genotypes(10, 6, seed=2)
    paths = [write(tmp_path / "a.bed", values[:5]), write(tmp_path / "b.bed", values[5:])]
    prepared = _prepared([FileSource(str(p), chunk_rows=3) for p in paths])
    public = prepared["provider0"][2]
    assert public["columns"] is None and public["n_features"] == 6 and len(public["snp_digests"]) == 2
    assert not any("rs" in str(value) for value in public.values())


def test_a_bed_site_beside_a_named_table_is_refused_naming_both(tmp_path):
    pytest.importorskip("bed_reader", reason="the genotype extra is not installed")
    from tests.helpers.genotypes import genotypes, write

    values = genotypes(10, 6, seed=2)
    sources = [
        FileSource(str(write(tmp_path / "a.bed", values[:5])), chunk_rows=3),
        ArraySource(np.nan_to_num(values[5:], nan=1.0), tuple(f"rs{j}" for j in range(6))),
    ]
    prepared = _prepared(sources)
    views = {name: p[2] for name, p in prepared.items()}
    with pytest.raises(InputValidationError, match=r"provider0 read a \.bed file .* but provider1 announced column "
                       r"names \(not a \.bed file\).*give every site a \.bed file"):  # fmt: skip
        prepared["server"][3](views)


def test_a_named_table_too_wide_for_the_first_message_is_refused_before_it_is_sent():
    names = tuple(f"feature_{j}" for j in range(70_000))
    values = np.random.default_rng(0).normal(size=(3, 70_000))
    with pytest.raises(
        InputValidationError,
        match=r"provider0's announcement would be [\d,]+ bytes with its 70,000 column names; between hosts a "
        r"party's first message is at most 1,044,480 bytes.*as PLINK \.bed files with pppca-randomized",
    ):
        _prepared([ArraySource(values, names), ArraySource(values, names)])


def test_threads_on_bed_parts_in_other_orders_read_both_in_id_order_and_name_no_column(tmp_path):
    """run_protocol on BedParts: the server's model is labelled by the id order, never by a caller's names."""
    pytest.importorskip("bed_reader", reason="the genotype extra is not installed")
    from mpc_pca.data.genotype_part import BedPart
    from mpc_pca.registry import entry
    from mpc_pca.threads import run_protocol
    from tests.helpers.genotypes import genotypes, write

    values = np.nan_to_num(genotypes(14, 12, seed=5, missing=0.0), nan=1.0)
    ids = [f"rs{j}" for j in range(12)]
    order = [7, 3, 11, 0, 9, 1, 5, 2, 10, 4, 8, 6]
    parts = [
        BedPart(write(tmp_path / "a.bed", values[:6], ids=ids), ReadOptions(), 4),
        BedPart(
            write(tmp_path / "b.bed", values[6:][:, order], ids=[ids[j] for j in order]), ReadOptions(), 4
        ),
    ]
    for part in parts:
        part.scan()
    run = run_protocol(entry("pppca-randomized"), parts, SETTINGS, feature_names=ids)
    canonical = sorted(range(12), key=ids.__getitem__)
    arrays = run_protocol(
        entry("pppca-randomized"), [values[:6][:, canonical], values[6:][:, canonical]], SETTINGS
    )
    # the same columns (chunks of 4 rows sum in another order than whole arrays: rounding only)
    np.testing.assert_allclose(run.output.components, arrays.output.components, rtol=0, atol=1e-12)
    result = run.result(ids)
    assert result["feature_names"] is None and result["feature_order"] == "snp_id"
