"""docs/secure_tensor.md section 11 quotes ``benchmarks/results/offline.json`` as it is (a stale number is a defect)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.doc_quotes import flat

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "secure_tensor.md"
COST_MODULE = ROOT / "protocols" / "tensor" / "offline_cost.py"
RESULTS = ROOT / "benchmarks" / "results" / "offline.json"


def _phrases() -> list[str]:
    payload = json.loads(RESULTS.read_text())
    assert not payload["quick"] and (payload["d"], payload["k"], payload["providers"]) == (100, 5, 3)
    (at_2048,) = payload["by_key_size"]
    generated = at_2048["truncation_pairs"]["generated"]
    cpu = generated["cpu_seconds"]
    return [
        f"about {at_2048['triples']['seconds_per_provider']:.0f} s of CPU per provider for its matrix triples",
        f"took {generated['wall_seconds']:.1f} s wall for all three providers",
        f"{min(cpu):.1f} to {max(cpu):.1f} s of CPU and at most {max(generated['bytes_sent']) / 1e6:.0f} MB sent",
    ]


def test_section_11_quotes_the_published_offline_run():
    page = flat(PAGE.read_text())
    for phrase in _phrases():
        assert flat(phrase) in page, f"docs/secure_tensor.md section 11 should say: {phrase}"


def test_the_cost_module_quotes_the_same_run():
    payload = json.loads(RESULTS.read_text())
    (at_2048,) = payload["by_key_size"]
    generated = at_2048["truncation_pairs"]["generated"]
    text = flat(COST_MODULE.read_text())
    assert flat(f"decryptions: **{at_2048['triples']['seconds_per_provider']:.0f} s**") in text
    assert flat(f"holds {payload['requests']} items") in text
    assert flat(f"{generated['wall_seconds']:.1f} s wall, {min(generated['cpu_seconds']):.1f} to") in text
