"""Checks and helpers shared by the protocols' :class:`~mpc_pca.deployment.Deployment` adaptors.

A bottom module (next to :mod:`mpc_pca.deployment`): both :mod:`mpc_pca.dp`
and :mod:`mpc_pca.pppca` use it, and it imports neither. It holds what every
adaptor does the same way: a party's noise generator from the run's noise
seed, the refusal of settings that cannot run between organisations, the
check of a data holder's own rows, the typed schema every peer's
announcement is checked against (:class:`Key`, :func:`check_announcements`)
and the agreement of every party's announcement (errors name the parties
and their values).

Announcements come from peers, so before any value is compared, converted or
used, :func:`check_announcements` checks each sender's against the
protocol's declared schema: exactly the declared keys, each of its declared
JSON type (a ``bool`` is not an integer, ``bytes`` and containers are not
strings) and within its declared range. Anything else is an
:class:`~protocols.errors.InputValidationError` (the error family of every
refused announcement, disagreement included) naming the sender, the key,
the value (shortened) and the limit, never a ``TypeError`` or
``OverflowError`` from whatever code would have used the value. A refusal of
one sender's announcement is an :class:`AnnouncementError` (it says who sent
it), so that a party can tell a peer's malformed announcement, which no
honest party sends, from its own.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.deployment import Deployment, Variant

# Re-exported: the protocol objects take their seeds from here with the rest of their kit.
from mpc_pca.noise_seeds import NoiseSeed as NoiseSeed
from mpc_pca.noise_seeds import check_noise_seed as check_noise_seed
from mpc_pca.noise_seeds import noise_root as noise_root
from mpc_pca.noise_seeds import seeded_generator as seeded_generator
from mpc_pca.roles import provider_names
from mpc_pca.validation import check_parts
from protocols.errors import InputValidationError

#: JSON fields of ``mpc-pca run`` that no single party computes and the caller fills in:
#: ``captured_energy_ratio`` (the simulation harness's utility metric, which needs every
#: part) and ``report`` (every party's traffic report, which the deploy floor collects).
HARNESS_FIELDS: tuple[str, ...] = ("captured_energy_ratio", "report")

#: Headroom added to every computed message cap: headers, dict keys, dtype and shape fields.
CAP_SLACK = 1 << 20


#: Longest text value (and longest list) any announcement may carry.
MAX_TEXT = 256
MAX_LIST = 100_000
#: Most features a data holder may announce (every protocol here sends ``d x d`` matrices).
MAX_FEATURES = 1 << 16


@dataclass(frozen=True)
class Key:
    """The declared shape of one announced value.

    Parameters
    ----------
    kind : {"int", "real", "text", "flag", "ints", "texts"}
        ``int``: an integer (not a ``bool``); ``real``: an integer or a float
        (not a ``bool``; ``inf`` allowed, ``nan`` never); ``text``: a ``str`` of
        at most :data:`MAX_TEXT` characters; ``flag``: a ``bool``; ``ints``: a
        list of at most :data:`MAX_LIST` integers; ``texts``: a list of at most
        ``high`` (default :data:`MAX_FEATURES`) such strings (e.g. column names).
    low, high : float, optional
        Inclusive range of the value (of every element for ``ints``; ``high``: most elements of ``texts``).
    choices : tuple, optional
        The only values allowed (``text``).
    nullable : bool
        ``None`` is allowed.
    required : bool
        The key must be present (a nullable key may be absent either way).
    """

    kind: str
    low: int | float | None = None
    high: int | float | None = None
    choices: tuple[Any, ...] | None = None
    nullable: bool = False
    required: bool = True

    def problem(self, value: object) -> str | None:
        """Why ``value`` does not fit this key, or ``None`` if it does."""
        if value is None:
            return None if self.nullable else "must not be null"
        checker = _CHECKERS.get(self.kind)
        if checker is None:  # pragma: no cover - a schema bug, not a peer's
            raise ValueError(f"unknown kind {self.kind!r}")
        return checker(self, value)


def _ints_problem(key: Key, value: object) -> str | None:
    """``ints``: a list of at most :data:`MAX_LIST` integers, each within the key's range."""
    if not isinstance(value, list):
        return f"must be a list of integers, not {type(value).__name__}"
    if len(value) > MAX_LIST:
        return f"has {len(value)} elements, more than {MAX_LIST}"
    return _elements_problem(Key("int", key.low, key.high), value)


def _texts_problem(key: Key, value: object) -> str | None:
    """``texts``: a list of at most ``key.high`` (default :data:`MAX_FEATURES`) texts."""
    if not isinstance(value, list):
        return f"must be a list of strings, not {type(value).__name__}"
    most = MAX_FEATURES if key.high is None else int(key.high)
    if len(value) > most:
        return f"has {len(value)} elements, more than {most}"
    return _elements_problem(Key("text"), value)


def _elements_problem(element: Key, value: list[object]) -> str | None:
    """The first element of ``value`` that does not fit ``element``, and why."""
    for i, item in enumerate(value):
        reason = element.problem(item)
        if reason is not None:
            return f"element {i} {reason}"
    return None


def _flag_problem(key: Key, value: object) -> str | None:
    """``flag``: a ``bool``."""
    return None if isinstance(value, bool) else f"must be a bool, not {type(value).__name__}"


def _text_problem(key: Key, value: object) -> str | None:
    """``text``: a ``str`` of at most :data:`MAX_TEXT` characters, one of the choices if any."""
    if not isinstance(value, str):
        return f"must be a str, not {type(value).__name__}"
    if len(value) > MAX_TEXT:
        return f"has {len(value)} characters, more than {MAX_TEXT}"
    if key.choices is not None and value not in key.choices:
        return f"must be one of {list(key.choices)}"
    return None


def _number_problem(key: Key, value: object) -> str | None:
    """``int`` (an integer) or ``real`` (an integer or a float, not NaN), never a ``bool``, within range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be {'an integer' if key.kind == 'int' else 'a number'}, not {type(value).__name__}"
    if key.kind == "int" and not isinstance(value, int):
        return f"must be an integer, not {type(value).__name__}"
    if isinstance(value, float) and math.isnan(value):
        return "must not be NaN"
    if key.low is not None and value < key.low:
        return f"must be >= {key.low!r}"
    if key.high is not None and value > key.high:
        return f"must be <= {key.high!r}"
    return None


#: One checker per :attr:`Key.kind` (``value`` is not ``None`` when it runs).
_CHECKERS: dict[str, Callable[[Key, object], str | None]] = {
    "ints": _ints_problem,
    "texts": _texts_problem,
    "flag": _flag_problem,
    "text": _text_problem,
    "int": _number_problem,
    "real": _number_problem,
}


#: An announcement's declared keys.
Schema = Mapping[str, Key]


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)``, shortened to ``limit`` characters (a peer's value may be huge)."""
    text = repr(value) if not isinstance(value, (list, dict)) or len(value) <= 32 else None
    if text is None:
        text = f"<{type(value).__name__} of {len(value)} elements>"  # type: ignore[arg-type]
    return text if len(text) <= limit else text[: limit - 3] + "..."


class AnnouncementError(InputValidationError):
    """One party's announcement is refused (wrong keys, type or range); :attr:`sender` is that party."""

    def __init__(self, sender: str, message: str) -> None:
        super().__init__(message)
        self.sender = sender

    def __reduce__(self) -> tuple[type[AnnouncementError], tuple[str, str]]:
        return (type(self), (self.sender, str(self)))


def check_announcement(sender: str, view: object, schema: Schema) -> None:
    """Refuse ``sender``'s announcement unless it has exactly the keys of ``schema``, each of its shape.

    Raises
    ------
    AnnouncementError
        Naming ``sender``, the key, the value (shortened) and the limit.
    """
    if not isinstance(view, Mapping):
        raise AnnouncementError(
            sender, f"{sender} announced {type(view).__name__}, not a mapping of settings"
        )
    extra = sorted(k if isinstance(k, str) else shown(k) for k in view if k not in schema)
    if extra:
        raise AnnouncementError(
            sender,
            f"{sender} announced unexpected keys {extra[:8]}; the announcement's keys are {sorted(schema)}",
        )
    for key, spec in schema.items():
        if key not in view:
            if spec.required and not spec.nullable:
                raise AnnouncementError(sender, f"{sender} announced no {key}")
            continue
        reason = spec.problem(view[key])
        if reason is not None:
            raise AnnouncementError(sender, f"{sender} announced {key}={shown(view[key])}, which {reason}")


def check_announcements(
    views: Mapping[str, object],
    schema: Schema,
    holders: Iterable[str] = (),
    holder_schema: Schema | None = None,
) -> None:
    """:func:`check_announcement` for every sender; data holders' against ``schema | holder_schema``."""
    holding = set(holders)
    full = {**schema, **(holder_schema or {})}
    for sender, view in views.items():
        check_announcement(str(sender), view, full if sender in holding else schema)


#: The deploy floor's own keys (:func:`mpc_pca.deploy.party.floor_public`); a deployment's
#: schema includes them, optional so that its :meth:`~mpc_pca.deployment.Deployment.configure`
#: also takes the announcements of :meth:`~mpc_pca.deployment.Deployment.public` alone.
FLOOR_SCHEMA: dict[str, Key] = {
    "protocol": Key("text"),
    "n_providers": Key("int", 1, 1 << 16, required=False),
}
#: A data holder's ordered column names (``None`` when its rows have none), agreed by the floor: as many
#: as ``pppca-randomized``'s widest rows; between hosts the first message's 1 MiB cap bounds them first.
FLOOR_HOLDER_SCHEMA: dict[str, Key] = {"columns": Key("texts", high=1 << 24, nullable=True)}
#: A data holder's width, which every DP protocol's holders announce (with the floor's keys).
HOLDER_WIDTH_SCHEMA: dict[str, Key] = {**FLOOR_HOLDER_SCHEMA, "n_features": Key("int", 1, MAX_FEATURES)}


#: A ``.bed`` site's two digests of its SNP records (``mpc_pca.data.snp_alignment.snp_digests``).
SNP_DIGESTS_KEY = Key("texts", nullable=True, required=False)


def check_snp_digests(views: Mapping[str, Mapping[str, Any]], holders: Sequence[str]) -> None:
    """Refuse sites whose ``.bim`` records differ, from their announced ``snp_digests`` (before any sum).

    Every holder announced ``None`` (no ``.bed``) or two digests of its SNPs'
    ``(id, chromosome, position, allele_1, allele_2)``: the first with the
    alleles in order, the second unordered. The first holder's are the reference.

    Raises
    ------
    InputValidationError
        If some holders read a ``.bed`` and others not (their alleles cannot
        be compared), or a holder's digests differ from the first holder's:
        the message names both and says whether the alleles are swapped
        (the second digests agree) or a position, chromosome or allele pair differs.
    """
    digests = {h: views[h].get("snp_digests") for h in holders if h in views}
    if all(value is None for value in digests.values()):
        return
    without = [h for h, value in digests.items() if value is None]
    if without:
        raise InputValidationError(
            f"{', '.join(without)} announced no SNP records (its data is not a .bed file) but the other sites "
            "read .bed files, whose alleles cannot be compared with it; give every site a .bed file"
        )
    first, *others = digests
    for holder in others:
        mine, theirs = digests[first], digests[holder]
        if list(theirs or []) == list(mine or []):
            continue
        swapped = len(theirs or []) == 2 and theirs[1] == mine[1]  # type: ignore[index]
        what = (
            "the same SNP ids, chromosomes, positions and allele pairs, but at least one SNP with its alleles "
            "swapped (allele_1 and allele_2 exchanged): its dosages would count the other allele"
            if swapped
            else "at least one SNP with another chromosome, position or allele pair, or another SNP set"
        )
        raise InputValidationError(
            f"{holder}'s .bim and {first}'s describe the agreed SNPs differently (digests of every SNP's "
            f"id, chromosome, position, allele_1 and allele_2 differ): {what}. Refused before any sum is sent. Compare the "
            ".bim files, which are public (mpc_pca.data.snp_alignment.align_bed_files names each SNP with "
            "both records), and make every site count the same allele on the same build (plink --a1-allele)"
        )


def subspace_schema(protocol: str) -> dict[str, Key]:
    """Every party's keys of a subspace protocol that announces no privacy parameter.

    The floor's keys (``protocol`` must be ``protocol``), ``n_components``
    (``None`` or ``1 ..`` :data:`MAX_FEATURES`) and ``row_norm``: the keys of
    non-private pooled PCA, and the base of :func:`gaussian_schema`.
    """
    return {
        **FLOOR_SCHEMA,
        "protocol": Key("text", choices=(protocol,)),
        "n_components": Key("int", 1, MAX_FEATURES, nullable=True),
        "row_norm": Key("text"),
    }


def gaussian_schema(protocol: str) -> dict[str, Key]:
    """Every party's keys of a DP protocol announcing the Gaussian settings (``mpc_pca.dp.common.GAUSSIAN_SHARED``).

    :func:`subspace_schema` and the privacy parameters. Types only, and
    ``n_components``' range: the privacy parameters' meaning is checked after
    agreement (``check_privacy``), which refuses with the same family.
    """
    return {
        **subspace_schema(protocol),
        "epsilon": Key("real"),
        "delta": Key("real"),
        "neighbour": Key("text"),
        "noise_calibration": Key("text"),
    }


def refuse_pooled_scaling(settings: Mapping[str, Any], protocol: str) -> str:
    """Return ``settings["row_norm"]``, refusing ``"scale"``, which needs the pooled rows.

    ``row_norm="scale"`` centres and divides by the largest row norm over the
    union of every party's rows (the papers' non-private preprocessing): a
    simulation step that no party of a run between organisations can take.
    """
    mode = settings.get("row_norm", "clip")
    if mode == "scale":
        raise InputValidationError(
            f"row_norm='scale' centres and scales the pooled rows of every party, which no party of a "
            f"{protocol} run between organisations holds; use row_norm='clip' or 'error' (scale each "
            "party's rows to norm <= 1 beforehand)"
        )
    return str(mode)


def check_own_rows(party: str, data: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """A data holder's rows as a C-contiguous float64 2-D array, refused (naming ``party``) if invalid.

    The checks of :func:`mpc_pca.validation.check_parts` for one part: 2-D, at
    least one row and one column, real and finite.
    """
    if data is None:
        raise InputValidationError(f"{party} holds data in this protocol but was given none")
    try:
        (arr,) = check_parts([data], min_total_rows=1)
    except InputValidationError as exc:
        raise InputValidationError(f"{party}: {exc}".replace("part 0", "its data")) from None
    return arr


def check_no_data(party: str, data: object) -> None:
    """Refuse rows given to a party that holds none in this protocol."""
    if data is not None:
        raise InputValidationError(f"{party} holds no data in this protocol, but rows were given to it")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def agree(views: Mapping[str, Mapping[str, Any]], keys: Iterable[str]) -> dict[str, Any]:
    """The value every party announced for each of ``keys``.

    Raises
    ------
    InputValidationError
        Naming every party and its value, for the first key they disagree on
        (a missing key counts as ``None``).
    """
    agreed: dict[str, Any] = {}
    for key in keys:
        values = {name: view.get(key) for name, view in views.items()}
        if len({_canonical(v) for v in values.values()}) != 1:
            raise InputValidationError(f"the parties disagree on {key}: {values}")
        agreed[key] = next(iter(values.values()))
    return agreed


def expect_parties(views: Mapping[str, Any], layout: Mapping[str, int]) -> None:
    """Refuse a set of announcements that is not exactly one per party of the layout."""
    missing = sorted(set(layout) - set(views))
    extra = sorted(set(views) - set(layout))
    if missing or extra:
        raise InputValidationError(
            f"announcements must come from exactly the parties {sorted(layout)}; missing {missing}, "
            f"unexpected {extra}"
        )


def agree_width(views: Mapping[str, Mapping[str, Any]], holders: Sequence[str]) -> int:
    """The number of features every data holder announced, refused (naming each holder's) if they differ."""
    widths = {name: views[name].get("n_features") for name in holders}
    values = set(map(_canonical, widths.values()))
    first = widths[holders[0]]
    if len(values) != 1 or isinstance(first, bool) or not isinstance(first, int) or first < 1:
        raise InputValidationError(f"the data holders' numbers of features differ or are invalid: {widths}")
    return first


def float_setting(value: Any) -> float | None:
    """A numeric setting as ``float`` for a JSON result (``inf`` stays ``inf``; absent stays ``None``)."""
    return float(value) if value is not None else None


def floats_cap(n_floats: int, extra: int = 0) -> int:
    """A message cap for at most ``n_floats`` float64 values plus ``extra`` bytes, doubled, plus slack."""
    return 2 * (8 * int(n_floats) + int(extra)) + CAP_SLACK


class HoldersFirst(Deployment):
    """Layout shared by every protocol here: the data holders, then the protocol's other roles.

    Subclasses set :attr:`names` (the registry names they run, the first the
    default) and :attr:`others` (the non-holders' names, in rank order), and
    may override :meth:`holder_names` (``provider0 ..`` by default).
    """

    one_blas_thread = True
    others: tuple[str, ...] = ()
    #: The registry names this class runs and what each declares; the first is the default.
    variants: Mapping[str, Variant] = MappingProxyType({})

    def __init__(self, name: str | None = None) -> None:
        chosen = next(iter(self.variants)) if name is None else name
        if chosen not in self.variants:
            raise InputValidationError(
                f"{type(self).__name__} runs protocol {' or '.join(map(repr, self.variants))}, not {name!r}"
            )
        self.declare(chosen, self.variants[chosen])
        self.params = self.variants[chosen].params

    def holder_names(self, n_providers: int) -> tuple[str, ...]:
        """The data holders' names for ``n_providers`` holders."""
        return provider_names(n_providers)

    def layout(self, n_providers: int) -> dict[str, int]:
        """Holders at ranks ``0 .. n_providers - 1``, then :attr:`others` in order."""
        if isinstance(n_providers, bool) or not isinstance(n_providers, int) or n_providers < 1:
            raise InputValidationError(f"n_providers={n_providers!r} must be a positive integer")
        names = (*self.holder_names(n_providers), *self.others)
        return {name: rank for rank, name in enumerate(names)}

    def data_holders(self, n_providers: int) -> tuple[str, ...]:
        return tuple(self.holder_names(n_providers))

    def check_views(self, views: Mapping[str, Mapping[str, Any]], n_providers: int) -> tuple[str, ...]:
        """Refuse announcements not from exactly this run's parties; return the holders' names."""
        expect_parties(views, self.layout(n_providers))
        return self.data_holders(n_providers)


def subspace_fields(
    components: NDArray[np.float64],
    explained_variance: NDArray[np.float64],
    n_samples: int,
    settings: Mapping[str, Any],
    mean: NDArray[np.float64] | None = None,
) -> dict[str, Any]:
    """The JSON fields ``mpc-pca run`` writes for a DP subspace protocol (``mpc_pca.cli.dp._result``).

    Every field but :data:`HARNESS_FIELDS`; ``mean`` defaults to zeros
    (second-moment PCA, no centring).
    """
    variance = [None if math.isnan(v) else float(v) for v in np.asarray(explained_variance, dtype=np.float64)]
    centre = np.zeros(components.shape[1]) if mean is None else mean
    return {
        "components": components.tolist(),
        "explained_variance": variance,
        "mean": np.asarray(centre, dtype=np.float64).tolist(),
        "n_samples": int(n_samples),
        "epsilon": float_setting(settings.get("epsilon")),
        "delta": float_setting(settings.get("delta")),
        "neighbour": settings.get("neighbour"),
        "row_norm": settings.get("row_norm"),
    }


def check_components_setting(n_components: object) -> int | None:
    """``n_components`` before the width is agreed: ``None`` (all directions) or a positive integer."""
    if n_components is None:
        return None
    if isinstance(n_components, bool) or not isinstance(n_components, Integral) or n_components < 1:
        raise InputValidationError(f"n_components={n_components!r} must be None or a positive integer")
    return int(n_components)
