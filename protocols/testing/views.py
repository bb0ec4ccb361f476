"""View independence: a party's messages must not depend on inputs beyond its output.

Simulation-based security says a party's view (every message it receives)
can be produced from its own input and output alone. :func:`check_view_independence`
tests the consequence a test can see: run the same role functions on two
input sets **A** and **B** that give every party the same output, record every
party's view (:mod:`protocols.testing.recording`), and test that the two views
come from one distribution.

The statistics
--------------
A view is split into *leaves*: ``(sender, index, path)`` slots holding an
array, a byte string or a scalar (dicts and lists are walked). Leaves are
pooled over ``repeats`` runs of each input set, then

* **scalars** (ints, strings, shapes in message headers) must be equal in A
  and B, run by run: they are treated as public metadata;
* **ring words** (``uint64``/``int64`` arrays): for each of the 8 byte
  positions of a word, Pearson's chi-square test of homogeneity of the byte
  values in A versus B (a 2 x 256 table; 2 x 16 on the high nibble when
  fewer than 1,280 words are pooled, skipped below 80); and, unless
  ``uniform_ring_words=False``, a chi-square goodness-of-fit test of each byte
  position to the uniform distribution (A and B pooled);
* **byte strings** (seeds, keys, ciphertexts) and other integer arrays: the
  same homogeneity test on all byte values of the slot;
* **real arrays**: a two-sample Kolmogorov-Smirnov test (at least 20 values each).

All tests of one check form one family: each is run at ``alpha / K``
(Bonferroni, ``K`` tests), so the whole check falsely alarms with probability
at most ``alpha``. Masks and shares come from the OS-seeded CSPRNG and cannot be
seeded, so the default ``alpha = 1e-6`` keeps false alarms negligible while a
leak (a byte of an input showing through, a mask too short) gives p-values
many orders of magnitude smaller with the default sample sizes (several
thousand words per slot).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from protocols.runtime import Role
from protocols.testing.recording import RecordedRun, run_recorded

#: Pooled samples needed for a 256-bin chi-square test (5 expected per bin).
FULL_BINS_MIN = 1280
#: Pooled samples needed for the 16-bin (high nibble) fallback.
NIBBLE_BINS_MIN = 80
#: Values needed in each sample for the Kolmogorov-Smirnov test.
KS_MIN = 20

RolesSource = Mapping[str, Role] | Callable[[], Mapping[str, Role]]


@dataclass(frozen=True)
class StatTest:
    """One statistical test of a view slot."""

    party: str
    slot: str
    test: str
    statistic: float
    pvalue: float
    n: int

    def describe(self) -> str:
        return f"party {self.party!r}, {self.slot}: {self.test}, n={self.n}, p={self.pvalue:.3g}"


@dataclass
class ViewReport:
    """Every test :func:`check_view_independence` ran, and what it could not test."""

    alpha: float
    repeats: int
    tests: list[StatTest] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def threshold(self) -> float:
        """Per-test significance level (Bonferroni): ``alpha / K``."""
        return self.alpha / max(1, len(self.tests))

    @property
    def failures(self) -> list[StatTest]:
        return [t for t in self.tests if t.pvalue < self.threshold]


def leaves(message: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Walk a message into ``(path, leaf)`` pairs (dicts by sorted key, lists by index)."""
    if isinstance(message, dict):
        for key in sorted(message, key=str):
            yield from leaves(message[key], f"{path}[{key!r}]")
    elif isinstance(message, (list, tuple)):
        for i, item in enumerate(message):
            yield from leaves(item, f"{path}[{i}]")
    else:
        yield path, message


def _kind(leaf: Any) -> str:
    if isinstance(leaf, np.ndarray):
        if leaf.dtype in (np.uint64, np.int64):
            return "words"
        if leaf.dtype.kind == "f":
            return "reals"
        return "bytes"
    if isinstance(leaf, (bytes, bytearray)):
        return "bytes"
    return "scalar"


def _signature(leaf: Any) -> Any:
    if isinstance(leaf, np.ndarray):
        return ("array", leaf.dtype.str, leaf.shape)
    if isinstance(leaf, (bytes, bytearray)):
        return ("bytes", len(leaf))
    return ("scalar", repr(leaf))


def _byte_matrix(words: list[np.ndarray]) -> np.ndarray:
    flat = np.concatenate([w.reshape(-1) for w in words]) if words else np.zeros(0, np.uint64)
    return flat.astype("<u8").view(np.uint8).reshape(-1, 8)


def _byte_values(blobs: list[Any]) -> np.ndarray:
    parts = [
        np.frombuffer(bytes(b), dtype=np.uint8) if not isinstance(b, np.ndarray) else b.view(np.uint8).ravel()
        for b in blobs
    ]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint8)


def _binned(values: np.ndarray, n: int) -> tuple[np.ndarray, int] | None:
    if n >= FULL_BINS_MIN:
        return values, 256
    if n >= NIBBLE_BINS_MIN:
        return values >> 4, 16
    return None


def _homogeneity(a: np.ndarray, b: np.ndarray) -> tuple[float, float, str] | None:
    """Chi-square homogeneity of two samples of byte values; ``None`` if too few."""
    n = min(a.size, b.size)
    binned = _binned(np.concatenate([a, b]), n)
    if binned is None:
        return None
    values, bins = binned
    table = np.stack(
        [np.bincount(values[: a.size], minlength=bins), np.bincount(values[a.size :], minlength=bins)]
    )
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:  # both samples constant and equal
        return 0.0, 1.0, f"{bins}-bin"
    statistic, pvalue, _, _ = stats.chi2_contingency(table, correction=False)
    return float(statistic), float(pvalue), f"{bins}-bin"


def _uniformity(values: np.ndarray) -> tuple[float, float, str] | None:
    binned = _binned(values, values.size)
    if binned is None:
        return None
    vals, bins = binned
    counts = np.bincount(vals, minlength=bins)
    statistic, pvalue = stats.chisquare(counts)
    return float(statistic), float(pvalue), f"{bins}-bin"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _run(source: RolesSource, timeout: float, label: str) -> RecordedRun:
    roles = source() if callable(source) else source
    run = run_recorded(roles, timeout=timeout)
    if run.failed:
        name, exc = next(iter(run.errors.items()))
        raise AssertionError(
            f"view independence: the run on inputs {label} failed at party {name!r}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return run


def check_view_independence(
    roles_a: RolesSource,
    roles_b: RolesSource,
    *,
    parties: Sequence[str] | None = None,
    repeats: int = 3,
    alpha: float = 1e-6,
    uniform_ring_words: bool = True,
    timeout: float = 60.0,
) -> ViewReport:
    """Test that each party's view has the same distribution on inputs A and on inputs B.

    Parameters
    ----------
    roles_a, roles_b : mapping of str to role function, or a callable returning one
        The same protocol on two input sets that must give every party the
        same output (checked: the check refuses inputs that do not). A callable
        is called once per run, for protocols whose role functions keep state.
    parties : sequence of str, optional
        Whose views to test; every party by default (non-receivers and, beyond
        its output, the receiver).
    repeats : int, default=3
        Runs per input set; slots are pooled over them.
    alpha : float, default=1e-6
        Family-wise significance level of all the tests together (see the
        module docstring for the tests and the sample sizes they need).
    uniform_ring_words : bool, default=True
        Also test that every ``uint64``/``int64`` array a party receives is
        uniform over the ring (true of shares and masked values, not of
        protocols that send, e.g., public counts as ring words).
    timeout : float
        Receive timeout of each run.

    Returns
    -------
    ViewReport
        Every test run (with its p-value) and every slot too small to test.

    Raises
    ------
    AssertionError
        Naming the property "view independence", the party, the message slot
        and the test that rejected; or when the inputs do not give the same
        outputs, or a run fails.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    # (party, slot) -> kind -> {"A": [...], "B": [...]}
    pooled: dict[tuple[str, str], dict[str, list[Any]]] = {}
    kinds: dict[tuple[str, str], str] = {}
    for _ in range(repeats):
        run_a, run_b = _run(roles_a, timeout, "A"), _run(roles_b, timeout, "B")
        _check_same_outputs(run_a, run_b)
        for name in parties if parties is not None else sorted(run_a.outputs):
            view_a, view_b = run_a.recorder.view(name), run_b.recorder.view(name)
            if view_a.keys() != view_b.keys():
                raise AssertionError(
                    f"view independence failed: party {name!r} receives different messages on inputs "
                    f"A ({sorted(view_a)}) and B ({sorted(view_b)})"
                )
            for (sender, index), message_a in view_a.items():
                _pool_message(
                    name,
                    f"message {index} from {sender!r}",
                    message_a,
                    view_b[(sender, index)],
                    pooled,
                    kinds,
                )
    report = ViewReport(alpha=alpha, repeats=repeats)
    for (name, slot), samples in pooled.items():
        _test_slot(report, name, slot, kinds[(name, slot)], samples["A"], samples["B"], uniform_ring_words)
    _raise_failures(report, alpha, repeats)
    return report


def _check_same_outputs(run_a: RecordedRun, run_b: RecordedRun) -> None:
    """Refuse inputs A and B unless every party got the same output on both."""
    if run_a.outputs.keys() != run_b.outputs.keys():
        raise AssertionError("view independence: inputs A and B ran different sets of parties")
    for name in run_a.outputs:
        if not _same(run_a.outputs[name], run_b.outputs[name]):
            raise AssertionError(
                f"view independence is only defined for inputs that give the same outputs, "
                f"but party {name!r} got different outputs on inputs A and B"
            )


def _pool_message(
    name: str,
    slot_name: str,
    message_a: Any,
    message_b: Any,
    pooled: dict[tuple[str, str], dict[str, list[Any]]],
    kinds: dict[tuple[str, str], str],
) -> None:
    """Add one message's leaves (on A and on B) to ``pooled``; scalars and the message's form must agree."""
    leaves_a = list(leaves(message_a))
    leaves_b = list(leaves(message_b))
    sig_a = [(p, _signature(x) if _kind(x) != "scalar" else "scalar") for p, x in leaves_a]
    sig_b = [(p, _signature(x) if _kind(x) != "scalar" else "scalar") for p, x in leaves_b]
    if sig_a != sig_b:
        raise AssertionError(
            f"view independence failed: party {name!r}, {slot_name} has a different form "
            f"on inputs A ({sig_a}) and B ({sig_b})"
        )
    for (path, leaf_a), (_, leaf_b) in zip(leaves_a, leaves_b, strict=True):
        slot = f"{slot_name}{path}"
        kind = _kind(leaf_a)
        if kind == "scalar":
            if not _same(leaf_a, leaf_b):
                raise AssertionError(
                    f"view independence failed: party {name!r}, {slot} is {leaf_a!r} on "
                    f"inputs A but {leaf_b!r} on inputs B"
                )
            continue
        entry = pooled.setdefault((name, slot), {"A": [], "B": []})
        kinds[(name, slot)] = kind
        entry["A"].append(leaf_a)
        entry["B"].append(leaf_b)


def _raise_failures(report: ViewReport, alpha: float, repeats: int) -> None:
    """Fail naming the first few rejecting tests, if any rejected."""
    failures = report.failures
    if failures:
        shown = 6
        lines = "\n".join(f"  {t.describe()}" for t in failures[:shown])
        if len(failures) > shown:
            lines += f"\n  ... and {len(failures) - shown} more"

        raise AssertionError(
            f"view independence failed: {len(failures)} of {len(report.tests)} tests reject at "
            f"alpha={alpha:g} (Bonferroni: each at {report.threshold:.3g}; {repeats} runs per input set)\n"
            f"{lines}"
        )


def _test_slot(
    report: ViewReport,
    name: str,
    slot: str,
    kind: str,
    a: list[Any],
    b: list[Any],
    uniform_ring_words: bool,
) -> None:
    def add(test: str, outcome: tuple[float, float, str] | None, n: int) -> None:
        if outcome is None:
            report.skipped.append(f"party {name!r}, {slot}: {test}: too few samples ({n})")
            return
        statistic, pvalue, bins = outcome
        report.tests.append(StatTest(name, slot, f"{test} ({bins})", statistic, pvalue, n))

    if kind == "words":
        bytes_a, bytes_b = _byte_matrix(a), _byte_matrix(b)
        n = min(bytes_a.shape[0], bytes_b.shape[0])
        for k in range(8):
            add(
                f"chi-square homogeneity of byte {k} of the ring words, A vs B",
                _homogeneity(bytes_a[:, k], bytes_b[:, k]),
                n,
            )
            if uniform_ring_words:
                pooled = np.concatenate([bytes_a[:, k], bytes_b[:, k]])
                add(f"chi-square uniformity of byte {k} of the ring words", _uniformity(pooled), pooled.size)
    elif kind == "bytes":
        values_a, values_b = _byte_values(a), _byte_values(b)
        add(
            "chi-square homogeneity of the byte values, A vs B",
            _homogeneity(values_a, values_b),
            min(values_a.size, values_b.size),
        )
    else:  # reals
        reals_a = np.concatenate([x.reshape(-1) for x in a])
        reals_b = np.concatenate([x.reshape(-1) for x in b])
        n = min(reals_a.size, reals_b.size)
        if n < KS_MIN:
            report.skipped.append(f"party {name!r}, {slot}: Kolmogorov-Smirnov: too few samples ({n})")
            return
        ks = stats.ks_2samp(reals_a, reals_b)
        report.tests.append(
            StatTest(
                name, slot, "two-sample Kolmogorov-Smirnov, A vs B", float(ks.statistic), float(ks.pvalue), n
            )
        )
