"""Plain numpy twin of csrc/fkm_lattice.c (oracle for tests, benchmark baseline).

Every formula is written with the same operation order as the C kernels, so
results agree bit for bit; the integer functions use Python's unbounded
ints, independently of the C overflow checks.
"""
import numpy as np

INT64_MAX = 2**63 - 1


def quantize(X, step, phase=None):
    """floor(X / step - phase) as int64 (X converted to float64 first)."""
    t = np.asarray(X).astype(np.float64) / step
    if phase is not None:
        t = t - np.asarray(phase, dtype=np.float64)
    return np.floor(t).astype(np.int64)


def centers(bins, step, phase=None):
    """((bins + 0.5) + phase) * step in float64."""
    c = np.asarray(bins).astype(np.float64) + 0.5
    if phase is not None:
        c = c + np.asarray(phase, dtype=np.float64)
    return c * step


def sample(bins, step, phase, generator):
    """((bins + U) + phase) * step with U = generator.random(bins.shape)."""
    bins = np.asarray(bins)
    u = generator.random(bins.shape)
    c = bins.astype(np.float64) + u
    if phase is not None:
        c = c + np.asarray(phase, dtype=np.float64)
    return c * step


def grid_fits(n_bins, n_features):
    """Whether n_bins ** n_features <= 2**63 - 1 (exact, Python ints)."""
    return int(n_bins) ** int(n_features) <= INT64_MAX


def flatten(bins, n_bins):
    """Row-major index sum_j bins[i, j] * n_bins**(d - 1 - j), as Python ints."""
    out = []
    for row in np.asarray(bins).tolist():
        index = 0
        for b in row:
            if not 0 <= b < n_bins:
                raise ValueError(f"bin {b} outside [0, {n_bins})")
            index = index * n_bins + b
        out.append(index)
    return out


def unflatten(indices, n_bins, n_features):
    """Base-n_bins digits of each index, most significant first."""
    out = []
    for index in np.asarray(indices).tolist():
        if not 0 <= index < n_bins**n_features:
            raise ValueError(f"index {index} outside [0, {n_bins}**{n_features})")
        digits = []
        for _ in range(n_features):
            index, r = divmod(index, n_bins)
            digits.append(r)
        out.append(digits[::-1])
    return out
