"""Microbenchmarks of Lloyd k-means: one iteration and a 10-iteration fit.

Run with ``python -m pytest benchmarks/bench_kmeans.py --benchmark-only``
(add ``--benchmark-columns=median,iqr,rounds`` for a compact table).

Groups, at (n, d, k) = (1e5, 10, 10), (1e5, 50, 10), (6e4, 784, 10) and
(1e5, 10, 62), float64, Gaussian blobs (``compare_sklearn.make_data``), all
sides single-threaded (BLAS and OpenMP capped at one thread):

* ``lloyd step``: one assignment + accumulation pass.  pyfkm's
  ``_LloydWorkspace.step(centers, distances=False)`` (buffers and packed
  points built once, outside the timing; returns per-cluster sums and
  weights) against scikit-learn's private ``lloyd_iter_chunked_dense`` with
  ``n_threads=1`` (which also divides the sums into new centers and computes
  the center shift, O(k d) more work) and, for d <= 10 only because it is
  slow, the numpy twin ``pyfkm._reference.lloyd`` (``assign`` then
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
from pyfkm._reference import lloyd as ref
from pyfkm.kmeans import _LloydWorkspace

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
        ws = _LloydWorkspace(X, None, init.shape[0], 1)
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
