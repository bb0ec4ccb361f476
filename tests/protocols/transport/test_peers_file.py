"""The static address table of ``mpc-pca party --peers FILE``: every refusal names the value."""

from __future__ import annotations

import json

import pytest

from protocols.errors import InputValidationError
from protocols.transport.peers import MAX_PEERS_FILE_BYTES, PeerTable, parse_peers, read_peers


def document(*entries: object) -> str:
    return json.dumps({"parties": list(entries)})


def entry(name: str, address: str) -> dict[str, str]:
    return {"name": name, "address": address}


def test_a_table_lists_the_parties_in_rank_order() -> None:
    table = parse_peers(
        document(entry("provider0", "10.0.0.1:7001"), entry("server", "[2001:db8::2]:7001"),
                 entry("consumer", "host.example:7003"))
    )  # fmt: skip
    assert table.ranks == {"provider0": 0, "server": 1, "consumer": 2}
    assert table.addresses == {
        "provider0": ("10.0.0.1", 7001),
        "server": ("2001:db8::2", 7001),
        "consumer": ("host.example", 7003),
    }


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("{not json", "is not JSON"),
        ("[]", 'the one key "parties", got []'),
        (json.dumps({"parties": [], "extra": 1}), "['extra', 'parties']"),
        (json.dumps({"peers": []}), "['peers']"),
        (json.dumps({"parties": []}), "got []"),
        (json.dumps({"parties": "a:1"}), "got 'a:1'"),
        (document(["provider0", "h:1"]), "rank 0 must be an object"),
        (document({"name": "provider0"}), "got ['name']"),
        (document({**entry("provider0", "h:1"), "rank": 0}), "['address', 'name', 'rank']"),
        (document(entry("provider0", "h:1"), {"name": 7, "address": "h:2"}), "rank 1: name 7"),
        (document(entry("bad name", "h:1")), "'bad name'"),
        (document(entry("0provider", "h:1")), "'0provider'"),
        (document(entry("ca", "h:1")), "'ca' is reserved"),
        (document(entry("server", "h:1"), entry("server", "h:2")), "'server' is already the party at rank 0"),
        (document({"name": "server", "address": 7001}), "address 7001 is not a string"),
        (document(entry("server", "h")), "'h' has no port"),
        (document(entry("server", "h:0")), "port 0 cannot be dialled"),
        (document(entry("server", "h:70000")), "out of range"),
        (document(entry("server", "h:x")), "'x'"),
        (document(entry("server", ":7001")), "':7001'"),
        (document(entry("a", "H:1"), entry("b", "h:1")), "'h:1' is already 'a''s"),
    ],
)
def test_every_refusal_names_the_value(text: str, named: str) -> None:
    with pytest.raises(InputValidationError) as info:
        parse_peers(text)
    assert named in str(info.value), str(info.value)


def test_the_table_must_be_the_runs_parties_in_rank_order() -> None:
    table = PeerTable((("provider0", ("h", 1)), ("server", ("h", 2))))
    table.check_ranks({"provider0": 0, "server": 1})
    with pytest.raises(InputValidationError, match="puts 'server' at rank 0, where the run has 'provider0'"):
        PeerTable((("server", ("h", 2)), ("provider0", ("h", 1)))).check_ranks({"provider0": 0, "server": 1})
    with pytest.raises(InputValidationError, match=r"lists 2 parties .* the run has 3"):
        table.check_ranks({"provider0": 0, "server": 1, "consumer": 2})


def test_a_file_too_large_or_unreadable_is_refused_by_name(tmp_path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_PEERS_FILE_BYTES + 1))
    with pytest.raises(InputValidationError, match=r"big\.json.*larger than"):
        read_peers(big)
    with pytest.raises(InputValidationError, match=r"missing\.json.*cannot be read"):
        read_peers(tmp_path / "missing.json")
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"parties": "\xe9"}')
    with pytest.raises(InputValidationError, match=r"latin\.json.*not UTF-8"):
        read_peers(latin)
    good = tmp_path / "peers.json"
    good.write_text(document(entry("server", "127.0.0.1:7001")))
    assert read_peers(good).addresses == {"server": ("127.0.0.1", 7001)}


def test_the_how_to_guides_peers_file_parses() -> None:
    from tests.helpers.markdown_blocks import page_of

    table = parse_peers(page_of("peers-file").text, "docs/howto/waiting-room.md")
    assert list(table.ranks) == ["provider0", "provider1", "provider2", "server", "consumer"]
    assert table.addresses["provider1"] == ("203.0.113.7", 29501)
