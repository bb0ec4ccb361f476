"""Each registered study measures its cheapest quick point, then tabulates, decides its claims and plots.

One point per study keeps this a bounded smoke test (the quick sizes
themselves are run from the command line, see docs/howto/studies.md).
"""

from __future__ import annotations

import dataclasses

import pytest

from mpc_pca.studies.framework import load_records, run_study
from mpc_pca.studies.registry import load_study, study_table
from mpc_pca.studies.report import write_report

#: The cheapest point of each study's quick size.
CHEAPEST = {
    "backends": "inprocess/d=13/M=2",
    "aaai2020-table3": "round=0",
    "icassp2016-table1": "synthetic/train=400",
    "lossless": "diabetes/fold=0",
    "icassp2018": "icassp2018/synthetic/epsilon=10",
    "icassp2016-fig1": "icassp2016/synthetic2016/epsilon=5",
    "dsc2018-fig3": "owners=2",
    "dsc2018-fig4": "samples_per_owner=3",
    "dsc2018-fig5": "epsilon=2",
    "scaling": "d/n=20000/d=10/M=4",
    "jstsp-capeagn": "mog/epsilon=8",
    "dp-noise": "synthetic/epsilon=5",
    "network": "model/ss-shares/rtt=0ms/bw=100Mbit",
}


def test_every_study_has_a_smoke_point():
    assert set(CHEAPEST) == set(study_table())


@pytest.mark.parametrize("name", sorted(CHEAPEST))
def test_study_smoke(name, tmp_path):
    study = load_study(name)
    quick_points = study.points(True, {})
    chosen = [p for p in quick_points if p["key"] == CHEAPEST[name]]
    assert len(chosen) == 1, [p["key"] for p in quick_points]
    one = dataclasses.replace(study, points=lambda quick, options: [dict(p) for p in chosen])
    summary = run_study(one, tmp_path, quick=True, progress=False, log=lambda _: None)
    assert summary.measured == 1 and summary.plots and all(p.stat().st_size > 0 for p in summary.plots)
    (record,) = load_records(summary.results)
    assert set(record) - set(chosen[0]) - {"point_seconds"}, "the measurement added nothing"
    md = write_report(tmp_path)[0].read_text()
    assert f"## {name} (quick size)" in md
    if len(quick_points) > 1:  # aaai2020-table3's quick size is one round
        assert f"1 of {len(quick_points)} points measured (the run was stopped" in md
    else:
        assert "1 of 1 points measured." in md
    assert "|---|" in md and "![" in md and "Machine:" in md
    assert "## Per paper: every table and figure, and its verdicts" in md
    for item in study.reproduces:
        assert f"study `{name}` (quick size)" in md, item
    if study.claims(load_records(summary.results)):
        assert "### Claims" in md
