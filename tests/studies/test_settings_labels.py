"""Every DP study's settings are labelled by what they are: "paper's formula" only for the classical formula.

And a verdict pooled over a sweep reaches the report and CLAIMS.json with the verdict at each value beside it.
"""

from __future__ import annotations

import json

import numpy as np

from mpc_pca.studies import capeagn, dsc2018, dsc2018_fig5, report
from mpc_pca.studies.framework import append_record, results_path
from mpc_pca.studies.settings import ANALYTIC, CLASSICAL, Setting, paper_formula, settings


def _every_setting() -> list[Setting]:
    return [
        paper_formula(paper_delta=0.01),
        *settings(paper_delta=0.1).values(),
        *dsc2018.FIG4_SETTINGS.values(),
        *dsc2018_fig5.FIG5_SETTINGS.values(),
        *capeagn.CALIBRATIONS.values(),
    ]


def test_paper_formula_names_only_the_classical_gaussian():
    for setting in _every_setting():
        assert ("paper's formula (" in setting.label) == (setting.noise == "classical"), setting.label
        assert "paper's settings" not in setting.label  # the old label hid the analytic noise
    formula = paper_formula(paper_delta=0.01)
    assert formula.noise == "classical" and formula.neighbour == "add-remove"
    assert CLASSICAL in formula.label and "delta 0.01" in formula.label


def test_analytic_settings_that_keep_a_papers_choice_say_the_noise_is_this_projects():
    """A setting named after the paper but with analytic noise says so, in the label the claims end with."""
    papers = [s for s in _every_setting() if s.name == "paper"]
    assert len(papers) == 4 and all(s.noise == "analytic" for s in papers)
    assert (
        settings(paper_delta=0.1)["paper"].label
        == f"paper's neighbours and delta (add/remove, delta 0.1), {ANALYTIC}"
    )
    for s in papers:
        assert "this project's choice" in s.label and "not the paper's formula" in s.label, s.label


def test_report_and_claims_json_show_per_epsilon_verdicts_beside_the_pooled_one(tmp_path):
    """ICASSP 2016 Fig. 1 records where SN is behind PPM at eps 0.05 and 0.1 only."""
    path = results_path(tmp_path, "icassp2016-fig1", False)
    base = np.linspace(0.5, 0.6, 10)
    for eps, gap in {0.05: -0.1, 0.1: -0.1, 0.5: 0.1, 1.0: 0.1, 2.0: 0.1, 5.0: 0.1}.items():
        ratios = {"AG": base + 0.3, "PPM": base, "PPCA": base - 0.1, "SN": base + gap}
        append_record(path, {"key": f"icassp2016/synthetic2016/epsilon={eps:g}", "part": "icassp2016",
                             "dataset": "synthetic2016", "axis": "epsilon", "value": eps,
                             "ratios": {m: list(v) for m, v in ratios.items()}})  # fmt: skip
    md, _ = report.write_report(tmp_path)
    text = md.read_text()
    assert "REPRODUCED overall; per epsilon: 0.05 NOT reproduced, 0.1 NOT reproduced, 0.5 REPRODUCED" in text
    claims = json.loads((tmp_path / "CLAIMS.json").read_text())["icassp2016-fig1"]
    (pooled,) = [c for c in claims if c["text"].startswith("SN outperforms PPM over Fig. 1's epsilon range")]
    assert pooled["reproduced"] is True and pooled["per_axis"] == "epsilon"
    assert {p["value"]: p["reproduced"] for p in pooled["per_value"]} == {
        0.05: False, 0.1: False, 0.5: True, 1.0: True, 2.0: True, 5.0: True}  # fmt: skip
