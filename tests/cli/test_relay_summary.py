"""``mpc-pca relay`` ends with the bytes it forwarded per pair, as ``docs/howto/relay.md`` shows.

The page's ``relay-summary`` block is what the one-machine run there printed;
re-rendering its numbers through :func:`mpc_pca.cli.relay.summary_lines` must
give the block back, so the page cannot show a format the relay does not print.
"""

from __future__ import annotations

import re
from argparse import Namespace

import pytest

from mpc_pca.cli import relay as relay_cli
from tests.helpers.markdown_blocks import DOCS, block

PAGE = DOCS / "howto" / "relay.md"
PAIR = re.compile(r"^  (\S+) -> (\S+) +([\d,]+) bytes$")
NAMES = ["provider0", "provider1", "provider2", "server", "consumer"]


def _page_summary() -> tuple[dict[str, int], dict[str, int], list[str]]:
    lines = block(PAGE, "relay-summary").text.strip("\n").splitlines()
    parties = {name: rank for rank, name in enumerate(NAMES)}
    forwarded = {}
    for line in lines[1:]:
        match = PAIR.match(line)
        assert match, line
        forwarded[f"{match[1]}->{match[2]}"] = int(match[3].replace(",", ""))
    return parties, forwarded, lines


def test_the_page_shows_what_the_relay_prints():
    parties, forwarded, lines = _page_summary()
    assert relay_cli.summary_lines(parties, forwarded) == lines
    header = re.fullmatch(r"relay done: (\d+) parties, ([\d,]+) bytes forwarded", lines[0])
    assert header and int(header[1]) == len(NAMES)
    assert int(header[2].replace(",", "")) == sum(forwarded.values())  # the page's total is its pairs' sum
    # every ordered pair of the five parties exchanged bytes (TLS handshakes at least)
    assert len(forwarded) == len(NAMES) * (len(NAMES) - 1)
    # the relay-one-machine block is the run whose output this is
    assert ",".join(NAMES) in block(PAGE, "relay-one-machine").text


@pytest.mark.parametrize(("refused", "status"), [([], 0), (["'x' registered the layout {'x': 0}"], 4)])
def test_relay_main_prints_the_total_and_every_pair_in_rank_order(monkeypatch, capsys, refused, status):
    seen = {
        "parties": {"provider0": 0, "provider1": 1, "server": 2},
        # relay_command sorts by name: the printed order is by rank (server last)
        "forwarded_bytes": {"provider0->server": 4544, "provider1->provider0": 10062, "server->provider0": 7},
        "refused": refused,
    }
    monkeypatch.setattr(relay_cli, "relay_command", lambda args: seen)
    assert relay_cli.relay_main(Namespace(verbose=0, quiet=False)) == status
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == [
        "relay done: 3 parties, 14,613 bytes forwarded",
        "  provider0 -> server      4,544 bytes",
        "  provider1 -> provider0  10,062 bytes",
        "  server -> provider0          7 bytes",
    ]
    assert out[4:] == [f"relay refused: {text}" for text in refused]


def test_a_run_that_forwarded_nothing_prints_the_total_only():
    assert relay_cli.summary_lines({"a": 0, "b": 1}, {}) == ["relay done: 2 parties, 0 bytes forwarded"]
