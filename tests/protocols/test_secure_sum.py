import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats

from protocols import AdditiveBackend, FixedPointCodec, Party, secure_sum
from protocols.agreement import settings_message
from protocols.backends import make_backend
from protocols.errors import InputValidationError, ProtocolError, RingOverflowError
from protocols.secure_sum import run_secure_sum
from protocols.transport.inprocess import InProcessNetwork
from tests.helpers.oracles import ring_sum_reference

MODES = ["shares", "masks"]
values_strategy = st.integers(1, 8).flatmap(
    lambda m: hnp.array_shapes(min_dims=1, max_dims=2, max_side=6).flatmap(
        lambda shape: st.lists(
            hnp.arrays(np.float64, shape, elements=st.floats(-1e6, 1e6, allow_nan=False)),
            min_size=m,
            max_size=m,
        )
    )
)


@pytest.mark.parametrize("mode", MODES)
@given(values=values_strategy)
def test_secure_sum_equals_plain_sum(mode, values):
    codec = FixedPointCodec(20)
    inputs = {f"p{i}": v for i, v in enumerate(values)}
    total, _ = run_secure_sum(inputs, receiver="server", backend=AdditiveBackend(mode, codec))
    m = len(values)
    plain = np.sum(values, axis=0)
    bound = m * 2.0**-21 + np.abs(plain) * 2.0**-50
    assert total.shape == plain.shape
    assert np.all(np.abs(total - plain) <= bound)
    # and it is exactly the decoded ring sum of the encodings
    assert np.array_equal(total, ring_sum_reference(values, codec))


@given(values=values_strategy)
def test_modes_agree_exactly(values):
    inputs = {f"p{i}": v for i, v in enumerate(values)}
    shares, _ = run_secure_sum(inputs, receiver="server", backend=AdditiveBackend("shares"))
    masks, _ = run_secure_sum(inputs, receiver="server", backend=AdditiveBackend("masks"))
    assert np.array_equal(shares, masks)


@pytest.mark.parametrize("mode", MODES)
def test_receiver_may_contribute_and_only_it_gets_the_sum(mode):
    inputs = {"a": np.ones(3), "b": 2 * np.ones(3), "c": 3 * np.ones(3)}
    total, run = run_secure_sum(inputs, receiver="b", backend=AdditiveBackend(mode))
    assert np.allclose(total, 6.0)
    assert run.outputs["a"] is None and run.outputs["c"] is None
    assert set(run.reports) == {"a", "b", "c"}


@pytest.mark.parametrize("mode", MODES)
def test_traffic_matches_the_mode(mode):
    m, d = 4, 50
    inputs = {f"p{i}": np.ones(d) for i in range(m)}
    _, run = run_secure_sum(inputs, receiver="server", backend=AdditiveBackend(mode))
    provider = run.reports["p0"]
    if mode == "shares":
        # M - 1 shares to peers + 1 partial sum to the server
        assert provider.messages_sent == m
    else:
        # one public key + one masked array
        assert provider.messages_sent == 2
    # shares: one partial sum per provider; masks: a public key and a masked array each
    expected_at_server = m if mode == "shares" else 2 * m
    assert run.reports["server"].messages_received == expected_at_server


def _run_with_recording_server(backend, values: dict[str, np.ndarray], n_sums: int = 1):
    """Run ``n_sums`` secure sums to ``server``; return its results and every array it received."""
    contributors = list(values)
    network = InProcessNetwork([*contributors, "server"], timeout=10)
    received: list[np.ndarray] = []
    results: list[np.ndarray] = []

    class Recording(type(network.channel("server"))):
        def recv(self, frm, timeout=None):
            message = super().recv(frm, timeout)
            if isinstance(message, np.ndarray):
                received.append(message)
            return message

    def provider(name):
        party = Party(name, network.channel(name))
        for _ in range(n_sums):
            secure_sum(party, values[name], contributors=contributors, receiver="server", backend=backend)

    def server():
        party = Party("server", Recording(network, "server"))
        for _ in range(n_sums):
            results.append(
                secure_sum(party, None, contributors=contributors, receiver="server", backend=backend)
            )

    threads = [threading.Thread(target=provider, args=(n,)) for n in contributors]
    threads.append(threading.Thread(target=server))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, received


def test_repeated_sums_in_masks_mode_use_fresh_masks():
    """Two sums in one run reuse the agreed keys but must not reuse mask streams."""
    results, received = _run_with_recording_server(
        AdditiveBackend("masks"), {"p0": np.zeros(64), "p1": np.zeros(64)}, n_sums=2
    )
    assert len(results) == 2 and all(np.array_equal(s, np.zeros(64)) for s in results)
    first, second = received[0], received[2]  # p0's masked array in sum 1 and sum 2
    assert not np.array_equal(first, second)


def _server_view(mode: str, value: float, m: int = 3, size: int = 4000) -> list[np.ndarray]:
    """Every array the server receives while summing ``m`` copies of ``value``."""
    values = {f"p{i}": np.full(size, value) for i in range(m)}
    _, received = _run_with_recording_server(AdditiveBackend(mode), values)
    return received


def _bit_chi_square_pvalue(words: np.ndarray) -> float:
    """Chi-square test that each of the 64 bit positions is 1 half the time."""
    bits = np.unpackbits(words.astype("<u8").view(np.uint8)).reshape(-1, 64)
    ones = bits.sum(axis=0)
    n = bits.shape[0]
    statistic = np.sum((2 * ones - n) ** 2 / n)
    return float(stats.chi2.sf(statistic, df=64))


# Shares and masks come from the OS-seeded CSPRNG and cannot be seeded, so
# these tests use a tiny significance level: a false alarm happens with
# probability 1e-6 per test, while a leak of the input fails by many orders.
ALPHA_CSPRNG = 1e-6


@pytest.mark.parametrize("mode", MODES)
def test_server_view_is_uniform_and_independent_of_inputs(mode):
    view_zero = _server_view(mode, 0.0)
    view_big = _server_view(mode, 12345.678)
    assert len(view_zero) == len(view_big) == 3
    for a, b in zip(view_zero, view_big, strict=True):
        assert _bit_chi_square_pvalue(a) > ALPHA_CSPRNG
        assert _bit_chi_square_pvalue(b) > ALPHA_CSPRNG
        # same distribution whatever the input: two-sample KS on the top 32 bits
        ks = stats.ks_2samp(a >> np.uint64(32), b >> np.uint64(32))
        assert ks.pvalue > ALPHA_CSPRNG


def test_uniformity_test_would_catch_a_leak():
    """The bit test used above rejects an unmasked encoding (so it can fail)."""
    leaked = FixedPointCodec().encode(np.full(4000, 12345.678))
    assert _bit_chi_square_pvalue(leaked) < ALPHA_CSPRNG


@pytest.mark.parametrize("mode", MODES)
def test_bad_inputs_rejected_before_anything_is_sent(mode):
    backend = AdditiveBackend(mode)
    with pytest.raises(InputValidationError, match="non-finite"):
        run_secure_sum({"a": np.array([1.0, np.nan]), "b": np.ones(2)}, receiver="s", backend=backend)
    with pytest.raises(RingOverflowError, match="below"):
        run_secure_sum({"a": np.array([5e12]), "b": np.ones(1)}, receiver="s", backend=backend)
    with pytest.raises(InputValidationError, match="same shape"):
        run_secure_sum({"a": np.ones(2), "b": np.ones(3)}, receiver="s", backend=backend)


def test_a_contributor_with_bad_data_stops_before_sending():
    backend = AdditiveBackend()
    network = InProcessNetwork(["a", "s"], timeout=5)
    party = Party("a", network.channel("a"))
    with pytest.raises(InputValidationError):
        secure_sum(party, np.array([np.inf]), contributors=["a"], receiver="s", backend=backend)
    assert party.channel.meter.bytes_sent == 0


def test_wrongly_shaped_partial_sum_is_a_protocol_error():
    backend = AdditiveBackend()
    network = InProcessNetwork(["a", "b", "s"], timeout=5)
    errors = []

    def honest():
        try:
            secure_sum(
                Party("a", network.channel("a")),
                np.ones(4),
                contributors=["a", "b"],
                receiver="s",
                backend=backend,
            )
        except Exception as exc:
            errors.append(exc)

    def faulty():
        party = Party("b", network.channel("b"))
        party.send("s", settings_message(backend))  # the settings agreement
        party.send("a", bytes(32))  # a share seed
        party.recv("a")
        party.send("s", np.zeros(5, dtype=np.uint64))  # wrong shape

    threads = [threading.Thread(target=honest), threading.Thread(target=faulty)]
    for t in threads:
        t.start()
    with pytest.raises(ProtocolError, match="shape"):
        secure_sum(
            Party("s", network.channel("s")), None, contributors=["a", "b"], receiver="s", backend=backend
        )
    for t in threads:
        t.join()


def test_membership_and_argument_errors():
    backend = AdditiveBackend()
    network = InProcessNetwork(["a", "x", "s"], timeout=1)
    with pytest.raises(InputValidationError, match="neither a contributor"):
        secure_sum(Party("x", network.channel("x")), None, contributors=["a"], receiver="s", backend=backend)
    with pytest.raises(InputValidationError, match="must pass an array"):
        secure_sum(Party("a", network.channel("a")), None, contributors=["a"], receiver="s", backend=backend)
    with pytest.raises(InputValidationError, match="distinct"):
        secure_sum(
            Party("a", network.channel("a")),
            np.ones(1),
            contributors=["a", "a"],
            receiver="s",
            backend=backend,
        )
    with pytest.raises(InputValidationError, match="unknown additive mode"):
        AdditiveBackend("xor")
    with pytest.raises(InputValidationError, match="unknown backend 'nope'"):
        make_backend("nope")


@given(st.integers(1, 12), st.integers(1, 5), st.sampled_from(MODES))
def test_symmetric_sum_sends_a_triangle_and_returns_the_full_matrix(d, m, mode):
    from protocols.secure_sum import secure_sum_symmetric
    from protocols.triangle import from_upper_triangle, upper_triangle

    rng = np.random.default_rng(d * 31 + m)
    mats = {}
    for i in range(m):
        x = rng.normal(size=(4, d))
        mats[f"p{i}"] = x.T @ x
    assert np.array_equal(from_upper_triangle(upper_triangle(mats["p0"])), mats["p0"])
    backend = AdditiveBackend(mode)
    contributors = list(mats)

    def role(name):
        return lambda party: secure_sum_symmetric(
            party, mats.get(name), contributors=contributors, receiver="server", backend=backend
        )

    from protocols.runtime import run_inprocess

    run = run_inprocess({name: role(name) for name in [*contributors, "server"]})
    total = run.outputs["server"]
    assert np.array_equal(total, total.T)
    assert np.allclose(total, sum(mats.values()), atol=m * 2.0**-20)
    # only the d(d+1)/2 triangle crossed the wire: each message holds that many ring words
    partial = 8 * d * (d + 1) // 2
    assert run.reports["server"].bytes_received >= m * partial
    assert run.reports["server"].bytes_received < m * (partial + 200) + (0 if mode == "shares" else m * 200)


def test_triangle_helpers_reject_bad_shapes():
    from protocols.triangle import from_upper_triangle, upper_triangle

    with pytest.raises(InputValidationError, match="square"):
        upper_triangle(np.ones((2, 3)))
    with pytest.raises(InputValidationError, match="not d\\(d\\+1\\)/2"):
        from_upper_triangle(np.ones(5))


@pytest.mark.parametrize("mode", MODES)
def test_parties_may_list_the_contributors_in_any_order(mode):
    """Each party's list order differs; the sum must not (mask signs follow names, not lists)."""
    backend = AdditiveBackend(mode)
    orders = {"a": ["a", "b", "c"], "b": ["c", "b", "a"], "c": ["b", "a", "c"], "s": ["c", "a", "b"]}
    values = {"a": np.array([1.0, -2.0]), "b": np.array([0.5, 0.25]), "c": np.array([3.0, 4.0])}
    from protocols.runtime import run_inprocess

    roles = {
        name: (
            lambda party, name=name: secure_sum(
                party, values.get(name), contributors=orders[name], receiver="s", backend=backend
            )
        )
        for name in orders
    }
    total = run_inprocess(roles, timeout=10).outputs["s"]
    assert np.allclose(total, [4.5, 2.25], atol=1e-6)


def test_scalar_values_can_be_summed():
    for mode in MODES:
        total, _ = run_secure_sum({"a": 1.5, "b": -0.25}, receiver="s", backend=AdditiveBackend(mode))
        assert total.shape == () and float(total) == pytest.approx(1.25, abs=1e-6)


@pytest.mark.parametrize("attack", ["substitute", "swap"])
def test_masks_mode_catches_a_relay_that_tampers_with_public_keys(attack):
    """A malicious relay replaces p1's X25519 key by its own, or swaps p0's and p1's signed entries."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    from protocols.runtime import run_inprocess

    backend = AdditiveBackend("masks")
    contributors = ["p0", "p1", "p2"]

    def provider(party):
        return secure_sum(party, np.ones(4), contributors=contributors, receiver="server", backend=backend)

    def relay(party):
        for c in contributors:  # the settings agreement
            party.recv(c)
        publics = {c: party.recv(c) for c in contributors}
        if attack == "substitute":
            mine = X25519PrivateKey.generate().public_key()
            raw = mine.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            publics["p1"] = {"key": raw, "sig": party.channel.identity.sign(raw)}
        else:
            publics["p0"], publics["p1"] = publics["p1"], publics["p0"]
        for c in contributors:
            party.send(c, publics)
        return [party.recv(c) for c in contributors]

    roles = {c: provider for c in contributors}
    roles["server"] = relay
    with pytest.raises(ProtocolError, match="relayed by 'server' does not carry") as info:
        run_inprocess(roles, timeout=5)
    assert "'p1'" in str(info.value) or "'p0'" in str(info.value)
