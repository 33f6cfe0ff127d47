"""Bad inputs shared by the error tests of several estimators."""


def nonfinite_copies(X):
    """Copies of ``X`` with a NaN at [3, 1], +inf at [0, 0] and -inf at [5, 1]."""
    x_nan, x_inf, x_ninf = X.copy(), X.copy(), X.copy()
    x_nan[3, 1] = float("nan")
    x_inf[0, 0] = float("inf")
    x_ninf[5, 1] = -float("inf")
    return x_nan, x_inf, x_ninf
