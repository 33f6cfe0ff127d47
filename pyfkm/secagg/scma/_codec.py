"""SCMA encoding of sparse count vectors and decoding of their sum.

A client with distinct bins ``b_j`` and counts ``q_j`` maps each bin to a
nonzero node ``x_j`` of F_p and sends the power sums

    S_i = sum_j q_j x_j**i            (i < 2M)

plus, in the hashed mode, payload sums ``T_{t,i} = sum_j q_j v_{j,t} x_j**i``
(``i < M``) where ``v_{j,t}`` packs ``c`` coordinates of ``b_j`` base ``B``,
and one check row with ``v_j = g(b_j)``, an independent hash squared.
All maps are linear in the counts, so the sum of the clients' messages is
the message of the aggregate.  The server decodes it: Berlekamp-Massey on
``S`` gives ``prod_j (1 - x_j z)``, its roots give the nodes, one
Vandermonde solve gives the counts, and ``n_payload_rows`` more solves on
the same nodes give ``q_j v_{j,t}``, hence the coordinates.  A decoded bin
must hash back to its node, pass the check hash, and every coordinate must
be in range, which detects hash collisions and inconsistent input
(:class:`DecodeError`); the redundant syndromes are verified too.

Over-full aggregates in the index mode.  ``2M`` power sums of a vector of
``m > M`` nonzeros are also the power sums of *some* vector of at most ``M``
nonzeros whenever Berlekamp-Massey, the roots and the solve go through
(e.g. counts 1, 1 at nodes 11, 31 and ``M = 1``: ``S = (2, 42)`` is the
message of count 2 at node 21), so the index mode sends one check word more,

    R = sum_j q_j / (t - x_j)

at a public point ``t`` drawn from the run's hash seed uniformly on
``T = {0} u {B**d + 1, ..., p - 1}`` (never a node: nodes are
``1 .. B**d``), and the server recomputes ``R`` from the decoded candidate
(nodes, checked to be distinct bin indices in ``1 .. B**d``, and nonzero
counts).  Let ``delta`` be the true aggregate (``m`` nonzeros) minus the
candidate (``m' <= M`` nonzeros): it is supported on ``k <= m + M`` distinct
nodes, its first ``2M`` power sums vanish (the candidate was solved from
them) and, if the check passes, ``sum_j delta_j / (t - x_j) = 0``.  Write
that sum as ``N(t) / prod_j (t - x_j)``: ``N`` is nonzero when ``delta`` is
(``N(x_j) = delta_j prod_{i != j} (x_j - x_i)``) and the vanishing of
``S_0 .. S_{2M-1}`` means ``N(t) / prod(t - x_j) = O(t**(-2M-1))`` at
infinity, so ``deg N <= k - 1 - 2M <= m - M - 1``.  Hence

* ``m = M + 1`` (more generally ``m + m' <= 2M + 1``): ``N`` is a nonzero
  constant, the check fails for every ``t`` -- detection is deterministic,
  whatever the data (this is what one more power sum ``S_{2M}`` would give,
  at the same cost);
* larger ``m``: the candidate depends only on ``S``, not on ``t``, so for an
  aggregate fixed independently of the seed (honest clients; the seed is
  drawn by the OS when the parameters are created) the check passes with
  probability at most ``(m - M - 1) / (p - B**d)`` over the seed, about
  ``m 2**-62`` with the default prime and a MUFC grid.  The seed is public
  (secret-free): a client that knows it can aim an over-full aggregate at
  ``N(t) = 0``, as it can already send any vector it likes; the check is
  about honest aggregates that outgrow ``M``, not about dishonest clients.
* In a tiny field (``B**d = p - 1``, so ``T = {0}``) only the deterministic
  part remains (``R = -S_{-1}``).

``s`` extra power sums would make detection deterministic up to
``m = M + s`` for ``s`` words; the hashed mode's check row costs ``M``
words.  One word keeps the message at ``2M + 1`` (``2M`` before) and
covers every ``m`` (see ``ScmaParams.n_check_words``).  An incremental
decode (``previous=``) checks the difference message the same way, and by
linearity its result minus the true aggregate is again a ``delta`` as
above; an aggregate that does not fit falls through to the full decode,
which raises.
"""
import hashlib
import operator
import secrets
import struct
from dataclasses import dataclass

import numpy as np

from ...core.kernels import lattice as _lattice
from ...field import kernels as _field
from ...exceptions import DecodeError
from ...core.lattice import row_keys
from ._crypto import hash_coefficients


_OUT_OF_RANGE = ("decoded coordinates out of range: a hash collision or "
                 "inconsistent messages; rerun with a fresh hash seed")
_NODE_MISMATCH = ("decoded bins do not hash to their nodes: a hash collision "
                  "or inconsistent messages; rerun with a fresh hash seed")
_CHECK_FAILS = ("decoded bins fail the check hash: a hash collision or "
                "inconsistent messages; rerun with a fresh hash seed")


_OVERFULL = ("the aggregate fails the index-mode check word: it has more than "
             "max_nonzeros = {M} distinct bins, or the messages are inconsistent")


def index_check_point(params):
    """The public point ``t`` of the index mode's check word: uniform on
    ``{0} u {B**d + 1, ..., p - 1}`` (never a node), from the run's hash
    seed by rejection sampling on SHA-256 output (the parameters of the grid
    and field are bound in)."""
    p, size = params.modulus, params.bins_per_dim ** params.n_dims
    n = p - size                                  # >= 1: index mode has B**d < p
    key = hashlib.sha256(b"pyfkm/scma/index-check/v1" + bytes(params.hash_seed)
                         + struct.pack("<QQQ", p, params.bins_per_dim, params.n_dims)).digest()
    mask = (1 << n.bit_length()) - 1
    counter = 0
    while True:                                  # accepts with probability > 1/2
        block = hashlib.sha256(key + struct.pack("<Q", counter)).digest()
        for i in range(0, 32, 8):
            u = int.from_bytes(block[i:i + 8], "little") & mask
            if u < n:
                return 0 if u == 0 else size + u
        counter += 1


def _zero_node(b):
    """The error of a bin ``b`` (a list) whose node hash is 0."""
    return DecodeError(f"bin {b} hashes to 0; rerun with a fresh hash seed")


# messages of at most this many words times bins are encoded in Python ints
_SMALL_ENCODE = 32

# The codec's arithmetic calls the kernels directly: its arrays are uint64,
# contiguous and reduced by construction (the public pyfkm.field API checks
# all of that, and the prime, on every call).

def _ew(op, a, b, p):
    """Elementwise ``op`` of equal-shape (or broadcastable) reduced arrays."""
    if a.shape != b.shape:
        a, b = np.broadcast_arrays(a, b)
    out = _field.elementwise(op, np.ascontiguousarray(a).ravel(),
                             np.ascontiguousarray(b).ravel(), p)
    return out.reshape(a.shape)


def _lex_order(bins):
    """Order of the rows of ``bins`` (nonnegative int64) sorted lexicographically."""
    if bins.shape[0] < 2:
        return np.arange(bins.shape[0])
    return np.argsort(row_keys(bins), kind="stable")


class DecodeState:
    """What the server keeps between decodes: the support of the last
    aggregate sorted by node (``nodes``, ``bins``, ``q`` as field elements)
    and its message, computed only when a later decode needs it (it is the
    encoding of the support, by linearity).  Immutable once built."""

    __slots__ = ("_agg", "nodes", "bins", "q", "_lex", "_lex_bins")

    def __init__(self, agg, nodes, bins, q, lex=None, lex_bins=None):
        self._agg, self.nodes, self.bins, self.q, self._lex = agg, nodes, bins, q, lex
        self._lex_bins = lex_bins       # bins[lex], shared by states of one support

    def message(self, codec):
        if self._agg is None:
            self._agg = codec.encode(self.bins, self.q) if self.q.size else \
                np.zeros(codec.params.message_words, dtype=np.uint64)
        return self._agg

    def sorted_rows(self):
        """(bins, counts as int64) with the rows sorted lexicographically."""
        if self._lex is None:
            self._lex = _lex_order(self.bins)
        if self._lex_bins is None:
            self._lex_bins = self.bins[self._lex]
        return self._lex_bins.copy(), self.q[self._lex].astype(np.int64)

    def with_counts(self, agg, q):
        """The state of the same support with counts ``q`` (its orders kept)."""
        return DecodeState(agg, self.nodes, self.bins, q, self._lex, self._lex_bins)


@dataclass
class Codec:
    """Encoder/decoder for one parameter set (see :class:`ScmaParams`)."""

    params: object

    def __post_init__(self):
        P = self.params
        self.p = P.modulus
        # drives the random root splitting: the roots do not depend on it
        self._gen = np.random.default_rng(0)
        # layout: syndromes, check words (index mode), payload rows (hashed mode)
        self._check_at = P.n_syndromes
        self._payload_at = P.n_syndromes + P.n_check_words
        if P.mode == "index":
            self.grid_size = P.bins_per_dim ** P.n_dims
            self.check_point = index_check_point(P)
        if P.mode == "hashed":
            self.a0, self.a = hash_coefficients(P.hash_seed, P.n_dims, P.modulus, 0)
            self.g0, self.g = hash_coefficients(P.hash_seed, P.n_dims, P.modulus, 1)
            c = P.coords_per_element
            self.chunks = [(s, min(s + c, P.n_dims)) for s in range(0, P.n_dims, c)]
            # the hashes' coefficients as Python ints (scalar path of _solve_one)
            self._hash_ints = (int(self.a0), self.a.tolist(), int(self.g0), self.g.tolist())

    # -- nodes ------------------------------------------------------------

    def nodes(self, bins):
        """Nodes of distinct bins (int64 (k, d), coordinates in [0, B))."""
        P = self.params
        if bins.shape[0] == 0:
            return np.zeros(0, dtype=np.uint64)
        if P.mode == "index":
            return _lattice.flatten(np.ascontiguousarray(bins, dtype=np.int64),
                                    P.bins_per_dim).astype(np.uint64) + np.uint64(1)
        return _field.affine_rows(np.ascontiguousarray(bins, dtype=np.uint64), self.a,
                                  self.a0, self.p)

    def _pack(self, bins):
        """(rows, k) packed coordinates v_{j,t} = sum_u b_{j, t c + u} B**u (< B**c < p)."""
        P = self.params
        c, rows, k = P.coords_per_element, len(self.chunks), bins.shape[0]
        padded = np.zeros((k, rows * c), dtype=np.uint64)
        padded[:, :P.n_dims] = bins
        weights = np.uint64(P.bins_per_dim) ** np.arange(c, dtype=np.uint64)
        # every partial sum stays below B**c < p < 2**63: no wrap-around
        return np.ascontiguousarray((padded.reshape(k, rows, c) * weights).sum(axis=2).T)

    def _rows(self, bins):
        """(rows + 1, k) payload values per bin: the packed coordinates, then
        the check value g(b) = (g_0 + g . b)**2 (an independent hash, squared:
        a collision of bins with counts q_1, q_2 decodes to the weighted mean
        of their rows, and the square of a mean is not the mean of the
        squares unless the two hashes agree, probability 1/p)."""
        h = _field.affine_rows(np.ascontiguousarray(bins, dtype=np.uint64), self.g,
                               self.g0, self.p)
        return np.vstack([self._pack(bins), _field.elementwise("mul", h, h, self.p)[None, :]])

    def _unpack(self, v):
        """Coordinates (m, d) from packed (rows, m)."""
        P = self.params
        B = np.uint64(P.bins_per_dim)
        out = np.empty((v.shape[1], P.n_dims), dtype=np.int64)
        for t, (s, e) in enumerate(self.chunks):
            powers = B ** np.arange(e - s, dtype=np.uint64)
            out[:, s:e] = (v[t][:, None] // powers[None, :]) % B
        return out

    # -- client side ---------------------------------------------------------

    def encode(self, bins, counts, small=True):
        """Unmasked message of distinct ``bins`` with counts (uint64, < p).
        Short messages of a few bins (a difference round's change) are
        computed in Python integers; ``small=False`` forces the kernels
        (for tests: both give the same words)."""
        P = self.params
        if small and P.mode == "hashed" and bins.shape[0] * P.message_words <= _SMALL_ENCODE:
            return self._encode_small(bins, counts)
        x = self.nodes(bins)
        if not x.all():
            raise _zero_node(bins[int(np.flatnonzero(x == 0)[0])].tolist())
        q = np.ascontiguousarray(counts, dtype=np.uint64)
        out = np.empty(P.message_words, dtype=np.uint64)
        M = P.max_nonzeros
        out[:2 * M] = _field.power_sums(x, q[None, :], 2 * M, self.p)[0]
        if P.mode == "index":
            out[self._check_at] = self._check_word(x, q)
        else:
            R = self._rows(bins)
            W = _ew("mul", R, np.broadcast_to(q, R.shape), self.p)
            out[self._payload_at:] = _field.power_sums(x, W, M, self.p).ravel()
        return out

    def _check_word(self, nodes, q):
        """``sum_j q_j / (t - x_j)`` (index mode; nodes in ``1 .. B**d``,
        so ``t - x_j != 0``)."""
        if nodes.size == 0:
            return 0
        t = np.full(nodes.shape, self.check_point, dtype=np.uint64)
        diff = _ew("sub", t, nodes, self.p)
        y = _field.elementwise("inv", diff, diff, self.p)
        return int(_field.power_sums(y, np.ascontiguousarray(q, dtype=np.uint64)[None, :],
                                     2, self.p)[0, 1])

    def _encode_small(self, bins, counts):
        """:meth:`encode` (hashed mode) word by word in Python integers."""
        P, p = self.params, self.p
        M, B = P.max_nonzeros, P.bins_per_dim
        a0, a, g0, g = self._hash_ints
        S = [0] * (2 * M)
        T = [[0] * M for _ in range(len(self.chunks) + 1)]
        for b, q in zip(np.asarray(bins).tolist(), np.asarray(counts).tolist()):
            x = (a0 + sum(map(operator.mul, a, b))) % p
            if x == 0:
                raise _zero_node(b)
            h = (g0 + sum(map(operator.mul, g, b))) % p
            # payload values: packed coordinates (base B, low digit first), check
            v = [sum(b[u] * B ** (u - s) for u in range(s, e)) for s, e in self.chunks]
            v.append(h * h % p)
            w = q % p                                     # q x**i
            for i in range(2 * M):
                S[i] += w
                if i < M:
                    for t, vt in enumerate(v):
                        T[t][i] += w * vt
                w = w * x % p
        out = [s % p for s in S] + [y % p for row in T for y in row]
        return np.array(out, dtype=np.uint64)

    # -- server side -----------------------------------------------------------

    def decode(self, agg, previous=None):
        """Decode an aggregated message.

        Returns ``(state, incremental)``: the decoded aggregate is
        ``state.sorted_rows()``; ``previous`` is the state of an earlier
        decode.  The incremental path decodes the *difference*
        ``agg - previous`` (the message of the change, by linearity): when
        few bins changed this is a short recurrence, a low-degree
        polynomial and a tiny solve, with every check of the full decode
        applied to the difference, and the change is added to the previous
        aggregate.  The result is the full decode's: an aggregate with at
        most ``max_nonzeros`` bins is the only one with these syndromes (two
        such vectors differ in at most ``2 M`` bins, and ``2 M`` power sums
        at distinct nodes determine those).  When the change itself cannot
        be decoded (more than ``max_nonzeros`` bins changed) the full decode
        runs.
        """
        agg = np.array(agg, dtype=np.uint64)
        if previous is not None:
            got = self._decode_delta(agg, previous)
            if got is not None:
                return got, True
        nodes, q, bins = self._solve(agg)
        return self._state(agg, nodes, bins, q), False

    def _follows(self, C, seq, m):
        """Does ``seq`` satisfy the recurrence with connection polynomial C
        (degree m) for every index m <= i < len(seq)?"""
        if seq.size <= m:
            return True
        conv = _field.mul(C, np.ascontiguousarray(seq), self.p)
        return not np.any(conv[m:seq.size])

    def _combined_payload(self, agg):
        """A random combination sum_t rho_t T_t of the payload rows (a wrong
        row survives any check on the combination with probability 1/p;
        rho decides detection only, never the result)."""
        P = self.params
        M, rows = P.max_nonzeros, P.n_payload_rows
        rho = np.array([secrets.randbelow(self.p) for _ in range(rows)], dtype=np.uint64)
        T = agg[self._payload_at:].reshape(rows, M)
        return rho, _field.affine_rows(np.ascontiguousarray(T.T), rho, 0, self.p)

    @staticmethod
    def _state(agg, nodes, bins, q):
        """Decoder state of an aggregate: its support sorted by node."""
        order = np.argsort(nodes, kind="stable")
        return DecodeState(agg, nodes[order], bins[order], q[order])

    def _decode_delta(self, agg, state):
        delta = _ew("sub", agg, state.message(self), self.p)
        if not delta.any():
            return state
        try:
            change = self._solve(delta)
        except DecodeError:
            return None           # more than max_nonzeros changes, or junk: full decode
        return self._merge(state, agg, *change)

    def _merge(self, state, agg, nodes_d, q_d, bins_d):
        """The state of the previous aggregate plus a decoded change
        (``agg``: the new message, or None to compute it when needed);
        None when the sum is not a valid aggregate (a node with two bins,
        or more than ``max_nonzeros`` bins), which only the full decode can
        judge."""
        nodes, bins, q = state.nodes, state.bins, state.q
        m = nodes.size
        if nodes_d.size == 1 and m:
            # one changed bin (a single-point removal): in place when it
            # stays in the support
            j = int(np.searchsorted(nodes, nodes_d[0]))
            if j < m and nodes[j] == nodes_d[0]:
                if bins[j].tolist() != bins_d[0].tolist():
                    return None
                v = (int(q[j]) + int(q_d[0])) % self.p
                if v:
                    q_new = q.copy()
                    q_new[j] = v
                    return state.with_counts(agg, q_new)
        pos = np.searchsorted(nodes, nodes_d) if m else np.zeros(nodes_d.size, dtype=np.intp)
        hit = pos < m
        hit[hit] = nodes[pos[hit]] == nodes_d[hit]
        if not np.array_equal(bins[pos[hit]], bins_d[hit]):
            return None
        ph = pos[hit]
        q_new = q.copy()
        q_new[ph] = _ew("add", q[ph], q_d[hit], self.p)
        if hit.all() and q_new[ph].all():
            # the same support: counts change in place, the orders stay
            return state.with_counts(agg, q_new)
        nodes_new = np.concatenate([nodes, nodes_d[~hit]])
        bins_new = np.concatenate([bins, bins_d[~hit]])
        q_new = np.concatenate([q_new, q_d[~hit]])
        keep = q_new != 0
        if np.count_nonzero(keep) > self.params.max_nonzeros:
            return None
        return self._state(agg, nodes_new[keep], bins_new[keep], q_new[keep])

    def decode_difference(self, delta_agg, delta_codec, state):
        """Decode a difference round: ``delta_agg`` is the summed message of
        the change under ``delta_codec`` (same hash, fewer bins); returns
        the state of the previous aggregate (``state``) plus that change,
        as :meth:`decode` does (changed bins are matched by this codec's
        nodes, so ``delta_codec`` may use another layout).  Raises
        DecodeError when the change or the new aggregate is not valid."""
        _, q_d, bins_d = delta_codec._solve(delta_agg)
        # this codec's nodes of the changed bins (the two layouts may differ)
        nodes_d = self.nodes(bins_d)
        if np.any(nodes_d == 0):
            raise DecodeError("a changed bin hashes to 0; rerun with a fresh hash seed")
        got = self._merge(state, None, nodes_d, q_d, bins_d)
        if got is None:
            raise DecodeError(
                "the changed aggregate is not valid (more than max_nonzeros bins, "
                "or a node with two bins)")
        return got

    def _solve(self, agg, one_bin=True):
        """The sparse vector behind the syndromes ``agg``: (nodes, counts as
        field elements, bins), every check applied; raises DecodeError.
        ``one_bin=False`` turns off the scalar path of a single bin (for
        tests: both paths give the same results and errors)."""
        P = self.params
        M, p = P.max_nonzeros, self.p
        S = np.ascontiguousarray(agg[:2 * M])
        C = _field.berlekamp_massey(S, p)
        m = C.size - 1
        empty = np.zeros((0, P.n_dims), dtype=np.int64)
        if m == 0:
            if agg.any():
                raise DecodeError("inconsistent syndromes: no bins but a nonzero payload")
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64), empty
        if m > M:
            raise DecodeError(
                f"the aggregate has more than max_nonzeros = {M} distinct bins "
                f"(linear complexity {m} of the syndromes)")
        if C[-1] == 0:
            raise DecodeError("inconsistent syndromes: a node at zero")
        if m == 1 and one_bin and P.mode == "hashed":
            return self._solve_one(agg, C)
        nodes = self._roots(C)
        # one node: the 1 x 1 system c * x**0 = rhs is its own solution
        solve = (lambda R: np.array(R, dtype=np.uint64)) if m == 1 else \
            _field.Vandermonde(nodes, p).solve
        q = solve(S[None, :m])[0]
        if np.any(q == 0):
            # impossible for syndromes of linear complexity m at m distinct
            # nodes; kept as a guard before inverting
            raise DecodeError("inconsistent syndromes: a zero count")
        if P.mode == "index":
            # the candidate's support: distinct nodes in 1 .. B**d (nodes are
            # sorted), then the check word (see the module docstring)
            if nodes[0] == 0 or int(nodes[-1]) > self.grid_size:
                raise DecodeError("inconsistent syndromes: a node outside the bin grid")
            if m > 1 and not np.all(nodes[1:] > nodes[:-1]):
                raise DecodeError("inconsistent syndromes: repeated nodes")
            if self._check_word(nodes, q) != int(agg[self._check_at]):
                raise DecodeError(_OVERFULL.format(M=M))
            bins = _lattice.unflatten((nodes - np.uint64(1)).astype(np.int64),
                                      P.bins_per_dim, P.n_dims)
        else:
            rows = P.n_payload_rows
            T = agg[self._payload_at:].reshape(rows, M)
            W = solve(np.ascontiguousarray(T[:, :m]))                   # (rows, m)
            qinv = _field.elementwise("inv", q, q, p)
            v = _ew("mul", W, qinv[None, :], p)                         # (rows, m)
            check, v = v[-1], v[:-1]
            rows -= 1
            if any(int(v[t].max()) >= P.bins_per_dim ** (e - s)
                   for t, (s, e) in enumerate(self.chunks)):
                raise DecodeError(_OUT_OF_RANGE)
            bins = self._unpack(v)
            if not np.array_equal(self.nodes(bins), nodes):
                raise DecodeError(_NODE_MISMATCH)
            values = self._rows(bins)
            if not np.array_equal(values[-1], check):
                raise DecodeError(_CHECK_FAILS)
            self._check_payload_rows(agg, C, m)
        return nodes, q, bins

    def _check_payload_rows(self, agg, C, m):
        """The payload rows i >= m were not used by the solves: check that
        they follow the recurrence too."""
        _, Tc = self._combined_payload(agg)
        if not self._follows(C, Tc, m):
            raise DecodeError(
                "inconsistent payload syndromes: the messages do not come "
                "from one multiset")

    def _solve_one(self, agg, C):
        """:meth:`_solve` of hashed-mode syndromes of linear complexity 1
        (``C = 1 - x z``): one bin, the usual change of a single-point
        removal.  The closed form in Python integers, with the same checks
        and errors: node ``x``, count ``q = S_0``, payloads ``T_{t,0} / q``."""
        P, p = self.params, self.p
        M, B = P.max_nonzeros, P.bins_per_dim
        x = (p - int(C[1])) % p
        q = int(agg[0])                          # != 0: complexity 1
        qinv = pow(q, p - 2, p)
        T0 = agg[self._payload_at::M].tolist()   # T_{t,0}, t < rows
        v = [t * qinv % p for t in T0]
        check = v.pop()
        coords = []
        for val, (s, e) in zip(v, self.chunks):
            if val >= B ** (e - s):
                raise DecodeError(_OUT_OF_RANGE)
            for _ in range(e - s):
                val, c = divmod(val, B)
                coords.append(c)
        a0, a, g0, g = self._hash_ints
        if (a0 + sum(map(operator.mul, a, coords))) % p != x:
            raise DecodeError(_NODE_MISMATCH)
        h = (g0 + sum(map(operator.mul, g, coords))) % p
        if h * h % p != check:
            raise DecodeError(_CHECK_FAILS)
        if M > 1:
            self._check_payload_rows(agg, C, 1)
        return (np.array([x], dtype=np.uint64), np.array([q], dtype=np.uint64),
                np.array([coords], dtype=np.int64))

    def _roots(self, C):
        """Ascending nodes x_j with C(z) = prod (1 - x_j z), C[0] = 1 (the
        roots of the reversed polynomial); DecodeError unless it splits
        into distinct linear factors."""
        if C.size == 2:                      # 1 + c z: the node is -c
            return np.array([(self.p - int(C[1])) % self.p], dtype=np.uint64)
        r, _ = _field.roots(np.ascontiguousarray(C[::-1]), self.p, True, self._gen)
        return np.sort(r)
