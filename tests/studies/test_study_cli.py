"""``mpc-pca study --list`` names a study for every paper table and figure; ``study all`` runs every study."""

from __future__ import annotations

import argparse

import pytest

from mpc_pca.cli import studies as cli
from mpc_pca.studies import framework, registry, report

#: The rows of issue 27's table: (paper, table or figure) -> the text --list must show for it.
PAPER_ROWS = [
    "AAAI 2020: Tables 1-2",
    "AAAI 2020: Table 3",
    "ICASSP 2018: Fig. 1 (a-f)",
    "ICASSP 2018: Fig. 1 (g-l)",
    "ICASSP 2018: Fig. 2",
    "ICASSP 2018: 'distributed beats local'",
    "ICASSP 2016: Fig. 1",
    "ICASSP 2016: Fig. 2",
    "ICASSP 2016: Table 1",
    "DSC 2018: Fig. 3",
    "DSC 2018: Fig. 4",
    "DSC 2018: Fig. 5",
    "JSTSP 2018: capePCA = pooled",
    "JSTSP 2018: capeAGN",
]


def _args(**kw) -> argparse.Namespace:
    base = {"list": False, "name": None, "quick": False, "out": None, "option": [], "no_progress": True,
            "no_report": False}  # fmt: skip
    return argparse.Namespace(**{**base, **kw})


def test_list_names_a_study_for_every_paper_row(capsys):
    assert cli.study_command(_args(list=True)) == 0
    listing = capsys.readouterr().out
    for row in PAPER_ROWS:
        assert f"reproduces {row}" in listing, row
    for name in registry.study_table():
        assert listing.count(f"\n{name} ") + listing.startswith(f"{name} ") == 1, name


def test_every_study_says_what_it_reproduces_or_is_the_projects_own():
    own = {"scaling", "dp-noise", "network"}
    for name in registry.study_table():
        study = registry.load_study(name)
        assert bool(study.reproduces) != (name in own), name
        assert all(": " in item for item in study.reproduces), study.reproduces


def test_study_all_runs_every_registered_study_into_one_folder(monkeypatch, tmp_path):
    ran = []

    def fake_run(study, out, *, quick, options, progress):
        ran.append((study.name, out, quick))
        path = framework.results_path(out, study.name, quick)
        return framework.RunSummary(path, 0, 0, 0, [], 0.0)

    monkeypatch.setattr(framework, "run_study", fake_run)
    monkeypatch.setattr(report, "write_report", lambda folder: (folder / "REPORT.md", folder / "REPORT.html"))
    assert cli.study_command(_args(name="all", quick=True, out=tmp_path)) == 0
    assert [r[0] for r in ran] == list(registry.study_table())
    assert {(r[1], r[2]) for r in ran} == {(tmp_path, True)}


def test_study_all_refuses_options():
    from protocols.errors import InputValidationError

    with pytest.raises(InputValidationError, match="applies to one study"):
        cli.study_command(_args(name="all", option=["csv=x.csv"], out=None))


def test_paper_index_quotes_a_claim_under_its_own_paper_even_from_another_papers_study(tmp_path):
    from mpc_pca.studies import dp_utility

    rows = []
    for eps in (0.1, 10.0):
        base = [0.4, 0.5, 0.6] if eps < 1 else [0.95, 0.96, 0.97]
        ratios = {m: list(base) for m in dp_utility.ICASSP18_METHODS}
        rows.append({"key": f"icassp2018/synthetic/epsilon={eps:g}", "part": "icassp2018", "dataset": "synthetic",
                     "axis": "epsilon", "value": eps, "reps": 3, "quick": True, "ratios": ratios})  # fmt: skip
    for row in rows:
        framework.append_record(framework.results_path(tmp_path, "icassp2018", True), row)
    blocks = report.paper_index(tmp_path, [("icassp2018", True)])
    text = "\n".join(str(v) for _, v in blocks)
    jstsp = text.index("JSTSP 2018")
    assert "capePCA (paper calibration) captures as much energy as pooled" in text[jstsp:]
    assert "DPdisPCA's captured energy grows with epsilon" in text[:jstsp]
    assert "study `jstsp-capeagn` (not run in this folder)" in text
