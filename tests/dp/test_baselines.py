"""The DP baselines GLloyd and SuLloyd (pyfkm.dp.baselines): parameter checks,
budgets and noise scales by their formulas."""
import math

import pytest

from pyfkm.exceptions import InvalidInputError
from pyfkm.dp.baselines import GLloyd, SuLloyd
from pyfkm.dp.estimator import FederatedLloyd
from _helpers.dp import blobs, split


@pytest.mark.parametrize("cls,kw", [(GLloyd, {"epsilon": 0}), (SuLloyd, {"epsilon": math.inf}),
                                    (FederatedLloyd, {"max_iter": "auto"})])
def test_baselines_bad_parameters(cls, kw):
    with pytest.raises(InvalidInputError):
        cls(2, **kw).fit(split(blobs()))


def test_baseline_budgets():
    X = blobs(14, n=300)
    su = SuLloyd(3, epsilon=0.5, random_state=0).fit(split(X))
    assert su.privacy_["epsilon"] == pytest.approx(0.5) and 2 <= su.n_iter_ <= 7
    g = GLloyd(3, epsilon=0.5, random_state=0).fit(split(X))
    assert g.accountant_.spent()[0] == pytest.approx(0.5, rel=1e-6)


def test_baseline_noise_scales_follow_their_formulas(monkeypatch):
    # capture the per-round noise segments the server is asked for and
    # compare with the baselines' formulas written out here (rho = 0.225)
    import pyfkm.secagg.msa as M
    from pyfkm.dp import calibrate_analytic_gaussian
    seen = []
    orig = M.MsaServer.finish_round

    def finish(self, segments=()):
        seen.append(tuple(segments))
        return orig(self, segments)

    monkeypatch.setattr(M.MsaServer, "finish_round", finish)
    X = blobs(18, n=500, d=3, k=2)
    n, d, k, rho, eps = 500, 3, 2, 0.225, 0.7
    su = SuLloyd(k, epsilon=eps, random_state=0).fit(split(X))
    T = su.n_iter_
    c = (4 * d * rho ** 2) ** (1 / 3)
    want_T = int(min(max(eps / math.sqrt(500 * k ** 3 / n ** 2 * (d + c) ** 3), 2), 7))
    assert T == want_T
    (sum_seg, cnt_seg) = seen[0]
    eps_it = eps / T
    assert sum_seg[1] == pytest.approx(d * (1 + 2.0 ** -16) / (eps_it * d / (d + c)))
    assert cnt_seg[1] == pytest.approx(1 / (eps_it * c / (d + c)))
    seen.clear()
    g = GLloyd(k, epsilon=eps, max_iter=3, random_state=0).fit(split(X))
    s = calibrate_analytic_gaussian(eps, 1 / (n * math.log(n))) * math.sqrt(3)
    (sum_seg, cnt_seg) = seen[0]
    base = math.sqrt(2 * rho + math.sqrt(d))
    assert sum_seg[1] == pytest.approx(s * base / d ** 0.25 * math.sqrt(d) * (1 + 2.0 ** -16))
    assert cnt_seg[1] == pytest.approx(s * base / math.sqrt(2 * rho))
    assert g.n_iter_ == 3 and len(seen) == 3
