"""The real studies' verdicts follow the records: the same claim flips when the numbers do."""

from __future__ import annotations

from mpc_pca.studies import dpdpca_runtime, scaling


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


def _dpdpca_record(owners: int, dp_s: float, chain_s: float, dp_q: float, chain_q: float) -> dict:
    return {
        "owners": owners,
        "dpdpca_seconds": [dp_s],
        "chain_seconds": [chain_s],
        "dpdpca_energy": dp_q,
        "chain_energy": chain_q,
    }


def test_dpdpca_runtime_claims_follow_the_records():
    paper_like = [_dpdpca_record(2, 1.0, 2.0, 0.9, 0.5), _dpdpca_record(8, 1.5, 8.0, 0.9, 0.4)]
    assert [c.reproduced for c in dpdpca_runtime.claims(paper_like)] == [True, True, True]
    contrary = [_dpdpca_record(2, 3.0, 2.0, 0.3, 0.5), _dpdpca_record(8, 20.0, 8.0, 0.9, 0.4)]
    faster, sublinear, energy = dpdpca_runtime.claims(contrary)
    assert (faster.reproduced, sublinear.reproduced, energy.reproduced) == (False, False, False)
    assert "x6.67" in sublinear.evidence
    (undecided,) = dpdpca_runtime.claims(paper_like[:1])
    assert undecided.reproduced is None
