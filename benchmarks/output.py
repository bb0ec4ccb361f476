"""Where the micro-benchmarks write: ``benchmarks/results`` (published) or a ``--quick`` folder.

Timing, machine description and plotting are shared with the studies:
:mod:`mpc_pca.studies.timing`, :mod:`mpc_pca.studies.machine`,
:mod:`mpc_pca.studies.plotting`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


#: Default folder of ``--quick`` runs: they never overwrite the published results in :data:`RESULTS`.
QUICK_RESULTS = RESULTS / "quick"


def add_out_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--out DIR`` option every benchmark shares."""
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for the JSON and PNG files (default benchmarks/results/, with --quick "
        "benchmarks/results/quick/: a quick run never overwrites the published results)",
    )


def output_dir(out: Path | None, quick: bool) -> Path:
    """The folder a run writes to (created): ``out``, else the published or the quick results folder.

    Raises
    ------
    SystemExit
        When a ``--quick`` run is pointed at the published results folder.
    """
    folder = Path(out) if out is not None else (QUICK_RESULTS if quick else RESULTS)
    if quick and folder.resolve() == RESULTS.resolve():
        raise SystemExit(f"--quick never writes into the published results {RESULTS}; choose another --out")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_json(name: str, payload: dict[str, Any], folder: Path = RESULTS) -> Path:
    """Write ``payload`` to ``FOLDER/NAME`` (default ``benchmarks/results/NAME``) and return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(payload, indent=2))
    return path
