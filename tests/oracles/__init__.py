"""Test oracles shared by the test modules (and the benchmarks' baselines):
plain Python / numpy twins of the C kernels (``lattice``, ``lloyd``,
``seeding``), written for clarity, not speed, with no input validation; and
``forensics``, which searches objects, pickles and files for removed values.

Not shipped in the wheel: ``tests/`` is on ``sys.path`` when pytest runs the
tests (rootdir-relative imports) and ``benchmarks/conftest.py`` adds it.
"""
