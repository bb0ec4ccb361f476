"""Differential-privacy noise shared by every protocol.

Modules
-------
calibration
    Gaussian noise scales: the analytic Gaussian mechanism (Balle & Wang,
    2018; valid for every epsilon) and the classical bound (epsilon < 1).
discrete_gaussian
    The exact discrete Gaussian sampler on integers (Canonne, Kamath &
    Steinke, 2020) drawn from a CSPRNG, for noise added inside the ring.
accounting
    A privacy budget accountant (basic composition and zCDP) that refuses a
    release which would exceed the budget.
"""
