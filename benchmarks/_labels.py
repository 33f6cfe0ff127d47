"""Group and id labels shared by the microbenchmark files."""


def sci(n):
    """100000 -> '1e5', 60000 -> '6e4' (labels of groups and ids)."""
    m, e = f"{n:.0e}".split("e")
    return f"{m}e{int(e)}"


def shape_id(shape):
    n, d, k = shape
    return f"n={sci(n)}-d={d}-k={k}"
