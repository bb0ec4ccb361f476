"""The threads runner's noise seeds: every runner derives party ``r``'s generator from one root, as the old drivers did."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.deployment_kit import noise_root, seeded_generator
from mpc_pca.dp import CapePCA
from mpc_pca.dp.mechanisms import spawn_generators
from protocols.errors import InputValidationError


@pytest.mark.parametrize("seed", [0, 12345, 2**100])
def test_a_party_builds_alone_the_generator_spawn_generators_gives_it(seed):
    spawned = [g.integers(0, 2**62, size=4) for g in spawn_generators(seed, 5)]
    alone = [seeded_generator(seed, i).integers(0, 2**62, size=4) for i in range(5)]
    assert all(np.array_equal(a, b) for a, b in zip(spawned, alone, strict=True))


def test_a_seed_sequence_gives_its_next_children_without_being_spawned_from():
    used = np.random.SeedSequence(9)
    used.spawn(2)  # children 0 and 1 are taken
    copy = np.random.SeedSequence(9, n_children_spawned=2)
    expected = [g.random() for g in spawn_generators(copy, 3)]
    assert [seeded_generator(used, i).random() for i in range(3)] == expected
    assert used.n_children_spawned == 2


@pytest.fixture
def parts() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return np.array_split(rng.normal(size=(60, 4)) / 5, 2)


@pytest.mark.filterwarnings("ignore")
def test_an_int_seed_repeats_the_noise_and_a_seed_sequence_draws_fresh_noise_each_fit(parts):
    first, again = (CapePCA(2, random_state=4).fit(parts).components_ for _ in range(2))
    assert np.array_equal(first, again)
    sequence = np.random.SeedSequence(4)
    one = CapePCA(2, random_state=sequence).fit(parts).components_
    two = CapePCA(2, random_state=sequence).fit(parts).components_
    assert np.array_equal(one, first)  # its first children are the int seed's
    assert not np.array_equal(one, two)


@pytest.mark.parametrize("bad", [-1, 1.5, "7", True])
def test_a_bad_seed_is_refused_naming_it(bad):
    with pytest.raises(InputValidationError, match=f"random_state={bad!r} must be None"):
        noise_root(bad)


def test_no_seed_draws_a_fresh_root_each_time():
    assert noise_root(None) != noise_root(None)


def test_the_threads_runner_refuses_bad_input_before_any_party_starts(monkeypatch):
    import mpc_pca.threads as threads
    from mpc_pca.registry import entry

    monkeypatch.setattr(threads, "run_inprocess", lambda *a, **k: pytest.fail("a party started"))
    rng = np.random.default_rng(2)
    good = rng.normal(size=(20, 4)) / 5
    with pytest.raises(InputValidationError, match=r"takes no setting \['epsilon'\]"):
        threads.run_protocol(entry("pppca-ss"), [good, good], {"epsilon": 1.0})
    with pytest.raises(InputValidationError, match="part 1 has 3 features but part 0 has 4"):
        threads.run_protocol(entry("pppca-ss"), [good, good[:, :3]], {"n_components": 2})
    with pytest.raises(InputValidationError, match="n_components=9 is out of range"):
        threads.run_protocol(entry("pppca-ss"), [good, good], {"n_components": 9})
    bad = good.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InputValidationError, match=r"provider1: .*non-finite entry nan at index \(3, 1\)"):
        threads.run_protocol(entry("capepca"), [good, bad], {"n_components": 2})
    with pytest.raises(InputValidationError, match="at least one part"):
        threads.run_protocol(entry("pppca-ss"), [], {"n_components": 2})
