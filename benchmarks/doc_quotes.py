"""The docs' quotes of other published benchmark results, generated from their JSON.

Like :mod:`benchmarks.reveal_tables`, each quote is either a table after an HTML
comment marker or a list of prose phrases that must appear in the page verbatim
(whitespace-normalised). ``python -m benchmarks.doc_quotes`` prints them all,
and ``tests/docs/test_benchmark_quotes.py`` checks the pages against them, so a
re-run that is not re-quoted fails the tests.

Covered: ``flower.json`` (docs/howto/flower.md, the side-by-side table, from
:func:`benchmarks.flower_measure.table`), ``relay.json`` (docs/howto/relay.md section 6, table), ``setup.json``
(docs/explanation/links.md, the slope table),
``paillier.json`` (docs/tutorials/ss-vs-paillier.md, throughput), ``startup.json``,
``paillier_offline_online.json``, ``pppca_scaling.json`` (in part) and
``links.json``
(docs/explanation/numbers.md, docs/tutorials/organisations.md, phrases).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks.flower_measure import FLOWER_MARKER
from benchmarks.flower_measure import table as flower_table

RESULTS = Path(__file__).resolve().parent / "results"

#: Marker line that precedes the relay table in docs/howto/relay.md.
RELAY_MARKER = "<!-- relay-table: benchmarks/doc_quotes.py relay_table(relay.json); tests/docs/test_benchmark_quotes.py -->"

#: Marker line that precedes the set-up table in docs/explanation/links.md.
SETUP_MARKER = "<!-- setup-table: benchmarks/doc_quotes.py setup_table(setup.json); tests/docs/test_benchmark_quotes.py -->"


def load(name: str) -> dict[str, Any]:
    """The published ``benchmarks/results/<name>.json``.

    Parameters
    ----------
    name : str
        The result's name without ``.json``.

    Returns
    -------
    dict
        The parsed payload.
    """
    payload: dict[str, Any] = json.loads((RESULTS / f"{name}.json").read_text())
    return payload


def relay_table(payload: dict[str, Any]) -> str:
    """docs/howto/relay.md section 6: protocol (run) seconds per mode and the ratios.

    Parameters
    ----------
    payload : dict
        ``relay.json``.

    Returns
    -------
    str
        The Markdown table.
    """
    lines = ["| d | M | direct | relay | relay / direct |", "|---|---|---|---|---|"]
    for row in payload["rows"]:
        cells = [
            f"{row[m]['median_protocol_seconds']:.2f} s ({row[m]['median_run_seconds']:.2f} s)"
            for m in ("direct", "relay")
        ]
        ratio = (
            f"{row['relay_over_direct_protocol_seconds']:.2f} ({row['relay_over_direct_run_seconds']:.2f})"
        )
        lines.append(f"| {row['d']} | {row['M']} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(lines)


def setup_table(payload: dict[str, Any]) -> str:
    """docs/explanation/links.md: set-up and protocol round trips as the slope from RTT 100 to 300 ms.

    Parameters
    ----------
    payload : dict
        ``setup.json``.

    Returns
    -------
    str
        The Markdown table.
    """
    by_m: dict[int, dict[str, dict[str, Any]]] = {}
    for row in payload["rows"]:
        by_m.setdefault(row["M"], {})[row["mode"]] = row
    lines = [
        "| M (providers) | set-up, rendezvous | set-up, static table | protocol, rendezvous / static |",
        "|---|---|---|---|",
    ]
    for m, modes in by_m.items():
        rdv, static = modes["rendezvous"], modes["static"]
        lines.append(
            f"| {m} | {rdv['setup_round_trips_slope']:.2f} | {static['setup_round_trips_slope']:.2f} "
            f"| {rdv['protocol_round_trips_slope']:.2f} / {static['protocol_round_trips_slope']:.2f} |"
        )
    return "\n".join(lines)


def startup_phrases(payload: dict[str, Any]) -> list[str]:
    """docs/explanation/numbers.md, "Start-up": the run against ``import torch.distributed``.

    Parameters
    ----------
    payload : dict
        ``startup.json``.

    Returns
    -------
    list of str
        Phrases the page must contain.
    """
    return [
        f"Wine, {payload['parties']} providers: {payload['median_run_seconds']:.2f} s per run against "
        f"{payload['median_import_seconds']:.2f} s for one",
        f"medians of {payload['repeats']} interleaved in the same run ({payload['run_over_import']:.2f}x; "
        f"target {payload['target_run_over_import']:.0f}x;",
    ]


def paillier_throughput_phrases(payload: dict[str, Any]) -> list[str]:
    """docs/tutorials/ss-vs-paillier.md: encryption and decryption throughput against ``phe``.

    Parameters
    ----------
    payload : dict
        ``paillier.json``.

    Returns
    -------
    list of str
        Phrases the page must contain.
    """
    rates = payload["throughput"]["values_per_second"]
    phe, packed, fast = rates["phe"], rates["packed"], rates["packed_precompute"]
    return [
        f"2048-bit, same run: `phe` encrypts {phe['encrypt']:.0f} values/s; packed "
        f"`r^n` {packed['encrypt']:,.0f} values/s ({packed['encrypt'] / phe['encrypt']:.0f}x), "
        f"`precompute=True` (`fixed-base-short`) {fast['encrypt']:,.0f} values/s "
        f"({fast['encrypt'] / phe['encrypt']:.0f}x); packed decryption {packed['decrypt']:,.0f} values/s "
        f"vs {phe['decrypt']:.0f}",
    ]


def _thousands(value: float) -> str:
    """A large ratio rounded to two significant figures, with thousands separators."""
    return f"{float(f'{value:.2g}'):,.0f}"


def paillier_phrases(payload: dict[str, Any]) -> list[str]:
    """docs/explanation/numbers.md, "Paillier offline/online": online and offline encryption costs.

    Parameters
    ----------
    payload : dict
        ``paillier_offline_online.json``.

    Returns
    -------
    list of str
        Phrases the page must contain.
    """
    run = payload["offline_online"]
    seconds, ratio = run["median_seconds"], run["online_over_standard"]
    return [
        f"{run['values']:,} values in {seconds['online_unpacked'] * 1e3:.1f} ms unpacked / "
        f"{seconds['online_packed'] * 1e3:.2f} ms packed online "
        f"({_thousands(ratio['unpacked'])}x / {_thousands(ratio['packed'])}x the standard path), "
        f"after {seconds['offline_unpacked']:.0f} s / {seconds['offline_packed']:.1f} s offline",
    ]


def links_phrases(payload: dict[str, Any]) -> list[str]:
    """The range of a party's start-up time (both pages that quote ``links.json``).

    Parameters
    ----------
    payload : dict
        ``links.json``.

    Returns
    -------
    list of str
        Phrases the pages must contain.
    """
    startup = [r[m]["median_startup_seconds"] for r in payload["rows"] for m in ("tls", "plain")]
    return [f"ready to send {min(startup):.1f}-{max(startup):.1f} s after its process starts"]


def pppca_phrases(payload: dict[str, Any]) -> list[str]:
    """docs/explanation/numbers.md, "Many parties", "Large d", "Data larger than memory".

    Parameters
    ----------
    payload : dict
        ``pppca_scaling.json``.

    Returns
    -------
    list of str
        Phrases the page must contain.
    """
    widest = payload["secure_sum_m"][-1]
    memory, parquet = payload["memory"], payload["parquet"]
    m4 = [memory[f"{b}_M4_d2000"] for b in ("additive", "additive-masks", "additive-sparse-masks")]
    return [
        f"at M = {widest['M']}: {widest['additive-sparse-masks']:.2f} s sparse vs {widest['additive']:.2f} s "
        f"full shares and {widest['additive-masks']:.2f} s full pairwise masks "
        f"({widest['sparse_neighbours']} neighbours instead of {widest['M'] - 1};",
        f"at M = 4 and d = 2000, {min(m4):.1f} to {max(m4):.1f}",
        f"d = 5000 runs ({memory['d5000_fit_seconds_traced']:.0f} s traced;",
        f"({parquet['file_bytes'] / 1e9:.1f} GB, row groups of {parquet['chunk_rows']:,}) peaks at "
        f"{parquet['peak_rss_above_start_bytes'] / 2**30:.2f} GiB RSS above start",
        f"and reads it in {parquet['statistics_seconds']:.0f} s",
    ]


def prose_quotes() -> dict[str, list[str]]:
    """Every checked prose phrase, per page (relative to the repository root).

    Returns
    -------
    dict
        Page path to the phrases it must contain.
    """
    links = links_phrases(load("links"))
    return {
        "docs/explanation/numbers.md": startup_phrases(load("startup"))
        + paillier_phrases(load("paillier_offline_online"))
        + pppca_phrases(load("pppca_scaling"))
        + links,
        "docs/tutorials/organisations.md": links,
        "docs/tutorials/ss-vs-paillier.md": paillier_throughput_phrases(load("paillier")),
    }


def flat(text: str) -> str:
    """``text`` with every run of whitespace as one space (a phrase may wrap anywhere in a page)."""
    return re.sub(r"\s+", " ", text)


def quoted_table(page_text: str, marker: str) -> str:
    """The table that follows ``marker`` in a page (up to the first blank line).

    Parameters
    ----------
    page_text : str
        The page.
    marker : str
        The marker line.

    Returns
    -------
    str
        The table, lines stripped.

    Raises
    ------
    ValueError
        If the page has no such marker.
    """
    if marker not in page_text:
        raise ValueError(f"the page has no marker {marker!r}")
    block = page_text.split(marker, 1)[1].lstrip("\n").split("\n\n", 1)[0]
    return "\n".join(line.strip() for line in block.splitlines())


def main() -> None:
    """Print every generated table and phrase."""
    print("docs/howto/relay.md:", RELAY_MARKER, relay_table(load("relay")), "", sep="\n")
    print("docs/explanation/links.md:", SETUP_MARKER, setup_table(load("setup")), "", sep="\n")
    print("docs/howto/flower.md:", FLOWER_MARKER, flower_table(load("flower")), "", sep="\n")
    for page, phrases in prose_quotes().items():
        print(f"Phrases of {page}:", *phrases, sep="\n- ")


if __name__ == "__main__":
    main()
