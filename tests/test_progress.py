"""Progress reporting (pyfkm._progress) and its use by the secure rounds."""
import builtins

import numpy as np

from pyfkm import FederatedKMeans, _progress
from pyfkm.secagg import secure_sum_sparse


def test_callable_gets_every_step_with_totals():
    seen = []
    bar = _progress.progress_bar(lambda d, t, s: seen.append((d, t, s)), 3, "x")
    for _ in range(3):
        bar.update()
    bar.close()
    assert seen == [(1, 3, "x"), (2, 3, "x"), (3, 3, "x")]


def test_silent_by_default_and_quiet_for_short_work(capsys, monkeypatch):
    # without tqdm the fallback prints lines, but only for work longer than DELAY
    real_import = builtins.__import__

    def no_tqdm(name, *a, **k):
        if name.startswith("tqdm"):
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    for progress in (False, None, True):
        bar = _progress.progress_bar(progress, 4, "short")
        for _ in range(4):
            bar.update()
        bar.close()
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(_progress, "DELAY", 0.0)
    bar = _progress.progress_bar(True, 4, "long")
    for _ in range(4):
        bar.update()
    err = capsys.readouterr().err
    assert "long: 4/4" in err and err.count("\n") == 4


def test_secure_rounds_and_fits_report_progress():
    calls = []
    secure_sum_sparse([([[0, 1]], [1])] * 5, bins_per_dim=3,
                      progress=lambda d, t, s: calls.append((s, d, t)))
    descs = {s for s, _, _ in calls}
    assert any("key shares" in s for s in descs) and any("masked inputs" in s for s in descs)
    # one step a client, but the decode: one step for the round
    assert all(t == (1 if s.endswith("decode") else 5) for s, _, t in calls)
    assert list(dict.fromkeys(s for s, _, _ in calls)) == [
        "keys", "round 1: key shares", "round 1: share bundles", "round 1: masked inputs",
        "round 1: unmask", "round 1: decode"]
    calls.clear()
    rng = np.random.default_rng(0)
    FederatedKMeans(2, random_state=0, progress=lambda d, t, s: calls.append((s, d, t))).fit(
        [rng.uniform(-0.5, 0.5, (10, 2)) for _ in range(4)])
    assert ("client fits", 4, 4) in calls
    assert any("key shares" in s for s, _, _ in calls)


def test_track_reports_each_item_and_closes_when_the_loop_is_left(monkeypatch):
    seen = []
    out = list(_progress.track(["a", "b"], lambda d, t, s: seen.append((d, t, s)), "letters"))
    assert out == ["a", "b"] and seen == [(1, 2, "letters"), (2, 2, "letters")]
    calls = []

    class Bar:
        def update(self, n=1):
            calls.append("update")

        def close(self):
            calls.append("close")

    monkeypatch.setattr(_progress, "progress_bar", lambda *a: Bar())
    gen = _progress.track(iter(range(10)), True, "x", total=10)
    assert next(gen) == 0 and next(gen) == 1
    gen.close()                         # what leaving a for loop early does
    assert calls == ["update", "close"]
