"""DPFederatedKMeans shares the keys of its fixed rounds in one key batch
(docs/threat_model.md); FederatedLloyd, which may stop early, shares them
round by round.  Oracle: counting the clients' calls."""
import numpy as np

from pyfkm.dp import DPFederatedKMeans, FederatedLloyd
from pyfkm.secagg.msa import MsaClient


def _count(monkeypatch):
    calls = {"share_keys": 0, "share_key_batch": []}
    share_keys, share_batch = MsaClient.share_keys, MsaClient.share_key_batch

    def sk(self, *a, **k):
        calls["share_keys"] += 1
        return share_keys(self, *a, **k)

    def sb(self, rm, count):
        calls["share_key_batch"].append(count)
        return share_batch(self, rm, count)

    monkeypatch.setattr(MsaClient, "share_keys", sk)
    monkeypatch.setattr(MsaClient, "share_key_batch", sb)
    return calls


def _clients(seed=0):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(0, 0.3, (600, 2)), -1, 1)
    return np.array_split(X, 3)


def test_dp_fit_shares_every_rounds_keys_in_one_batch(monkeypatch):
    calls = _count(monkeypatch)
    m = DPFederatedKMeans(3, epsilon=1.0, max_iter=5, random_state=0).fit(_clients())
    assert m.n_iter_ == 5
    assert calls == {"share_keys": 0, "share_key_batch": [5, 5, 5]}


def test_federated_lloyd_shares_keys_round_by_round(monkeypatch):
    calls = _count(monkeypatch)
    m = FederatedLloyd(3, max_iter=4, random_state=0).fit(_clients())
    assert calls["share_key_batch"] == [] and calls["share_keys"] == 3 * m.n_iter_
