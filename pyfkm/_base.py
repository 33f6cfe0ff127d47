"""Estimator conventions (scikit-learn style, without depending on it)."""
import inspect

from .exceptions import InvalidInputError, NotFittedError


class BaseEstimator:
    """``get_params`` / ``set_params`` from the constructor signature.

    The constructor stores each hyper-parameter under its own name and does
    nothing else; validation happens in ``fit``.
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
