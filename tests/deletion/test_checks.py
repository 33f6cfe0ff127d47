"""Tampered pickles of QKMeans and DCKMeans are refused field by field
(pyfkm.deletion._checks)."""
import copy
import dataclasses
import functools
import pickle

import numpy as np
import pytest

from pyfkm.deletion import _common, _dctree
from pyfkm.deletion import DCKMeans, QKMeans
from pyfkm.exceptions import ModelFileError, NotFittedError
from _helpers.state import assert_same_state
from _helpers.deletion import q_certified_ids


# ------------------------------------------- issue 18: pickles are data from outside

@functools.cache
def _tamper_models():
    """Fitted models to tamper with (copies only): QKMeans fresh and after
    certified deletions (dead rows), DCKMeans with greedy race traces (the
    bounds)."""
    X = np.random.default_rng(0).normal(size=(200, 3))
    X[:100] += 5
    q = QKMeans(2, epsilon=1.0, random_state=0).fit(X)
    qd = QKMeans(2, epsilon=1.0, random_state=0).fit(X)
    for i in q_certified_ids(qd, 3):
        assert qd.remove([i]).reason == ""
    dc = DCKMeans(2, n_leaves=4, random_state=0).fit(X)
    assert dc._state.n_trials > 1 and any(dc._state.traces)
    return {"q": q, "qd": qd, "dc": dc}


def _set_p(s, **changes):
    s.p = dataclasses.replace(s.p, **changes)


def _first_trace(st):
    return next(tr for tr in st.traces if tr)[0]


def _first_leaf(st):
    return next(j for j in range(st.L) if st.X[j].shape[0] > 1)


def _drop_leaf_row(st):
    j = _first_leaf(st)
    st.X[j], st.rows[j], st.sids[j] = st.X[j][:-1].copy(), st.rows[j][:-1].copy(), \
        st.sids[j][:-1].copy()


# name -> (model, tampering of the state, field named by the error)
TAMPER = {
    # the reviewer's cases (/tmp/review2/tamper.py)
    "q phases wrong width": ("q", lambda s: _set_p(s, phases=np.ascontiguousarray(
        s.p.phases[:, :1])), "p.phases"),
    "q phases fewer rows": ("q", lambda s: _set_p(s, phases=s.p.phases[:1].copy()), "p.phases"),
    "q eps nan": ("q", lambda s: setattr(s, "eps", float("nan")), "eps"),
    "q p.epsilon = -1": ("q", lambda s: _set_p(s, epsilon=-1.0), "p.epsilon"),
    "q labels out of range": ("q", lambda s: s.labels.__setitem__((slice(None), 7), 99),
                              "labels"),
    "q labels negative": ("q", lambda s: s.labels.__setitem__((slice(None), 7), -5), "labels"),
    "q seeds out of range": ("q", lambda s: setattr(s, "seeds", s.seeds + 10 ** 6), "seeds"),
    "q n_iter too big": ("q", lambda s: setattr(s, "n_iter", 99), "n_iter"),
    "q X float32": ("q", lambda s: setattr(s, "X", s.X.astype(np.float32)), "X"),
    "q X nan": ("q", lambda s: s.X.__setitem__(5, np.nan), "X"),
    "q alive short": ("q", lambda s: setattr(s, "alive", s.alive[:10].copy()), "alive"),
    "q p.k = 500": ("q", lambda s: _set_p(s, k=500), "n_alive"),
    "dc trace cand out of range": ("dc", lambda s: setattr(_first_trace(s), "cand",
                                                           _first_trace(s).cand + 10 ** 6),
                                   "cand"),
    "dc trace seeds out of range": ("dc", lambda s: setattr(_first_trace(s), "seeds",
                                                            _first_trace(s).seeds + 10 ** 6),
                                    "seeds"),
    "dc w = 0": ("dc", lambda s: setattr(s, "w", 0), "w"),
    "dc leaf out of range": ("dc", lambda s: s.leaf.__setitem__(3, 99), "leaf"),
    "dc rows unsorted": ("dc", lambda s: s.rows.__setitem__(0, s.rows[0][::-1].copy()),
                         "rows[0]"),
    "dc X leaf float32": ("dc", lambda s: s.X.__setitem__(0, s.X[0].astype(np.float32)),
                          "X[0]"),
    "dc levels mass short": ("dc", lambda s: s.levels[0].__setitem__(
        1, (s.levels[0][1][0], s.levels[0][1][1][:1].copy())), "levels[0][1]"),
    "dc keys short": ("dc", lambda s: setattr(s, "keys", [[1]]), "keys"),
    # more of QKMeans
    "q p not a _QParams": ("q", lambda s: setattr(s, "p", dict(vars(s.p))), "p"),
    "q p.gamma = 2": ("q", lambda s: _set_p(s, gamma=2.0), "p.gamma"),
    "q p.key negative": ("q", lambda s: _set_p(s, key=-1), "p.key"),
    "q p.k numpy int": ("q", lambda s: _set_p(s, k=np.int64(2)), "p.k"),
    "q phases out of range": ("q", lambda s: s.p.phases.__setitem__((0, 0), 0.75), "p.phases"),
    "q eps not the parameters'": ("q", lambda s: setattr(s, "eps", 2 * s.eps), "eps"),
    "q X Fortran order": ("q", lambda s: setattr(s, "X", np.asfortranarray(s.X)), "X"),
    "q X a subclass": ("q", lambda s: setattr(s, "X", s.X.view(np.ma.MaskedArray)), "X"),
    "q ids negative": ("q", lambda s: s.ids.__setitem__(0, -1), "ids"),
    "q ids_sorted unsorted": ("q", lambda s: setattr(s, "ids_sorted", s.ids_sorted[::-1].copy()),
                              "ids_sorted"),
    "q order out of range": ("q", lambda s: s.order.__setitem__(0, 10 ** 6), "order"),
    "q order not a permutation": ("q", lambda s: s.order.__setitem__(1, s.order[0]), "order"),
    "q alive int": ("q", lambda s: setattr(s, "alive", s.alive.astype(np.int8)), "alive"),
    "q n_alive wrong": ("q", lambda s: setattr(s, "n_alive", s.n_alive - 1), "n_alive"),
    "q n_alive a float": ("q", lambda s: setattr(s, "n_alive", float(s.n_alive)), "n_alive"),
    "q seeds repeated": ("q", lambda s: s.seeds.__setitem__(1, s.seeds[0]), "seeds"),
    "q seed_ids wrong": ("q", lambda s: s.seed_ids.__setitem__(0, s.seed_ids[0] + 1),
                         "seed_ids"),
    "q n_run too big": ("q", lambda s: setattr(s, "n_run", s.p.max_iter + 1), "n_run"),
    "q C wrong shape": ("q", lambda s: setattr(s, "C", s.C[:, :1].copy()), "C"),
    "q C[0] not the seeds": ("q", lambda s: s.C.__setitem__((0, 0, 0), 1e3), "C"),
    "q cells float": ("q", lambda s: setattr(s, "cells", s.cells.astype(np.float64)), "cells"),
    "q counts not the labels'": ("q", lambda s: s.counts.__setitem__((0, 0), s.counts[0, 0] + 1),
                                 "counts"),
    "q labels int64": ("q", lambda s: setattr(s, "labels", s.labels.astype(np.int64)), "labels"),
    "q mind negative": ("q", lambda s: s.mind.__setitem__((0, 3), -1.0), "mind"),
    "q maxmind": ("q", lambda s: s.maxmind.__setitem__(0, 2 * s.maxmind[0]), "maxmind"),
    "q maxabs": ("q", lambda s: setattr(s, "maxabs", s.maxabs / 2), "maxabs"),
    "q quantum": ("q", lambda s: setattr(s, "quantum", s.quantum / 2), "quantum"),
    "q loss_quantum": ("q", lambda s: setattr(s, "loss_quantum", s.loss_quantum * 2),
                       "loss_quantum"),
    "qd sums off the grid": ("qd", lambda s: s.sums.__setitem__((0, 0, 0), s.sums[0, 0, 0] +
                                                                s.quantum[0] / 3), "sums"),
    "qd loss off the grid": ("qd", lambda s: s.loss.__setitem__(0, s.loss[0] +
                                                                s.loss_quantum[0] / 3), "loss"),
    "qd loss without sums": ("qd", lambda s: setattr(s, "loss", None), "loss"),
    "q inertia nan": ("q", lambda s: setattr(s, "inertia", float("nan")), "inertia"),
    "q missing field": ("q", lambda s: delattr(s, "maxabs"), "maxabs"),
    "q unexpected field": ("q", lambda s: setattr(s, "sum_err", [0.0]), "_state"),
    "q a DC state": ("q", lambda s: setattr(s, "__class__", _dctree._DCState), "_state"),
    "qd deleted row not erased": ("qd", lambda s: s.X.__setitem__(~s.alive, 1.0), "X"),
    "qd deleted label not -1": ("qd", lambda s: s.labels.__setitem__((0, ~s.alive), 0),
                                "labels"),
    "qd deleted distance not 0": ("qd", lambda s: s.mind.__setitem__((0, ~s.alive), 1.0),
                                  "mind"),
    "qd a seed deleted": ("qd", lambda s: s.seeds.__setitem__(0, np.flatnonzero(~s.alive)[0]),
                          "seeds"),
    # more of DCKMeans
    "dc k = 0": ("dc", lambda s: setattr(s, "k", 0), "k"),
    "dc L not a power of two": ("dc", lambda s: setattr(s, "L", 3), "L"),
    "dc w**h != L": ("dc", lambda s: setattr(s, "w", 3), "w"),
    "dc h = 0": ("dc", lambda s: setattr(s, "h", 0), "h"),
    "dc n_trials = 0": ("dc", lambda s: setattr(s, "n_trials", 0), "n_trials"),
    "dc X empty list": ("dc", lambda s: setattr(s, "X", []), "X"),
    "dc X a tuple": ("dc", lambda s: setattr(s, "X", tuple(s.X)), "X"),
    "dc a leaf row missing": ("dc", _drop_leaf_row, "rows"),
    "dc sids wrong": ("dc", lambda s: s.sids[_first_leaf(s)].__setitem__(0, -7),
                      "sids["),
    "dc a leaf row dead": ("dc", lambda s: (s.alive.__setitem__(s.rows[_first_leaf(s)][0],
                                                                False),
                                            setattr(s, "n_alive", s.n_alive - 1)), "rows["),
    "dc keys wrong": ("dc", lambda s: s.keys[0].__setitem__(0, s.keys[0][0] + 1), "keys[0]"),
    "dc trace pick out of range": ("dc", lambda s: setattr(_first_trace(s), "pick",
                                                           _first_trace(s).pick + 99), "pick"),
    "dc trace lo infinite": ("dc", lambda s: _first_trace(s).lo.__setitem__((1, 0), -np.inf),
                             ".lo"),
    "dc trace without bounds": ("dc", lambda s: delattr(_first_trace(s), "lo"), ".lo"),
    "dc trace not a _RaceTrace": ("dc", lambda s: next(tr for tr in s.traces if tr).__setitem__(
        0, "trace"), "traces["),
    "dc node not a pair": ("dc", lambda s: s.levels[0].__setitem__(0, list(s.levels[0][0])),
                           "levels[0][0]"),
    "dc negative masses": ("dc", lambda s: s.levels[0][0][1].__setitem__(0, -1.0),
                           "levels[0][0]"),
    "dc node centers not its points'": ("dc", lambda s: s.levels[1].__setitem__(
        0, (s.levels[1][0][0][:1].copy(), s.levels[1][0][1][:1].copy())), "levels[1][0]"),
    "dc inertia negative": ("dc", lambda s: setattr(s, "inertia", -1.0), "inertia"),
}


@pytest.mark.parametrize("name", sorted(TAMPER))
def test_tampered_pickles_are_refused(name):
    """A pickle is data from outside: a tampered fitted state is refused
    with a ModelFileError naming the field, before anything is installed
    (no IndexError, ValueError, ... and no C kernel reading out of bounds
    later)."""
    which, tamper, field = TAMPER[name]
    m = pickle.loads(pickle.dumps(_tamper_models()[which]))
    tamper(m._state)
    data = pickle.dumps(m)
    with pytest.raises(ModelFileError) as info:
        pickle.loads(data)
    assert field in str(info.value), str(info.value)
    assert "pickle: " in str(info.value)


def test_tampered_pickles_top_level_and_valid_ones():
    """The estimator's own fields: unknown, missing or a state that is not a
    fitted one; untampered pickles (of every protocol, also with deleted
    rows) load and go on deleting like the original."""
    models = _tamper_models()
    for model in models.values():
        for change, field in ((lambda d: d.__setitem__("junk", 1), "junk"),
                              (lambda d: d.pop("n_clusters"), "n_clusters"),
                              (lambda d: d.__setitem__("_state", None), "_state"),
                              (lambda d: d.__setitem__("_state", np.zeros(3)), "_state")):
            state = model.__getstate__()
            change(state)
            with pytest.raises(ModelFileError, match=field):
                type(model).__new__(type(model)).__setstate__(state)
        with pytest.raises(ModelFileError, match="not a dict"):
            type(model).__new__(type(model)).__setstate__([1, 2])
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            other = pickle.loads(pickle.dumps(model, protocol=protocol))
            assert_same_state(other, model)
    # a model whose state was set to None in place is not fitted
    m = copy.deepcopy(models["q"])
    m._state = None
    with pytest.raises(NotFittedError):
        m.predict(np.zeros((1, 3)))
    # the sharing of memory between arrays that deletions write in place
    a = np.zeros(10)
    with pytest.raises(ModelFileError, match="shares memory"):
        _common._Fields("t").unshared({"a": a}, {"b": a[2:5]})
    _common._Fields("t").unshared({"a": a}, {"b": np.zeros(10)})
