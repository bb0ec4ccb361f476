"""The wide benchmark's timed runs: the secure protocol and the same algorithm in plaintext, from the same start.

Each run is timed in this process, wall clock and CPU time of the whole
process (the threads runner's parties are threads; with one BLAS thread each,
five sites computing side by side can still use more than one core, so the
CPU seconds are the like-for-like cost).

* :func:`secure_run`: ``pppca-randomized`` through the threads runner
  (:func:`mpc_pca.threads.run_protocol`) on per-site parts, arrays or
  :class:`~mpc_pca.data.genotype_part.BedPart` files streamed in chunks, in
  either mode of ``iterates`` (``"server"``: the server leads the
  iterations; ``"sites"``: ``provider0`` does, the server learns only the output).
* :func:`plaintext_run`: :func:`mpc_pca.wide.subspace.randomized_pca` with the
  same settings and start seed, its product ``sum_s X_s^T (X_s W)`` over the
  given parts (the pooled matrix as one part, or the same ``.bed`` files).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.bench_wide_reference import aligned
from mpc_pca.registry import entry
from mpc_pca.threads import ThreadsRun, run_protocol
from mpc_pca.wide.site import Rows, site_product, site_sums
from mpc_pca.wide.subspace import Moments, SubspaceResult, randomized_pca

#: Receive timeout of every party: a full-size product from a streamed file takes tens of seconds.
PARTY_TIMEOUT = 7200.0


@dataclass(frozen=True)
class Timed:
    """Wall and CPU seconds of one run."""

    wall: float
    cpu: float

    def as_dict(self) -> dict[str, float]:
        """JSON fields."""
        return {"wall_seconds": self.wall, "cpu_seconds": self.cpu}


class Clock:
    """Wall clock and this process's CPU time (every thread) between ``start`` and ``stop``."""

    def __enter__(self) -> Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timed = Timed(time.perf_counter() - self._wall, time.process_time() - self._cpu)


def solver_settings(k: int, seed: int) -> dict[str, Any]:
    """The settings of every run: ``k``, 10 oversamples, scikit-learn's ``auto`` power, no early stop, standardized."""
    return {"n_components": k, "n_oversamples": 10, "iterated_power": None, "tol": None,
            "start_seed": seed, "standardize": True}  # fmt: skip


def secure_run(
    parts: Sequence[Any], settings: dict[str, Any], iterates: str = "server"
) -> tuple[ThreadsRun, Timed]:
    """``pppca-randomized`` over ``parts`` (one per site) in this process, timed; ``iterates`` picks the lead."""
    protocol = entry("pppca-randomized")
    settings = {**settings, "backend": "additive", "iterates": iterates}
    with Clock() as clock:
        done = run_protocol(protocol, parts, settings, timeout=PARTY_TIMEOUT)
    return done, clock.timed


def plaintext_run(parts: Sequence[Rows], settings: dict[str, Any]) -> tuple[SubspaceResult, Moments, Timed]:
    """The same algorithm in plaintext over ``parts`` (their sums and products added in the clear), timed."""
    with Clock() as clock:
        stats = [site_sums(part) for part in parts]

        def product(block: NDArray[np.float64]) -> NDArray[np.float64]:
            total = site_product(parts[0], block)
            for part in parts[1:]:
                total += site_product(part, block)
            return total

        result, moments = randomized_pca(
            product,
            np.sum([s.sums for s in stats], axis=0),
            sum(s.n_rows for s in stats),
            settings["n_components"],
            column_squares=np.sum([s.squares for s in stats], axis=0),
            n_oversamples=settings["n_oversamples"],
            iterated_power=settings["iterated_power"],
            tol=settings["tol"],
            seed=settings["start_seed"],
        )
    return result, moments, clock.timed


def traffic(done: ThreadsRun) -> dict[str, dict[str, int]]:
    """Bytes sent and received, messages and rounds of every party (its run report)."""
    keys = ("bytes_sent", "bytes_received", "messages_sent", "rounds")
    return {name: {key: int(report[key]) for key in keys} for name, report in done.run.report_dict().items()}


def secure_scores(done: ThreadsRun) -> NDArray[np.float64]:
    """Every site's PC scores of its own rows, in site order (each computed where its rows live)."""
    holders = done.protocol.data_holders(len(done.layout) - 1)
    return np.vstack([np.asarray(done.run.outputs[name]["scores"]) for name in holders])


def versus_plaintext(done: ThreadsRun, reference: SubspaceResult) -> dict[str, Any]:
    """The secure run against the plaintext one from the same start: largest differences and the stop rule."""
    model = done.output
    return {
        "max_abs_component_difference": float(np.max(np.abs(model.components - reference.components))),
        # a component whose largest-magnitude entries tie (SNPs in perfect linkage, opposite alleles) has no
        # well-defined sign under the sklearn convention: rounding may flip it; compared sign-aligned as well
        "max_abs_component_difference_sign_aligned": float(
            np.max(np.abs(aligned(model.components, reference.components) - reference.components))
        ),
        "sign_flipped_components": np.flatnonzero(
            np.sum(model.components * reference.components, axis=1) < 0
        ).tolist(),
        "max_eigenvalue_relative_difference": float(
            np.max(np.abs(model.explained_variance - reference.eigenvalues) / reference.eigenvalues)
        ),
        "same_products": model.solver.n_products == reference.n_products,
        "n_products": model.solver.n_products,
        "stop": model.solver.stop,
        "residual_bound": model.solver.residual_bound,
        "product_error_bound": model.product_error_bound,
        "sums_error_bound": model.sums_error_bound,
    }


__all__ = [
    "Clock",
    "Timed",
    "plaintext_run",
    "secure_run",
    "secure_scores",
    "solver_settings",
    "traffic",
    "versus_plaintext",
]
