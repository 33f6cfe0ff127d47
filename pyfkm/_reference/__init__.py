"""Plain Python / numpy twins of the C kernels, used as test oracles and
benchmark baselines.  Written for clarity, not speed; no input validation."""
