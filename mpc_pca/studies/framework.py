"""The study framework: points measured one at a time, appended to JSON Lines, resumable.

A :class:`Study` is a list of *points* (one measurement each: a dict of
parameters with a unique ``key``), a function that measures one point, and
functions that turn the stored records into plots, tables and claims.
:func:`run_study` measures the points that are not yet stored in the output
folder and appends each result to ``<name>.jsonl`` (``<name>_quick.jsonl`` for
the quick size) as soon as it is measured, so a stopped run keeps what it
measured and a rerun resumes where it stopped.

Writing a new study (and registering it in one line in
:mod:`mpc_pca.studies.registry`)::

    STUDY = Study(
        name="my-study",
        summary="what is measured, against which paper figure",
        points=lambda quick, options: [{"key": f"n={n}", "n": n} for n in ((10, 20) if quick else (10, 20, 40))],
        measure=lambda point: {"seconds": ...},
        plot=my_plot,            # (records, out_dir, suffix) -> list of PNG paths
        tables=my_tables,        # records -> list of Table
        claims=my_claims,        # records -> list of Claim
    )
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mpc_pca.files import SHARED, write_atomic
from protocols.errors import InputValidationError

Point = dict[str, Any]
Record = dict[str, Any]


#: How a verdict is printed.
VERDICT_WORDS = {True: "REPRODUCED", False: "NOT reproduced", None: "UNDECIDED"}


@dataclass(frozen=True)
class Claim:
    """One claim of a paper (or of this project) and whether the data reproduced it.

    Attributes
    ----------
    source : str
        Where the claim is made, e.g. ``"AAAI 2020, Table 1"``.
    text : str
        The claim, in one sentence.
    reproduced : bool or None
        Computed from the records by a test at a stated significance level
        (:mod:`mpc_pca.studies.verdicts`); ``None`` when the records cannot
        decide it (not measured, or not significant either way at this size).
    evidence : str
        The numbers the verdict rests on.
    quick_size : bool
        The records are the study's quick size, too small to decide this
        claim (:meth:`at_quick_size`): ``reproduced`` is then ``None`` and the
        sentence says "QUICK SIZE: NOT DECIDED" instead of a verdict that could
        flip between two quick runs.
    per_value : tuple of (float, bool or None)
        For a verdict over a sweep (pooled, or "at every value"): the verdict
        at each swept value, printed beside the overall one so that a failure
        at some values is not hidden by the pool (:meth:`sentence`).
    per_axis : str
        The swept quantity of ``per_value`` (e.g. ``"epsilon"``).
    """

    source: str
    text: str
    reproduced: bool | None
    evidence: str
    quick_size: bool = False
    per_value: tuple[tuple[float, bool | None], ...] = ()
    per_axis: str = ""

    def sentence(self) -> str:
        """The claim and its verdict as one sentence (a pooled verdict with its per-value verdicts beside it)."""
        if self.quick_size:
            return f"QUICK SIZE: NOT DECIDED — {self.source}: {self.text} ({self.evidence})"
        verdict = VERDICT_WORDS[self.reproduced]
        if self.per_value:
            per = ", ".join(f"{x:g} {VERDICT_WORDS[v]}" for x, v in self.per_value)
            verdict = f"{verdict} overall; per {self.per_axis}: {per}"
        return f"{verdict} — {self.source}: {self.text} ({self.evidence})"

    def as_json(self) -> dict[str, Any]:
        """The claim as a JSON-ready dict, its per-value verdicts beside the pooled one."""
        return {
            "source": self.source,
            "text": self.text,
            "reproduced": None if self.quick_size else self.reproduced,
            "quick_size": self.quick_size,
            "evidence": self.evidence,
            "per_axis": self.per_axis or None,
            "per_value": [{"value": x, "reproduced": v} for x, v in self.per_value],
            "sentence": self.sentence(),
        }

    def at_quick_size(self, why: str) -> Claim:
        """This claim labelled "quick size: not decided", its numbers kept as evidence.

        For claims the quick size cannot decide (timings of a few runs under
        process start-up): the verdict the numbers would give is dropped so
        that the smoke run states no verdict rather than one that flips.
        """
        return replace(
            self,
            reproduced=None,
            quick_size=True,
            evidence=f"quick size: not decided, {why}; measured: {self.evidence}",
        )


@dataclass(frozen=True)
class Table:
    """A table for the report: caption, header and rows of already formatted cells."""

    caption: str
    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    note: str = ""


@dataclass(frozen=True)
class Study:
    """A named set of measurements with its plots, tables and claims.

    Parameters
    ----------
    name : str
        Command-line name (``mpc-pca study NAME``).
    summary : str
        One line: what is measured, and which paper figure or table it reproduces.
    points : callable
        ``points(quick, options) -> list of dict``; every dict has a unique
        ``"key"``; ``options`` maps each study option key to its value as
        strings (the command line passes them as ``KEY=VALUE`` pairs). The order is the order of measurement.
    measure : callable
        ``measure(point) -> dict``: the measurement of one point (JSON-ready).
    plot : callable, optional
        ``plot(records, out_dir, suffix) -> list of Path``.
    tables, claims : callable, optional
        ``tables(records) -> list of Table``, ``claims(records) -> list of Claim``.
    description : str
        Longer text for the report (methods, data, stand-ins).
    options : dict of str to str
        The option keys the study understands (keys of ``options``), with their help text.
    reproduces : tuple of str
        The paper tables and figures the study reproduces, each ``"PAPER: item"``
        (e.g. ``"AAAI 2020: Table 3"``); empty for this project's own studies.
        The list of studies ``mpc-pca study`` prints and the report's index are built from them.
    """

    name: str
    summary: str
    points: Callable[[bool, dict[str, str]], list[Point]]
    measure: Callable[[Point], dict[str, Any]]
    plot: Callable[[list[Record], Path, str], list[Path]] | None = None
    tables: Callable[[list[Record]], list[Table]] | None = None
    claims: Callable[[list[Record]], list[Claim]] | None = None
    description: str = ""
    options: dict[str, str] = field(default_factory=dict)
    reproduces: tuple[str, ...] = ()


def results_path(out_dir: Path, name: str, quick: bool) -> Path:
    """``<out_dir>/<name>.jsonl``, or ``<name>_quick.jsonl`` for the quick size."""
    return Path(out_dir) / f"{name}{'_quick' if quick else ''}.jsonl"


def meta_path(out_dir: Path, name: str, quick: bool) -> Path:
    """The run's metadata (machine, sessions): ``<name>[_quick].meta.json``."""
    return Path(out_dir) / f"{name}{'_quick' if quick else ''}.meta.json"


def load_records(path: Path, *, repair: bool = False) -> list[Record]:
    """Read a JSON Lines results file.

    Every record is written as one line ending in a newline; a tail without
    its newline is a write cut short by a kill and is dropped (with
    ``repair=True`` also cut from the file, so the next append starts on a
    fresh line). A broken complete line is an error.
    """
    path = Path(path)
    if not path.exists():
        return []
    raw = path.read_bytes()
    complete, _, tail = raw.rpartition(b"\n")
    if tail and repair:
        with open(path, "r+b") as handle:
            handle.truncate(len(raw) - len(tail))
    records: list[Record] = []
    for i, line in enumerate(complete.split(b"\n") if complete else []):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InputValidationError(f"{path}: line {i + 1} is not JSON ({exc})") from exc
    return records


def append_record(path: Path, record: Record) -> None:
    """Append one record as one line, flushed and fsynced before returning."""
    line = (json.dumps(record, sort_keys=True, default=_json_default) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON to a temporary file in the same folder, then rename it over ``path`` (mode 0666 less the umask)."""
    write_atomic(path, json.dumps(payload, indent=2, sort_keys=True, default=_json_default), mode=SHARED)


def _json_default(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot store {type(value).__name__} in the results JSON")


def default_out_dir(cwd: Path | None = None) -> Path:
    """A fresh folder ``mpc-pca-studies-YYYYmmdd-HHMMSS[-N]`` under the current directory."""
    base = Path.cwd() if cwd is None else Path(cwd)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = base / f"mpc-pca-studies-{stamp}"
    n = 1
    while candidate.exists():
        n += 1
        candidate = base / f"mpc-pca-studies-{stamp}-{n}"
    return candidate


def check_points(study: Study, points: Iterable[Point]) -> list[Point]:
    """Every point has a ``key`` and no two share one."""
    points = list(points)
    seen: set[str] = set()
    for point in points:
        key = point.get("key")
        if not isinstance(key, str) or not key:
            raise InputValidationError(f"study {study.name!r}: point {point!r} has no string 'key'")
        if key in seen:
            raise InputValidationError(f"study {study.name!r}: point key {key!r} appears twice")
        seen.add(key)
    return points


@dataclass
class RunSummary:
    """What :func:`run_study` did."""

    results: Path
    measured: int
    skipped: int
    total: int
    plots: list[Path]
    seconds: float


def run_study(
    study: Study,
    out_dir: Path,
    *,
    quick: bool = False,
    options: dict[str, str] | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> RunSummary:
    """Measure every point of ``study`` that ``out_dir`` does not hold yet, then plot.

    Parameters
    ----------
    study : Study
    out_dir : Path
        Created if missing. Results go to :func:`results_path`, metadata
        (machine, one entry per session) to :func:`meta_path`.
    quick : bool
        The study's small size, stored under ``*_quick*`` names so that full
        results are never touched.
    progress : bool
        Show a tqdm progress bar (on stderr).

    Returns
    -------
    RunSummary
    """
    from mpc_pca.studies.machine import describe_machine, load_average

    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = results_path(out_dir, study.name, quick)
    options = dict(options or {})
    unknown = sorted(set(options) - set(study.options))
    if unknown:
        raise InputValidationError(
            f"study {study.name!r} has no option {unknown}; it understands {sorted(study.options) or 'none'}"
        )
    points = check_points(study, study.points(quick, options))
    done = {r["key"] for r in load_records(path, repair=True)}
    todo = [p for p in points if p["key"] not in done]
    meta_file = meta_path(out_dir, study.name, quick)
    meta: dict[str, Any] = (
        json.loads(meta_file.read_text()) if meta_file.exists() else {"study": study.name, "sessions": []}
    )
    session = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "quick": quick,
        "options": options,
        "points_total": len(points),
        "points_already_stored": len(points) - len(todo),
        "machine": describe_machine(),
        "load_average_at_start": load_average(),
    }
    meta["sessions"].append(session)
    meta["summary"] = study.summary
    write_json_atomic(meta_file, meta)
    log(
        f"study {study.name}{' (quick)' if quick else ''}: {len(points)} points, "
        f"{len(points) - len(todo)} already in {path}, measuring {len(todo)}"
    )
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=study.name, unit="point")
    measured = 0
    try:
        for point in todo:
            if bar is not None:
                bar.set_postfix_str(point["key"][:40])
            t0 = time.perf_counter()
            result = study.measure(dict(point))
            record = {**point, **result, "point_seconds": time.perf_counter() - t0}
            append_record(path, record)
            measured += 1
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        session["points_measured"] = measured
        session["load_average_at_end"] = load_average()
        session["seconds"] = time.perf_counter() - started
        write_json_atomic(meta_file, meta)
    records = load_records(path)
    plots = study.plot(records, out_dir, "_quick" if quick else "") if study.plot else []
    return RunSummary(
        path, measured, len(points) - len(todo), len(points), plots, time.perf_counter() - started
    )
