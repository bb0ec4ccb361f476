"""The enrolment how-to's table of party names is the registry's layouts (issue 38).

Each deployable protocol's row is rendered here from its protocol object
(:func:`mpc_pca.registry.deployable_names`, ``layout`` and ``data_holders``)
and compared with ``docs/howto/enrolment.md``, so a protocol added or a role
renamed fails this test until the page says so (the failure prints the rows
to paste).
"""

from __future__ import annotations

import re

import pytest

from mpc_pca import registry
from protocols.errors import InputValidationError
from tests.helpers.markdown_blocks import DOCS

PAGE = DOCS / "howto" / "enrolment.md"
MARKER = "<!-- enrolment-names: tests/docs/test_enrolment_names.py"
#: The provider counts for which each protocol's layout is checked to follow the table's pattern.
COUNTS = (1, 2, 3, 5, 8)


def holder_prefix_and_others(name: str) -> tuple[str, list[str]]:
    """A protocol's data holders' name before the index, and its other parties in rank order.

    Raises AssertionError if the layout for any of :data:`COUNTS` is not
    ``PREFIX0 .. PREFIX<M-1>`` then the same other parties: the table could not describe it.
    """
    protocol = registry.deployment(name)
    prefix = re.sub(r"\d+$", "", protocol.data_holders(1)[0])
    others = [party for party in protocol.layout(1) if party not in protocol.data_holders(1)]
    for m in COUNTS:
        holders = [f"{prefix}{i}" for i in range(m)]
        assert list(protocol.data_holders(m)) == holders, (name, m)
        ranks = {party: rank for rank, party in enumerate([*holders, *others])}
        assert protocol.layout(m) == ranks, (name, m)
    return prefix, others


def expected_rows() -> list[str]:
    """The table's rows, one per deployable protocol in registry order."""
    rows = []
    for name in registry.deployable_names():
        prefix, others = holder_prefix_and_others(name)
        ranked = ", ".join(f"`{party}` ({'M' if i == 0 else f'M+{i}'})" for i, party in enumerate(others))
        example = ",".join(registry.deployment(name).layout(3))
        rows.append(
            f"| `{name}` | `{prefix}0` .. `{prefix}<M-1>` | {ranked} | M+{len(others)} | `{example}` |"
        )
    return rows


def page_rows() -> list[str]:
    """The rows of the table after the page's marker (its header and separator lines left out)."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(MARKER))
    table = []
    for line in lines[start + 1 :]:
        if not line.startswith("|"):
            break
        table.append(line)
    assert table[1].startswith("|---"), table[:2]
    return table[2:]


def test_the_enrolment_table_is_the_registrys_layouts():
    expected = expected_rows()
    paste = "\n".join(expected)
    assert page_rows() == expected, f"docs/howto/enrolment.md's name table should read:\n{paste}"


def test_the_table_names_pppca_and_capepca_apart():
    """The issue's case: PPPCA's server/consumer and capePCA's aggregator/noise-generator."""
    rows = {row.split("|")[1].strip(" `"): row for row in page_rows()}
    assert "`server` (M), `consumer` (M+1)" in rows["pppca-ss"]
    assert "`aggregator` (M), `noise-generator` (M+1)" in rows["capepca"]
    assert set(rows) == set(registry.deployable_names())


@pytest.mark.parametrize("name", registry.names())
def test_every_protocol_is_in_the_table_or_refused_by_party(name):
    """A protocol missing from the table must be one ``mpc-pca party`` refuses."""
    listed = {row.split("|")[1].strip(" `") for row in page_rows()}
    if name in listed:
        return
    assert not registry.entry(name).deployable
    with pytest.raises(InputValidationError):
        registry.deployment(name)
