"""The data-box convention of pyfkm, and the helper that maps data into a box.

Every estimator that needs a public range of the data (the federated
estimators: the MUFC grid of :class:`pyfkm.FederatedKMeans`, the clipping
and sensitivity of :class:`pyfkm.DPFederatedKMeans`) takes it as one
parameter, ``bounds=(lower, upper)``: every value of every feature lies in
``[lower, upper]``, a box that must be public knowledge (never the data's
own minimum and maximum, which would leak them), given in the same units
as the data.  Data outside the box is refused with an error.  The defaults
follow each method's paper: ``(-0.5, 0.5)`` for MUFC (the unit cube centred
at 0), ``(-1, 1)`` for FastLloyd; parameters measured in data units (the
MUFC grid step ``gamma``, the DP step radius) are relative to the box.

:func:`scale_to_box` maps data from public per-feature ranges into an
estimator's box.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_array, check_bounds
from ..exceptions import InvalidInputError

__all__ = ["scale_to_box"]


def scale_to_box(X: ArrayLike, lower: float | ArrayLike, upper: float | ArrayLike, *,
                 box: tuple[float, float] = (-0.5, 0.5)) -> NDArray[np.float64]:
    """Map data known to lie in ``[lower, upper]`` (public bounds) into ``box``.

    Use bounds that are public knowledge (a sensor's range, a score's
    scale), not the data's own extrema, which would leak them.  Pass an
    estimator's box as ``box`` (``box=est.bounds``): every federated
    estimator takes its data box as ``bounds`` (see the module docstring).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite data inside ``[lower, upper]``.
    lower, upper : float or array-like of shape (n_features,)
        Finite public bounds, ``upper > lower`` (one per feature or one
        for all).
    box : tuple of float, default=(-0.5, 0.5)
        The target interval of every feature.

    Returns
    -------
    X_scaled : ndarray of shape (n_samples, n_features), float64
        ``box[0] + (X - lower) * (box[1] - box[0]) / (upper - lower)``.

    Raises
    ------
    InvalidInputError
        If the bounds are not finite with ``upper > lower``, or ``X`` has
        values outside them.

    Examples
    --------
    >>> scale_to_box([[0.0, 10.0], [5.0, 0.0]], lower=0.0, upper=10.0).tolist()
    [[-0.5, 0.5], [0.0, -0.5]]
    >>> scale_to_box([[0.0, 300.0]], lower=[0.0, 100.0], upper=[10.0, 300.0],
    ...              box=(-1.0, 1.0)).tolist()
    [[-1.0, 1.0]]
    """
    X = check_array(X, "X", allow_empty=True)
    a, b = check_bounds(box, "box")
    d = X.shape[1]
    try:
        lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (d,))
        hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), (d,))
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"lower and upper must be numbers or arrays of {d} numbers (one per feature of "
            f"X), got shapes {np.shape(lower)} and {np.shape(upper)}") from None
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
        raise InvalidInputError("lower and upper must be finite with upper > lower")
    if X.size and (np.any(X < lo) or np.any(X > hi)):
        bad = np.flatnonzero((X < lo).any(axis=0) | (X > hi).any(axis=0))
        raise InvalidInputError(
            f"X has values outside [lower, upper] in features {bad[:5].tolist()}: the public "
            "bounds must contain every value (clip the data to them first if they are "
            "domain limits)")
    return a + (X - lo) * ((b - a) / (hi - lo))
