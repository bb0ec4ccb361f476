"""Every study ``mpc-pca study`` knows, by name, as ``"module:attribute"`` (imported on demand).

To register a study, add one line to :func:`study_table`: its command-line name
and the import path of a module-level :class:`~mpc_pca.studies.framework.Study`
object. A script under ``benchmarks/`` (only importable from a checkout) is
not registered: every study lives in ``mpc_pca/studies/`` (``benchmarks/``
keeps micro-benchmarks only).
"""

from __future__ import annotations

import importlib

from mpc_pca.studies.framework import Study
from protocols.errors import InputValidationError


def study_table() -> dict[str, str]:
    """Study name -> ``"module:attribute"`` of its :class:`Study` (built on each call)."""
    return {
        "aaai2020-table3": "mpc_pca.studies.table3:STUDY",
        "backends": "mpc_pca.studies.backends:STUDY",
        "lossless": "mpc_pca.studies.lossless:STUDY",
        "icassp2018": "mpc_pca.studies.dp_utility:STUDY",
        "icassp2016-fig1": "mpc_pca.studies.dp_utility:ICASSP2016_STUDY",
        "icassp2016-table1": "mpc_pca.studies.icassp2016_svm:STUDY",
        "dsc2018-fig3": "mpc_pca.studies.dsc2018:FIG3_STUDY",
        "dsc2018-fig4": "mpc_pca.studies.dsc2018:FIG4_STUDY",
        "dsc2018-fig5": "mpc_pca.studies.dsc2018_fig5:FIG5_STUDY",
        "scaling": "mpc_pca.studies.scaling:STUDY",
        "jstsp-capeagn": "mpc_pca.studies.capeagn:STUDY",
        "dp-noise": "mpc_pca.studies.dp_noise:STUDY",
        "network": "mpc_pca.studies.network:STUDY",
    }


def load_study(name: str) -> Study:
    """Import and return the study registered as ``name``."""
    table = study_table()
    if name not in table:
        raise InputValidationError(f"unknown study {name!r}; choose one of {sorted(table)}")
    module_name, _, attribute = table[name].partition(":")
    study = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(study, Study) or study.name != name:
        raise InputValidationError(f"{table[name]} is not a Study named {name!r}")
    return study
