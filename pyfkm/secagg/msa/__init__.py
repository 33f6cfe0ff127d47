"""Masked secure aggregation (MSA) in the ring Z_2^64, with distributed noise.

The aggregation step of FastLloyd (Diaa, Humphries and Kerschbaum): each
client encodes a real vector in fixed point (``round(x * 2**scale_bits)``,
two's complement in Z_2^64), adds its share of the differential-privacy
noise and its masks and sends it; the server removes what the masking
protocol lets it remove and broadcasts; clients remove the output masks and
decode.  The server sees neither the clients' vectors nor the (noisy) sum.

Masks.  The masking protocol of :mod:`pyfkm.secagg` (Bonawitz et al. 2017
with the SecAgg+ graph): per round a fresh self mask and pair masks with
the neighbours, keyed by fresh OS keys, with dropout recovery and a
threshold; and output masks under a group key drawn by the lowest client
id, so that the server only ever holds uniformly masked words.

Modules:

* ``_fixed``: fixed point in Z_2^64 (and its overflow bounds) and the
  ring's mask streams;
* ``_noise``: the clients' shares of distributed discrete Gaussian noise
  (the guarantee and its accounting are in ``docs/threat_model.md``);
* ``_messages``: MSA's own wire messages (:class:`MsaRosterMessage`,
  :class:`GroupKeyMessage`, :class:`MaskedVectorMessage`,
  :class:`AggregateMessage`);
* ``_client`` and ``_server``: the two roles (the output masks are the
  client's);
* ``_driver``: the in-process drivers (:func:`setup_msa`, :func:`msa_round`).

>>> from pyfkm.secagg.msa import msa_round, setup_msa
>>> server, clients = setup_msa(3, 2, threshold=2)
>>> total, survivors = msa_round(server, clients, [[1.0, -2.0], [0.5, 0.25], [2.0, 0.0]])
>>> total.tolist(), survivors
([3.5, -1.75], (0, 1, 2))
"""
from ._client import MsaClient
from ._driver import msa_key_batch, msa_round, setup_msa
from ._keybatch import MAX_BATCH, max_batch_rounds
from ._fixed import DEFAULT_SCALE_BITS
from ._messages import (AggregateMessage, GroupKeyMessage, KeyBatchBundle, KeyBatchMessage,
                        MaskedVectorMessage, MsaRosterMessage)
from ._noise import check_discrete_sigma
from ._server import MsaServer

# deliberate repetition: pyfkm.secagg re-exports these names and lists them
# in its own literal __all__
__all__ = [
    "MsaClient",
    "MsaServer",
    "MsaRosterMessage",
    "GroupKeyMessage",
    "MaskedVectorMessage",
    "AggregateMessage",
    "KeyBatchMessage",
    "KeyBatchBundle",
    "setup_msa",
    "msa_key_batch",
    "msa_round",
    "MAX_BATCH",
    "max_batch_rounds",
    "DEFAULT_SCALE_BITS",
    "check_discrete_sigma",
]
