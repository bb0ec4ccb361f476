"""The pages that quote other published benchmarks quote their JSON as it is.

A stale number is a defect: the tables and phrases of :mod:`benchmarks.doc_quotes`
are generated from ``benchmarks/results/*.json``; a re-run that is not re-quoted
(``python -m benchmarks.doc_quotes``) fails here, naming the page.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import doc_quotes
from benchmarks.doc_quotes import flat

ROOT = Path(__file__).resolve().parents[2]
RELAY_PAGE = ROOT / "docs" / "howto" / "relay.md"
NUMBERS_PAGE = ROOT / "docs" / "explanation" / "numbers.md"
ORGANISATIONS_PAGE = ROOT / "docs" / "tutorials" / "organisations.md"


def assert_quoted(page: Path, phrases: list[str]) -> None:
    text = flat(page.read_text())
    for phrase in phrases:
        assert flat(phrase) in text, (
            f"{page.relative_to(ROOT)} should say: {phrase} (python -m benchmarks.doc_quotes)"
        )


def test_relay_page_quotes_relay_json():
    payload = doc_quotes.load("relay")
    quoted = doc_quotes.quoted_table(RELAY_PAGE.read_text(), doc_quotes.RELAY_MARKER)
    assert quoted == doc_quotes.relay_table(payload), "re-quote: python -m benchmarks.doc_quotes"


def test_flower_page_quotes_flower_json():
    payload = doc_quotes.load("flower")
    assert payload["finished"] and not payload["command"].endswith("--quick"), payload["command"]
    quoted = doc_quotes.quoted_table(
        (ROOT / "docs" / "howto" / "flower.md").read_text(), doc_quotes.FLOWER_MARKER
    )
    assert quoted == doc_quotes.flower_table(payload), "re-quote: python -m benchmarks.doc_quotes"


def test_links_page_quotes_setup_json():
    quoted = doc_quotes.quoted_table(
        (ROOT / "docs" / "explanation" / "links.md").read_text(), doc_quotes.SETUP_MARKER
    )
    assert quoted == doc_quotes.setup_table(doc_quotes.load("setup")), (
        "re-quote: python -m benchmarks.doc_quotes"
    )


def test_numbers_page_quotes_startup_json():
    assert_quoted(NUMBERS_PAGE, doc_quotes.startup_phrases(doc_quotes.load("startup")))


def test_numbers_page_quotes_paillier_offline_online_json():
    assert_quoted(NUMBERS_PAGE, doc_quotes.paillier_phrases(doc_quotes.load("paillier_offline_online")))


def test_numbers_page_quotes_pppca_scaling_json():
    assert_quoted(NUMBERS_PAGE, doc_quotes.pppca_phrases(doc_quotes.load("pppca_scaling")))


def test_tutorial_quotes_paillier_json():
    phrases = doc_quotes.paillier_throughput_phrases(doc_quotes.load("paillier"))
    assert_quoted(ROOT / "docs" / "tutorials" / "ss-vs-paillier.md", phrases)


def test_both_pages_quote_links_json():
    phrases = doc_quotes.links_phrases(doc_quotes.load("links"))
    assert_quoted(NUMBERS_PAGE, phrases)
    assert_quoted(ORGANISATIONS_PAGE, phrases)


def test_every_page_of_prose_quotes_is_checked():
    for page, phrases in doc_quotes.prose_quotes().items():
        assert_quoted(ROOT / page, phrases)


def test_a_changed_number_is_caught():
    """The check can fail: one changed median makes the generated table and phrases differ from the pages."""
    relay = doc_quotes.load("relay")
    relay["rows"][1]["relay"]["median_run_seconds"] += 0.5
    quoted = doc_quotes.quoted_table(RELAY_PAGE.read_text(), doc_quotes.RELAY_MARKER)
    assert quoted != doc_quotes.relay_table(relay)
    startup = json.loads(json.dumps(doc_quotes.load("startup")))
    startup["median_run_seconds"] += 0.1
    text = flat(NUMBERS_PAGE.read_text())
    assert not all(flat(p) in text for p in doc_quotes.startup_phrases(startup))


def _flower_runs() -> dict[tuple, dict]:
    """``flower.json``'s configurations by (aggregator, task, size, nodes, killed, engine)."""
    return {
        tuple(r["config"][k] for k in ("aggregator", "task", "size", "nodes", "killed", "engine")): r
        for r in doc_quotes.load("flower")["configs"]
    }


def test_flower_page_statements_hold_on_flower_json():
    runs = _flower_runs()
    assert not [name for name, r in runs.items() if "failed" in r], "a configuration failed"
    mine = {key[1:]: r for key, r in runs.items() if key[0] == "ours"}
    for job, ours in mine.items():
        theirs = [r for key, r in runs.items() if key[0].startswith("secagg") and key[1:] == job]
        # More precise: within its bound, below every SecAgg+ error on the same job; every round completed.
        for r in ours["rounds"]:
            assert r["completed"] and r["max_error_vs_plain_mean"] <= r["error_bound"] < 1e-10, job
            assert all(
                r["max_error_vs_plain_mean"] < s["max_error_vs_plain_mean"]
                for t in theirs
                for s in t["rounds"]
                if s["completed"]
            ), job
        # Smaller per client on every job; about half on digits at 10 nodes, a third at 100; under 1 % on vectors.
        ratio = ours["rounds"][0]["bytes_per_client_mean"] / min(
            t["rounds"][0]["bytes_per_client_mean"] for t in theirs
        )
        expected = {"digits": (0.4, 0.6) if job[2] == 10 else (0.25, 0.4), "vector": (0.99, 1.0)}[job[0]]
        assert expected[0] <= ratio < expected[1], (job, ratio)
    # Not faster with 10 SuperNodes: the first rounds within 25 % of each other, quoted as a range.
    firsts = {key: r["rounds"][0]["seconds"] for key, r in runs.items() if key[5] == "deployment"}
    for key, seconds in firsts.items():
        if key[0] != "ours":
            assert 0.8 <= firsts[("ours", *key[1:])] / seconds <= 1.25, key
    assert_quoted(
        ROOT / "docs" / "howto" / "flower.md",
        [f"({min(firsts.values()):.0f} to {max(firsts.values()):.0f} s for a first round here)"],
    )
    # Faster with 100 simulated clients: a twelfth (ratio rounded); the sparse graph about a third less.
    sim = {key[0]: r["rounds"][0]["seconds"] for key, r in runs.items() if key[5] == "simulation"}
    assert round(sim["secagg"] / sim["ours"]) == 12, sim
    assert 0.6 <= sim["ours-sparse"] / sim["ours"] <= 0.75, sim
    sparse_bytes = runs[("ours-sparse", "digits", 0, 100, 0, "simulation")]["rounds"][0][
        "bytes_per_client_mean"
    ]
    secagg_bytes = runs[("secagg", "digits", 0, 100, 0, "simulation")]["rounds"][0]["bytes_per_client_mean"]
    assert 0.15 <= sparse_bytes / secagg_bytes <= 0.25  # "a fifth with the sparse graph"
    # Dropout: SecAgg+ completes round 2 after 1 killed, fails it after 3 with KeyError.
    one, three = (runs[("secagg", "digits", 0, 10, k, "deployment")]["rounds"] for k in (1, 3))
    assert [r["completed"] for r in one] == [True, True] and [r["completed"] for r in three] == [True, False]
    assert any("KeyError" in reason for reason in three[1]["did_not_count"].values())
