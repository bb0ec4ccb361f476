"""What a protocol tells the deploy floor so that its roles run as parties anywhere.

Every protocol of :mod:`mpc_pca.registry` has one :class:`Deployment`: the
protocol-specific half of running it between organisations. The deploy floor
(:mod:`mpc_pca.deploy`) supplies the other half, the same for every
protocol: load a party's rows, open the authenticated links, exchange the
public settings, bound every message, run the role, write the JSON result.

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
noise seed, party ``name`` gets the generator that the in-process run gives
it, so a fixed seed reproduces the in-process result exactly (experiments
only: a run with a known noise seed is not private).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from protocols.party import Party
from protocols.runtime.network import DEFAULT_MESSAGE_CAP

Role = Callable[[Party], Any]
#: One party's announcement: JSON values only (str, int, float, bool, None, lists, dicts).
PublicSettings = dict[str, Any]


class Deployment(ABC):
    """One protocol's roles, settings and results, for the deploy floor.

    Subclasses hold no per-run state: every method takes what it needs, so one
    instance serves every party of every run.

    Attributes
    ----------
    name : str
        The protocol's registry name (e.g. ``"capepca"``).
    streams_rows : bool
        Whether a data holder's :meth:`public` and :meth:`role` accept its
        rows as a :class:`~mpc_pca.pppca.chunked.ChunkedPart` read in chunks
        (a file given to ``mpc-pca party --data``) instead of an array. False
        by default: the deploy floor then reads the whole table into memory.
    column_keys : tuple of str
        The keys of a data holder's :meth:`public` announcement that hold one
        value per column, in the holder's own column order: the deploy floor
        permutes them into the agreed column order before :meth:`configure`
        (empty by default).
    """

    name: str
    streams_rows: bool = False
    column_keys: tuple[str, ...] = ()

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

    def message_cap(self, config: Any) -> int:
        """Largest message (bytes) any party of this run may receive; see :data:`DEFAULT_MESSAGE_CAP`."""
        return DEFAULT_MESSAGE_CAP

    def generator(
        self, party: str, layout: Mapping[str, int], noise_seed: int | None
    ) -> np.random.Generator | None:
        """``party``'s DP noise generator (``None`` for a protocol without DP noise)."""
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

    @abstractmethod
    def result_party(self, layout: Mapping[str, int]) -> str:
        """The party whose result is the run's result (the one that learns the model)."""
