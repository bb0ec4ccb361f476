"""The papers' privacy settings beside this project's sound ones: one definition for every DP study.

Every setting is labelled by what it is. The papers size their Gaussian noise
by the classical formula ``sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon``;
this project uses the analytic Gaussian calibration (Balle & Wang 2018) unless
told otherwise, which gives less noise at the same ``(epsilon, delta)``. A
setting is called "paper's formula" only when it uses the classical formula
(:func:`paper_formula`); the paper's neighbours and delta with analytic noise
are labelled as such (:data:`ANALYTIC`, "this project's choice").

The differentially private papers calibrate their noise in ways this project
does not use by default: ICASSP 2016 / 2018 and the JSTSP 2018 paper take
add/remove neighbours (sensitivity ``1/N``) and large deltas (0.1, 0.01);
DSC 2018 sizes DPDPCA's noise for a sensitivity of 1. The project's defaults
are replace-one neighbours (which double the sensitivity of a normalised
second-moment matrix), ``delta = 1e-5`` and noise sized for the true
sensitivity. Every DP study measures both, paired by repetition, draws both
curves in one plot (:func:`sound_style`: same colour, dashed, hollow
markers) and states every claim once per setting (:func:`per_setting`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mpc_pca.studies.framework import Claim

#: The project's default delta (the papers use 0.1, 0.01 or 1/N).
SOUND_DELTA = 1e-5
#: How the labels name the analytic Gaussian noise of a setting that keeps the paper's neighbours and delta.
ANALYTIC = "analytic Gaussian noise: this project's choice, not the paper's formula"
#: The papers' classical Gaussian formula, as the labels print it.
CLASSICAL = "classical Gaussian sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon"


@dataclass(frozen=True)
class Setting:
    """One way of calibrating the noise: the paper's, or this project's sound one.

    Attributes
    ----------
    name : {"formula", "paper", "sound"}
        Key of the setting: ``"formula"`` the paper's formula (classical
        Gaussian), ``"paper"`` the paper's neighbours and delta with this
        project's noise, ``"sound"`` this project's settings.
    label : str
        For plot legends and claim texts.
    neighbour : {"add-remove", "replace-one"}
        Neighbour relation handed to the estimators.
    delta : float or None
        ``None``: the figure's own delta (a delta sweep keeps its values).
    calibration : str
        Estimator-specific calibration name (DPDPCA: ``"paper"`` or
        ``"sensitivity"``; capePCA / capeAGN: ``"paper"`` or ``"joint"``).
    noise : {"analytic", "classical"}
        The Gaussian noise formula handed to the estimators
        (``noise_calibration``).
    """

    name: str
    label: str
    neighbour: str
    delta: float | None
    calibration: str
    noise: str = "analytic"

    def delta_or(self, paper_delta: float) -> float:
        """This setting's delta, the figure's own ``paper_delta`` if the setting keeps it."""
        return paper_delta if self.delta is None else self.delta


def settings(
    *,
    paper_delta: float | None = None,
    paper_calibration: str = "paper",
    sound_calibration: str = "sensitivity",
) -> dict[str, Setting]:
    """The paper's neighbours and delta with analytic noise, and the sound setting (replace-one, delta 1e-5).

    Neither is the paper's formula: both use the analytic Gaussian noise,
    and the first one's label says so (:data:`ANALYTIC`).

    Parameters
    ----------
    paper_delta : float, optional
        Recorded in the paper setting's label; ``Setting.delta`` stays
        ``None`` so that the figure's own delta (or a delta sweep) is used.
    paper_calibration, sound_calibration : str
        The estimator's calibration names for the two settings.
    """
    shown = "" if paper_delta is None else f", delta {paper_delta:g}"
    return {
        "paper": Setting(
            "paper", f"paper's neighbours and delta (add/remove{shown}), {ANALYTIC}", "add-remove", None,
            paper_calibration,
        ),
        "sound": Setting(
            "sound", f"sound settings (replace-one, delta {SOUND_DELTA:g})", "replace-one", SOUND_DELTA,
            sound_calibration,
        ),
    }  # fmt: skip


def paper_formula(*, paper_delta: float | None = None, calibration: str = "paper") -> Setting:
    """The paper's formula: add/remove neighbours, the paper's delta and the classical Gaussian noise.

    The classical formula's proof needs ``epsilon < 1`` and the estimators
    refuse it above; a study measures this setting only there.
    """
    shown = "" if paper_delta is None else f", delta {paper_delta:g}"
    return Setting(
        "formula",
        f"paper's formula (add/remove{shown}, {CLASSICAL})",
        "add-remove",
        None,
        calibration,
        "classical",
    )


def per_setting(
    make: Callable[[Setting], Claim | Sequence[Claim] | None],
    chosen: dict[str, Setting],
    why: str,
    why_formula: str = "",
) -> list[Claim]:
    """Every claim once per setting, its text tagged with the setting; the sound ones' evidence ends with ``why``.

    ``make(setting)`` builds the claim (or claims) from that setting's
    records, ``None`` when the records hold nothing for it. ``why`` is the one
    sentence on why the paper's and the sound settings can differ;
    ``why_formula`` (if given) ends the evidence of the paper's-formula ones.
    """
    out = []
    for setting in chosen.values():
        made = make(setting)
        for claim in [made] if isinstance(made, Claim) else (made or []):
            tagged = replace(claim, text=f"{claim.text} [{setting.label}]")
            if setting.name == "sound":
                tagged = replace(tagged, evidence=f"{tagged.evidence}. Why the settings differ: {why}")
            elif setting.name == "formula" and why_formula:
                tagged = replace(tagged, evidence=f"{tagged.evidence}. The paper's formula: {why_formula}")
            out.append(tagged)
    return out


def sound_style(style: dict[str, Any]) -> dict[str, Any]:
    """The plot style of a method's sound-setting curve: its paper colour, dashed, hollow markers."""
    return {**style, "linestyle": (0, (4, 2)), "markerfacecolor": "none", "alpha": 0.8}


def formula_style(style: dict[str, Any]) -> dict[str, Any]:
    """The plot style of a method's paper's-formula curve: its colour, dotted, cross markers."""
    return {**style, "linestyle": (0, (1, 1.5)), "marker": "x", "alpha": 0.9}
