"""Secure aggregation: SCMA for sparse counts, MSA for real vectors.

Both run on one masking protocol (:mod:`._masking`): Bonawitz et al. (CCS
2017) with the sparse neighbour graph of SecAgg+ (Bell et al., CCS 2020).
The threat model -- who may collude, what the server learns, dropouts,
repeated rounds, what is out of scope -- is ``docs/threat_model.md``; in
short:

* **Keys only from the OS.**  A client draws a fresh X25519 channel key for
  every run and a fresh round key and self-mask seed for every round; the
  run id comes from ``os.urandom``.  No ``random_state`` reaches any of
  them, and every mask stream is keyed by material used in one round only.
* **Threshold.**  Every client refuses any step of a round with fewer than
  ``threshold`` clients (default: a strict majority), so the server only
  ever learns sums over at least ``threshold`` clients.
* **Dropouts.**  Round keys and self seeds are Shamir-shared among a
  client's neighbours; when clients drop after sharing, the survivors
  reveal the shares of the dropped clients' round keys (and of the
  survivors' self seeds, never both kinds for one peer), and the round
  completes with the survivors' exact sum.  Too many dropouts raise
  :class:`ProtocolError`.
* **No differencing.**  Within a run, a client refuses to have the same data
  summed over a different set of survivors than the last full round it was
  summed in; a late client stays hidden behind its self mask.
* **Integrity.**  Every derivation is bound to a digest of the roster; every
  client message carries a tag the server checks (altered, replayed or
  re-addressed messages are refused, never summed); decoded SCMA counts are
  range-checked; parameters whose messages exceed a documented cap are
  refused.

SCMA (:mod:`.scma`; secure compressed multiset aggregation, Pan et al.,
ICLR 2023, Alg. 2).  ``L`` clients each hold a sparse count vector over a huge bin space
(``B**d`` bins); each sends ``2M`` power sums of its counts over F_p (``M``
bounds the aggregate's nonzero bins) under masks that cancel in the sum; the
server decodes the aggregate with :mod:`pyfkm.field` (Berlekamp-Massey,
roots, Vandermonde).  Message size is ``O(M log p)``, independent of
``B**d``.  Two encodings: ``"index"`` (the paper's: bin -> 1 + its grid
index, needs ``B**d < p``; extra power sums detect an over-full aggregate)
and ``"hashed"`` (bin -> public random linear hash in F_p^*, coordinates as
payload rows plus a check row; a collision raises :class:`DecodeError`).

Unlearning rounds.  Decoding is incremental, and a server can ask for a
*difference round* (``ScmaServer.request_inputs(delta_nonzeros=m)``): every
client sends its change since the last decoded round under fresh masks of
``2m + rows m`` words.  The server learns what a full round tells it.

Offline work.  Key sharing involves no data, so a driver can run it ahead
of time; a client can then precompute its mask for the round
(``ScmaClient.precompute_mask``), so answering is one addition.

MSA (:mod:`.msa`): fixed point in Z_2^64 for FastLloyd, with an output
mask so the server never sees the sum in the clear, and distributed
discrete Gaussian noise added by the clients.

Layout.  This package holds what both protocols share: the masking
protocol's two halves (:mod:`._masking`), its keys, derivations and graph
(:mod:`._keys`), Shamir sharing (:mod:`._shamir`), the message framing
(:mod:`._framing`), the shared messages (:mod:`._messages`) and the
server's shared round steps (:mod:`._steps`).  Each protocol's parameters,
messages, roles and drivers are in its subpackage, :mod:`.scma` and
:mod:`.msa`, which import from here and never from each other.

>>> from pyfkm.secagg import secure_sum_sparse
>>> bins, counts, report = secure_sum_sparse(
...     [([[1, 2, 3]], [2]), ([[1, 2, 3], [0, 0, 7]], [1, 5]), ([[4, 4, 4]], [1])],
...     bins_per_dim=10**7, dropouts=[2])
>>> bins.tolist(), counts.tolist(), report.mode, report.dropped
([[0, 0, 7], [1, 2, 3]], [5, 3], 'hashed', (2,))
"""
from ..exceptions import (CapacityError, DecodeError, InvalidInputError,
                          MessageFormatError, ProtocolError)
from ._keys import default_threshold, sparse_degree
from ._messages import (InputRequest, KeyMessage, RoundMessage, ShareBundle, ShareMessage,
                        UnmaskMessage, UnmaskRequest)
from .msa import (DEFAULT_SCALE_BITS, AggregateMessage, GroupKeyMessage, KeyBatchBundle,
                  KeyBatchMessage, MaskedVectorMessage, MsaClient, MsaRosterMessage, MsaServer,
                  check_discrete_sigma, max_batch_rounds, msa_key_batch, msa_round, setup_msa)
from .scma import (RosterMessage, RoundTrip, ScmaClient, ScmaParams, ScmaReport, ScmaResult,
                   ScmaServer, SyndromeMessage, secure_sum_sparse, setup_in_process)

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
    "ShareMessage",
    "ShareBundle",
    "InputRequest",
    "UnmaskRequest",
    "UnmaskMessage",
    "RoundTrip",
    "setup_in_process",
    "secure_sum_sparse",
    "sparse_degree",
    "default_threshold",
    # MSA's public names again (deliberate: every __all__ is a literal list
    # that pyflakes, IDEs and Sphinx read; pyfkm.secagg.msa lists them too)
    "msa_round",
    "msa_key_batch",
    "max_batch_rounds",
    "KeyBatchMessage",
    "KeyBatchBundle",
    "MsaClient",
    "MsaServer",
    "MsaRosterMessage",
    "GroupKeyMessage",
    "MaskedVectorMessage",
    "AggregateMessage",
    "setup_msa",
    "DEFAULT_SCALE_BITS",
    "check_discrete_sigma",
    "ProtocolError",
    "MessageFormatError",
    "DecodeError",
    "CapacityError",
    "InvalidInputError",
]
