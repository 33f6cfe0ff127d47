"""Estimator conventions (scikit-learn style, without depending on it) and
the base of the reports that operations return."""
import inspect
import numbers
from dataclasses import dataclass, fields

from .exceptions import InvalidInputError, NotFittedError

__all__ = ["BaseEstimator", "Report"]


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

    def get_params(self, deep=True):
        """Hyper-parameters as a dict (``deep`` is accepted for compatibility)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set hyper-parameters; unknown names raise InvalidInputError."""
        valid = set(self._param_names())
        for name in params:  # all names first: a bad call changes nothing
            if name not in valid:
                raise InvalidInputError(
                    f"invalid parameter {name!r} for {type(self).__name__}; "
                    f"valid parameters: {sorted(valid)}")
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items()
                         if not hasattr(v, "shape"))
        return f"{type(self).__name__}({args})"

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

    _summary = ()

    def as_dict(self):
        """The fields as a dict, in declaration order (values as stored, not
        copied: ``type(r)(**r.as_dict()) == r``)."""
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
