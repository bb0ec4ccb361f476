"""A tiny study for the framework tests: four points, a claim decided by the stored values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mpc_pca.studies.framework import Claim, Point, Record, Study, Table

#: Keys of the points measured so far (reset by the tests).
CALLS: list[str] = []
#: Key of the point at which ``measure`` raises, simulating a run stopped there (None: never).
STOP_AT: list[str | None] = [None]


class StoppedError(RuntimeError):
    """Raised by the toy study's measure to simulate a stopped run."""


def points(quick: bool, options: dict[str, str]) -> list[Point]:
    ns = (1, 2) if quick else (1, 2, 3, 4)
    scale = float(options.get("scale", "1"))
    return [{"key": f"n={n}", "n": n, "scale": scale} for n in ns]


def measure(point: Point) -> dict[str, Any]:
    if point["key"] == STOP_AT[0]:
        raise StoppedError(point["key"])
    CALLS.append(point["key"])
    return {"value": point["n"] * point["scale"]}


def claims(records: list[Record]) -> list[Claim]:
    if not records:
        return [Claim("toy paper", "every value is below 10", None, "no records")]
    top = max(r["value"] for r in records)
    return [Claim("toy paper", "every value is below 10", top < 10, f"largest value {top:g}")]


def tables(records: list[Record]) -> list[Table]:
    return [Table("toy values", ["n", "value"], [[str(r["n"]), f"{r['value']:g}"] for r in records])]


def plot(records: list[Record], out: Path, suffix: str) -> list[Path]:
    from mpc_pca.studies.plotting import pyplot, save

    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([r["n"] for r in records], [r["value"] for r in records])
    return [save(fig, Path(out) / f"toy{suffix}.png")]


STUDY = Study(
    name="toy",
    summary="toy study for the framework tests",
    points=points,
    measure=measure,
    plot=plot,
    tables=tables,
    claims=claims,
    options={"scale": "multiplies every value"},
)
