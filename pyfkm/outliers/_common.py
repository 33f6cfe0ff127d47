"""What the (k,z)-center estimators share: the checks of k, z and eps, the
bisection over a geometric grid of guesses, and predict / is_outlier.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._base import BaseEstimator
from .._core import _kcenter
from .._validation import check_int
from ..core.base import CenterModelMixin
from ..exceptions import InvalidInputError

# Largest point set whose n x n squared-distance matrix (8 n^2 bytes) is kept;
# larger sets recompute distance rows on the fly (same results, O(n) memory).
_MATRIX_MAX_N = 4096


def _check_kz(n_clusters: int, n_outliers: int, n: int) -> tuple[int, int]:
    k = check_int(n_clusters, "n_clusters", 1)
    z = check_int(n_outliers, "n_outliers", 0)
    if k + z > n:
        raise InvalidInputError(
            f"n_clusters + n_outliers = {k + z} must be <= the number of points n={n}")
    return k, z


def _check_epsilon(eps: float) -> float:
    if not (isinstance(eps, numbers.Real) and not isinstance(eps, bool)
            and math.isfinite(eps) and eps > 0):
        raise InvalidInputError(f"epsilon={eps!r} must be a finite real > 0")
    return float(eps)


def _grid_search(lo: float, hi: float, ratio: float, probe: Callable[[float], Any]
                 ) -> tuple[float, Any, int]:
    """Smallest feasible guess on the grid hi * ratio**(j - J), j = 0..J,
    J the least integer with hi * ratio**-J <= lo, by bisection.

    ``probe(L)`` returns a solution or None ("No").  Assumes the guess hi
    is feasible (the analysis guarantees it) and that lo bounds from below
    the smallest guess the analysis guarantees feasible.  Keeps the last
    *feasible* answer, never merely the last guess tried: the result L
    satisfies L <= ratio * max(lo, largest infeasible guess tried) and
    L <= hi.  Returns (L, solution, number of guesses tried).
    """
    J = max(1, math.ceil(math.log(hi / lo) / math.log(ratio))) if lo < hi else 1

    def g(j: int) -> float:
        return hi if j >= J else hi * ratio ** (j - J)

    sol = probe(g(0))
    n_probe = 1
    if sol is not None:
        return g(0), sol, n_probe
    a, b, sol_b = 0, J, None
    while b - a > 1:
        mid = (a + b) // 2
        s = probe(g(mid))
        n_probe += 1
        if s is not None:
            b, sol_b = mid, s
        else:
            a = mid
    if sol_b is None:  # hi untested so far
        sol_b = probe(g(b))
        n_probe += 1
        if sol_b is None:
            raise RuntimeError("internal error: the upper bound of the search "
                               "was answered No")
    return g(b), sol_b, n_probe


class _KZBase(CenterModelMixin, BaseEstimator):
    """predict / outlier flags shared by the (k,z)-center estimators;
    ``transform`` and ``score`` are :class:`~pyfkm.core.base.CenterModelMixin`'s."""

    radius_: float  # set by fit

    def _check_fit_params(self) -> None:
        """Checks of the parameters beyond k and z, run by a distributed fit
        after those of the machines, k and z (none here)."""

    def _nearest_center(self, X: NDArray[np.float64], C: NDArray[np.float64]
                        ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        # deliberate specialization of the shared kernel (CenterModelMixin's
        # nearest_center): the kernel the fits count outliers with (exact
        # squared distances from coordinate differences, ties to the lowest
        # index), so that predict flags exactly the points the fit declared
        # farther than radius_ (radius_ is often itself such a distance).
        return _kcenter.nearest(X, C)

    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        """Index of the nearest center, or -1 for points farther than
        ``radius_`` from every center (declared outliers).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite data with the fitted number of features.

        Returns
        -------
        labels : ndarray of shape (n_samples,), int64
            Index of the nearest center of each row, -1 for an outlier.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        InvalidInputError
            If ``X`` is not finite, not 2-D, or has another number of
            features.
        """
        mind, lab = self._nearest_center(*self._checked(X))
        lab[np.sqrt(mind) > self.radius_] = -1
        return lab

    def is_outlier(self, X: ArrayLike) -> NDArray[np.bool_]:
        """Boolean mask of the outliers: the points farther than ``radius_``
        from every center.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite data with the fitted number of features.

        Returns
        -------
        mask : ndarray of shape (n_samples,), bool
            True for a row that :meth:`predict` labels -1.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        InvalidInputError
            If ``X`` is invalid (see :meth:`predict`).
        """
        return self.predict(X) < 0
