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
