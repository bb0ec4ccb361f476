"""The real studies' verdicts follow the records: the same claim flips when the numbers do."""

from __future__ import annotations

import numpy as np

from mpc_pca.studies import dsc2018, scaling


def _scaling_record(n: int, pppca: float, sklearn: float) -> dict:
    return {
        "axis": "n",
        "n": n,
        "d": 50,
        "M": 4,
        "seconds": {"sklearn": [sklearn] * 3, "pppca_ss": [pppca] * 3, "pppca_masks": [pppca] * 3},
        "peak_bytes": {"sklearn": 1, "pppca_ss": 2, "pppca_masks": 2},
        "data_bytes": 4,
    }


def test_scaling_claim_uses_the_largest_n():
    slow_small_fast_large = [_scaling_record(10_000, 5.0, 1.0), _scaling_record(1_000_000, 0.5, 1.0)]
    (claim,) = scaling.claims(slow_small_fast_large)
    assert claim.reproduced is True and "1,000,000" in claim.text and "0.50" in claim.evidence
    (claim,) = scaling.claims([_scaling_record(10_000, 0.5, 1.0), _scaling_record(1_000_000, 3.0, 1.0)])
    assert claim.reproduced is False and "3.00" in claim.evidence


def _fig3_record(owners: int, dp_s: float, chain_s: float) -> dict:
    """Three repeats around the given protocol seconds (a 2 % spread)."""
    spread = np.array([0.98, 1.0, 1.02])
    return {
        "owners": owners,
        "dpdpca": {"protocol": list(dp_s * spread), "startup": [1.0] * 3, "energy": [0.9] * 3},
        "chain": {"protocol": list(chain_s * spread), "startup": [1.0] * 3, "energy": [0.5] * 3},
    }


def test_dsc2018_fig3_claims_follow_the_records():
    paper_like = [_fig3_record(2, 1.0, 2.0), _fig3_record(4, 1.2, 4.0), _fig3_record(8, 1.5, 8.0)]
    assert [c.reproduced for c in dsc2018.fig3_claims(paper_like)] == [True, True, True]
    contrary = [_fig3_record(2, 3.0, 2.0), _fig3_record(4, 9.0, 1.9), _fig3_record(8, 30.0, 1.8)]
    faster, grows, sublinear = dsc2018.fig3_claims(contrary)
    assert (faster.reproduced, grows.reproduced, sublinear.reproduced) == (False, False, False)
    assert "ratio of means 10.000" in sublinear.evidence
    (undecided,) = dsc2018.fig3_claims(paper_like[:1])
    assert undecided.reproduced is None


def _fig5_record(eps: float, paper: float, sound: float) -> dict:
    jitter = [0.99, 1.0, 1.01, 1.0]
    return {
        "epsilon": eps,
        "ratios": {"paper": [paper * j for j in jitter], "sensitivity": [sound * j for j in jitter]},
        "noise_sigma": {"paper": 1.0, "sensitivity": 5.0},
    }


def test_dsc2018_fig5_gives_one_verdict_per_calibration():
    records = [_fig5_record(0.1, 0.95, 0.40), _fig5_record(1.0, 0.97, 0.80), _fig5_record(5.0, 0.99, 0.98)]
    paper, sound = dsc2018.fig5_claims(records)
    assert "paper's calibration" in paper.text and paper.reproduced is True
    assert "sound calibration" in sound.text and sound.reproduced is False
    assert "sensitivity 1" in sound.evidence
