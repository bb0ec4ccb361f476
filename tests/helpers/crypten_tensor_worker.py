"""One party of a CrypTen tensor-engine test run (started by tests/multiprocess/test_crypten_tensor.py).

``python tests/helpers/crypten_tensor_worker.py NAME MASTER WORKDIR``. The
parties are holders ``h0 .. h{M-1}`` (ranks ``0 .. M-1``) and ``dealer``
(rank ``M``), ``M`` from ``WORKDIR/spec.json``, which lists the cases:
``{"op": "mul" | "matmul" | "trunc", "x": [[...]], "y": [[...]], "bits": int,
"extra_bits": int}``. Holder 0 inputs ``x``, the last holder inputs ``y``;
every result is revealed to the dealer, who writes them to
``WORKDIR/dealer.out.json``. Every holder writes its counters.

CrypTen's TFP provider is made to raise in every party, so a product that
reached it (instead of the dealer's provider) fails the run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np


def main() -> int:
    name, master, workdir = sys.argv[1:4]
    work = Path(workdir)
    spec = json.loads((work / "spec.json").read_text())
    m = int(spec["holders"])
    holders = [f"h{i}" for i in range(m)]
    ranks = {h: i for i, h in enumerate(holders)}
    ranks["dealer"] = m

    from protocols.backends.crypten_compat import import_crypten
    from protocols.errors import ProtocolError
    from protocols.runtime import gloo
    from protocols.tensor import matmul, mul, reveal, share_input, truncate
    from protocols.tensor.crypten_engine import CrypTenTensorSession

    crypten = import_crypten()

    def tfp_used(*args: Any, **kwargs: Any) -> Any:
        raise ProtocolError("CrypTen's TFP provider was asked for a triple")

    crypten.mpc.provider.TrustedFirstParty.generate_additive_triple = tfp_used

    def role(party: Any) -> Any:
        session = CrypTenTensorSession(party, holders=holders, dealer="dealer", frac_bits=spec["frac_bits"])
        results = []
        for case in spec["cases"]:
            x_val = np.array(case["x"], dtype=np.float64)
            x = share_input(session, x_val if name == "h0" else None, owner="h0", shape=x_val.shape)
            if case["op"] == "trunc":
                z = truncate(x, case["bits"])
            else:
                y_val = np.array(case["y"], dtype=np.float64)
                last = holders[-1]
                y = share_input(session, y_val if name == last else None, owner=last, shape=y_val.shape)
                op = mul if case["op"] == "mul" else matmul
                z = op(x, y, extra_bits=case.get("extra_bits", 0))
            out = reveal(z, "dealer")
            results.append(None if out is None else out.tolist())
        guards = {}
        if session.is_holder:
            import torch.distributed as dist

            engine = session.crypten_engine
            with engine.active() as cr:
                comm = cr.communicator.get()
                for what, call in {
                    "send_obj": lambda: comm.send_obj({"x": 1}, 0),
                    "recv_obj": lambda: comm.recv_obj(0),
                    "broadcast_obj": lambda: comm.broadcast_obj(1, 0),
                    "all_gather_obj": lambda: comm.all_gather_obj(1),
                    "broadcast_object_list": lambda: dist.broadcast_object_list([1], src=0),
                    "recv_object_list": lambda: dist.recv_object_list([None], src=0),
                    "all_gather_object": lambda: dist.all_gather_object([None] * m, 1),
                }.items():
                    try:
                        call()
                        guards[what] = "reached"
                    except ProtocolError:
                        guards[what] = "refused"
            guards["restored"] = dist.broadcast_object_list.__name__
            return {
                "handed_out": engine.provider.handed_out,
                "consumed": session.ledger.consumed,
                "counts": session.stats.counts,
                "guards": guards,
            }
        return results

    try:
        output, report = gloo.run_torch_party(
            role, name, ranks, master, timeout=60, connect_timeout=60, host_store=False
        )
    except Exception as exc:
        print(f"mpc-pca: error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        import os

        os._exit(2)
    (work / f"{name}.out.json").write_text(json.dumps({"output": output, "report": report.as_dict()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
