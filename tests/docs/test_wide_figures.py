"""The population-structure how-to quotes the full-size wide benchmark as ``benchmarks/results/wide.json`` has it.

A stale number is a defect: when ``bench_wide`` is re-run, the table under
"Measured at full size" (and the figures of the paragraph after it) must be
re-quoted, or this test fails naming the row.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "howto" / "population-structure.md"
RESULTS = ROOT / "benchmarks" / "results" / "wide.json"


def table_rows(text: str) -> dict[str, tuple[str, str]]:
    """The rows of the table after the ``wide-figures`` marker: label -> (measured, target)."""
    block = text.split("<!-- wide-figures:", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in block.splitlines()[3:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = (cells[1], cells[2])
    return rows


def same(quoted: str, value: float) -> bool:
    """``quoted`` (a number as printed, with its own precision) is ``value`` rounded to that precision."""
    number = float(quoted.split()[0].replace(",", ""))
    digits = quoted.split()[0]
    if "e" in digits:
        mantissa = digits.split("e")[0]
        places = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return f"{value:.{places}e}" == digits
    places = len(digits.split(".")[1]) if "." in digits else 0
    return round(value, places) == number


@pytest.fixture(scope="module")
def results() -> dict:
    payload = json.loads(RESULTS.read_text())
    assert not payload["quick"], "the published wide.json must be the full-size run"
    return payload


def test_the_table_quotes_the_published_results(results):
    summary, runs = results["summary"], results["in_memory"]
    expected = {
        "secure vs plaintext from the same start, largest difference": (
            summary["secure_minus_plaintext_same_start"], summary["target_same_start"]),
        "top 4 (structure) components vs exact, subspace sine": (
            summary["structure_subspace_sine"], summary["target_structure"]),
        "top 4 eigenvalues vs exact, largest relative error": (
            summary["structure_eigenvalue_relative_error"], summary["target_structure"]),
        '`iterates="server"` / plaintext (wall)': (summary["time_ratio_wall"], summary["target_time_ratio"]),
        '`iterates="sites"` / plaintext (wall)': (
            summary["sites_mode_time_ratio_wall"], summary["target_time_ratio"]),
        "k-means agreement of the secure scores with the exact ones": (
            summary["cluster_agreement_secure_vs_exact"], summary["target_cluster_agreement"]),
        'bytes sent per site (`iterates="server"`)': (
            max(t["bytes_sent"] for n, t in runs["traffic"].items() if n != "server") / 1e6, None),
        "products (rounds)": (runs["versus_plaintext"]["n_products"], None),
    }  # fmt: skip
    rows = table_rows(PAGE.read_text())
    assert len(rows) == len(expected), sorted(rows)
    for label, (value, target) in expected.items():
        (key,) = [row for row in rows if row.endswith(label)]
        measured, quoted_target = rows[key]
        assert same(measured, value), f"{key!r}: the page says {measured}, wide.json has {value!r}"
        if target is not None:
            assert float(quoted_target) == target, key
            assert value <= target if "agreement" not in key else value >= target, key


def test_the_bulk_and_memory_figures_are_the_published_ones(results):
    text = " ".join(PAGE.read_text().split("## Measured at full size", 1)[1].split())
    exact = results["versus_exact"]["exact_eigenvalues"][4:]
    ours = results["versus_exact"]["secure_vs_exact"]["eigenvalue_relative_errors"][4:]
    theirs = results["versus_exact"]["sklearn_vs_exact"]["eigenvalue_relative_errors"][4:]
    assert f"({exact[0]:.1f} down to {exact[-1]:.1f})" in text
    assert f"{100 * min(ours):.1f} to {100 * max(ours):.1f} % low here" in text
    assert f"{100 * min(theirs):.1f} to {100 * max(theirs):.1f} % low on the same rows" in text
    stream = results["memory"]["stream"]
    assert (
        f"peaked at {stream['peak_rss_bytes'] / 1e9:.2f} GB against a bound of {stream['bound_bytes'] / 1e9:.2f} GB"
        in text
    )
    assert re.search(rf"resolves in {results['in_memory']['versus_plaintext']['n_products']} products", text)
