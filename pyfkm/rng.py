"""Seeds in, generators out.

Every random choice in pyfkm flows from a user seed through an explicit
:class:`numpy.random.Generator` whose bit generator state is handed to the C
kernels; nothing reads a global random state.
"""
from __future__ import annotations

import numbers
from typing import Any, Callable, Union

import numpy as np

from .exceptions import InvalidInputError

__all__ = ["as_generator", "spawn"]

#: What every ``random_state`` parameter of pyfkm accepts (for annotations):
#: ``None`` (fresh OS entropy), a nonnegative int, a
#: :class:`numpy.random.SeedSequence`, a :class:`numpy.random.Generator` or a
#: legacy :class:`numpy.random.RandomState`.
SeedLike = Union[int, np.integer, np.random.Generator, np.random.SeedSequence,
                 np.random.RandomState, None]


def as_generator(random_state: SeedLike = None) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``random_state``.

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
        ``None`` draws fresh OS entropy (not reproducible); an int or a
        SeedSequence seeds a new PCG64 generator; a Generator is used as is
        (and advanced by the caller's use); a legacy
        :class:`numpy.random.RandomState` (scikit-learn's convention) seeds
        a new PCG64 generator with 128 bits drawn from it, so it advances
        and the same RandomState state gives the same generator.

    Returns
    -------
    generator : numpy.random.Generator
        The generator (``random_state`` itself when it is one).

    Raises
    ------
    InvalidInputError
        If ``random_state`` is a negative int or of another type.

    Examples
    --------
    >>> g = as_generator(42)
    >>> float(g.random()) == float(as_generator(42).random())
    True
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.RandomState):
        words = random_state.randint(0, 2 ** 32, size=4, dtype=np.uint64)
        return np.random.default_rng(np.random.SeedSequence([int(v) for v in words]))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise InvalidInputError(
                f"random_state={random_state} must be a nonnegative integer")
        return np.random.default_rng(int(random_state))
    raise InvalidInputError(
        "random_state must be None, a nonnegative int, a numpy.random.SeedSequence, "
        "a numpy.random.Generator or a numpy.random.RandomState, got "
        f"{type(random_state).__name__}")


def spawn(random_state: SeedLike, n: int) -> list[np.random.Generator]:
    """Return ``n`` independent child generators of ``random_state``.

    Parameters
    ----------
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        The parent, as :func:`as_generator` takes it.
    n : int
        Number of children.

    Returns
    -------
    generators : list of numpy.random.Generator
        ``n`` statistically independent generators (``Generator.spawn``).

    Examples
    --------
    >>> a, b = spawn(0, 2)
    >>> float(a.random()) != float(b.random())
    True
    """
    return as_generator(random_state).spawn(int(n))


def _twin_seed_seq(ss: Any) -> np.random.SeedSequence:
    """A copy of SeedSequence ``ss`` that spawns the same children next."""
    return np.random.SeedSequence(ss.entropy, spawn_key=ss.spawn_key, pool_size=ss.pool_size,
                                  n_children_spawned=ss.n_children_spawned)


def copy_generator(gen: np.random.Generator) -> np.random.Generator:
    """An independent Generator in ``gen``'s current state, with a copy of
    its seed sequence (so that it spawns the same children); several times
    cheaper than ``copy.deepcopy``."""
    bg = type(gen.bit_generator)(_twin_seed_seq(gen.bit_generator.seed_seq))
    bg.state = gen.bit_generator.state
    return np.random.Generator(bg)


def spawn_aside(gen: Any, n: int) -> tuple[list[np.random.Generator], Callable[[], object]]:
    """``(children, commit)``: the generators ``gen.spawn(n)`` would return,
    drawn from a twin of its seed sequence so that ``gen`` is unchanged until
    ``commit()`` (a call that fails leaves a user's generator as it was)."""
    ss = gen.bit_generator.seed_seq
    bg = type(gen.bit_generator)
    return ([np.random.Generator(bg(c)) for c in _twin_seed_seq(ss).spawn(n)],
            lambda: ss.spawn(n))
