"""SCMA: secure compressed multiset aggregation of sparse count vectors.

Pan et al. (ICLR 2023, Alg. 2) over the masking protocol of
:mod:`pyfkm.secagg` (keys, Shamir-shared secrets, dropout recovery): each
client sends ``2M`` power sums of its counts over F_p under masks that
cancel in the sum, and the server decodes the aggregate with
:mod:`pyfkm.field`.  The overview, the encodings and the difference rounds
of unlearning are described in :mod:`pyfkm.secagg`.

Modules (each protocol step where its data lives):

* ``_params``: :class:`ScmaParams`, the public parameters of a run, and
  :func:`delta_params`, those of its difference rounds;
* ``_codec``: encoding of sparse counts and decoding of their sum;
* ``_crypto``: the mask streams over F_p and the hashed mode's public hash;
* ``_messages``: SCMA's own wire messages (:class:`RosterMessage`,
  :class:`SyndromeMessage`);
* ``_client`` and ``_server``: the two roles;
* ``_driver``: the in-process drivers (:class:`RoundTrip`,
  :func:`setup_in_process`, :func:`secure_sum_sparse`).

>>> from pyfkm.secagg.scma import ScmaParams, delta_params
>>> P = ScmaParams.create(n_dims=2, bins_per_dim=10, max_nonzeros=4)
>>> delta_params(P, 2).max_nonzeros, delta_params(P, 2).mode
(2, 'hashed')
"""
from ._client import ScmaClient
from ._driver import RoundTrip, secure_sum_sparse, setup_in_process
from ._messages import RosterMessage, SyndromeMessage
from ._params import ScmaParams, delta_params
from ._server import ScmaReport, ScmaResult, ScmaServer

__all__ = [
    "ScmaParams",
    "delta_params",
    "ScmaClient",
    "ScmaServer",
    "ScmaResult",
    "ScmaReport",
    "RosterMessage",
    "SyndromeMessage",
    "RoundTrip",
    "setup_in_process",
    "secure_sum_sparse",
]
