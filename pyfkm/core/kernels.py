"""The compiled kernel modules owned by :mod:`pyfkm.core`, for the families
built on it.

* ``lloyd``: assignment, Lloyd loops and traces (``csrc/fkm_lloyd*.c``);
* ``seeding``: k-means++ seeding, races and traces (``csrc/fkm_seeding.c``);
* ``lattice``: quantization and bin numbering (``csrc/fkm_lattice.c``);
* ``noise``: the ChaCha20 stream and the noise samplers (``csrc/fkm_noise.c``).

They are the raw kernels: arguments must be C-contiguous arrays of the
documented dtypes; the kernels check what protects memory and raise
:class:`pyfkm.exceptions.PyfkmError` subclasses, nothing more.  The public
functions and classes of :mod:`pyfkm.core` are the checked way in.

Examples
--------
>>> import numpy as np
>>> from pyfkm.core import kernels
>>> kernels.lattice.flatten(np.array([[1, 2]]), 4).tolist()
[6]
"""
from .._core import _lattice as lattice
from .._core import _lloyd as lloyd
from .._core import _noise as noise
from .._core import _seeding as seeding

__all__ = ["lattice", "lloyd", "noise", "seeding"]
