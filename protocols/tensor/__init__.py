"""Secret-shared fixed-point tensors over Z_2^64 with a dealer (no PCA here).

Modules
-------
session
    :class:`TensorSession`: holders, dealer, seeds, the one-time ledger.
shared
    :class:`SharedTensor`: a member's handle (its share, or just the shape).
correlated
    Beaver triples (elementwise and matrix) and truncation pairs from the dealer.
ops
    Collective operations: input sharing, public and secret products,
    truncation, reveal to named parties.
engine, crypten_engine
    The interface a product engine offers, and the engine on CrypTen.
eig
    Top-k eigenvectors of a shared symmetric PSD matrix by subspace iteration.
batched
    Several products, truncations or reveals with one opening round.
fast_eig
    The same in tens of rounds (repeated squaring, then block iteration with
    one-round orthonormalisation).
fast_eig_math
    The fast solvers' fixed-point parameters and their public float arithmetic.
spectrum_eig
    The rotated-spectrum solver (every eigenvalue, nothing else).
joint_rotation
    The solvers' hiding rotations on shares: drawn by holder 0, or the product
    of one from every holder (no coalition short of all holders knows it).
krylov_eig, krylov_math
    Block Krylov (block Lanczos with Rayleigh-Ritz on the whole basis): about
    ``1 / sqrt(gap)`` blocks where the ladder needs ``1 / gap`` iterations;
    and the holders' float arithmetic on its opened Grams.
ole, provider_products, provider_truncation
    Correlated randomness without a dealer (issue 39): two-party OLE from the
    receiver's own Paillier key, Beaver triples among the providers, and
    truncation pairs from shared random bits (made by OT, :mod:`protocols.ot`).
offline_store, offline_plan, offline_file, offline_cost
    The offline phase's items, handed out once by kind and shape; the
    eigensolver's worst-case plan of them; a store sealed on disk (AES-GCM)
    and read once; and their operation counts (Paillier, OT) and time model.
"""

from protocols.tensor.ops import (
    add_public,
    from_share,
    matmul,
    matmul_public,
    mul,
    mul_public,
    mul_public_int,
    reveal,
    share_input,
    share_sum,
    truncate,
)
from protocols.tensor.session import DEFAULT_FRAC_BITS, TensorSession
from protocols.tensor.shared import SharedTensor

__all__ = [
    "DEFAULT_FRAC_BITS",
    "SharedTensor",
    "TensorSession",
    "add_public",
    "from_share",
    "matmul",
    "matmul_public",
    "mul",
    "mul_public",
    "mul_public_int",
    "reveal",
    "share_input",
    "share_sum",
    "truncate",
]
