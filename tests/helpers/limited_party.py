"""``mpc-pca party ARGV`` in this process, under an address-space bound, reporting its peak memory.

Environment:

* ``MPC_PCA_AS_LIMIT``: bytes of ``RLIMIT_AS`` set before anything is imported (unset: no bound);
* ``MPC_PCA_MEMORY_REPORT``: a file that receives ``{"vm_peak": B, "max_rss": B}`` when the party
  ends normally (a failed party ends with ``os._exit`` and writes nothing).

Usage: ``python -m tests.helpers.limited_party party --protocol ... --data big.parquet``.
"""

from __future__ import annotations

import json
import os
import resource
import sys


def peak_memory() -> dict[str, int]:
    """This process's peak virtual size (``VmPeak``) and peak resident set size, in bytes."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmPeak", "VmHWM"):
                fields[key] = int(value.split()[0]) * 1024
    return {"vm_peak": fields["VmPeak"], "max_rss": fields["VmHWM"]}


def main(argv: list[str]) -> int:
    limit = os.environ.get("MPC_PCA_AS_LIMIT")
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))
    from mpc_pca.cli import main as cli

    code = cli(argv)
    report = os.environ.get("MPC_PCA_MEMORY_REPORT")
    if report:
        with open(report, "w") as out:
            json.dump(peak_memory(), out)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
