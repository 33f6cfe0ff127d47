"""Microbenchmarks of Lloyd k-means: one iteration and a 10-iteration fit.

Run with ``python -m pytest benchmarks/bench_kmeans.py --benchmark-only``
(add ``--benchmark-columns=median,iqr,rounds`` for a compact table).

Groups, at (n, d, k) = (1e5, 10, 10), (1e5, 50, 10), (6e4, 784, 10) and
(1e5, 10, 62), float64, Gaussian blobs (``compare_sklearn.make_data``), all
sides single-threaded (BLAS and OpenMP capped at one thread):

* ``lloyd step``: one assignment + accumulation pass.  pyfkm's
  ``LloydWorkspace.step(centers, distances=False)`` (buffers and packed
  points built once, outside the timing; returns per-cluster sums and
  weights) against scikit-learn's private ``lloyd_iter_chunked_dense`` with
  ``n_threads=1`` (which also divides the sums into new centers and computes
  the center shift, O(k d) more work) and, for d <= 10 only because it is
  slow, the numpy twin ``tests/oracles/lloyd.py`` (``assign`` then
  ``update_centers``).  All start from the same centers, k rows of X.
* ``kmeans fit``: ``pyfkm.KMeans(k, init=init, max_iter=10, tol=0).fit(X)``
  against ``sklearn.cluster.KMeans(k, init=init, n_init=1, max_iter=10,
  tol=0, algorithm="lloyd").fit(X)``, validation included.  Both may stop
  before 10 iterations on strict convergence; ``n_iter`` is stored in each
  benchmark's ``extra_info`` (``--benchmark-json``) so a time per iteration
  can be derived.

Timings are wall clock; on a busy machine add
``--benchmark-timer=time.process_time`` for CPU time, as compare_sklearn.py
reports.
"""
import numpy as np
import pytest
from compare_sklearn import make_data
from sklearn.cluster import KMeans as SkKMeans

import pyfkm
from oracles import lloyd as ref
from pyfkm.core.kmeans import LloydWorkspace

try:  # private scikit-learn API: it may move between versions
    from sklearn.cluster._k_means_lloyd import lloyd_iter_chunked_dense
except ImportError:  # pragma: no cover
    lloyd_iter_chunked_dense = None

pytestmark = pytest.mark.usefixtures("one_thread")

SHAPES = [(100_000, 10, 10), (100_000, 50, 10), (60_000, 784, 10), (100_000, 10, 62)]


from _labels import sci as _sci, shape_id as _shape_id  # noqa: E402 (benchmarks/ on sys.path)


def _blobs_and_init(shape):
    """Blobs (seed 0) and k distinct rows of them as initial centers (seed 1)."""
    n, d, k = shape
    X = make_data("blobs", n, d, k, seed=0)
    init = X[np.random.default_rng(1).choice(n, k, replace=False)].copy()
    return X, init


class TestLloydStep:
    shapes = SHAPES
    numpy_max_features = 10  # the numpy twin runs only up to this d (it is slow)

    @pytest.fixture(scope="class", params=shapes, ids=_shape_id)
    def data(self, request):
        X, init = _blobs_and_init(request.param)
        ws = LloydWorkspace(X, None, init.shape[0], 1)
        yield X, init, ws
        ws.close()

    @pytest.fixture(autouse=True)
    def setup(self, data):
        self.X, self.centers, self.ws = data
        (n, d), k = self.X.shape, self.centers.shape[0]
        self.group = f"lloyd step f64 n={_sci(n)} d={d} k={k}"

    def test_pyfkm(self, benchmark):
        benchmark.group = self.group
        sums, wsums, _ = benchmark(self.ws.step, self.centers, distances=False)
        assert wsums.sum() == self.X.shape[0]

    def test_sklearn(self, benchmark):
        if lloyd_iter_chunked_dense is None:
            pytest.skip("sklearn.cluster._k_means_lloyd.lloyd_iter_chunked_dense not found")
        benchmark.group = self.group
        n, k = self.X.shape[0], self.centers.shape[0]
        sample_weight = np.ones(n)
        centers_new = np.zeros_like(self.centers)
        weight_in_clusters = np.zeros(k)
        labels = np.full(n, -1, dtype=np.int32)
        center_shift = np.zeros(k)
        # centers_old is only read: every round redoes the same iteration.
        benchmark(lloyd_iter_chunked_dense, self.X, sample_weight, self.centers, centers_new,
                  weight_in_clusters, labels, center_shift, 1, update_centers=True)
        assert weight_in_clusters.sum() == n

    def test_numpy(self, benchmark):
        if self.X.shape[1] > self.numpy_max_features:
            pytest.skip(f"numpy twin only for d <= {self.numpy_max_features} (slow)")
        benchmark.group = self.group
        w = np.ones(self.X.shape[0])

        def step():
            labels, mind = ref.assign(self.X, self.centers)
            return ref.update_centers(self.X, w, self.centers, labels, mind)

        benchmark(step)


class TestFit:
    shapes = SHAPES
    max_iter = 10

    @pytest.fixture(scope="class", params=shapes, ids=_shape_id)
    def data(self, request):
        return _blobs_and_init(request.param)

    @pytest.fixture(autouse=True)
    def setup(self, data):
        self.X, self.init = data
        (n, d), k = self.X.shape, self.init.shape[0]
        self.group = f"kmeans fit max_iter={self.max_iter} f64 n={_sci(n)} d={d} k={k}"

    def test_pyfkm(self, benchmark):
        benchmark.group = self.group
        km = pyfkm.KMeans(self.init.shape[0], init=self.init, max_iter=self.max_iter, tol=0)
        benchmark(km.fit, self.X)
        benchmark.extra_info["n_iter"] = int(km.n_iter_)

    def test_sklearn(self, benchmark):
        benchmark.group = self.group
        km = SkKMeans(self.init.shape[0], init=self.init, n_init=1, max_iter=self.max_iter,
                      tol=0, algorithm="lloyd")
        benchmark(km.fit, self.X)
        benchmark.extra_info["n_iter"] = int(km.n_iter_)


class TestServerRerun:
    """``lloyd rerun``: the MUFC server's problem (1000 weighted bins, d = 10,
    k = 10: the aggregate of ``compare_mufc.py``'s Gaussian federation is
    replaced by 1000 points of 10 blobs with integer weights ~30), one init.
    ``lloyd_loop`` (a whole run) against ``LloydTrace.run`` rerunning the
    same start after one weight changed by 1 (a non-center removal; the
    change alternates -1/+1 so that every call is a rerun of a recorded
    run).  Both return the same results bit for bit."""

    @pytest.fixture(scope="class")
    def problem(self):
        rng = np.random.default_rng(0)
        centers = rng.uniform(-0.4, 0.4, size=(10, 10))
        X = centers[rng.integers(0, 10, 1000)] + rng.normal(scale=0.03, size=(1000, 10))
        w = rng.integers(20, 40, 1000).astype(np.float64)
        from pyfkm._core import _seeding
        C0 = X[_seeding.seed(X, w, 10, np.random.default_rng(1))[0]]
        return X, w, C0

    def test_lloyd_loop(self, benchmark, problem):
        from pyfkm._core import _lloyd
        X, w, C0 = problem
        benchmark.group = "lloyd rerun server n=1000 d=10 k=10"
        benchmark(_lloyd.lloyd_loop, X, C0, w, 300, 0.0)

    def test_trace_rerun(self, benchmark, problem):
        from pyfkm._core import _lloyd
        X, w, C0 = problem
        benchmark.group = "lloyd rerun server n=1000 d=10 k=10"
        tr = _lloyd.LloydTrace(X)
        tr.run(C0, w, 300, 0.0)
        ws = [w.copy(), w.copy()]
        ws[1][17] -= 1
        state = {"i": 0}

        def rerun():
            state["i"] ^= 1
            return tr.run(C0, ws[state["i"]], 300, 0.0)

        benchmark(rerun)
        benchmark.extra_info["last_stats"] = list(tr.last_stats)
