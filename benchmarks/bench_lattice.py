"""Microbenchmarks of the lattice kernels against their numpy twins.

Run with ``python -m pytest benchmarks/bench_lattice.py --benchmark-only``.
Each group puts the public method (validation included), the bare Cython
kernel and the numpy reference (tests/oracles/lattice.py) side by side.
"""
import numpy as np
import pytest

from pyfkm._core import _lattice
from oracles import lattice as ref
from pyfkm.core import Lattice


class TestQuantize:
    n_samples = 1_000_000
    n_features = 10
    step = 0.01

    @pytest.fixture(autouse=True, params=[np.float64, np.float32], ids=["f64", "f32"])
    def setup(self, request):
        rng = np.random.default_rng(0)
        self.X = rng.uniform(-0.5, 0.5, size=(self.n_samples, self.n_features)).astype(request.param)
        self.lattice = Lattice.random(self.step, self.n_features, random_state=1)
        self.group = f"lattice.quantize {request.node.callspec.id} n=1e6 d=10"

    def test_pyfkm(self, benchmark):
        benchmark.group = self.group
        benchmark(self.lattice.quantize, self.X)

    def test_kernel(self, benchmark):
        benchmark.group = self.group
        benchmark(_lattice.quantize, self.X, self.lattice.phase, self.step)

    def test_numpy(self, benchmark):
        benchmark.group = self.group
        benchmark(ref.quantize, self.X, self.step, self.lattice.phase)


class TestSample:
    n_samples = 1_000_000
    n_features = 10
    step = 0.01

    @pytest.fixture(autouse=True)
    def setup(self):
        rng = np.random.default_rng(0)
        self.lattice = Lattice.random(self.step, self.n_features, random_state=1)
        self.bins = rng.integers(-50, 50, size=(self.n_samples, self.n_features))
        self.generator = np.random.default_rng(2)
        self.group = "lattice.sample n=1e6 d=10"

    def test_pyfkm(self, benchmark):
        benchmark.group = self.group
        benchmark(self.lattice.sample, self.bins, self.generator)

    def test_kernel(self, benchmark):
        benchmark.group = self.group
        benchmark(_lattice.sample, self.bins, self.lattice.phase, self.step, self.generator)

    def test_numpy(self, benchmark):
        benchmark.group = self.group
        benchmark(ref.sample, self.bins, self.step, self.lattice.phase, self.generator)
