"""Helpers shared by several test files (not tests, not oracles).

The oracles -- pure Python/numpy twins of the kernels -- are in ``oracles``;
these are the fixtures' building blocks: data makers, protocol runners and
state comparisons used by more than one test file.
"""
