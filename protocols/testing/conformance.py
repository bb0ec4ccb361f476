"""A conformance suite for secure-sum backends, in the spirit of scikit-learn's ``check_estimator``.

:func:`check_secure_sum_backend` takes a backend instance and runs secure sums
with it through its public ``secure_sum`` method (so a subclass that overrides
``secure_sum`` is tested as it is), each party a thread of
:func:`protocols.runtime.run_inprocess`, every message recorded by
:mod:`protocols.testing.recording`. It raises :class:`AssertionError` whose
message starts with ``secure-sum conformance: property '<name>' failed`` for
the first property that does not hold. The properties (:data:`PROPERTIES`):

``correctness``
    The receiver's sum is within ``backend.sum_error_bound(M)`` (plus float64
    rounding of the result, ``2^-52 |sum|``) of the exact real sum, for
    hypothesis-drawn groups of 1-5 contributors, receivers that do or do not
    contribute, shapes from 0-d to 2-d, and values up to the edge of the
    codec's budget (:mod:`protocols.testing.strategies`).
``receiver-only output``
    Only the receiver returns a value; no other party is handed the sum (as
    floats, as its ring encoding, or as their bytes) in any message.
``validation before sending``
    A contributor with a NaN, an infinity, a value beyond the ring budget, or
    no value raises :class:`~protocols.errors.InputValidationError` having sent
    nothing.
``fresh randomness``
    Two sums of the same inputs in one run, and a second run, never deliver the
    same random-looking payload (a byte string or integer array of 16 bytes or
    more) to a party twice: masks, shares, seeds and ciphertext randomness are fresh.
``two groups in one run``
    Interleaved sums over different contributor groups and receivers in one run
    (state cached per run must be keyed by group) all come out right.
``view independence``
    Two input sets with the same sum give every party views from one
    distribution, and ring words are uniform
    (:func:`~protocols.testing.views.check_view_independence`).
``dead peer``
    A party that crashes, or silently stops, ends the receiver with a
    :class:`~protocols.errors.ProtocolError` and every other party with a
    ``ProtocolError`` or, if it had nothing left to wait for, no output.
``malformed peer``
    The same when one message of one party (each message of each party in
    turn) is replaced by garbage or loses its form
    (:func:`~protocols.testing.recording.mangle`); no other exception type,
    and no sum from a run with a malformed message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.backends.base import SecureSumBackend
from protocols.errors import InputValidationError, ProtocolError
from protocols.party import Party
from protocols.testing import strategies
from protocols.testing.recording import RecordedRun, garbage, mangle, only_nth, run_recorded
from protocols.testing.sum_runs import (
    SumSpec,
    first_error,
    party_names,
    random_payload,
    reveals_sum,
    sum_roles,
    within_bound,
)
from protocols.testing.views import ViewReport, check_view_independence, leaves

PROPERTIES: tuple[str, ...] = (
    "correctness",
    "receiver-only output",
    "validation before sending",
    "fresh randomness",
    "two groups in one run",
    "view independence",
    "dead peer",
    "malformed peer",
)


class ConformanceError(AssertionError):
    """A property of :func:`check_secure_sum_backend` does not hold; ``.property`` names it."""

    def __init__(self, prop: str, backend: Any, detail: str) -> None:
        self.property = prop
        super().__init__(f"secure-sum conformance: property {prop!r} failed for {backend!r}: {detail}")


@dataclass
class ConformanceReport:
    """What :func:`check_secure_sum_backend` checked."""

    backend: str
    passed: list[str] = field(default_factory=list)
    views: ViewReport | None = None


# -- the properties ---------------------------------------------------------------------


class _Checker:
    def __init__(
        self,
        backend: SecureSumBackend,
        *,
        n_contributors: int,
        max_examples: int,
        view_size: int,
        view_repeats: int,
        alpha: float,
        timeout: float,
        fault_timeout: float,
        seed: int,
    ) -> None:
        self.backend = backend
        self.m = n_contributors
        self.max_examples = max_examples
        self.view_size = view_size
        self.view_repeats = view_repeats
        self.alpha = alpha
        self.timeout = timeout
        self.fault_timeout = fault_timeout
        self.rng = np.random.default_rng(seed)  # test inputs only, never protocol randomness
        self.view_report: ViewReport | None = None

    def fail(self, prop: str, detail: str) -> ConformanceError:
        return ConformanceError(prop, self.backend, detail)

    def run(self, sums: Sequence[SumSpec], **kwargs: Any) -> RecordedRun:
        return run_recorded(
            sum_roles(self.backend, sums), timeout=kwargs.pop("timeout", self.timeout), **kwargs
        )

    def values(self, m: int, shape: tuple[int, ...], scale: float = 1000.0) -> dict[str, np.ndarray]:
        return {name: self.rng.uniform(-scale, scale, size=shape) for name in party_names(m)}

    # correctness -------------------------------------------------------------------------
    def correctness(self) -> None:
        codec = self.backend.codec

        @st.composite
        def cases(draw: Any) -> tuple[list[np.ndarray], bool]:
            m = draw(st.integers(1, 5))
            return draw(strategies.summands(codec, m)), draw(st.booleans())

        @settings(
            max_examples=self.max_examples,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=cases())
        def prop(case: tuple[list[np.ndarray], bool]) -> None:
            arrays, receiver_contributes = case
            contributors = party_names(len(arrays))
            receiver = contributors[-1] if receiver_contributes else "server"
            spec = SumSpec(contributors, receiver, dict(zip(contributors, arrays, strict=True)))
            run = self.run([spec])
            if run.failed:
                raise self.fail("correctness", f"a run on valid inputs failed: {first_error(run)}")
            problem = within_bound(self.backend, run.outputs[receiver][0], arrays)
            if problem is not None:
                raise self.fail(
                    "correctness", f"{len(arrays)} contributors, receiver {receiver!r}: {problem}"
                )

        prop()

    # receiver-only output ----------------------------------------------------------------------
    def receiver_only(self) -> None:
        prop = "receiver-only output"
        for receiver_contributes in (False, True):
            values = self.values(self.m, (6,))
            contributors = tuple(values)
            receiver = contributors[0] if receiver_contributes else "server"
            run = self.run([SumSpec(contributors, receiver, values)])
            if run.failed:
                raise self.fail(prop, f"the run failed: {first_error(run)}")
            for name, out in run.outputs.items():
                if name != receiver and out != [None]:
                    raise self.fail(prop, f"non-receiver {name!r} returned {out!r}, expected None")
            total = run.outputs[receiver][0]
            if total is None:
                raise self.fail(prop, f"the receiver {receiver!r} returned None")
            encoded = self.backend.codec.encode(total)
            bound = self.backend.sum_error_bound(self.m)
            for name in run.outputs:
                if name == receiver:
                    continue
                for delivery in run.recorder.received_by(name):
                    for path, leaf in leaves(delivery.message):
                        if reveals_sum(leaf, total, encoded, bound):
                            raise self.fail(
                                prop,
                                f"non-receiver {name!r} was sent the sum by {delivery.sender!r} "
                                f"(message {delivery.index}{path})",
                            )

    # validation before sending --------------------------------------------------------------
    def validation(self) -> None:
        prop = "validation before sending"
        limit = self.backend.codec.max_abs(self.m)
        bad_values = {
            "a NaN": np.array([1.0, np.nan, 2.0]),
            "an infinity": np.array([1.0, -np.inf, 2.0]),
            "a value beyond the ring budget": np.array([1.0, 1.5 * limit, 2.0]),
            "no value (None)": None,
        }
        for what, bad in bad_values.items():
            for receiver_contributes in (False, True):
                values: dict[str, Any] = self.values(self.m, (3,))
                contributors = tuple(values)
                receiver = contributors[0] if receiver_contributes else "server"
                culprit = contributors[-1] if receiver_contributes else contributors[0]
                values[culprit] = bad
                run = self.run([SumSpec(contributors, receiver, values)], timeout=self.fault_timeout * 5)
                error = run.errors.get(culprit)
                if not isinstance(error, InputValidationError):
                    got = "no error" if error is None else f"{type(error).__name__}: {error}"
                    raise self.fail(
                        prop,
                        f"contributor {culprit!r} given {what} raised {got}, expected InputValidationError",
                    )
                sent = run.recorder.sent_by(culprit)
                if sent:
                    first = sent[0]
                    raise self.fail(
                        prop,
                        f"contributor {culprit!r} given {what} sent {len(sent)} message(s) before refusing it "
                        f"(the first to {first.receiver!r}: {type(first.message).__name__})",
                    )

    # fresh randomness ----------------------------------------------------------------------
    def fresh_randomness(self) -> None:
        prop = "fresh randomness"
        values = self.values(self.m, (8,))
        contributors = tuple(values)
        spec = SumSpec(contributors, "server", values)
        seen: dict[str, dict[bytes, str]] = {}
        for run_number in (1, 2):
            run = self.run([spec, spec])
            if run.failed:
                raise self.fail(prop, f"two sums in one run failed: {first_error(run)}")
            for result in run.outputs["server"]:
                problem = within_bound(self.backend, result, list(values.values()))
                if problem is not None:
                    raise self.fail(prop, f"a repeated sum is wrong: {problem}")
            for name in run.outputs:
                mine = seen.setdefault(name, {})
                for delivery in run.recorder.received_by(name):
                    for path, leaf in leaves(delivery.message):
                        payload = random_payload(leaf)
                        if payload is None:
                            continue
                        where = f"run {run_number}, message {delivery.index} from {delivery.sender!r}{path}"
                        if payload in mine:
                            raise self.fail(
                                prop,
                                f"party {name!r} received the same {len(payload)}-byte payload twice "
                                f"({mine[payload]} and {where}): randomness reused across sums",
                            )
                        mine[payload] = where

    # two groups ---------------------------------------------------------------------------
    def two_groups(self) -> None:
        prop = "two groups in one run"
        v = self.values(4, (5,))
        sums = [
            SumSpec(("p0", "p1", "p2"), "server", {k: v[k] for k in ("p0", "p1", "p2")}),
            SumSpec(("p1", "p2", "p3"), "server", {k: 2 * v[k] for k in ("p1", "p2", "p3")}),
            SumSpec(("p0", "p3"), "p1", {k: v[k] for k in ("p0", "p3")}),
            SumSpec(("p2", "p3"), "p2", {k: -v[k] for k in ("p2", "p3")}),
            SumSpec(("p0", "p1", "p2"), "server", {k: v[k] for k in ("p0", "p1", "p2")}),
        ]
        run = self.run(sums)
        if run.failed:
            raise self.fail(prop, f"interleaved sums over different groups failed: {first_error(run)}")
        results: dict[str, list[Any]] = {name: list(out) for name, out in run.outputs.items()}
        for number, spec in enumerate(sums, 1):
            for name in spec.members:
                got = results[name].pop(0)
                if name != spec.receiver:
                    if got is not None:
                        raise self.fail(prop, f"sum {number}: non-receiver {name!r} got {got!r}")
                    continue
                problem = within_bound(self.backend, got, list(spec.values.values()))
                if problem is not None:
                    raise self.fail(
                        prop,
                        f"sum {number} over {list(spec.contributors)} to {spec.receiver!r}: {problem}",
                    )

    # faults --------------------------------------------------------------------------------
    def _faulty_runs(self, which: set[str]) -> Iterable[tuple[str, str, RecordedRun, str, SumSpec]]:
        values = self.values(self.m, (8,))
        contributors = tuple(values)
        spec = SumSpec(contributors, "server", values)
        for culprit in spec.members:
            if "dead peer" in which:
                yield "dead peer", "crashes", self._crash_run(spec, culprit), culprit, spec
                yield "dead peer", "stops silently", self._silent_run(spec, culprit), culprit, spec
            if "malformed peer" in which:
                honest = self.run([spec])
                if honest.failed:
                    raise self.fail("malformed peer", f"an honest run failed: {first_error(honest)}")
                for n, delivery in enumerate(honest.recorder.sent_by(culprit)):
                    for label, fault in (("garbage", garbage), ("a mangled message", mangle)):
                        run = self.run(
                            [spec], timeout=self.fault_timeout, faults={culprit: only_nth(fault, n)}
                        )
                        yield (
                            "malformed peer",
                            f"sends {label} as message {n} (to {delivery.receiver!r})",
                            run,
                            culprit,
                            spec,
                        )

    def _crash_run(self, spec: SumSpec, culprit: str) -> RecordedRun:
        roles = sum_roles(self.backend, [spec])

        def crash(party: Party) -> None:
            raise RuntimeError(f"{party.name} crashed")

        roles[culprit] = crash
        return run_recorded(roles, timeout=self.fault_timeout)

    def _silent_run(self, spec: SumSpec, culprit: str) -> RecordedRun:
        roles = sum_roles(self.backend, [spec])
        roles[culprit] = lambda party: None
        return run_recorded(roles, timeout=self.fault_timeout)

    def faults(self, which: set[str]) -> None:
        for prop, label, run, culprit, spec in self._faulty_runs(which):
            for name in spec.members:
                if name == culprit:
                    continue
                error = run.errors.get(name)
                if error is not None and not isinstance(error, ProtocolError):
                    raise self.fail(
                        prop,
                        f"when {culprit!r} {label}, {name!r} raised {type(error).__name__}: {error} "
                        "instead of a ProtocolError",
                    ) from error
                if name == spec.receiver and error is None:
                    raise self.fail(
                        prop,
                        f"when {culprit!r} {label}, the receiver {name!r} returned "
                        f"{run.outputs.get(name)!r} instead of raising a ProtocolError",
                    )
                if error is None and run.outputs.get(name) not in ([None], None):
                    raise self.fail(
                        prop, f"when {culprit!r} {label}, {name!r} returned {run.outputs[name]!r}"
                    )

    # view independence --------------------------------------------------------------------
    def view_independence(self) -> None:
        codec = self.backend.codec
        contributors = party_names(self.m)
        # Inputs A: all zero. Inputs B: p0 = +c, p1 = -c, the rest zero, with c on the
        # codec's grid, so that both encode exactly and the ring sums are equal.
        grid = np.floor(
            self.rng.uniform(-0.4, 0.4, size=self.view_size) * codec.max_abs(self.m) * codec.scale
        )
        c = grid / codec.scale
        zeros = np.zeros(self.view_size)
        values_a = dict.fromkeys(contributors, zeros)
        values_b = {**values_a, contributors[0]: c, contributors[1 % self.m]: -c if self.m > 1 else zeros}
        if self.m == 1:
            values_b = values_a
        roles_a = sum_roles(self.backend, [SumSpec(contributors, "server", values_a)])
        roles_b = sum_roles(self.backend, [SumSpec(contributors, "server", values_b)])
        try:
            self.view_report = check_view_independence(
                roles_a, roles_b, repeats=self.view_repeats, alpha=self.alpha, timeout=self.timeout
            )
        except AssertionError as exc:
            raise self.fail("view independence", str(exc)) from exc


def check_secure_sum_backend(
    backend: SecureSumBackend,
    *,
    n_contributors: int = 3,
    checks: Iterable[str] | None = None,
    max_examples: int = 25,
    view_size: int = 2048,
    view_repeats: int = 2,
    alpha: float = 1e-6,
    timeout: float = 60.0,
    fault_timeout: float = 1.0,
    seed: int = 0,
) -> ConformanceReport:
    """Check that a secure-sum backend has every property of :data:`PROPERTIES`.

    Parameters
    ----------
    backend : SecureSumBackend
        The instance to check; parties run as threads of this process, so it
        must work over :func:`protocols.runtime.run_inprocess` (CrypTen's,
        which needs processes over torch.distributed, does not).
    n_contributors : int, default=3
        Contributors in the fixed-group checks (at least 2).
    checks : iterable of str, optional
        A subset of :data:`PROPERTIES`; all by default.
    max_examples : int, default=25
        Hypothesis examples of the correctness property (randomisation
        follows the active hypothesis profile).
    view_size, view_repeats : int
        Entries per contributor and runs per input set of the view test.
    alpha : float, default=1e-6
        Family-wise significance level of the view-independence tests.
    timeout : float
        Receive timeout of the honest runs, seconds.
    fault_timeout : float, default=1
        Receive timeout of the runs with a dead or malformed party.
    seed : int, default=0
        Seed of the test inputs of the fixed-group checks (never of the
        backend's own randomness).

    Returns
    -------
    ConformanceReport
        The properties that hold, and the view-independence report.

    Raises
    ------
    ConformanceError (an AssertionError)
        ``secure-sum conformance: property '<name>' failed for <backend>: <why>``.

    Examples
    --------
    >>> from protocols.backends import make_backend
    >>> report = check_secure_sum_backend(make_backend("additive"), checks=["two groups in one run"])
    >>> report.passed
    ['two groups in one run']
    """
    selected = list(PROPERTIES) if checks is None else list(checks)
    unknown = [c for c in selected if c not in PROPERTIES]
    if unknown:
        raise ValueError(f"unknown properties {unknown}; choose from {list(PROPERTIES)}")
    if n_contributors < 2:
        raise ValueError(f"n_contributors must be at least 2, got {n_contributors}")
    if not isinstance(backend, SecureSumBackend):
        raise TypeError(f"expected a SecureSumBackend, got {type(backend).__name__}")
    checker = _Checker(
        backend,
        n_contributors=n_contributors,
        max_examples=max_examples,
        view_size=view_size,
        view_repeats=view_repeats,
        alpha=alpha,
        timeout=timeout,
        fault_timeout=fault_timeout,
        seed=seed,
    )
    steps: dict[str, Callable[[], None]] = {
        "correctness": checker.correctness,
        "receiver-only output": checker.receiver_only,
        "validation before sending": checker.validation,
        "fresh randomness": checker.fresh_randomness,
        "two groups in one run": checker.two_groups,
        "view independence": checker.view_independence,
    }
    report = ConformanceReport(backend=repr(backend))
    fault_props: set[str] = {p for p in ("dead peer", "malformed peer") if p in selected}
    for prop in PROPERTIES:
        if prop not in selected:
            continue
        if prop in steps:
            steps[prop]()
        elif fault_props:  # one pass over the faulty runs checks both fault properties
            checker.faults(fault_props)
            fault_props = set()
        report.passed.append(prop)
    report.views = checker.view_report
    return report
