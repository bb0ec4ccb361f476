"""``mpc-pca study NAME|all [--quick] [--out DIR]``, ``mpc-pca study --list`` and ``mpc-pca report DIR``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mpc_pca.cli.options import STUDIES_INSTALL, require_installed
from protocols.errors import InputValidationError


def add_study_parsers(sub: Any) -> None:
    """Add the ``study`` and ``report`` subcommands to the ``mpc-pca`` parser."""
    study = sub.add_parser(
        "study",
        help="run a reproducible study (results appended as each point finishes; a rerun resumes)",
        description="Run a study; results (JSON Lines), plots and metadata go to --out. "
        "`mpc-pca study --list` lists the studies and the paper tables and figures each reproduces; "
        "`mpc-pca study all` runs every study into one folder and writes one report.",
    )
    study.add_argument("name", nargs="?", help="study name (see --list), or 'all' for every study")
    study.add_argument("--list", action="store_true", help="list the studies and exit")
    study.add_argument(
        "--quick",
        action="store_true",
        help="small size (< 2 min); writes NAME_quick.* files and never touches the full results",
    )
    study.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results folder (default: a new mpc-pca-studies-<time> folder in the current directory); "
        "give an existing one to resume a stopped run",
    )
    study.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a study-specific option (repeatable), e.g. lossless: --option csv=winequality.csv "
        "--option target=quality --option task=regression",
    )
    study.add_argument("--no-progress", action="store_true", help="no progress bar")
    study.add_argument("--no-report", action="store_true", help="do not write REPORT.md/html afterwards")
    report = sub.add_parser("report", help="write REPORT.md and REPORT.html from a results folder")
    report.add_argument("dir", type=Path, help="folder written by `mpc-pca study`")


def say_now(text: str) -> None:
    """One progress line on stderr, written at once (a study or report is otherwise silent for a while)."""
    print(f"mpc-pca: progress: {text}", file=sys.stderr, flush=True)


def _list_studies() -> None:
    """``mpc-pca study --list``: every study, what it reproduces and its options."""
    from mpc_pca.studies.registry import load_study, study_table

    for name in study_table():
        study = load_study(name)
        print(f"{name:18s} {study.summary}")
        for item in study.reproduces:
            print(f"{'':18s}   reproduces {item}")
        if not study.reproduces:
            print(f"{'':18s}   this project's own study (no paper figure)")
        for key, text in study.options.items():
            print(f"{'':18s}   --option {key}=...  {text}")


def _study_options(items: list[str], n_studies: int) -> dict[str, str]:
    """The ``--option KEY=VALUE`` pairs as a mapping; refused when malformed or given for several studies."""
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputValidationError(f"--option {item!r} is not KEY=VALUE")
        options[key] = value
    if options and n_studies > 1:
        raise InputValidationError("--option applies to one study; give its name instead of 'all'")
    return options


def study_command(args: argparse.Namespace) -> int:
    """Execute ``mpc-pca study``."""
    from mpc_pca.studies.framework import default_out_dir, run_study
    from mpc_pca.studies.registry import load_study, study_table

    if args.list or args.name is None:
        if not args.list:
            raise InputValidationError("give a study name or --list")
        _list_studies()
        return 0
    names = list(study_table()) if args.name == "all" else [args.name]
    studies = [load_study(name) for name in names]
    require_installed("mpc-pca study", ("matplotlib",), STUDIES_INSTALL)  # its plots, drawn after the points
    options = _study_options(args.option, len(studies))
    out = args.out if args.out is not None else default_out_dir()
    for study in studies:
        if not args.no_progress:
            size = "quick size" if args.quick else "full size"
            say_now(f"study {study.name} ({size}): measuring its points into {out}")
        summary = run_study(study, out, quick=args.quick, options=options, progress=not args.no_progress)
        print(
            f"{study.name}: measured {summary.measured}, kept {summary.skipped} stored points, "
            f"{summary.seconds:.0f} s; results in {summary.results}"
        )
        for path in summary.plots:
            print(f"plot: {path}")
    if not args.no_report:
        from mpc_pca.studies.report import write_report

        md, _ = write_report(out)
        print(f"report: {md}")
    return 0


def report_command(args: argparse.Namespace) -> int:
    """Execute ``mpc-pca report DIR``."""
    from mpc_pca.studies.report import write_report

    require_installed("mpc-pca report", ("matplotlib",), STUDIES_INSTALL)  # it redraws the plots
    say_now(f"report: reading the results in {args.dir} and redrawing their plots")
    md, html = write_report(args.dir)
    print(f"wrote {md} and {html}")
    return 0
