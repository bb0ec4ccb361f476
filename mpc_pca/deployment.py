"""The protocol object: everything one protocol is, declared once, for every runner.

Every protocol of :mod:`mpc_pca.registry` is one :class:`Deployment` object.
It declares the protocol's name and summary, its public settings with their
defaults (:attr:`Deployment.options`) and the values fixed by the protocol
(:attr:`Deployment.fixed`), the fields of its JSON result, its capabilities
(:attr:`Deployment.deployable`, :attr:`Deployment.streams_rows`,
:attr:`Deployment.projects_rows`), its roles, the schema of every party's
announcement, its message caps and its result. Three runners run that same
object: the threads of one process (:func:`mpc_pca.threads.run_protocol`,
behind every estimator and ``mpc-pca run``), local processes
(:func:`mpc_pca.deploy.launch_local`) and one process per host
(``mpc-pca party``, :func:`mpc_pca.deploy.run_party`); the deploy floor
(:mod:`mpc_pca.deploy`) adds what is the same for every protocol: load a
party's rows, open the authenticated links, exchange the public settings,
bound every message, write the JSON result.

The same four steps run in every execution mode, so a run as threads, as
local processes or as one process per host computes the same thing:

1. each party announces its public settings (:meth:`Deployment.public`);
2. every party checks all announcements and builds the run's configuration
   (:meth:`Deployment.configure`), refusing disagreement by party name;
3. the configuration bounds every message a party accepts
   (:meth:`Deployment.message_cap`);
4. each party runs its role (:meth:`Deployment.role`) and turns the output
   into JSON fields (:meth:`Deployment.result`).

A party's DP noise generator comes from :meth:`Deployment.generator`: with a
noise seed, party ``name`` gets the same generator in every runner, so a fixed
seed reproduces a result exactly (experiments only: a run with a known noise
seed is not private).

Adding a protocol is its module (a subclass of :class:`Deployment` and its
roles) plus one line in :mod:`mpc_pca.registry`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError
from protocols.party import Party
from protocols.runtime.network import DEFAULT_MESSAGE_CAP

Role = Callable[[Party], Any]
#: One party's announcement: JSON values only (str, int, float, bool, None, lists, dicts).
PublicSettings = dict[str, Any]


#: The fields of every subspace model's JSON result.
MODEL_FIELDS = ("components", "explained_variance", "mean", "n_samples", "report")


@dataclass(frozen=True)
class Variant:
    """What one registry name of a protocol class declares (e.g. ``dispca`` and ``dispca-full``).

    Attributes
    ----------
    summary : str
        One line for ``--help`` and reports.
    options : mapping of str to object
        Its settings beyond ``n_components`` and their defaults.
    result_fields : tuple of str
        The fields of its JSON result.
    fixed : mapping of str to object
        Settings whose value the variant fixes.
    deployable : bool
        Whether its parties may run between organisations.
    params : mapping of str to object
        The protocol class's own parameters of this variant (e.g. ``{"full": True}``).
    """

    summary: str
    options: Mapping[str, Any]
    result_fields: tuple[str, ...] = MODEL_FIELDS
    fixed: Mapping[str, Any] = field(default_factory=dict)
    deployable: bool = True
    params: Mapping[str, Any] = field(default_factory=dict)


class Deployment(ABC):
    """One protocol: its declarations, roles, settings and results, for every runner.

    Subclasses hold no per-run state: every method takes what it needs, so one
    instance serves every party of every run.

    Attributes
    ----------
    name : str
        The protocol's registry name (e.g. ``"capepca"``).
    summary : str
        One line for ``--help`` and reports.
    options : mapping of str to object
        The protocol's public settings beyond ``n_components`` and their
        defaults (``None``: chosen by the protocol). Any other setting is refused.
    fixed : mapping of str to object
        Settings whose value is part of the protocol (``pppca-he``'s
        ``backend="paillier"``): any other value is refused.
    result_fields : tuple of str
        Fields of the run's JSON result (beyond the ones every run writes).
    deployable : bool
        Whether its parties may run between organisations (as processes and
        with ``mpc-pca party``). False for comparison baselines that must stay
        in one process (e.g. the retracted SN mechanism).
    projects_rows : bool
        Whether a consumer receives the providers' projected rows (``mpc-pca
        run`` with ``transform_output``).
    accepts_pooled_scaling : bool
        Whether ``mpc-pca run`` may scale the pooled rows before an in-process
        run (``row_norm='scale'``, the papers' non-private step) for a protocol
        with a ``row_norm`` setting (True by default).
    one_blas_thread : bool
        Whether the threads runner limits BLAS to one thread while the parties
        run (parties of equal weight computing side by side; False by default).
    streams_rows : bool
        Whether a data holder's :meth:`public` and :meth:`role` accept its
        rows as a :class:`~mpc_pca.pppca.chunked.ChunkedPart` read in chunks
        (a data file given to ``mpc-pca party``) instead of an array. False
        by default: the deploy floor then reads the whole table into memory.
    column_keys : tuple of str
        The keys of a data holder's :meth:`public` announcement that hold one
        value per column, in the holder's own column order: the deploy floor
        permutes them into the agreed column order before :meth:`configure`
        (empty by default).
    """

    name: str
    summary: str = ""
    options: Mapping[str, Any] = MappingProxyType({})
    fixed: Mapping[str, Any] = MappingProxyType({})
    result_fields: tuple[str, ...] = MODEL_FIELDS
    deployable: bool = True
    projects_rows: bool = False
    one_blas_thread: bool = False
    accepts_pooled_scaling: bool = True
    streams_rows: bool = False
    column_keys: tuple[str, ...] = ()

    def declare(self, name: str, variant: Variant) -> None:
        """Take ``variant``'s declarations as this object's (called by a subclass's constructor)."""
        self.name = name
        self.summary = variant.summary
        self.options = dict(variant.options)  # a copy: the object is pickled to a launched party
        self.result_fields = variant.result_fields
        self.fixed = dict(variant.fixed)
        self.deployable = variant.deployable

    def settings(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The run's settings: ``n_components`` and every option, defaults filled in (the one fill-in).

        An option given as ``None`` takes its default; ``n_components=None``
        stays ``None`` (every direction), its default ``2`` applies only when it
        is not given.

        Raises
        ------
        InputValidationError
            For a setting the protocol does not use, naming it and the ones it does.
        """
        known = {"n_components": 2, **self.options}
        given = dict(given or {})
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise InputValidationError(
                f"protocol {self.name!r} takes no setting {unknown}; its settings are {sorted(known)}"
            )
        filled = {
            key: given[key] if given.get(key) is not None else default for key, default in known.items()
        }
        if "n_components" in given:  # None is a value here: every direction (min(n_samples, n_features))
            filled["n_components"] = given["n_components"]
        return filled

    @abstractmethod
    def layout(self, n_providers: int) -> dict[str, int]:
        """Every party's name and rank ``0 .. W-1`` for a run with ``n_providers`` data holders.

        Data holders come first (ranks ``0 .. n_providers - 1``), in the order
        the in-process run gives them the parts.
        """

    @abstractmethod
    def data_holders(self, n_providers: int) -> tuple[str, ...]:
        """The names of the parties that hold rows, in part order."""

    @abstractmethod
    def public(
        self, party: str, data: NDArray[np.float64] | None, settings: Mapping[str, Any]
    ) -> PublicSettings:
        """What ``party`` announces to every peer before the run.

        ``settings`` are the protocol options every party was given (the
        registry's defaults filled in); ``data`` is the party's rows, or
        ``None`` for a party that holds none. Only values every party may
        learn belong here (settings, the row count and width of a data holder).

        Raises
        ------
        InputValidationError
            If this party's own settings or rows are invalid: the check runs
            before anything leaves the party.
        """

    @abstractmethod
    def configure(self, views: Mapping[str, PublicSettings], n_providers: int) -> Any:
        """The run's configuration from every party's announcement.

        Raises
        ------
        InputValidationError
            Naming the parties and their values, if the announcements disagree
            or are invalid.
        """

    def runs_over_gloo(self, settings: Mapping[str, Any]) -> bool:
        """Whether a run with these settings needs CrypTen's gloo links (``insecure`` only) instead of TLS.

        Added by the deploy floor with a default (``False``): only a protocol
        whose backend's traffic is gloo collectives (PPPCA with CrypTen) says yes.
        """
        return False

    def preflight(self, parts: Sequence[NDArray[np.float64]], settings: Mapping[str, Any]) -> None:
        """Refuse, in a launcher that holds every part, what the in-process run would refuse.

        Added by the deploy floor with a default (nothing beyond :meth:`public`
        and :meth:`configure`, which the launcher also runs before any process starts).
        """
        return None

    def check_threads(self, settings: Mapping[str, Any]) -> None:
        """Refuse settings whose parties cannot be threads of one process (the threads runner calls it).

        Nothing by default; PPPCA refuses its secure eigensolve on CrypTen, whose parties must be processes.
        """
        return None

    def message_cap(self, config: Any) -> int:
        """Largest message (bytes) any party of this run may receive; see :data:`DEFAULT_MESSAGE_CAP`."""
        return DEFAULT_MESSAGE_CAP

    def generator(
        self, party: str, layout: Mapping[str, int], noise_seed: int | np.random.SeedSequence | None
    ) -> np.random.Generator | None:
        """``party``'s DP noise generator (``None`` for a protocol without DP noise).

        ``noise_seed`` is the run's root seed; every runner passes the same one
        to every party, so a party derives its own generator alone
        (:func:`~mpc_pca.deployment_kit.seeded_generator`).
        """
        return None

    @abstractmethod
    def role(
        self,
        party: str,
        config: Any,
        data: NDArray[np.float64] | None,
        rng: np.random.Generator | None,
    ) -> Role:
        """The role function ``party`` runs with this configuration."""

    @abstractmethod
    def result(self, party: str, config: Any, output: Any) -> dict[str, Any]:
        """JSON fields of ``party``'s output (the model for the party that learns it)."""

    def projection(self, layout: Mapping[str, int], outputs: Mapping[str, Any]) -> NDArray[np.float64] | None:
        """The consumer's projected rows among a finished run's outputs (``None``: the protocol projects none)."""
        return None

    @abstractmethod
    def result_party(self, layout: Mapping[str, int]) -> str:
        """The party whose result is the run's result (the one that learns the model)."""
