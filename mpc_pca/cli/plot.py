"""``mpc-pca plot result.json [--projection proj.csv] --out fig.png``.

Draws the scree plot (each component's percentage of the total variance, or
of the released components' variance for a DP result that does not release
the total, and its running sum) of a ``run`` result (or the server's ``model.json`` of ``mpc-pca
party``) and, with the CSV of ``run --transform-output`` or the consumer's
``projection.json``, the rows' first two components coloured by provider.
Needs matplotlib (``pip install mpc-pca[plots]``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from mpc_pca.cli.options import EXIT_CODES_HELP, PLOTS_INSTALL, check_output, require_installed
from mpc_pca.files import write_atomic
from protocols.errors import InputValidationError


def add_plot_parser(sub: Any) -> None:
    plot = sub.add_parser(
        "plot",
        help="scree plot of a result JSON and, with --projection, the rows' first two components",
        epilog=EXIT_CODES_HELP,
    )
    plot.add_argument("result", type=Path, help="JSON written by mpc-pca run --output")
    plot.add_argument(
        "--projection", type=Path, default=None,
        help="CSV written by run --transform-output, or the JSON the consumer of mpc-pca party writes",
    )  # fmt: skip
    plot.add_argument("--out", type=Path, required=True, help="PNG file to write")
    plot.add_argument("--force", action="store_true", help="overwrite --out if it exists")


def _load_result(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputValidationError(f"result file {str(path)!r} does not exist")
    try:
        result = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputValidationError(f"{path} is not a JSON result of mpc-pca run ({exc})") from exc
    if not isinstance(result, dict) or not isinstance(result.get("explained_variance"), list):
        raise InputValidationError(f"{path} has no 'explained_variance'; is it a result of mpc-pca run?")
    return result


def _load_projection(path: Path) -> tuple[list[str], np.ndarray]:
    """Provider labels and the first two components of a projection file.

    Either the CSV of ``run --transform-output`` (columns ``provider``,
    optionally ``source``, ``pc1``, ``pc2``, ...; any case) or the JSON the
    consumer of ``mpc-pca party`` writes (its ``projection`` table: ``provider``,
    ``row``, ``PC1`` ...). An older consumer JSON whose ``projection`` is a
    bare list of rows has no provider labels: its rows are drawn as one group.
    """
    if not path.is_file():
        raise InputValidationError(f"projection file {str(path)!r} does not exist")
    if path.suffix.lower() == ".json":
        return _load_projection_json(path)
    import pandas as pd

    frame = pd.read_csv(path)
    frame.columns = [str(c).lower() for c in frame.columns]
    if "provider" not in frame.columns or not {"pc1", "pc2"} <= set(frame.columns):
        raise InputValidationError(
            f"{path} needs the columns provider, pc1 and pc2 (run --transform-output with --n-components >= 2); "
            f"it has {list(frame.columns)}"
        )
    labels = [str(p) for p in frame["provider"]]
    if "source" in frame.columns:
        labels = [f"{p} ({Path(str(src)).name})" for p, src in zip(labels, frame["source"], strict=True)]
    return labels, frame[["pc1", "pc2"]].to_numpy(dtype=float)


def _load_projection_json(path: Path) -> tuple[list[str], np.ndarray]:
    from mpc_pca.pppca.deployment import read_projection

    try:
        document = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputValidationError(f"{path} is not JSON ({exc})") from exc
    if not isinstance(document, dict) or "projection" not in document:
        raise InputValidationError(
            f"{path} has no 'projection'; give the --output of the consumer of mpc-pca party, "
            "or the CSV of mpc-pca run --transform-output"
        )
    labels, values = read_projection(document["projection"])
    if values.shape[1] < 2:
        raise InputValidationError(
            f"{path} holds {values.shape[1]} component(s) per row; the plot needs 2 (--n-components >= 2)"
        )
    if labels is None:
        labels = ["rows (no provider labels in this file)"] * values.shape[0]
    return labels, values[:, :2]


def variance_shares(result: dict[str, Any]) -> tuple[np.ndarray, bool]:
    """Each component's share of the variance, and whether the share is of the total variance.

    ``explained_variance_ratio`` (PPPCA: the server holds the whole spectrum)
    is a share of the total variance. A DP result releases only its ``k``
    variances (the total would cost privacy): their shares of the ``k``
    released ones are returned, and ``False`` says so, so that no plot
    passes them off as shares of the total (their sum is 100 % by
    construction). A variance the protocol does not release (``null``) is NaN.
    """
    ratio = result.get("explained_variance_ratio")
    if ratio is not None:
        return np.asarray([np.nan if v is None else v for v in ratio], dtype=float), True
    variance = np.array([np.nan if v is None else v for v in result["explained_variance"]], dtype=float)
    total = np.nansum(variance)
    return (variance / total if total > 0 else np.full_like(variance, np.nan)), False


def draw(result: dict[str, Any], projection: tuple[list[str], np.ndarray] | None = None) -> Any:
    """The figure: the scree plot and, with ``projection``, the rows on PC1 and PC2 (a matplotlib Figure).

    The scree plot's axis says what its percentages are of: the total
    variance, or, for a DP result, the ``k`` released components' variance
    (:func:`variance_shares`). The projection's axes carry each component's
    percentage in the same terms, e.g. ``PC1 (44.3 % of the total variance)``.
    """
    import matplotlib.pyplot as plt

    shares, of_total = variance_shares(result)
    what = "of the total variance" if of_total else f"of the {shares.size} released components' variance"
    panels = 1 if projection is None else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4.2), squeeze=False)
    ax = axes[0, 0]
    ks = np.arange(1, shares.size + 1)
    ax.bar(ks, 100 * shares, color="tab:blue", label="component")
    ax.plot(ks, 100 * np.nancumsum(shares), "o-", color="tab:orange", label="cumulative")
    ax.set_xticks(ks)
    ax.set_xlabel("component")
    ax.set_ylabel(f"% {what}")
    title = f"{result.get('protocol', '')}: scree"
    if result.get("standardize"):
        title += " (standardized)"
    if not of_total:
        title += "\n(total variance not released: shares of the released k)"
    ax.set_title(title)
    ax.legend()
    if projection is not None:
        providers, points = projection
        ax = axes[0, 1]
        for name in dict.fromkeys(providers):
            mask = np.array([p == name for p in providers])
            ax.scatter(points[mask, 0], points[mask, 1], s=10, alpha=0.7, label=name)
        short = "total variance" if of_total else f"variance of the {shares.size} released"
        for j, set_label in enumerate((ax.set_xlabel, ax.set_ylabel)):
            share = shares[j] if j < shares.size else np.nan
            set_label(f"PC{j + 1}" if np.isnan(share) else f"PC{j + 1} ({100 * share:.1f} % of {short})")
        ax.set_title("rows on the first two components")
        ax.legend(title="provider")
    return fig


def plot_command(args: argparse.Namespace) -> int:
    """Draw the figure; matplotlib's presence and every input are checked before any is read."""
    require_installed("mpc-pca plot", ("matplotlib",), PLOTS_INSTALL)
    result = _load_result(args.result)
    projection = None if args.projection is None else _load_projection(args.projection)
    check_output(
        args.out,
        "--out",
        [str(args.result), *([] if args.projection is None else [str(args.projection)])],
        args.force,
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = draw(result, projection)
    fig.tight_layout()
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    write_atomic(args.out, buffer.getvalue())
    print(f"figure written to {args.out}")
    return 0


__all__ = ["add_plot_parser", "draw", "plot_command", "variance_shares"]
