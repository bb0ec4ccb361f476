"""Providers of ``mpc-pca party`` agree their columns by name, as ``mpc-pca run`` does.

Each party's :func:`~mpc_pca.deploy.party.prepare` is called here as the
party's own process calls it (nothing but the announcements is exchanged),
every ``build`` gets every announcement, and the roles then run as threads:
the floor's own code path without sockets.
"""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.deploy import ArraySource, LinkOptions, PartySpec, run_threads
from mpc_pca.deploy.party import prepare
from mpc_pca.floor import agree_columns, align_views
from mpc_pca.pppca.chunked import ChunkedPart, PermutedPart
from mpc_pca.pppca.deployment import read_projection
from mpc_pca.pppca.local_stats import LocalStatistics
from protocols.errors import InputValidationError
from protocols.runtime import run_inprocess
from tests.helpers.markdown_blocks import page_of

NAMES = tuple(f"f{j}" for j in range(13))


def floor_run(
    sources: list[ArraySource], n_components: int = 3, protocol: str = "pppca-ss"
) -> dict[str, object]:
    """Every party's prepare/build as its process runs them; the roles as threads; every party's result."""
    from mpc_pca.registry import deployment as registered

    deployment = registered(protocol)
    links = LinkOptions("127.0.0.1:1", insecure=True)
    layout = deployment.layout(len(sources))
    holders = list(deployment.data_holders(len(sources)))
    specs = {
        name: PartySpec(
            protocol,
            name,
            len(sources),
            links,
            sources[holders.index(name)] if name in holders else None,
            {"n_components": n_components},
        )
        for name in layout
    }
    prepared = {name: prepare(spec, deployment) for name, spec in specs.items()}
    views = {name: p[2] for name, p in prepared.items()}
    built = {name: p[3](views) for name, p in prepared.items()}
    run = run_inprocess({name: role for name, (_config, role) in built.items()}, timeout=60)
    return {name: deployment.result(name, built[name][0], run.outputs[name]) for name in layout}


def test_a_provider_with_permuted_columns_gives_the_run_of_providers_in_one_order(wine):
    parts = np.array_split(wine, 3)
    order = list(range(13))[::-1]
    sources = [
        ArraySource(parts[0], NAMES),
        ArraySource(parts[1][:, order], tuple(NAMES[j] for j in order)),
        ArraySource(parts[2], NAMES),
    ]
    results = floor_run(sources)
    reference = run_threads("pppca-ss", parts, {"n_components": 3}, feature_names=NAMES)
    server = results["server"]
    np.testing.assert_allclose(server["components"], reference["components"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(server["explained_variance"], reference["explained_variance"], rtol=1e-12)
    assert server["feature_names"] == list(NAMES)
    labels, projected = read_projection(results["consumer"]["projection"])
    assert labels == [f"provider{i}" for i, p in enumerate(parts) for _ in range(len(p))]
    table = results["consumer"]["projection"]
    assert table["columns"] == ["provider", "row", "PC1", "PC2", "PC3"]
    assert [row[1] for row in table["data"][: len(parts[0]) + 2]] == [*range(len(parts[0])), 0, 1]
    centred = np.vstack(parts) - np.asarray(server["mean"])
    np.testing.assert_allclose(projected, centred @ np.asarray(server["components"]).T, atol=1e-6)


def test_different_column_sets_are_refused_with_the_counts_and_names_before_any_role_runs(wine):
    parts = np.array_split(wine, 3)
    sources = [
        ArraySource(parts[0], NAMES),
        ArraySource(parts[1][:, 1:], NAMES[1:]),
        ArraySource(parts[2], NAMES),
    ]
    with pytest.raises(InputValidationError) as info:
        floor_run(sources)
    text = str(info.value)
    assert "provider1 has different column names than provider0 (12 columns vs 13)" in text
    assert "missing ['f0'], unexpected []" in text
    assert "leaves out ['f0']" in text


def test_the_tutorials_refusal_is_the_message_the_providers_give():
    names = [f"c{i}" for i in range(30)]
    views = {"provider0": {"columns": names}, "provider1": {"columns": names[:-1]}}
    with pytest.raises(InputValidationError) as info:
        agree_columns(views, ("provider0", "provider1"))
    from mpc_pca.cli.errors import command_line_flags, in_flag_terms

    shown = page_of("hospitals-party-refusal").text
    for fragment in (
        "has different column names than provider0 (29 columns vs 30)",
        "give every provider columns=NAMES",
    ):
        # the page shows the command line's spelling of the library's message
        assert fragment in str(info.value) and in_flag_terms(fragment, command_line_flags()) in shown, (
            fragment
        )


def test_names_from_some_providers_only_are_refused():
    views = {"provider0": {"columns": ["a", "b"]}, "provider1": {"columns": None}}
    with pytest.raises(InputValidationError, match="provider1 announced no column names but provider0 did"):
        agree_columns(views, ("provider0", "provider1"))
    assert agree_columns({"provider0": {"columns": None}}, ("provider0",)) == (None, {"provider0": None})


def test_per_column_announcements_are_read_in_the_agreed_order():
    views = {
        "provider0": {"columns": ["a", "b", "c"], "column_exponents": [1, 2, 3]},
        "provider1": {"columns": ["c", "a", "b"], "column_exponents": [30, 10, 20]},
        "server": {},
    }
    reference, orders = agree_columns(views, ("provider0", "provider1"))
    assert reference == ("a", "b", "c") and orders == {"provider0": None, "provider1": [1, 2, 0]}
    aligned = align_views(views, reference, orders, ("column_exponents",))
    assert aligned["provider1"] == {"columns": ["a", "b", "c"], "column_exponents": [10, 20, 30]}
    assert aligned["provider0"] is views["provider0"] and aligned["server"] == {}
    views["provider1"]["column_exponents"] = [1, 2]
    with pytest.raises(InputValidationError, match=r"provider1 announced column_exponents=.* for 3 columns"):
        align_views(views, reference, orders, ("column_exponents",))


class Blocks(ChunkedPart):
    """An in-memory part read two rows at a time."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows
        self.n_features = rows.shape[1]

    def chunks(self):  # type: ignore[no-untyped-def]
        for start in range(0, len(self.rows), 2):
            yield self.rows[start : start + 2]


def test_a_permuted_streamed_part_has_the_statistics_and_projection_of_the_permuted_rows(wine):
    order = [2, 0, 1, *range(3, 13)]
    part = PermutedPart(Blocks(wine), order)
    expected = LocalStatistics.of(wine[:, order])
    stats = part.statistics()
    assert stats.n_rows == expected.n_rows
    np.testing.assert_allclose(stats.column_sums, expected.column_sums, rtol=1e-12)
    np.testing.assert_allclose(stats.scatter_triangle, expected.scatter_triangle, rtol=1e-9)
    np.testing.assert_array_equal(part.column_peaks(), np.max(np.abs(wine[:, order]), axis=0))
    mean, transfer = wine.mean(axis=0)[order], np.random.default_rng(0).normal(size=(13, 2))
    np.testing.assert_allclose(part.project(mean, transfer), (wine[:, order] - mean) @ transfer, atol=1e-9)
    np.testing.assert_array_equal(np.vstack(list(part.chunks())), wine[:, order])
    with pytest.raises(InputValidationError, match="not a permutation of the part's 13 columns"):
        PermutedPart(Blocks(wine), [0, 0, *range(2, 13)])


def test_run_names_the_column_counts_and_what_columns_would_leave_out(tmp_path, capsys):
    from mpc_pca.cli import main
    from mpc_pca.cli.options import EXIT_INPUT

    rng = np.random.default_rng(0)
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("x,y,z\n" + "\n".join(",".join(map(str, r)) for r in rng.normal(size=(6, 3))) + "\n")
    b.write_text("z,x\n" + "\n".join(",".join(map(str, r)) for r in rng.normal(size=(6, 2))) + "\n")
    assert (
        main(["run", "--protocol", "pppca-ss", "--data", str(a), str(b), "--n-components", "1"]) == EXIT_INPUT
    )
    err = capsys.readouterr().err
    assert "b.csv has different column names than" in err and "(2 columns vs 3)" in err
    assert "missing ['y'], unexpected []" in err
    assert "--columns NAMES with the 2 names they share, which leaves out ['y']" in err


def test_a_dp_protocols_holder_with_permuted_columns_is_reordered_too(wine):
    rows = (wine - wine.mean(axis=0)) / wine.std(axis=0)
    parts = np.array_split(rows / (1.01 * np.linalg.norm(rows, axis=1).max()), 3)
    order = [4, 0, 1, 2, 3, *range(5, 13)]
    sources = [
        ArraySource(parts[0], NAMES),
        ArraySource(parts[1][:, order], tuple(NAMES[j] for j in order)),
        ArraySource(parts[2], NAMES),
    ]
    results = floor_run(sources, n_components=2, protocol="pooled")
    from mpc_pca.registry import deployment

    pooled = deployment("pooled")
    result = results[pooled.result_party(pooled.layout(3))]
    reference = run_threads("pooled", parts, {"n_components": 2}, feature_names=NAMES)
    np.testing.assert_allclose(np.abs(result["components"]), np.abs(reference["components"]), atol=1e-10)
    np.testing.assert_allclose(result["explained_variance"], reference["explained_variance"], rtol=1e-10)
