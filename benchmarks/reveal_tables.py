"""The docs' tables of ``benchmarks/results/reveal.json`` (:mod:`benchmarks.bench_reveal`), generated.

Two pages quote the run: docs/secure_tensor.md section 10 (every mode and d:
time, rounds, bytes, errors and bounds) and docs/explanation/reveal-components.md
(time and rounds per mode, the hidden modes' worst errors). Each table sits
after an HTML comment marker; ``python -m benchmarks.reveal_tables`` prints
both, and ``tests/docs/test_reveal_figures.py`` checks the pages against them (:func:`benchmarks.doc_quotes.quoted_table`),
so a re-run that is not re-quoted fails the tests.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "reveal.json"
MODES = ("covariance", "components", "spectrum")
HIDDEN = ("components", "spectrum")

#: Marker lines that precede each table in its page.
TENSOR_MARKER = "<!-- reveal-table: benchmarks/reveal_tables.py tensor_table(reveal.json); tests/docs/test_reveal_figures.py -->"
SUMMARY_MARKER = "<!-- reveal-summary: benchmarks/reveal_tables.py summary_table(reveal.json); tests/docs/test_reveal_figures.py -->"


def tensor_table(payload: dict[str, Any]) -> str:
    """Section 10's table: one row per d and mode."""
    lines = [
        "| d | mode | median s | rounds (busiest provider) | bytes, all parties | max component error "
        "| component bounds (min / max) | max eigenvalue rel. error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in payload["rows"]:
        for mode in MODES:
            run, accuracy = row[mode], row[mode]["accuracy"]
            bounds = accuracy["component_error_bounds"]
            lines.append(
                f"| {row['d']} | {mode} | {run['median_seconds']:.2f} | {run['provider_rounds']} "
                f"| {run['bytes_sent_total']:,} | {accuracy['max_component_error']:.1e} "
                f"| {min(bounds):.1e} / {max(bounds):.1e} | {accuracy['max_eigenvalue_relative_error']:.1e} |"
            )
    return "\n".join(lines)


def summary_table(payload: dict[str, Any]) -> str:
    """reveal-components.md's table: seconds / rounds per mode and d; the hidden modes' worst errors."""
    rows = payload["rows"]
    worst_component = max(r[m]["accuracy"]["max_component_error"] for r in rows for m in HIDDEN)
    worst_eigenvalue = max(r[m]["accuracy"]["max_eigenvalue_relative_error"] for r in rows for m in HIDDEN)
    lines = [
        "| d | covariance: s / rounds | components: s / rounds | spectrum: s / rounds "
        "| hidden modes: max component error / eigenvalue rel. error |",
        "|---|---|---|---|---|",
    ]
    for index, row in enumerate(rows):
        cells = [f"{row[m]['median_seconds']:.2f} / {row[m]['provider_rounds']}" for m in MODES]
        worst = (
            f"{worst_component:.1e} / {worst_eigenvalue:.1e} (worst of both modes and all d)"
            if index == 0
            else ""
        )
        lines.append(f"| {row['d']} | {' | '.join(cells)} | {worst} |")
    return "\n".join(lines)


def tensor_figures(payload: dict[str, Any]) -> list[str]:
    """The phrases of section 10's paragraph that quote the run (each must appear in the page verbatim)."""
    rows = payload["rows"]
    dims = ", ".join(str(r["d"]) for r in rows)
    iterations = ", ".join(str(r["components"]["secure_eigensolve"]["iterations"]) for r in rows)
    tolerances = [r["components"]["secure_eigensolve"]["achieved_tol"] for r in rows]
    bounds = [b for r in rows for m in HIDDEN for b in r[m]["accuracy"]["component_error_bounds"]]
    widest = rows[-1]
    return [
        f"The ladder's iterations at d = {dims}: {iterations}",
        f"final angle bounds {min(tolerances):.0e} to {max(tolerances):.0e}",
        f"The bounds are loose ({min(bounds):.0e} to {max(bounds):.0e})",
        f"({widest['components']['bytes_sent_total'] / 1e6:.0f} MB at d = {widest['d']} over all parties)",
        f"the spectrum mode opens two `d x d` products ({widest['spectrum']['bytes_sent_total'] / 1e6:.0f} MB)",
        f"about {widest['components']['provider_rounds'] * 0.05:.1f} s (components) and "
        f"{widest['spectrum']['provider_rounds'] * 0.05:.1f} s (spectrum)",
    ]


def gap_figures(payload: dict[str, Any]) -> dict[str, list[str]]:
    """The phrases that quote the close-gap case, per page (docs/secure_tensor.md section 8.6, the explanation)."""
    gap = payload["gap_case"]
    sub, kry = gap["subspace"], gap["krylov"]

    def eigenvalue_error(run: dict[str, Any]) -> str:
        return f"{run['accuracy']['max_eigenvalue_relative_error']:.1e}"

    return {
        "secure_tensor.md": [
            f"subspace iteration {sub['provider_rounds']} rounds per provider ({sub['iterations']} iterations, "
            f"eigenvalues {eigenvalue_error(sub)} relative, {sub['seconds']:.1f} s), block Krylov "
            f"{kry['provider_rounds']} rounds ({kry['iterations']} blocks of {kry['secure_eigensolve']['block_size']}, "
            f"eigenvalues {eigenvalue_error(kry)} relative, {kry['seconds']:.1f} s)",
        ],
        "reveal-components.md": [
            f"{kry['provider_rounds']} rounds per provider and eigenvalues {eigenvalue_error(kry)} relative, "
            f"where the ladder takes {sub['provider_rounds']} rounds",
        ],
    }


def main() -> None:
    """Print both tables of the published (or the given) ``reveal.json``."""
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS
    payload = json.loads(path.read_text())
    print(TENSOR_MARKER, tensor_table(payload), "", SUMMARY_MARKER, summary_table(payload), "", sep="\n")
    print("Phrases of docs/secure_tensor.md section 10:", *tensor_figures(payload), sep="\n- ")
    for page, phrases in gap_figures(payload).items():
        print(f"Close-gap phrases of {page}:", *phrases, sep="\n- ")


if __name__ == "__main__":
    main()
