"""Tests of MSA's distributed noise (pyfkm.secagg.msa._noise): variances within
chi-square bounds, fresh noise every round and segment, keys from the OS,
range checks.  The oracles are described in tests/_helpers/msa.py."""
import os

import numpy as np
import pytest
from scipy.stats import chi2

from pyfkm.core import noise as privacy
from pyfkm.exceptions import CapacityError, InvalidInputError
from pyfkm.secagg.msa import MsaClient, MsaServer, msa_round, setup_msa
from pyfkm.secagg.msa import _client, _noise
from _helpers.msa import RUN, server_bytes, close_round, open_round, send


def setup_with_server(n, n_words, **server_kw):
    """setup_msa with a server built here (to pass ``noise_key``)."""
    run_id = os.urandom(16)
    server = MsaServer(run_id, n_words, **server_kw)
    clients = [MsaClient(i) for i in range(n)]
    for c in clients:
        server.receive_key(c.key_message(run_id))
    roster = server.roster()
    for c in clients:
        c.receive_roster(roster)
    for m in clients[0].group_key_messages():
        server.relay_group_key(m)
    for c in clients[1:]:
        c.receive_group_key(server.group_key_for(c.client_id))
    return server, clients


def test_noise_modes_and_segments_validated():
    with pytest.raises(InvalidInputError, match="noise"):
        MsaServer(RUN, 3, noise="discrete_gaussian")     # distributed: the clients add it
    with pytest.raises(InvalidInputError, match="noise_key"):
        MsaServer(RUN, 3, noise="gaussian", noise_key=b"short")
    server, clients = setup_msa(2, 3, noise="gaussian")
    req = open_round(server, clients)
    for bad in ([(2, 1.0, b"SUM")], [(2, 1.0, b"SUM"), (1, 1.0, b"SUM")],
                [(2, 1.0, b"SUM"), (1, -1.0, b"CNT")], [(2, np.nan, b"SUM"), (1, 1.0, b"C")],
                [(2, 1.0, b""), (1, 1.0, b"CNT")], [(2, 1.0, b"TOOLONG"), (1, 1.0, b"C")]):
        with pytest.raises(InvalidInputError):           # the client's noise share
            clients[0].respond(req, [0.0, 0.0, 0.0], noise=bad)
    for c in clients:
        send(server, c.respond(req, [0.0, 0.0, 0.0]))
    ureq = server.unmask_request()
    for c in clients:
        server.receive_unmask(c.unmask_shares(ureq))
    for bad in ([(2, 1.0, b"SUM")], [(2, 1.0, b"SUM"), (1, 1.0, b"SUM")],
                [(2, 1.0, b"SUM"), (1, -1.0, b"CNT")]):
        with pytest.raises(InvalidInputError):           # the server's baseline noise
            server.finish_round(bad)
    server.finish_round([(2, 1.0, b"SUM"), (1, 1.0, b"CNT")])
    # a server without a noise mode adds none, and says so
    server, clients = setup_msa(2, 3)
    req = open_round(server, clients)
    for c in clients:
        send(server, c.respond(req, [0.0, 0.0, 0.0]))
    ureq = server.unmask_request()
    for c in clients:
        server.receive_unmask(c.unmask_shares(ureq))
    with pytest.raises(InvalidInputError, match="no noise"):
        server.finish_round([(3, 1.0, b"SUM")])
    server.finish_round()


# ------------------------------------------------------------ distributed noise

ALPHA = 1e-6        # false-alarm rate of every variance test below


def chi2_bounds(n):
    return chi2.ppf(ALPHA / 2, n), chi2.ppf(1 - ALPHA / 2, n)


def chi2_power(n, ratio):
    """Probability that the test rejects when the true variance is ``ratio``
    times the hypothesised one."""
    lo, hi = chi2_bounds(n)
    return chi2.cdf(lo / ratio, n) + chi2.sf(hi / ratio, n)


class ShareSpy:
    """Records each client's noise share (int64 fixed-point words) as
    :func:`pyfkm.secagg.msa._noise.client_noise` returns it (patched where
    :meth:`MsaClient.respond` looks it up)."""

    def __init__(self, monkeypatch):
        self.last = None
        orig = _client.client_noise

        def spy(*args, **kwargs):
            out = orig(*args, **kwargs)
            self.last = out.view(np.int64).copy()
            return out

        monkeypatch.setattr(_client, "client_noise", spy)


N_WORDS, N_ROUNDS = 2000, 3      # 6000 noise words per variance test
SEGMENTS = ((1500, 2.0, b"SUM"), (500, 0.5, b"CNT"))
SIGMAS = np.repeat([2.0, 0.5], [1500, 500])


def noisy_rounds(monkeypatch, silent=(), n=6, t=4):
    """``N_ROUNDS`` noisy rounds of dyadic inputs; per round the noise of the
    decoded sum (decoded minus the exact fixed-point sum, in grid units) and
    each survivor's own share."""
    rng = np.random.default_rng()
    spy = ShareSpy(monkeypatch)
    server, clients = setup_msa(n, N_WORDS, threshold=t)
    out = []
    for _ in range(N_ROUNDS):
        ints = [rng.integers(-2 ** 30, 2 ** 30, N_WORDS) for _ in clients]
        req = open_round(server, clients)
        shares = {}
        for c, k in zip(clients, ints):
            if c.client_id in silent:
                continue
            send(server, c.respond(req, np.ldexp(k.astype(np.float64), -16), noise=SEGMENTS))
            shares[c.client_id] = spy.last
        agg = close_round(server, clients)
        exact = sum(k for i, k in enumerate(ints) if i not in silent)
        dec = np.ldexp(clients[0].unmask(agg), 16)
        assert np.array_equal(dec, np.rint(dec))             # on the grid
        out.append((dec.astype(np.int64) - exact, shares))
    return out


@pytest.mark.statistical
@pytest.mark.parametrize("colluders", [0, 1])
@pytest.mark.parametrize("silent", [(), (5,)])
def test_distributed_noise_variance(monkeypatch, silent, colluders):
    # n = 6, t = 4.  Each survivor adds discrete Gaussian noise of variance
    # sigma**2 / t, so the decoded sum carries sigma**2 m / t (m survivors);
    # a server colluding with client 0, which knows its own share, removes
    # that share and is left with sigma**2 (m - 1) / t.  Test: the sum of
    # squared normalised noise over 6000 words against chi2(6000), two-sided
    # at ALPHA = 1e-6; power >= 0.999 against one share too many or too few
    # (variance ratios (k +- 1) / k, k = shares left), asserted below.
    n, t = 6, 4
    m = n - len(silent)
    k = m - colluders
    z = []
    for noise, shares in noisy_rounds(monkeypatch, silent, n, t):
        assert sorted(shares) == [i for i in range(n) if i not in silent]
        assert np.array_equal(sum(shares.values()), noise)    # the shares make the noise
        left = noise - (shares[0] if colluders else 0)
        z.append(left / (np.ldexp(SIGMAS, 16) * np.sqrt(k / t)))
    z = np.concatenate(z)
    lo, hi = chi2_bounds(z.size)
    assert lo < float((z * z).sum()) < hi
    assert abs(z.mean()) < 5.0 / np.sqrt(z.size)
    assert min(chi2_power(z.size, (k - 1) / k), chi2_power(z.size, (k + 1) / k)) > 0.999


def test_noise_is_fresh_every_round_and_segment(monkeypatch):
    (a, sa), (b, sb), (c, _) = noisy_rounds(monkeypatch, n=3, t=2)
    assert not np.array_equal(a, b) and not np.array_equal(b, c)
    assert not np.array_equal(sa[0], sb[0])                  # one client, two rounds
    assert not np.array_equal(sa[0], sa[1])                  # two clients, one round
    assert not np.array_equal(a[:500], a[1500:])             # SUM and CNT streams


def test_client_noise_key_comes_from_the_os_and_never_leaves(monkeypatch):
    # every noise share is keyed by a fresh 32-byte OS key, never the same twice
    keys = []

    def new_noise_key(*args):
        assert not args                  # None: the OS, never a seed
        keys.append(privacy.new_noise_key())
        return keys[-1]

    monkeypatch.setattr(_noise, "new_noise_key", new_noise_key)
    server, clients = setup_msa(3, 4)
    for _ in range(2):
        msa_round(server, clients, [np.zeros(4)] * 3, noise=((4, 1.0, b"SUM"),))
    assert len(keys) == 6 and len(set(keys)) == 6 and all(len(k) == 32 for k in keys)
    assert server._noise_key is None
    held = server_bytes(server)
    assert not any(k in h for k in keys for h in held)


# ------------------------------------------------------------ server noise (baselines)

def _noisy_round(sigma, n=4000, mode="gaussian", rounds=1, noise_key=None):
    server, (a, b) = setup_with_server(2, n + 10, noise=mode, noise_key=noise_key)
    outs = []
    for _ in range(rounds):
        req = open_round(server, (a, b))
        for c in (a, b):
            send(server, c.respond(req, np.zeros(n + 10)))
        outs.append(a.unmask(close_round(server, (a, b),
                                         [(n, sigma, b"SUM"), (10, sigma, b"CNT")])))
    return outs


def _client_noise_round(sigma, n=4000):
    server, clients = setup_msa(2, n + 10)              # threshold 2: each adds sigma**2 / 2
    out, _ = msa_round(server, clients, [np.zeros(n + 10)] * 2,
                       noise=[(n, sigma, b"SUM"), (10, sigma, b"CNT")])
    return out


@pytest.mark.parametrize("mode", ["gaussian", "discrete_gaussian"])
def test_noise_scale_and_grid(mode):
    v = _noisy_round(2.0)[0] if mode == "gaussian" else _client_noise_round(2.0)
    s = v[:4000]
    # sample sd of 4000 N(0, 4): sd of the estimate ~ 2/sqrt(8000) = 0.022; 0.2 is 9 sd
    assert abs(s.std() - 2.0) < 0.2 and abs(s.mean()) < 0.2
    assert np.array_equal(np.ldexp(v, 16), np.rint(np.ldexp(v, 16)))    # on the grid


def test_server_noise_follows_its_key_and_is_fresh_each_round():
    key = bytes(range(50, 82))
    a1, a2 = _noisy_round(1.0, n=100, rounds=2, noise_key=key)
    b1, b2 = _noisy_round(1.0, n=100, rounds=2, noise_key=key)      # another run, same key
    c1, _ = _noisy_round(1.0, n=100, rounds=2)                      # an OS key
    assert np.array_equal(a1, b1) and np.array_equal(a2, b2)
    assert not np.array_equal(a1, a2)
    assert not np.array_equal(a1, c1)
    # sum and count segments use different streams
    assert not np.array_equal(a1[:10], a1[100:110])


def test_laplace_noise_scale():
    (v,) = _noisy_round(1.5, mode="laplace")
    # Laplace(b): E|X| = b; sd of the mean of 4000 |X| is b/sqrt(4000) = 0.024
    assert abs(np.abs(v[:4000]).mean() - 1.5) < 0.2


def test_discrete_sigma_range_checked_before_the_input_is_sent():
    server, (a, b) = setup_msa(2, 3)
    req = open_round(server, (a, b))
    # sigma / sqrt(t) = 2**15 / sqrt(2) real units is 2**30.5 grid units
    with pytest.raises(CapacityError, match="discrete Gaussian"):
        a.respond(req, [1.0, 2.0, 3.0], noise=[(2, 2.0 ** 15, b"SUM"), (1, 1.0, b"CNT")])
    seg = [(2, 1e-3, b"SUM"), (1, 1e-3, b"CNT")]
    for c in (a, b):
        send(server, c.respond(req, [1.0, 2.0, 3.0], noise=seg))
    out = a.unmask(close_round(server, (a, b)))
    assert np.allclose(out, [2.0, 4.0, 6.0], atol=0.05)


def test_noise_sample_of_exactly_2_62_is_refused(monkeypatch):
    # |clients' sum| <= 2**62 and |noise| <= 2**62 could reach 2**63 and wrap
    # (found by review): the server refuses noise samples of magnitude 2**62
    server, clients = setup_msa(1, 1, noise="laplace")
    monkeypatch.setattr(privacy.NoiseStream, "laplace",
                        lambda self, n, scale: np.full(n, 2.0 ** 46))
    req = open_round(server, clients)
    send(server, clients[0].respond(req, [2.0 ** 45]))   # a share's limit: 2**62 / 2
    ureq = server.unmask_request()
    server.receive_unmask(clients[0].unmask_shares(ureq))
    with pytest.raises(CapacityError, match="2\\*\\*62"):
        server.finish_round(((1, 1.0, b"SUM"),))


def test_client_noise_sample_beyond_a_share_is_refused(monkeypatch):
    # a client's noise share is held to the same capacity as its input
    # (samples of 2**61 drawn by a stand-in for the kernel, which checks
    # them against the limit the client passes, as the kernel does)
    server, clients = setup_msa(2, 2)
    ring = _noise._kernels.noise

    def huge(acc, key, nonces, lengths, P, Q, limit):
        return ring.RING_ELIMIT if 1 << 61 >= limit else 0

    monkeypatch.setattr(ring, "ring_add_dgauss", huge)
    req = open_round(server, clients)
    with pytest.raises(CapacityError, match="capacity"):
        clients[0].respond(req, [0.0, 0.0], noise=((2, 1.0, b"SUM"),))
    monkeypatch.undo()
    for c in clients:                                    # unchanged: answers the round
        send(server, c.respond(req, [1.0, 0.0], noise=((2, 1e-3, b"SUM"),)))
    assert np.allclose(clients[0].unmask(close_round(server, clients)), [2.0, 0.0], atol=0.05)
