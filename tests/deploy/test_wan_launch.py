"""launch_local's emulated WAN links (``link_profile``): refused where they cannot apply."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.deploy.local import host_rendezvous, launch_local
from protocols.errors import InputValidationError
from protocols.testing.wan_emulator import LinkProfile


def test_launch_local_refuses_a_link_profile_over_gloo() -> None:
    parts = [np.ones((4, 3)), np.zeros((4, 3))]
    with pytest.raises(InputValidationError, match=r"link_profile=LinkProfile\(rtt_seconds=0.1.*gloo"):
        launch_local(
            "pppca-ss", parts, {"n_components": 1, "backend": "crypten"}, insecure=True,
            link_profile=LinkProfile(0.1),
        )  # fmt: skip


def test_host_rendezvous_refuses_a_link_profile_over_gloo(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputValidationError, match="gloo"):
        host_rendezvous({"a": 0, "b": 1}, tmp_path, True, True, 5.0, LinkProfile(0.1))
