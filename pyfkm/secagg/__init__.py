"""Secure compressed multiset aggregation (SCMA, Pan et al., ICLR 2023, Alg. 2).

``L`` clients each hold a sparse count vector over a huge bin space (``B**d``
bins); the server must learn the sum and nothing else.  Each client sends
``2M`` power sums of its counts over F_p (``M`` bounds the aggregate's
nonzero bins), masked with pairwise masks that cancel in the sum
(X25519 key agreement, HKDF-SHA256 seeds bound to the run and the pair,
ChaCha20 mask streams fresh for every round); the server adds the messages
and decodes the aggregate with :mod:`pyfkm.field` (Berlekamp-Massey, roots,
Vandermonde).  Message size is ``O(M log p)``, independent of ``B**d``.

Security model: honest-but-curious server, clients that do not collude with
it, every participant of a round responds (a missing one makes the server
raise, never return a wrong sum).  With a single participant the aggregate
is that client's vector.

Two encodings: ``"index"`` (the paper's: bin -> 1 + its grid index, needs
``B**d < p``) and ``"hashed"`` (bin -> public random linear hash in F_p^*,
coordinates sent as ``ceil(d / c)`` payload rows of ``M`` syndromes, ``c =
floor(log_B p)``, plus one row of an independent squared check hash; a hash
collision is detected and raises :class:`DecodeError`).

Unlearning rounds.  Decoding is incremental: the server decodes the
*difference* to the last aggregate (the message of the change, by
linearity), which costs little when few bins changed.  And when few clients
changed their data, the server can open a *difference round*
(``ScmaServer.start_round(delta_nonzeros=m)``): every participant sends its
change since the last decoded round, for at most ``m`` changed bins, under
fresh masks of ``2m + rows m`` words instead of ``2M + rows M``.  The server
learns what a full round tells it (the new aggregate) and nothing else; if
the change does not fit, the round fails to decode and a full round is run.

Offline and batch work.  A client can compute the masks of several future
rounds ahead of time (``ScmaClient.precompute_mask(round, participants,
delta_nonzeros, n_rounds)``, one kernel call), so that answering such a
round is one addition; each cached mask serves its own round once.  A
server draining its queue takes a round's wire messages in one call
(``ScmaServer.receive_many``: the same checks, all messages or none).

Communication per client and round: ``44 + 4 + 8 (2M + rows M)`` bytes
(``ScmaReport.bytes_per_client``), against ``2 K L ceil(log2 p)`` bits in the
paper's count (index mode, ``M = K L``) and ``B**d ceil(log2 p)`` bits for a
dense masked sum (``ScmaReport.dense_bits_per_client``).

>>> from pyfkm.secagg import secure_sum_sparse
>>> bins, counts, report = secure_sum_sparse(
...     [([[1, 2, 3]], [2]), ([[1, 2, 3], [0, 0, 7]], [1, 5])],
...     bins_per_dim=10**7, random_state=0)
>>> bins.tolist(), counts.tolist(), report.mode
([[0, 0, 7], [1, 2, 3]], [5, 3], 'hashed')
"""
from ..exceptions import (CapacityError, DecodeError, InvalidInputError,
                          MessageFormatError, ProtocolError)
from ._driver import secure_sum_sparse
from ._msa import (AggregateMessage, GroupKeyMessage, MaskedVectorMessage, MsaClient,
                   MsaRosterMessage, MsaServer, setup_msa)
from ._messages import KeyMessage, RosterMessage, RoundMessage, SyndromeMessage
from ._params import ScmaParams
from ._roles import ScmaClient, ScmaReport, ScmaResult, ScmaServer

__all__ = [
    "ScmaParams",
    "ScmaClient",
    "ScmaServer",
    "ScmaResult",
    "ScmaReport",
    "KeyMessage",
    "RosterMessage",
    "RoundMessage",
    "SyndromeMessage",
    "secure_sum_sparse",
    "MsaClient",
    "MsaServer",
    "MsaRosterMessage",
    "GroupKeyMessage",
    "MaskedVectorMessage",
    "AggregateMessage",
    "setup_msa",
    "ProtocolError",
    "MessageFormatError",
    "DecodeError",
    "CapacityError",
    "InvalidInputError",
]
