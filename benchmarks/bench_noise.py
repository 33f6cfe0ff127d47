"""Microbenchmarks of the DP noise samplers of :mod:`pyfkm.core.noise`.

Run with ``python -m pytest benchmarks/bench_noise.py --benchmark-only
--benchmark-timer=time.process_time`` or, for the samples-per-second table
of ``benchmarks/RESULTS.md``, ``python benchmarks/bench_noise.py``
(CPU time, single thread, median of repeats, n = 10^6 samples per call).

Groups (one per sampler), each with both modes:

* ``gaussian``: continuous N(0, sigma^2), sigma = 3.7.
* ``discrete_gaussian``: exact N_Z(0, sigma^2) at sigma = 3.7 * 2^16 (the
  fixed-point scale of the aggregation) and at sigma = 3.
* ``laplace``: Laplace(0, b), b = 1.

``secure`` is the ChaCha20 stream (NoiseStream.secure), ``generator`` the
numpy PCG64 stream (NoiseStream.from_generator).  Targets (issue 7):
>= 20e6 samples/s for the continuous Gaussian, >= 2e6/s for the discrete one.
"""
import statistics

import numpy as np
import pytest
from _timing import measure, single_thread

from pyfkm.core.noise import NoiseStream, new_noise_key

pytestmark = pytest.mark.usefixtures("one_thread")

N = 1_000_000
KEY = new_noise_key(0)
CASES = [("gaussian", "gaussian", 3.7),
         ("discrete_gaussian", "discrete_gaussian", 3.7 * 2 ** 16),
         ("discrete_gaussian", "discrete_gaussian_small", 3.0),
         ("laplace", "laplace", 1.0)]


def _stream(mode):
    if mode == "secure":
        return NoiseStream.secure(KEY, 0, b"BNCH")
    return NoiseStream.from_generator(0)


@pytest.mark.parametrize("mode", ["secure", "generator"])
@pytest.mark.parametrize("method, label, param", CASES, ids=[c[1] for c in CASES])
def test_sampler(benchmark, method, label, param, mode):
    benchmark.group = method
    s = _stream(mode)
    out = benchmark(getattr(s, method), N, param)
    assert out.shape == (N,)
    # cheap check of the scale: the sample standard deviation
    expected = param * (np.sqrt(2) if method == "laplace" else 1.0)
    assert abs(out.std() / expected - 1) < 0.01


def samples_per_second(method, param, mode, repeats=7):
    """Median over repeats of N / (CPU seconds of one call)."""
    s = _stream(mode)
    getattr(s, method)(1000, param)  # warm up
    t = measure(lambda: getattr(s, method)(N, param), repeat=repeats)
    return statistics.median(N / x for x in t.samples)


def main():
    with single_thread():
        print(f"samples per second (CPU time, median of 7, n = {N:.0e})")
        print(f"{'sampler':<26}{'secure (ChaCha20)':>20}{'generator (PCG64)':>20}")
        for method, label, param in CASES:
            row = [samples_per_second(method, param, mode) for mode in ("secure", "generator")]
            print(f"{label + f' ({param:g})':<26}" + "".join(f"{r / 1e6:>17.1f} M/s" for r in row))


if __name__ == "__main__":
    main()
