"""Transposed Vandermonde systems over F_p: the last step of the decoder,
which recovers the counts ``q_j`` from the power sums once the nodes
``r_j`` are known.  The kernels are C (``csrc/fkm_vdm.c``) and run without
the GIL.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core import _field
from ..exceptions import FieldError
from ._args import _as_elements, _check_modulus

__all__ = ["VandermondeSolver", "vandermonde_solve"]


class VandermondeSolver:
    """Transposed Vandermonde systems over fixed nodes, shared precomputation.

    Solves ``sum_j c[j] * nodes[j]**i = rhs[i] (mod p)`` for ``i < m``.
    Construction builds the subproduct tree of the nodes and ``1/F'(x_j)``
    (``F = prod (y - x_j)``), O(M(m) log m); each solve is one product and
    one multipoint evaluation.

    Parameters
    ----------
    nodes : array-like of int, shape (m,)
        Distinct, nonzero, reduced.
    p : int
        Prime modulus.

    Raises
    ------
    FieldError
        If the nodes are empty, zero, repeated or not reduced.

    Examples
    --------
    >>> V = VandermondeSolver([2, 3], 13)
    >>> V.solve([5, 12]).tolist()          # c0 + c1 = 5, 2 c0 + 3 c1 = 12
    [3, 2]
    """

    def __init__(self, nodes: ArrayLike, p: int) -> None:
        self.p = _check_modulus(p)
        nodes = _as_elements(nodes, self.p, "nodes")
        if nodes.size == 0:
            raise FieldError("nodes must not be empty")
        if np.any(nodes == 0):
            raise FieldError(f"nodes must be nonzero; nodes[{int(np.argmin(nodes))}] = 0")
        try:
            self._impl = _field.Vandermonde(nodes, self.p)
        except FieldError:
            u, inv, cnt = np.unique(nodes, return_inverse=True, return_counts=True)
            dup = np.flatnonzero(cnt[inv] > 1)
            raise FieldError(
                f"nodes must be distinct; nodes[{dup[0]}] = nodes[{dup[1]}] = "
                f"{int(nodes[dup[0]])}") from None
        self.nodes = nodes
        self.m = nodes.size

    def solve(self, rhs: ArrayLike) -> NDArray[np.uint64]:
        """``c`` with the shape of ``rhs``: (m,) or (m, r) (one system per column).

        Parameters
        ----------
        rhs : array-like of int, shape (m,) or (m, r)
            Reduced right-hand sides (one system per column).

        Returns
        -------
        c : ndarray of uint64
            The solution, with the shape of ``rhs``.

        Raises
        ------
        FieldError
            If ``rhs`` has another shape or is not reduced.
        """
        rhs = _as_elements(rhs, self.p, "rhs", ndim=None)
        if rhs.ndim not in (1, 2) or rhs.shape[0] != self.m:
            raise FieldError(f"rhs must have shape ({self.m},) or ({self.m}, r), got {rhs.shape}")
        if rhs.ndim == 1:
            return self._impl.solve(rhs[None, :])[0]
        return np.ascontiguousarray(self._impl.solve(np.ascontiguousarray(rhs.T)).T)


def vandermonde_solve(nodes: ArrayLike, rhs: ArrayLike, p: int) -> NDArray[np.uint64]:
    """Solve ``sum_j c[j] * nodes[j]**i = rhs[i] (mod p)``, ``i < m``.

    ``rhs`` of shape (m,) or (m, r); see :class:`VandermondeSolver` to reuse
    the precomputation across calls.

    Parameters
    ----------
    nodes : array-like of int, shape (m,)
        Distinct, nonzero, reduced.
    rhs : array-like of int, shape (m,) or (m, r)
        Reduced right-hand sides (one system per column).
    p : int
        Prime modulus, ``p < 2**63``.

    Returns
    -------
    c : ndarray of uint64
        The solution, with the shape of ``rhs``.

    Raises
    ------
    FieldError
        If the nodes or ``rhs`` are invalid.

    Examples
    --------
    >>> vandermonde_solve([2, 3], [5, 12], 13).tolist()
    [3, 2]
    """
    return VandermondeSolver(nodes, p).solve(rhs)
