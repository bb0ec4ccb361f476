"""The wide benchmark's memory measurements: one site's pass over its ``.bed`` file in a child process.

A provider of ``pppca-randomized`` reads its rows in chunks
(:class:`~mpc_pca.data.genotype_part.BedPart`) and keeps ``O(d b)`` numbers.
:func:`site_peak` runs, in a fresh (spawned) child process with one BLAS
thread, what a provider computes from its file: its sums
(:func:`~mpc_pca.wide.site.site_sums`, which includes the pass for the
site's SNP means), one centred block product
(:func:`~mpc_pca.wide.site.site_product` with a ``d x b`` block) and its
scores on ``k`` components (:func:`~mpc_pca.wide.site.site_scores`; left out
for the streamed 1,000,000-SNP site: three passes instead of four), and
reports the child's peak resident set beside the stated bound (``VmHWM`` of
``/proc/self/status``, reset to the current resident set after the imports with
``/proc/self/clear_refs``; ``ru_maxrss`` would carry the parent's peak over the
spawn's fork and exec)

    bound = RSS after imports + 2 x chunk + 6 x (8 d b) + 16 x (8 d)  bytes,

``chunk`` being the float64 bytes of the largest row chunk read (``chunk_rows``
rows, or the site-means pass's own chunks of
:data:`~mpc_pca.data.plink.DEFAULT_CHUNK_BYTES`, whichever is larger, at most ``n_s`` rows):
one chunk and bed-reader's missing-call mask, the block, its product and
their temporaries, and the ``O(d)`` sums. The secure sum's shares of the
``d x b`` product (one per party, :mod:`mpc_pca.wide.roles`) are not part of
this measurement; they add ``(M + 1) x 8 d b`` bytes at most.

:func:`write_random_bed` writes a PLINK 1 fileset of any width without holding
its genotypes (SNP blocks encoded with numpy): Hardy-Weinberg dosages of
per-SNP allele frequencies uniform in ``[0.05, 0.5]``, for the streaming
measurement (a 1,000,000-SNP site).
"""

from __future__ import annotations

import multiprocessing
import queue as queue_module
import time
from pathlib import Path
from typing import Any

import numpy as np

#: SNPs encoded per block by :func:`write_random_bed`.
WRITE_BLOCK = 20_000
#: PLINK 1 code of each dosage (copies of allele_1, bed-reader's ``count_A1=True``): 0 -> 0b11, 1 -> 0b10, 2 -> 0b00.
CODES = np.array([3, 2, 0], dtype=np.uint8)


def _status(field: str) -> int:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``), bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_peak() -> bool:
    """Reset this process's peak resident set (``VmHWM``) to its current one (Linux ``clear_refs`` 5)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def stated_bound(baseline: int, chunk_bytes: int, d: int, b: int) -> int:
    """The module notes' bound, bytes."""
    return baseline + 2 * chunk_bytes + 6 * 8 * d * b + 16 * 8 * d


def _site_pass(
    path: str, width: int, k: int, chunk_rows: int | None, seed: int, with_scores: bool
) -> dict[str, Any]:
    """In the child: one provider's passes over its file and the peak they reached."""
    from threadpoolctl import threadpool_limits

    from mpc_pca.data.genotype_part import BedPart
    from mpc_pca.data.inputs import ReadOptions
    from mpc_pca.data.plink import rows_per_chunk
    from mpc_pca.wide.site import site_product, site_scores, site_sums
    from mpc_pca.wide.subspace import orthonormal, start_block

    with threadpool_limits(1):
        part = BedPart(path, ReadOptions(), chunk_rows)
        d = part.n_features
        block = orthonormal(start_block(d, width, seed))
        baseline = _status("VmRSS")
        reset = _reset_peak()
        started = time.perf_counter()
        sums = site_sums(part)
        mean = sums.sums / sums.n_rows
        product = site_product(part, block, mean)
        scores = site_scores(part, mean, np.ones(d), block[:, :k].T.copy()) if with_scores else product
        seconds = time.perf_counter() - started
        peak = _status("VmHWM")
    # the largest chunk read: the part's, or the site-means pass's (BedFile reads it in default-size chunks)
    chunk_bytes = 8 * d * min(max(part.chunk_rows, rows_per_chunk(d, None)), sums.n_rows)
    return {
        "path": path,
        "n_rows": sums.n_rows,
        "n_snps": d,
        "block_width": width,
        "chunk_rows": part.chunk_rows,
        "chunk_bytes": chunk_bytes,
        "block_bytes": 8 * d * width,
        "rss_after_imports_bytes": baseline,
        "peak_rss_bytes": peak,
        "peak_reset_after_imports": reset,
        "passes": 4 if with_scores else 3,
        "bound_bytes": stated_bound(baseline, chunk_bytes, d, width),
        "within_bound": peak <= stated_bound(baseline, chunk_bytes, d, width),
        "file_bytes": Path(path).stat().st_size,
        "seconds": seconds,
        "finite": bool(np.all(np.isfinite(product)) and np.all(np.isfinite(scores))),
    }


def _child(queue: Any, args: tuple[Any, ...]) -> None:
    """Spawned child: run :func:`_site_pass` and send back its report (or the error's text)."""
    try:
        queue.put(_site_pass(*args))
    except BaseException as exc:  # the parent reports it; a child must not die silently
        queue.put({"error": repr(exc)})


def site_peak(
    path: Path,
    width: int,
    k: int,
    chunk_rows: int | None = None,
    seed: int = 0,
    timeout: float = 3600.0,
    with_scores: bool = True,
) -> dict[str, Any]:
    """One provider's passes over ``path`` in a fresh spawned process: its peak RSS and the stated bound.

    Raises
    ------
    RuntimeError
        If the child failed or did not answer within ``timeout`` seconds.
    """
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue, (str(path), width, k, chunk_rows, seed, with_scores)))
    child.start()
    deadline = time.monotonic() + timeout
    report: dict[str, Any] = {"error": f"no answer within {timeout:g} s"}
    try:
        while time.monotonic() < deadline:
            try:
                report = queue.get(timeout=1.0)
                break
            except queue_module.Empty:
                if not child.is_alive():
                    report = {"error": f"the child exited with code {child.exitcode} without a report"}
                    break
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.terminate()
    if "error" in report:
        raise RuntimeError(f"the memory child for {path} failed: {report['error']}")
    return dict(report)


def write_random_bed(path: Path, n: int, d: int, seed: int = 0) -> Path:
    """A PLINK 1 fileset ``path`` (+ ``.bim``, ``.fam``) of ``n`` individuals and ``d`` random SNPs, block by block."""
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".fam").write_text("".join(f"fam{i} ind{i} 0 0 0 -9\n" for i in range(n)))
    with path.with_suffix(".bim").open("w") as bim:
        for start in range(0, d, WRITE_BLOCK):
            bim.write(
                "".join(f"1\trnd{j}\t0\t{j + 1}\tA\tG\n" for j in range(start, min(d, start + WRITE_BLOCK)))
            )
    padded = -(-n // 4) * 4
    with path.open("wb") as bed:
        bed.write(bytes([0x6C, 0x1B, 0x01]))
        for start in range(0, d, WRITE_BLOCK):
            count = min(d, start + WRITE_BLOCK) - start
            p = rng.uniform(0.05, 0.5, size=(count, 1)).astype(np.float32)
            draw = rng.random((count, n), dtype=np.float32)
            dosage = (draw < p * p).astype(np.uint8) + (draw < p * (2 - p)).astype(np.uint8)  # HWE: p^2, 2pq
            codes = np.full((count, padded), 3, dtype=np.uint8)
            codes[:, :n] = CODES[dosage]
            quads = codes.reshape(count, padded // 4, 4)
            packed = quads[:, :, 0] | (quads[:, :, 1] << 2) | (quads[:, :, 2] << 4) | (quads[:, :, 3] << 6)
            bed.write(np.ascontiguousarray(packed, dtype=np.uint8).tobytes())
    return path


__all__ = ["CODES", "site_peak", "stated_bound", "write_random_bed"]
