"""Optional progress reporting for long protocol runs.

``progress`` arguments accept False/None (silent, the library default),
True (a bar on stderr for work that runs longer than a second: :mod:`tqdm`
when installed, else a plain line every 10%), or a callable ``f(done, total,
description)`` called after each step.  :func:`progress_bar` gives the bar;
:func:`track` wraps a loop in one (the benchmarks' and the command line's
long loops).
"""
import sys
import time

# a bar appears only for work that has run this long (short rounds stay quiet)
DELAY = 1.0


class _Line:
    def __init__(self, total, desc):
        self.total, self.desc, self.done, self._shown = max(int(total), 1), desc, 0, -1
        self._t0 = time.monotonic()

    def update(self, n=1):
        self.done += n
        tenth = 10 * self.done // self.total
        if tenth != self._shown and time.monotonic() - self._t0 >= DELAY:
            self._shown = tenth
            print(f"{self.desc}: {self.done}/{self.total}", file=sys.stderr, flush=True)

    def close(self):
        pass


class _Callback:
    def __init__(self, f, total, desc):
        self.f, self.total, self.desc, self.done = f, total, desc, 0

    def update(self, n=1):
        self.done += n
        self.f(self.done, self.total, self.desc)

    def close(self):
        pass


class _Silent:
    def update(self, n=1):
        pass

    def close(self):
        pass


def progress_bar(progress, total, desc):
    """An object with ``update(n=1)`` and ``close()`` for ``progress``."""
    if not progress:
        return _Silent()
    if callable(progress):
        return _Callback(progress, total, desc)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _Line(total, desc)
    return tqdm(total=total, desc=desc, leave=False, delay=DELAY)


def track(iterable, progress, desc, total=None):
    """Yield the items of ``iterable``, reporting each one done to ``progress``.

    Parameters
    ----------
    iterable : iterable
    progress : bool, None or callable
        As for :func:`progress_bar`.
    desc : str
        What the loop does (the bar's label).
    total : int, optional
        Number of items (default: ``len(iterable)``).

    Examples
    --------
    >>> seen = []
    >>> [x * x for x in track(range(3), lambda d, t, s: seen.append((d, t)), "squares")]
    [0, 1, 4]
    >>> seen
    [(1, 3), (2, 3), (3, 3)]
    """
    bar = progress_bar(progress, len(iterable) if total is None else total, desc)
    try:
        for item in iterable:
            yield item
            bar.update()
    finally:
        bar.close()
