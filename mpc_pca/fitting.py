"""One ``fit`` for every estimator: its protocol object, run as threads by :func:`mpc_pca.threads.run_protocol`.

Each estimator says three things and inherits the rest (as scikit-learn's
estimators share their ``fit`` machinery):

* :meth:`ProtocolEstimator._protocol`: the protocol object it runs, the one
  the registry holds (or the same class with the estimator's own parameters,
  e.g. a backend object or a curator's mechanism);
* :meth:`ProtocolEstimator._settings`: the protocol's settings from the
  estimator's parameters;
* :meth:`ProtocolEstimator._store`: the fitted attributes from the finished run.

It may also check the rows before the run (:meth:`ProtocolEstimator._prepare`,
e.g. to charge a privacy accountant only for input the run accepts).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from numpy.typing import ArrayLike

from mpc_pca.base import PartiesEstimator
from mpc_pca.deployment import Deployment
from mpc_pca.threads import ThreadsRun, run_protocol


class ProtocolEstimator(PartiesEstimator):
    """An estimator whose ``fit`` runs one protocol object's parties as threads of this process."""

    timeout: float

    def fit(self, X: Any, y: None = None, groups: ArrayLike | None = None) -> ProtocolEstimator:
        """Run the protocol over the parties' rows; return ``self``.

        Parameters
        ----------
        X : list of array_like or DataFrame, or array_like of shape (N, D)
            One ``(N_s, D)`` block per party (DataFrames are aligned by column
            name), or all rows with ``groups``.
        y : None
            Ignored.
        groups : array_like of shape (N,), optional
            With a single ``X``: the party of each row, parties in sorted label
            order (one party if omitted).

        Returns
        -------
        self
        """
        self._store(self._run(self._intake(X, groups)))
        return self

    def _run(self, parts: list[Any]) -> ThreadsRun:
        """Check the rows, then run every party of :meth:`_protocol` as a thread."""
        parts = self._prepare(parts)
        return run_protocol(
            self._protocol(),
            parts,
            self._settings(),
            random_state=self._noise_seed(),
            timeout=self.timeout,
        )

    def _noise_seed(self) -> Any:
        """The seed of the run's noise: ``random_state`` if the estimator has one."""
        return getattr(self, "random_state", None)

    def _prepare(self, parts: list[Any]) -> list[Any]:
        """The parts the run takes, after the estimator's own checks (none by default)."""
        return parts

    @abstractmethod
    def _protocol(self) -> Deployment:
        """The protocol object this estimator runs."""

    @abstractmethod
    def _settings(self) -> dict[str, Any]:
        """The protocol's settings from this estimator's parameters."""

    @abstractmethod
    def _store(self, run: ThreadsRun) -> None:
        """Set the fitted attributes from the finished run."""


__all__ = ["ProtocolEstimator"]
