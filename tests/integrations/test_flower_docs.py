"""docs/howto/flower.md: the swap it shows names what the package exports, with the workflow's arguments."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from tests.helpers.markdown_blocks import DOCS, block

ROOT = Path(__file__).resolve().parents[2]
PAGE = DOCS / "howto" / "flower.md"


def exported() -> set[str]:
    """``__all__`` of mpc_pca.integrations.flower, read from its source (no Flower needed)."""
    tree = ast.parse((ROOT / "mpc_pca" / "integrations" / "flower" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("no __all__")


def test_the_swap_imports_only_exported_names_and_passes_real_arguments():
    tree = ast.parse(block(PAGE, "flower-swap").text)
    ours = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "mpc_pca.integrations.flower"
    ]
    assert ours and {a.name for n in ours for a in n.names} <= exported()
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "SecureSumWorkflow"
    ]
    source = (ROOT / "mpc_pca" / "integrations" / "flower" / "workflow.py").read_text()
    init = next(
        f
        for c in ast.walk(ast.parse(source))
        if isinstance(c, ast.ClassDef) and c.name == "SecureSumWorkflow"
        for f in c.body
        if isinstance(f, ast.FunctionDef) and f.name == "__init__"
    )
    names = {a.arg for a in init.args.args + init.args.kwonlyargs}
    assert calls and {k.arg for c in calls for k in c.keywords} <= names


def test_the_workflow_accepts_the_arguments_of_secaggplus_it_documents():
    flower = pytest.importorskip("mpc_pca.integrations.flower", exc_type=ImportError)
    params = inspect.signature(flower.SecureSumWorkflow).parameters
    assert {"num_shares", "reconstruction_threshold", "max_weight", "clipping_range", "timeout"} <= set(
        params
    )


def test_the_node_config_shown_names_exactly_the_keys_the_mod_reads():
    import re
    import shlex

    tree = ast.parse((ROOT / "mpc_pca" / "integrations" / "flower" / "mod.py").read_text())
    (keys,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "IDENTITY_KEYS" for t in node.targets)
    ]
    (peers,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "PEERS_KEY" for t in node.targets)
    ]
    keys = (*keys, peers)
    text = block(PAGE, "flower-node-config").text
    words = shlex.split(text.replace("...", ""))
    assert words[0] == "flower-supernode"
    config = words[words.index("--node-config") + 1]
    shown = dict(re.findall(r"([\w-]+)='([^']*)'", config))
    assert tuple(shown) == tuple(keys) and all(shown.values())
