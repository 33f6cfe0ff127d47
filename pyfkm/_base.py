"""Estimator conventions (scikit-learn style, without depending on it) and
the base of the reports that operations return."""
import inspect
import numbers
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

import numpy as np

from .exceptions import InvalidInputError, NotFittedError

__all__ = ["BaseEstimator", "Report"]

_Self = TypeVar("_Self", bound="BaseEstimator")


class BaseEstimator:
    """``get_params`` / ``set_params`` from the constructor signature.

    The constructor stores each hyper-parameter under its own name and does
    nothing else; validation happens in ``fit``.  Constructors therefore
    repeat ``self.name = name`` lines from estimator to estimator
    (deliberately: scikit-learn's convention, which ``get_params`` and
    ``clone`` rely on); a family whose estimators share hyper-parameters
    stores them in its base's constructor (the federated Lloyd and the
    retraining baselines do).
    """

    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Hyper-parameters as a dict, as scikit-learn's ``get_params``.

        Parameters
        ----------
        deep : bool, default=True
            Accepted for compatibility with scikit-learn; pyfkm estimators
            hold no nested estimators, so it changes nothing.

        Returns
        -------
        params : dict
            Each constructor argument's name mapped to its current value.

        Examples
        --------
        >>> from pyfkm import KMeans
        >>> KMeans(n_clusters=3, random_state=0).get_params()["n_clusters"]
        3
        """
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self: _Self, **params: Any) -> _Self:
        """Set hyper-parameters, as scikit-learn's ``set_params``.

        All names are checked before any is set: a call with an unknown
        name changes nothing.

        Parameters
        ----------
        **params : dict
            Constructor argument names and their new values.

        Returns
        -------
        self : object
            The estimator.

        Raises
        ------
        InvalidInputError
            If a name is not a constructor argument of the estimator.

        Examples
        --------
        >>> from pyfkm import KMeans
        >>> KMeans(n_clusters=3).set_params(n_clusters=5).n_clusters
        5
        """
        valid = set(self._param_names())
        for name in params:  # all names first: a bad call changes nothing
            if name not in valid:
                raise InvalidInputError(
                    f"invalid parameter {name!r} for {type(self).__name__}; "
                    f"valid parameters: {sorted(valid)}")
        for name, value in params.items():
            setattr(self, name, value)
        return self

    # -- scikit-learn's estimator tags, without importing scikit-learn here --
    # scikit-learn >= 1.6 calls __sklearn_tags__; older releases read
    # _estimator_type and _get_tags() (built from _more_tags()).

    _estimator_type = "clusterer"

    def __sklearn_tags__(self):
        """The estimator's tags for scikit-learn (>= 1.6): a clusterer of
        dense 2-D float data, no target, no NaN; called by scikit-learn only
        (it imports scikit-learn, which pyfkm does not need otherwise).

        Returns
        -------
        tags : sklearn.utils.Tags
        """
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        more = self._more_tags()
        return Tags(
            estimator_type=self._estimator_type,
            target_tags=TargetTags(required=False),
            transformer_tags=(TransformerTags(preserves_dtype=["float64"])
                              if hasattr(self, "transform") else None),
            input_tags=InputTags(two_d_array=more["X_types"] == ["2darray"],
                                 allow_nan=False, sparse=False),
            non_deterministic=more["non_deterministic"],
        )

    def _more_tags(self):
        """Tags that differ from scikit-learn's defaults (scikit-learn < 1.6):
        the federated estimators take a list of client arrays, not ``X``."""
        return {"X_types": ["2darray"], "non_deterministic": False,
                "preserves_dtype": [np.float64], "requires_y": False}

    def _get_tags(self):
        """scikit-learn < 1.6's tag dict: its defaults (as documented for
        1.5), updated with :meth:`_more_tags`."""
        tags = {"array_api_support": False, "non_deterministic": False,
                "requires_positive_X": False, "requires_positive_y": False,
                "X_types": ["2darray"], "poor_score": False, "no_validation": False,
                "multioutput": False, "allow_nan": False, "stateless": False,
                "multilabel": False, "_skip_test": False, "_xfail_checks": False,
                "multioutput_only": False, "binary_only": False, "requires_fit": True,
                "preserves_dtype": [np.float64], "requires_y": False, "pairwise": False}
        tags.update(self._more_tags())
        return tags

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items()
                         if not hasattr(v, "shape"))
        return f"{type(self).__name__}({args})"

    def __sklearn_is_fitted__(self):
        """Whether ``fit`` has run (scikit-learn's ``check_is_fitted`` asks
        this): a fitted model has ``cluster_centers_``.

        Returns
        -------
        bool
        """
        try:
            return getattr(self, "cluster_centers_", None) is not None
        except NotFittedError:
            return False

    def _check_fitted(self, attr="cluster_centers_"):
        if not hasattr(self, attr):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit first")


@dataclass(frozen=True)
class Report:
    """Base of the reports that operations return (a removal, a secure
    aggregation round, the traffic of a fit): a frozen dataclass whose
    fields are the facts, with :meth:`as_dict` and a readable ``str``.

    A subclass is a ``@dataclass(frozen=True)``; ``_summary`` names the
    derived properties (totals) that ``str`` shows after the fields.
    Fields declared with ``repr=False`` (bulky details) are left out of
    ``str`` but kept by :meth:`as_dict`.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Timing(Report):
    ...     n_removed: int
    ...     seconds: float
    >>> r = Timing(3, 0.25)
    >>> r.as_dict()
    {'n_removed': 3, 'seconds': 0.25}
    >>> print(r)
    Timing
      n_removed  3
      seconds    0.25
    """

    _summary: ClassVar[tuple[str, ...]] = ()

    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict, in declaration order.

        Returns
        -------
        fields : dict
            Field name -> value, as stored (not copied):
            ``type(r)(**r.as_dict()) == r``.
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __str__(self):
        rows = [(f.name, getattr(self, f.name)) for f in fields(self) if f.repr]
        rows += [(name, getattr(self, name)) for name in self._summary]
        width = max((len(name) for name, _ in rows), default=0)
        lines = [type(self).__name__]
        lines += [f"  {name:<{width}}  {_cell(value)}" for name, value in rows]
        return "\n".join(lines)


def _cell(value):
    """One value of a report's table: floats to 6 significant digits, long
    or nested tuples as their length."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, tuple) and (len(value) > 8 or not all(
            isinstance(v, (numbers.Number, str)) for v in value)):
        return f"({len(value)} items)"
    return str(value)
