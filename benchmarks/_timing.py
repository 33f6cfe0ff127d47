"""Timing helpers shared by the benchmark scripts (issue 20).

One place for what the scripts used to write each for itself: the two clocks, one timed
call, repeated measurements and their medians, A/B runs interleaved so that machine noise
hits both sides, a timer around a method of a running object, one-thread runs, and the
seconds format of the tables.

Clocks: ``"cpu"`` is ``time.process_time`` (CPU seconds of all the process's threads; the
default, because other jobs share the machines the benchmarks run on) and ``"wall"`` is
``time.perf_counter``.

The module imports the standard library only, so it also loads in an interpreter that has
nothing else installed (compare_flower_secagg.py runs it inside the Flower environment);
threadpoolctl is imported by :func:`single_thread` alone.  The scripts import it as
``from _timing import ...``: a script's own folder is first on ``sys.path``, and pytest
puts ``benchmarks/`` there for the ``bench_*.py`` files.

Examples
--------
>>> from _timing import call, compare, format_seconds, measure, single_thread
>>> with single_thread():
...     t = measure(lambda: sum(range(1000)), repeat=5)     # CPU time, 5 samples
...     a, b, ratio = compare(lambda: sorted(range(1000)), lambda: list(range(1000)), 3)
>>> t.runs, t.result
(5, 499500)
>>> seconds, out = call(lambda: 2 + 2, clock="wall")
>>> out
4
>>> format_seconds(0.0123)
'12.3 ms'
"""
import functools
import math
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def get_clock(clock):
    """The timer function of ``clock`` (``"cpu"`` or ``"wall"``).

    Raises
    ------
    ValueError
        For any other name.
    """
    try:
        return CLOCKS[clock]
    except (KeyError, TypeError):
        raise ValueError(f"clock={clock!r} should be one of {sorted(CLOCKS)}") from None


@dataclass(frozen=True)
class Timing:
    """Samples of one measurement.

    Attributes
    ----------
    samples : tuple of float
        Seconds per call, one entry per sample, in the order they were taken.
    number : int
        Calls per sample (each sample is the sample's total divided by ``number``).
    clock : str
        ``"cpu"`` or ``"wall"``.
    result : object
        What the last timed call returned.
    """

    samples: tuple[float, ...]
    number: int = 1
    clock: str = "cpu"
    result: Any = field(default=None, repr=False, compare=False)

    @property
    def median(self):
        """Median of the samples (seconds per call)."""
        return statistics.median(self.samples)

    @property
    def min(self):
        """Fastest sample (seconds per call)."""
        return min(self.samples)

    @property
    def runs(self):
        """Number of samples taken."""
        return len(self.samples)


def call(fn, *, clock="cpu"):
    """Time one call ``fn()``; returns ``(seconds, what fn returned)``."""
    now = get_clock(clock)
    t = now()
    out = fn()
    return now() - t, out


class Stopwatch:
    """CPU and wall seconds of a block, both clocks at once.

    Started when made; ``with Stopwatch() as sw:`` starts it again on entry and stops it on
    exit.  ``cpu`` and ``wall`` are the seconds so far while it runs, then the seconds of the
    block.

    >>> with Stopwatch() as sw:
    ...     _ = sum(range(1000))
    >>> sw.cpu >= 0 and sw.wall >= 0
    True
    """

    def __init__(self):
        self._begin()

    def _begin(self):
        self._stop = None
        self._start = (time.process_time(), time.perf_counter())

    def __enter__(self):
        self._begin()
        return self

    def __exit__(self, *exc):
        self._stop = (time.process_time(), time.perf_counter())
        return False

    def _elapsed(self, i):
        end = self._stop[i] if self._stop is not None else CLOCKS[("cpu", "wall")[i]]()
        return end - self._start[i]

    @property
    def cpu(self):
        return self._elapsed(0)

    @property
    def wall(self):
        return self._elapsed(1)


def call_cpu_wall(fn):
    """Time one call ``fn()`` on both clocks; returns ``(cpu seconds, wall seconds, result)``."""
    with Stopwatch() as sw:
        out = fn()
    return sw.cpu, sw.wall, out


def _autorange(fn, now, min_time):
    """The smallest number in 1, 2, 5, 10, 20, 50, ... of calls that last ``min_time``."""
    for exp in range(10):
        for mult in (1, 2, 5):
            number = mult * 10 ** exp
            t = now()
            for _ in range(number):
                fn()
            if now() - t >= min_time:
                return number
    return number


def measure(fn, *, repeat=5, number=1, min_time=0.2, clock="cpu", warmup=0):
    """Time ``fn()`` ``repeat`` times.

    Parameters
    ----------
    fn : callable
        Called without arguments; everything it does is inside the timed region.
    repeat : int
        Samples to take.
    number : int or None
        Calls per sample (a sample is their total over ``number``); None picks the smallest
        of 1, 2, 5, 10, 20, ... whose calls last ``min_time`` (as ``timeit``'s autorange,
        the calls that pick it are not timed).
    min_time : float
        Seconds a sample should last when ``number`` is None.
    clock : {"cpu", "wall"}
    warmup : int
        Untimed calls before the first sample.

    Returns
    -------
    Timing
        Seconds per call, one sample per repeat, and the last call's result.
    """
    now = get_clock(clock)
    if repeat < 1:
        raise ValueError(f"repeat={repeat} should be >= 1")
    for _ in range(warmup):
        fn()
    if number is None:
        number = _autorange(fn, now, min_time)
    samples = []
    out = None
    for _ in range(repeat):
        t = now()
        for _ in range(number):
            out = fn()
        samples.append((now() - t) / number)
    return Timing(tuple(samples), number, clock, out)


def interleave(fns, repeat, *, clock="cpu", warmup=0, max_first_seconds=None):
    """Time several callables in turns: round r runs each of ``fns`` once, in order.

    Noise of the machine (another job, frequency changes) then falls on every side, so the
    ratios of one run are steadier than times taken apart.

    Parameters
    ----------
    fns : mapping of name to callable
        Each called without arguments.
    repeat : int
        Rounds.
    clock : {"cpu", "wall"}
    warmup : int
        Untimed rounds first.
    max_first_seconds : float or None
        A callable whose first timed run took longer is not run again (its Timing has one
        sample).

    Returns
    -------
    dict of name to Timing
        With the last output of each callable in ``result``.
    """
    now = get_clock(clock)
    if repeat < 1:
        raise ValueError(f"repeat={repeat} should be >= 1")
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times = {k: [] for k in fns}
    outs = {}
    for rep in range(repeat):
        for k, fn in fns.items():
            if rep > 0 and max_first_seconds is not None and times[k][0] > max_first_seconds:
                continue
            t = now()
            outs[k] = fn()
            times[k].append(now() - t)
    return {k: Timing(tuple(v), 1, clock, outs[k]) for k, v in times.items()}


def compare(fa, fb, repeat, *, clock="cpu", warmup=0):
    """Interleaved runs of ``fa`` and ``fb`` (a, b, a, b, ...).

    Returns
    -------
    (median_a, median_b, ratio)
        Median seconds of each and ``median_a / median_b`` (> 1: ``fb`` is faster).
    """
    r = interleave({"a": fa, "b": fb}, repeat, clock=clock, warmup=warmup)
    a, b = r["a"].median, r["b"].median
    return a, b, a / b if b > 0 else math.inf


@contextmanager
def single_thread():
    """BLAS and OpenMP capped at one thread inside the block (``threadpool_limits(1)``).

    Both sides of a comparison then run single-threaded in the same environment.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


class timed_calls(list):
    """Time every call of ``owner.<name>``; the list of seconds, one entry per call.

    Replaces the attribute (a method of a class, or of one object) by a wrapper that times
    the original and changes nothing else.  ``restore()``, or leaving the ``with`` block,
    puts the original back.  If ``owner`` is None or has no attribute ``name`` nothing is
    wrapped, ``wrapped`` is False and the list stays empty (the scripts wrap private methods,
    which may go).

    >>> class A:
    ...     def f(self, x):
    ...         return 2 * x
    >>> with timed_calls(A, "f") as times:
    ...     A().f(3)
    6
    >>> len(times)
    1
    """

    def __init__(self, owner, name, *, clock="cpu"):
        super().__init__()
        now = get_clock(clock)
        self._owner, self._name = owner, name
        inner = getattr(owner, name, None) if owner is not None else None
        self._saved = None
        self.wrapped = inner is not None
        if inner is None:
            return
        own = vars(owner) if hasattr(owner, "__dict__") else {}
        self._saved = (name in own, own.get(name))

        @functools.wraps(inner)
        def wrapped(*a, **kw):
            t = now()
            try:
                return inner(*a, **kw)
            finally:
                self.append(now() - t)

        setattr(owner, name, wrapped)

    def restore(self):
        """Put the original attribute back (once; later calls do nothing)."""
        if self._saved is None:
            return
        had, value = self._saved
        if had:
            setattr(self._owner, self._name, value)
        else:
            delattr(self._owner, self._name)
        self._saved = None
        self.wrapped = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.restore()
        return False



def format_seconds(t, runs=None, repeats=None):
    """Seconds as the tables print them: ``0.25 ms``, ``12.3 ms``, ``1.50 s``; None as ``-``.

    With ``runs < repeats`` (a measurement not repeated as often as asked) the count follows:
    ``2.10 s (1 run)``.
    """
    if t is None:
        return "-"
    if t < 0.01:
        out = f"{t * 1e3:.2f} ms"
    elif t < 1:
        out = f"{t * 1e3:.1f} ms"
    else:
        out = f"{t:.2f} s"
    if runs is not None and repeats is not None and runs < repeats:
        out += f" ({runs} run{'s' if runs > 1 else ''})"
    return out
