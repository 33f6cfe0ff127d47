"""Microbenchmarks of k-means++ seeding and of removal from a seeding.

Run with ``python -m pytest benchmarks/bench_seeding.py --benchmark-only``
(add ``--benchmark-columns=median,iqr,rounds`` for a compact table).

Groups:

* ``kmeans++``: the public :func:`pyfkm.kmeans_plusplus` (validation
  included), the bare Cython kernel ``_seeding.seed``, scikit-learn's
  ``kmeans_plusplus`` with ``n_local_trials=1`` (the same algorithm, one
  candidate per step) and, at d = 10 only because it is slow, the numpy twin
  ``tests/oracles/seeding.py``'s ``d2_seeding``.  Every call uses the next seed
  0, 1, 2, ... so that seed-dependent work is averaged the same way on all
  sides.
* ``remove non-center``: ``RemovableSeeding.remove`` of one point that is not
  a center, each round a new point of the same object (n = 1e6), next to a
  fresh seeding of the same data, the cost that removal avoids.
* ``remove center``: removal of the first or the last center, which
  resamples the centers from that position on, on a new object every round
  (n = 1e5), next to a fresh seeding.

Data are Gaussian blobs (``compare_sklearn.make_data("blobs", ...)``: k blobs
of std 1, centers uniform in [-10, 10]^d).  Everything runs with BLAS and
OpenMP capped at one thread.  Timings are wall clock; on a busy machine add
``--benchmark-timer=time.process_time`` for CPU time, as compare_sklearn.py
reports.
"""
import itertools

import numpy as np
import pytest
from compare_sklearn import make_data
from sklearn.cluster import kmeans_plusplus as sk_kmeans_plusplus

import pyfkm
from pyfkm._core import _seeding
from oracles import seeding as ref

pytestmark = pytest.mark.usefixtures("one_thread")


from _labels import sci as _sci, shape_id as _shape_id  # noqa: E402 (benchmarks/ on sys.path)


class TestKmeansPlusPlus:
    shapes = [(100_000, 10, 10), (100_000, 50, 10)]
    numpy_max_features = 10  # the numpy twin runs only up to this d (it is slow)

    @pytest.fixture(scope="class", params=shapes, ids=_shape_id)
    def data(self, request):
        n, d, k = request.param
        return make_data("blobs", n, d, k, seed=0), k

    @pytest.fixture(autouse=True)
    def setup(self, data):
        self.X, self.k = data
        n, d = self.X.shape
        self.seeds = itertools.count()
        self.group = f"kmeans++ blobs n={_sci(n)} d={d} k={self.k}"

    def test_pyfkm(self, benchmark):
        benchmark.group = self.group
        benchmark(lambda: pyfkm.kmeans_plusplus(self.X, self.k, random_state=next(self.seeds)))

    def test_kernel(self, benchmark):
        benchmark.group = self.group
        benchmark(lambda: _seeding.seed(self.X, None, self.k,
                                        np.random.default_rng(next(self.seeds))))

    def test_sklearn(self, benchmark):
        benchmark.group = self.group
        benchmark(lambda: sk_kmeans_plusplus(self.X, self.k, n_local_trials=1,
                                             random_state=next(self.seeds)))

    def test_numpy(self, benchmark):
        if self.X.shape[1] > self.numpy_max_features:
            pytest.skip(f"numpy twin only for d <= {self.numpy_max_features} (slow)")
        benchmark.group = self.group
        benchmark(lambda: ref.d2_seeding(self.X, self.k, random_state=next(self.seeds)))


class TestRemoveNonCenter:
    n_samples = 1_000_000
    n_features = 10
    n_clusters = 10
    rounds = 2000
    warmup_rounds = 10

    @pytest.fixture(scope="class")
    def state(self):
        """One seeding of the data and more non-center ids than rounds."""
        X = make_data("blobs", self.n_samples, self.n_features, self.n_clusters, seed=0)
        s = pyfkm.RemovableSeeding(X, self.n_clusters, random_state=0)
        centers = set(s.center_ids_.tolist())
        need = self.rounds + self.warmup_rounds
        perm = np.random.default_rng(2).permutation(self.n_samples)[: 2 * need]
        ids = [int(i) for i in perm if int(i) not in centers]
        assert len(ids) >= need
        return X, s, ids

    @pytest.fixture(autouse=True)
    def setup(self, state):
        self.X, self.seeding, self.ids = state
        self.group = (f"remove non-center n={_sci(self.n_samples)} d={self.n_features} "
                      f"k={self.n_clusters}")

    def test_pyfkm(self, benchmark):
        benchmark.group = self.group
        s = self.seeding
        centers, n_active = s.center_ids_.copy(), s.n_active_
        ids = iter(self.ids)
        drawn = []

        def setup():
            # The id is drawn in the (untimed) setup: only remove() is timed.
            drawn.append(next(ids))
            return (drawn[-1],), {}

        benchmark.pedantic(s.remove, setup=setup, rounds=self.rounds,
                           warmup_rounds=self.warmup_rounds, iterations=1)
        used = len(drawn)       # one call under --benchmark-disable
        assert s.n_active_ == n_active - used
        assert np.array_equal(s.center_ids_, centers)  # no removal reseeded
        assert s.removed_[self.ids[:used]].all()

    def test_fresh_seeding(self, benchmark):
        """What a removal would cost without unlearning: seeding again."""
        benchmark.group = self.group
        seeds = itertools.count()
        benchmark(lambda: pyfkm.kmeans_plusplus(self.X, self.n_clusters,
                                                random_state=next(seeds)))


def _remove(seeding, i):
    return seeding.remove(i)


class TestRemoveCenter:
    n_samples = 100_000
    n_features = 10
    n_clusters = 10
    rounds = 30
    positions = [0, n_clusters - 1]

    @pytest.fixture(scope="class")
    def data(self):
        return make_data("blobs", self.n_samples, self.n_features, self.n_clusters, seed=0)

    @pytest.fixture(autouse=True)
    def setup(self, data):
        self.X = data
        self.group = (f"remove center n={_sci(self.n_samples)} d={self.n_features} "
                      f"k={self.n_clusters}")

    @pytest.mark.parametrize("position", positions, ids=lambda p: f"position={p}")
    def test_pyfkm(self, benchmark, position):
        benchmark.group = self.group
        seeds = itertools.count()

        def build():
            # A new seeding per round (untimed); remove its center at `position`.
            s = pyfkm.RemovableSeeding(self.X, self.n_clusters, random_state=next(seeds))
            return (s, int(s.center_ids_[position])), {}

        report = benchmark.pedantic(_remove, setup=build, rounds=self.rounds,
                                    warmup_rounds=1, iterations=1)
        assert report.reseeded and report.position == position

    def test_fresh_seeding(self, benchmark):
        benchmark.group = self.group
        seeds = itertools.count()
        benchmark(lambda: pyfkm.kmeans_plusplus(self.X, self.n_clusters,
                                                random_state=next(seeds)))
