"""The study framework: resume, quick/full separation, default output folder, report verdicts, CLI errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpc_pca.cli.app import main
from mpc_pca.cli.options import EXIT_INPUT
from mpc_pca.studies import registry, report
from mpc_pca.studies.framework import append_record, load_records, results_path, run_study
from protocols.errors import InputValidationError
from tests.studies import toy

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the toy study next to the real ones and reset its call log."""
    table = {**registry.study_table(), "toy": "tests.studies.toy:STUDY"}
    monkeypatch.setattr(registry, "study_table", lambda: dict(table))
    monkeypatch.setattr(report, "study_table", lambda: dict(table))
    toy.CALLS.clear()
    monkeypatch.setattr(toy, "STOP_AT", [None])


def _run(out: Path, **kw) -> object:
    return run_study(toy.STUDY, out, progress=False, log=lambda _: None, **kw)


def test_stopped_run_keeps_its_points_and_rerun_measures_only_the_rest(tmp_path, toy_registered):
    toy.STOP_AT[0] = "n=3"
    with pytest.raises(toy.StoppedError):
        _run(tmp_path)
    stored = load_records(results_path(tmp_path, "toy", quick=False))
    assert [r["key"] for r in stored] == ["n=1", "n=2"]
    assert toy.CALLS == ["n=1", "n=2"]
    toy.STOP_AT[0] = None
    summary = _run(tmp_path)
    assert toy.CALLS == ["n=1", "n=2", "n=3", "n=4"]  # n=1, n=2 not measured again
    assert (summary.measured, summary.skipped, summary.total) == (2, 2, 4)
    stored = load_records(results_path(tmp_path, "toy", quick=False))
    assert [r["key"] for r in stored] == ["n=1", "n=2", "n=3", "n=4"]
    # a third run has nothing left to do
    assert _run(tmp_path).measured == 0
    assert len(toy.CALLS) == 4


def test_a_write_cut_short_is_dropped_and_remeasured(tmp_path, toy_registered):
    _run(tmp_path)
    path = results_path(tmp_path, "toy", quick=False)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]) + lines[3][:7])  # killed while writing the last record
    assert [r["key"] for r in load_records(path)] == ["n=1", "n=2", "n=3"]
    toy.CALLS.clear()
    _run(tmp_path)
    assert toy.CALLS == ["n=4"]
    assert [r["key"] for r in load_records(path)] == ["n=1", "n=2", "n=3", "n=4"]


def test_quick_never_touches_full_results(tmp_path, toy_registered):
    _run(tmp_path)
    full = results_path(tmp_path, "toy", quick=False)
    before = full.read_bytes()
    summary = _run(tmp_path, quick=True)
    assert summary.results == results_path(tmp_path, "toy", quick=True) != full
    assert summary.measured == 2  # the full run's points are not reused as quick ones
    assert full.read_bytes() == before


def test_cli_default_out_is_a_fresh_folder_under_cwd(tmp_path, monkeypatch, toy_registered, capsys):
    results = REPO / "benchmarks" / "results"
    snapshot = {p: p.stat().st_mtime_ns for p in results.rglob("*")} if results.exists() else {}
    monkeypatch.chdir(tmp_path)
    assert main(["study", "toy", "--quick", "--no-progress"]) == 0
    assert main(["study", "toy", "--quick", "--no-progress"]) == 0
    folders = sorted(tmp_path.iterdir())
    assert len(folders) == 2 and all(f.name.startswith("mpc-pca-studies-") for f in folders)
    for folder in folders:
        assert (folder / "toy_quick.jsonl").exists() and not (folder / "toy.jsonl").exists()
        assert (folder / "REPORT.md").exists() and (folder / "REPORT.html").exists()
    after = {p: p.stat().st_mtime_ns for p in results.rglob("*")} if results.exists() else {}
    assert after == snapshot


def test_report_verdict_follows_the_data(tmp_path, toy_registered):
    path = results_path(tmp_path, "toy", quick=False)
    for n, value in ((1, 2.0), (2, 3.0)):
        append_record(path, {"key": f"n={n}", "n": n, "scale": 1.0, "value": value})
    md, html = report.write_report(tmp_path)
    text = md.read_text()
    assert "REPRODUCED — toy paper: every value is below 10 (largest value 3)" in text
    assert "2 of 4 points measured (the run was stopped" in text
    assert "| 2 | 3 |" in text and "![toy](toy.png)" in text
    assert "data:image/png;base64," in html.read_text()
    append_record(path, {"key": "n=3", "n": 3, "scale": 1.0, "value": 12.5})
    text = report.write_report(tmp_path)[0].read_text()
    assert "NOT reproduced — toy paper: every value is below 10 (largest value 12.5)" in text


def test_cli_option_reaches_the_points(tmp_path, toy_registered):
    assert main(["study", "toy", "--out", str(tmp_path), "--option", "scale=20", "--no-progress"]) == 0
    text = (tmp_path / "REPORT.md").read_text()
    assert "NOT reproduced — toy paper: every value is below 10 (largest value 80)" in text


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["study", "no-such-study"], ["no-such-study", "backends", "scaling"]),
        (["study"], ["--list"]),
        (["study", "lossless", "--option", "colour=red"], ["colour", "csv"]),
        (["study", "lossless", "--option", "csv"], ["KEY=VALUE"]),
    ],
)
def test_cli_bad_input_is_a_clear_error(argv, words, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "out"), "--no-progress"]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert all(w in err for w in words), err
    assert not (tmp_path / "out" / "lossless.jsonl").exists()


def test_report_of_a_folder_without_results_is_an_error(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == EXIT_INPUT
    assert "holds no study results" in capsys.readouterr().err
    with pytest.raises(InputValidationError, match="unknown study 'nope'"):
        registry.load_study("nope")


def test_list_names_every_study(capsys):
    assert main(["study", "--list"]) == 0
    out = capsys.readouterr().out
    for name in registry.study_table():
        assert out.count(f"\n{name} ") + out.startswith(f"{name} ") == 1, name
