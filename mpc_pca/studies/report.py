"""``mpc-pca report DIR``: REPORT.md, REPORT.html and CLAIMS.json from the JSON Lines results in DIR.

The report is built from the stored records only: each study's tables (beside
the papers' numbers), its plots (redrawn from the records), the machine it
ran on (with the load average, since the cores may be shared) and one
sentence per claim whose verdict is computed from the records. CLAIMS.json
holds the same verdicts per study, a pooled verdict with the verdict at each
swept value beside it (:meth:`~mpc_pca.studies.framework.Claim.as_json`).
"""

from __future__ import annotations

import base64
import html
import json
import time
from pathlib import Path
from typing import Any

from mpc_pca.studies.framework import Table, load_records, meta_path, results_path, write_json_atomic
from mpc_pca.studies.registry import load_study, study_table
from protocols.errors import InputValidationError

Block = tuple[str, Any]


def _found_results(folder: Path) -> list[tuple[str, bool]]:
    """(study name, quick) for every results file in ``folder``, in registry order."""
    found = []
    for name in study_table():
        for quick in (False, True):
            if results_path(folder, name, quick).exists():
                found.append((name, quick))
    return found


def _machine_line(meta: dict[str, Any]) -> str:
    sessions = meta.get("sessions", [])
    if not sessions:
        return "machine: not recorded"
    m = sessions[-1]["machine"]
    blas = (
        ", ".join(f"{b['internal_api']} {b['num_threads']} threads" for b in m.get("blas", [])) or "unknown"
    )
    versions = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items() if v)
    loads = [
        f"{s.get('load_average_at_start')} → {s.get('load_average_at_end')}"
        for s in sessions
        if "seconds" in s
    ]
    affinity = m.get("affinity")
    return (
        f"Machine: {m.get('cpu_model')}, {m.get('logical_cpus')} logical CPUs, affinity "
        f"{affinity if affinity is None else len(affinity)} CPUs {affinity}, BLAS: {blas}; Python "
        f"{m.get('python')} on {m.get('platform')}; {versions}. Sessions: {len(sessions)}, total "
        f"{sum(s.get('seconds', 0.0) for s in sessions):.0f} s; load average (1/5/15 min) at start → end of "
        f"each session: {'; '.join(loads)} (a load above the CPU count means other processes shared the cores "
        f"and slowed every timing alike)."
    )


def study_blocks(folder: Path, name: str, quick: bool) -> list[Block]:
    """The report section of one study."""
    study = load_study(name)
    records = load_records(results_path(folder, name, quick))
    meta_file = meta_path(folder, name, quick)
    meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
    sessions = meta.get("sessions", [])
    options = sessions[-1].get("options", {}) if sessions else {}
    expected = len(study.points(quick, options))
    blocks: list[Block] = [
        ("h2", f"{name}{' (quick size)' if quick else ''}"),
        ("p", study.summary),
    ]
    if study.description:
        blocks.append(("p", study.description))
    blocks.append(
        (
            "p",
            f"{len(records)} of {expected} points measured"
            + (
                "."
                if len(records) >= expected
                else " (the run was stopped; rerun the same command to resume)."
            ),
        )
    )
    blocks.append(("p", _machine_line(meta)))
    if study.claims is not None:
        claims = study.claims(records)
        if claims:
            blocks.append(("h3", "Claims"))
            blocks.append(("ul", [c.sentence() for c in claims]))
    if study.tables is not None:
        for table in study.tables(records):
            blocks.append(("table", table))
    if study.plot is not None and records:
        for path in study.plot(records, folder, "_quick" if quick else ""):
            blocks.append(("img", Path(path)))
    return blocks


def paper_index(folder: Path, found: list[tuple[str, bool]]) -> list[Block]:
    """Per paper: every table and figure the registry covers, its study, and every verdict on it.

    Verdicts come from the same records as the study sections below (the
    full size when both sizes are in ``folder``); a study without results in
    ``folder`` is listed as not run.
    """
    sizes: dict[str, bool] = {}
    for name, quick in found:
        sizes.setdefault(name, quick)  # full size first (``_found_results`` lists it first)
    papers: dict[str, list[tuple[str, str]]] = {}
    for name in study_table():
        for item in load_study(name).reproduces:
            paper, _, what = item.partition(": ")
            papers.setdefault(paper, []).append((what, name))
    blocks: list[Block] = [("h2", "Per paper: every table and figure, and its verdicts")]
    claims_cache: dict[str, list[Any]] = {}
    for paper in sorted(papers):
        blocks.append(("h3", paper))
        items = []
        verdicts: list[str] = []
        for what, name in papers[paper]:
            if name in sizes:
                state = "quick size" if sizes[name] else "full size"
                items.append(f"{what}: study `{name}` ({state})")
                if name not in claims_cache:
                    study = load_study(name)
                    records = load_records(results_path(folder, name, sizes[name]))
                    claims_cache[name] = study.claims(records) if study.claims is not None else []
                for c in claims_cache[name]:
                    line = f"`{name}`: {c.sentence()}"
                    if c.source.startswith(paper) and line not in verdicts:
                        verdicts.append(line)
            else:
                items.append(f"{what}: study `{name}` (not run in this folder)")
        blocks.append(("ul", items))
        if verdicts:
            blocks.append(("ul", verdicts))
    return blocks


def _md_table(t: Table) -> str:
    lines = [f"**{t.caption}**", "", "| " + " | ".join(t.header) + " |", "|" + "---|" * len(t.header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in t.rows]
    if t.note:
        lines += ["", t.note]
    return "\n".join(lines)


def to_markdown(blocks: list[Block], folder: Path) -> str:
    out = []
    for kind, value in blocks:
        if kind in ("h1", "h2", "h3"):
            out.append("#" * int(kind[1]) + " " + value)
        elif kind == "p":
            out.append(value)
        elif kind == "ul":
            out.append("\n".join(f"- {item}" for item in value))
        elif kind == "table":
            out.append(_md_table(value))
        elif kind == "img":
            out.append(f"![{value.stem}]({value.relative_to(folder) if value.is_absolute() else value})")
    return "\n\n".join(out) + "\n"


def to_html(blocks: list[Block], folder: Path) -> str:
    out = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>mpc-pca studies</title>"
        "<style>body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #999;padding:2px 6px;text-align:right}img{max-width:100%}</style></head><body>"
    ]
    for kind, value in blocks:
        if kind in ("h1", "h2", "h3"):
            out.append(f"<{kind}>{html.escape(value)}</{kind}>")
        elif kind == "p":
            out.append(f"<p>{html.escape(value)}</p>")
        elif kind == "ul":
            out.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in value) + "</ul>")
        elif kind == "table":
            t: Table = value
            rows = "".join(
                "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in t.rows
            )
            head = "".join(f"<th>{html.escape(h)}</th>" for h in t.header)
            note = f"<p>{html.escape(t.note)}</p>" if t.note else ""
            out.append(f"<p><b>{html.escape(t.caption)}</b></p><table><tr>{head}</tr>{rows}</table>{note}")
        elif kind == "img":
            data = base64.b64encode(Path(value).read_bytes()).decode()
            out.append(f"<p><img alt='{html.escape(value.stem)}' src='data:image/png;base64,{data}'></p>")
    out.append("</body></html>")
    return "\n".join(out)


def claims_json(folder: Path, found: list[tuple[str, bool]]) -> dict[str, list[dict[str, Any]]]:
    """Every study's claims as JSON (:meth:`Claim.as_json`), keyed ``NAME`` or ``NAME (quick size)``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, quick in found:
        study = load_study(name)
        if study.claims is None:
            continue
        records = load_records(results_path(folder, name, quick))
        out[f"{name}{' (quick size)' if quick else ''}"] = [c.as_json() for c in study.claims(records)]
    return out


def write_report(folder: Path) -> tuple[Path, Path]:
    """Write ``REPORT.md``, ``REPORT.html`` (plots embedded) and ``CLAIMS.json`` into ``folder``."""
    folder = Path(folder).resolve()
    found = _found_results(folder)
    if not found:
        raise InputValidationError(
            f"{folder} holds no study results (*.jsonl of {sorted(study_table())}); run `mpc-pca study NAME`"
        )
    blocks: list[Block] = [
        ("h1", "mpc-pca study report"),
        (
            "p",
            f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `mpc-pca report` from the "
            "JSON Lines results in this folder; every verdict below is computed from those records.",
        ),
    ]
    blocks += paper_index(folder, found)
    for name, quick in found:
        blocks += study_blocks(folder, name, quick)
    md = folder / "REPORT.md"
    htm = folder / "REPORT.html"
    md.write_text(to_markdown(blocks, folder))
    htm.write_text(to_html(blocks, folder))
    write_json_atomic(folder / "CLAIMS.json", claims_json(folder, found))
    return md, htm
