"""The papers' privacy settings beside this project's sound ones: one definition for every DP study.

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


@dataclass(frozen=True)
class Setting:
    """One way of calibrating the noise: the paper's, or this project's sound one.

    Attributes
    ----------
    name : {"paper", "sound"}
        Key in the records.
    label : str
        For plot legends and claim texts.
    neighbour : {"add-remove", "replace-one"}
        Neighbour relation handed to the estimators.
    delta : float or None
        ``None``: the figure's own delta (a delta sweep keeps its values).
    calibration : str
        Estimator-specific calibration name (DPDPCA: ``"paper"`` or
        ``"sensitivity"``; capePCA / capeAGN: ``"paper"`` or ``"joint"``).
    """

    name: str
    label: str
    neighbour: str
    delta: float | None
    calibration: str

    def delta_or(self, paper_delta: float) -> float:
        """This setting's delta, the figure's own ``paper_delta`` if the setting keeps it."""
        return paper_delta if self.delta is None else self.delta


def settings(
    *,
    paper_delta: float | None = None,
    paper_calibration: str = "paper",
    sound_calibration: str = "sensitivity",
) -> dict[str, Setting]:
    """The paper's setting (add/remove, the paper's delta) and the sound one (replace-one, delta 1e-5).

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
        "paper": Setting("paper", f"paper's settings (add/remove{shown})", "add-remove", None, paper_calibration),
        "sound": Setting(
            "sound", f"sound settings (replace-one, delta {SOUND_DELTA:g})", "replace-one", SOUND_DELTA,
            sound_calibration,
        ),
    }  # fmt: skip


def per_setting(
    make: Callable[[Setting], Claim | Sequence[Claim] | None], chosen: dict[str, Setting], why: str
) -> list[Claim]:
    """Every claim once per setting, its text tagged with the setting; the sound ones' evidence ends with ``why``.

    ``make(setting)`` builds the claim (or claims) from that setting's
    records, ``None`` when the records hold nothing for it. ``why`` is the one
    sentence on why the two settings can differ.
    """
    out = []
    for setting in chosen.values():
        made = make(setting)
        for claim in [made] if isinstance(made, Claim) else (made or []):
            tagged = replace(claim, text=f"{claim.text} [{setting.label}]")
            if setting.name == "sound":
                tagged = replace(tagged, evidence=f"{tagged.evidence}. Why the settings differ: {why}")
            out.append(tagged)
    return out


def sound_style(style: dict[str, Any]) -> dict[str, Any]:
    """The plot style of a method's sound-setting curve: its paper colour, dashed, hollow markers."""
    return {**style, "linestyle": (0, (4, 2)), "markerfacecolor": "none", "alpha": 0.8}
