"""Smoke test of the capeAGN study (``python -m benchmarks.study_capeagn --quick``)."""

from __future__ import annotations

import json

import pytest

from benchmarks.study_capeagn import METHODS, main


@pytest.mark.slow
def test_quick_study_writes_json_and_png(tmp_path, capsys):
    payload = main(["--quick", "--reps", "2", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "capeagn_study_quick.json").read_text())
    assert (tmp_path / "capeagn_study_quick.png").stat().st_size > 10_000
    assert saved["conclusions"] == json.loads(json.dumps(payload["conclusions"]))
    for model in ("stm", "mog"):
        points = saved["results"][model]["epsilon"] + saved["results"][model]["n"]
        assert len(points) == 5
        for point in points:
            assert set(point["summary"]) == set(METHODS)
            assert all(len(v) == 2 for v in point["errors"].values())
            # the non-private pipeline is far better than any private one at these sizes
            assert point["summary"]["non_private"]["mean"] < point["summary"]["capeagn"]["mean"]
