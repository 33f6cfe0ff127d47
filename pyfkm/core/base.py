"""What every fitted model of centers shares: ``predict``, ``transform``,
``score`` and ``fit_predict``, one implementation for all estimators.

A model of centers is an estimator whose ``fit`` sets ``cluster_centers_``
(an array of shape ``(n_clusters, n_features)``) and ``n_features_in_``.
:class:`CenterModelMixin` gives it

* ``predict(X)``: index of the nearest center (int32), by the C assignment
  kernel of :func:`pyfkm.core.kmeans.nearest_center`;
* ``transform(X)``: Euclidean distance to every center, as scikit-learn's
  ``KMeans.transform``;
* ``score(X, y=None, sample_weight=None)``: the negative (weighted) sum of
  squared distances to the nearest center, greater is better (as
  scikit-learn's ``KMeans.score``);

with the checks at the edge (fitted, finite 2-D ``X`` with the fitted
number of features, converted to float64).  :class:`FitPredictMixin` adds
``fit_predict`` to the estimators that fit on one ``X`` and keep
``labels_``.

Estimators hook in through two methods: ``_fitted_centers()`` (the centers
to use, checked: override to refuse a model without centers) and
``_nearest_center(X, C)`` (the kernel: override only to keep a kernel whose
exact decisions the estimator's ``fit`` shares, as the (k, z)-center
estimators do).
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_features, check_sample_weight
from ..exceptions import InvalidInputError

__all__ = ["CenterModelMixin", "FitPredictMixin"]


class CenterModelMixin:
    """``predict``, ``transform`` and ``score`` of a fitted model of centers.

    Mixed into an estimator (before :class:`pyfkm._base.BaseEstimator` in
    the bases) that sets ``cluster_centers_`` and ``n_features_in_`` in
    ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from pyfkm._base import BaseEstimator
    >>> class Fixed(CenterModelMixin, BaseEstimator):
    ...     def fit(self, C):
    ...         self.cluster_centers_ = np.asarray(C, dtype=float)
    ...         self.n_features_in_ = self.cluster_centers_.shape[1]
    ...         return self
    >>> m = Fixed().fit([[0.0, 0.0], [4.0, 0.0]])
    >>> X = [[1.0, 0.0], [4.0, 3.0]]
    >>> m.predict(X).tolist()
    [0, 1]
    >>> m.transform(X).tolist()
    [[1.0, 3.0], [5.0, 3.0]]
    >>> m.score(X), m.score(X, sample_weight=[2.0, 1.0])
    (-10.0, -11.0)
    """

    def _fitted_centers(self):
        """The fitted centers, checked to be usable by the kernels: a finite
        C-contiguous float64 array of shape (n_clusters >= 1, n_features_in_)
        (a model's centers may have been set by a user or read from a file)."""
        C = self.cluster_centers_
        d = self.n_features_in_
        if not (isinstance(C, np.ndarray) and C.ndim == 2 and C.shape[0] >= 1
                and C.shape[1] == d and C.dtype == np.float64
                and C.flags.c_contiguous and np.isfinite(C).all()):
            raise InvalidInputError(
                "cluster_centers_ must be a finite C-contiguous float64 array of shape "
                f"(n_clusters, {d}), got {getattr(C, 'shape', type(C).__name__)}")
        return C

    def _checked(self, X):
        """(X, centers): X finite, 2-D, with the fitted number of features,
        as float64; NotFittedError before ``fit``."""
        self._check_fitted()
        C = self._fitted_centers()
        X = check_features(X, self.n_features_in_, self).astype(np.float64, copy=False)
        return X, C

    def _check_X(self, X: ArrayLike) -> NDArray[np.float64]:
        """``X`` checked against the fitted model, as float64 (see _checked)."""
        return self._checked(X)[0]

    def _nearest_center(self, X: NDArray[np.float64], C: NDArray[np.float64]
                        ) -> tuple[NDArray[np.float64], NDArray[np.integer]]:
        """(squared distance to the nearest center, its index) per row: the
        shared kernel, :func:`pyfkm.core.kmeans.nearest_center`."""
        from .kmeans import nearest_center  # here: kmeans.KMeans uses this mixin
        return nearest_center(X, C)

    def predict(self, X: ArrayLike) -> NDArray[np.integer]:
        """Index of the nearest center for each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite data with the fitted number of features.

        Returns
        -------
        labels : ndarray of shape (n_samples,), int32
            Index of the nearest center of each row.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        InvalidInputError
            If ``X`` is not finite, not 2-D, or has another number of
            features.
        """
        return self._nearest_center(*self._checked(X))[1]

    def transform(self, X: ArrayLike) -> NDArray[np.float64]:
        """Euclidean distances of each row of ``X`` to every center.

        Computed from coordinate differences (no cancellation far from the
        origin).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite data with the fitted number of features.

        Returns
        -------
        distances : ndarray of shape (n_samples, n_clusters), float64
            ``distances[i, j]`` is the distance from row ``i`` to center
            ``j``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        InvalidInputError
            If ``X`` is not finite, not 2-D, or has another number of
            features.
        """
        X, C = self._checked(X)
        out = np.empty((X.shape[0], C.shape[0]))
        for j, c in enumerate(C):
            diff = X - c
            diff *= diff
            out[:, j] = diff.sum(axis=1)
        return np.sqrt(out, out=out)

    def get_feature_names_out(self, input_features: Sequence[str] | None = None
                              ) -> NDArray[np.object_]:
        """Names of the columns :meth:`transform` returns (one per center),
        for scikit-learn's ``set_output`` and pipelines: the class name in
        lower case followed by the center's index, as scikit-learn's
        ``KMeans``.

        Parameters
        ----------
        input_features : array-like of str, optional
            Ignored apart from a check of its length against
            ``n_features_in_`` (scikit-learn's convention).

        Returns
        -------
        names : ndarray of str, shape (n_clusters,)
            ``[f"{name}0", f"{name}1", ...]``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        InvalidInputError
            If ``input_features`` does not have ``n_features_in_`` entries.

        Examples
        --------
        >>> from pyfkm import KMeans
        >>> KMeans(2, random_state=0).fit([[0.0], [1.0], [5.0]]).get_feature_names_out().tolist()
        ['kmeans0', 'kmeans1']
        """
        return self._names_out(input_features)

    def _names_out(self, input_features):
        self._check_fitted()
        C = self._fitted_centers()
        if input_features is not None and len(input_features) != self.n_features_in_:
            raise InvalidInputError(
                f"input_features has {len(input_features)} names, expected "
                f"n_features_in_={self.n_features_in_}")
        prefix = type(self).__name__.lower()
        return np.array([f"{prefix}{j}" for j in range(C.shape[0])], dtype=object)

    def score(self, X: ArrayLike, y: object = None, sample_weight: ArrayLike | None = None
              ) -> float:
        """Negative (weighted) sum of squared distances of ``X`` to the
        nearest center: the opposite of the k-means objective, greater is
        better (as scikit-learn's ``KMeans.score``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite data with the fitted number of features.
        y : None
            Ignored; accepted for scikit-learn's API.
        sample_weight : array-like of shape (n_samples,), optional
            Nonnegative weights, not all zero (default: all ones).

        Returns
        -------
        score : float
            Minus the weighted sum of squared distances to the nearest
            center (0 at best).

        Raises
        ------
        NotFittedError
            Before ``fit``.
        InvalidInputError
            If ``X`` or ``sample_weight`` is invalid.
        """
        X, C = self._checked(X)
        w = check_sample_weight(sample_weight, X.shape[0])
        d2 = self._nearest_center(X, C)[0]
        return -float(d2.sum() if w is None else w @ d2)


class _Fits(Protocol):
    # the self type of FitPredictMixin's methods (for the type checker): an
    # estimator with its own fit
    def fit(self, X: Any, y: Any = None) -> Any: ...


class FitPredictMixin:
    """``fit_predict`` and ``fit_transform`` for estimators that fit on one
    ``X`` and set ``labels_`` (the cluster of each training row)."""

    def fit_predict(self: _Fits, X: ArrayLike, y: object = None, *args: Any, **fit_params: Any
                    ) -> NDArray[np.integer]:
        """Fit on ``X`` and return ``labels_``.

        Further arguments are passed to ``fit`` as given, positional ones
        included (``sample_weight``, ``sample_ids``, as the estimator takes
        them): ``fit_predict(X, None, w)`` is ``fit(X, None, w).labels_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : None
            Ignored; accepted for scikit-learn's API.
        *args
            Further positional arguments of ``fit``.
        **fit_params
            Further keyword arguments of ``fit``.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            The cluster of each training row (``labels_`` after ``fit``).

        Examples
        --------
        >>> from pyfkm import KMeans
        >>> X = [[0.0], [0.1], [5.0], [5.1]]
        >>> labels = KMeans(n_clusters=2, random_state=0).fit_predict(X)
        >>> bool(labels[0] == labels[1] != labels[2] == labels[3])
        True
        """
        return self.fit(X, y, *args, **fit_params).labels_

    def fit_transform(self: _Fits, X: ArrayLike, y: object = None, *args: Any, **fit_params: Any
                      ) -> NDArray[np.float64]:
        """Fit on ``X`` and return the distances of its rows to the centers.

        ``fit_transform(X)`` is ``fit(X).transform(X)``; further arguments
        go to ``fit`` as in :meth:`fit_predict`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : None
            Ignored; accepted for scikit-learn's API.
        *args
            Further positional arguments of ``fit``.
        **fit_params
            Further keyword arguments of ``fit``.

        Returns
        -------
        distances : ndarray of shape (n_samples, n_clusters)
            Euclidean distance of each training row to every center.

        Examples
        --------
        >>> from pyfkm import KMeans
        >>> D = KMeans(n_clusters=2, random_state=0).fit_transform([[0.0], [0.0], [4.0]])
        >>> sorted(D[0].tolist())
        [0.0, 4.0]
        """
        return self.fit(X, y, *args, **fit_params).transform(X)
