"""ServerApp: FedAvg whose fit runs through SecureSumWorkflow; writes the outcomes and parameters as JSON."""

from __future__ import annotations

import dataclasses
import json

from flwr.common import parameters_to_ndarrays
from flwr.compat.common.recorddict_compat import arrayrecord_to_parameters
from flwr.server import LegacyContext, ServerApp, ServerConfig
from flwr.server.strategy import FedAvg
from flwr.server.workflow import DefaultWorkflow
from flwr.server.workflow.constant import MAIN_PARAMS_RECORD

from mpc_pca.integrations.flower import SecureSumWorkflow

app = ServerApp()


@app.main()
def main(grid, context) -> None:
    cfg = context.run_config
    nodes = int(cfg["nodes"])
    strategy = FedAvg(
        fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=nodes, min_available_clients=nodes
    )
    rounds = int(cfg["num-server-rounds"])
    legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=rounds), strategy=strategy)
    timeout = float(cfg["timeout"]) or None
    workflow = SecureSumWorkflow(
        3,
        float(cfg["threshold"]),
        clipping_range=float(cfg["bound"]),
        timeout=timeout,
        require_signed_keys=bool(cfg["signed"]),
        graph=str(cfg["graph"]),
        max_colluders=None if int(cfg["max-colluders"]) < 0 else int(cfg["max-colluders"]),
    )
    DefaultWorkflow(fit_workflow=workflow)(grid, legacy)
    params = parameters_to_ndarrays(
        arrayrecord_to_parameters(legacy.state.array_records[MAIN_PARAMS_RECORD], keep_input=True)
    )
    with open(str(cfg["out"]), "w", encoding="utf-8") as fh:
        json.dump(
            {
                "outcomes": [dataclasses.asdict(o) for o in workflow.outcomes],
                "parameters": [p.tolist() for p in params],
            },
            fh,
        )
