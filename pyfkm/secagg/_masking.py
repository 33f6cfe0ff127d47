"""The masking protocol shared by SCMA and MSA: keys, shares, dropout recovery.

One *run* fixes a roster (client ids and their channel keys), a threshold
``t`` and a neighbour graph; it then runs any number of *rounds*.  Each round
follows Bonawitz et al. (CCS 2017) with the sparse graph of SecAgg+ (Bell et
al., CCS 2020), in four client steps:

1. **Share keys.**  For a round over participants ``U1``, client ``u`` draws a
   fresh X25519 *mask key* ``s_u`` and a fresh 32-byte *self-mask seed*
   ``b_u`` (both from the OS, for this round only) and Shamir-shares both
   ``t_s``-out-of-``h`` among its *holders*: itself and its neighbours in
   ``U1`` (:mod:`._shamir`, the field of integers modulo the smallest prime
   above ``2**256``).  Each share travels to its holder encrypted with
   ChaCha20-Poly1305 under the pair's *channel key* (X25519 of the run's
   channel keys, HKDF-SHA256 salted with the roster digest), bound to the
   round, both ids and ``s_u``'s public key.
2. **Masked input.**  The server relays each client the shares meant for it
   and the round keys of its neighbours in ``U2`` (those who shared).  Client
   ``u`` adds to its encoded vector ``PRG(b_u)`` and, for every neighbour
   ``v`` in ``U2``, ``+PRG(k_uv)`` if ``u < v`` else ``-PRG(k_uv)``, with
   ``k_uv`` = HKDF of ``X25519(s_u, S_v)`` bound to the roster digest, the
   round and the pair.  Pair masks cancel in the sum over any set closed
   under the graph's edges.
3. **Unmask.**  The server names the survivors ``U3`` (whose masked inputs
   arrived).  Each survivor reveals, for each peer it holds shares of, the
   share of ``b_v`` if ``v`` survived and the share of ``s_v`` if ``v``
   dropped -- never both for the same peer in a round (the consistency rule),
   and nothing at all when ``|U3| < t``.
4. The server reconstructs ``b_v`` for the survivors and ``s_v`` for the
   dropped, removes the survivors' self masks and their pair masks with the
   dropped, and is left with the survivors' sum.

Because the mask keys and self seeds are fresh every round, what a recovery
reveals (a dropped client's round key) says nothing about any other round,
and a late client (its input arriving after it was declared dropped) stays
hidden behind its self mask.

The keys and their derivations, the roster binding, message
authentication and the graph are :mod:`._keys`.
"""
import functools
import hmac
import os
import struct

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from ..exceptions import ProtocolError
from . import _shamir
from ._keys import (DATA_PREFIX, KeyedMac, channel_key, check_graph_params, check_mac,
                    exchange, mac, neighbour_graph,
                    new_key, pair_mask_key, raw_private, raw_public, ring_neighbours, ring_seed,
                    round_view, roster_digest, self_commitment, server_mac_key, share_threshold)

MAX_ROUND = 1 << 32           # rounds of a run are numbered below this
SHARE_PLAIN = struct.Struct("<IIQ")          # owner, holder, round; then 2 shares
SHARE_CT_BYTES = SHARE_PLAIN.size + 2 * _shamir.SHARE_BYTES + 16
B_SHARE, SK_SHARE = 0, 1


# ------------------------------------------------------------------ client side

class MaskingClient:
    """The client half of the masking protocol (one object per client).

    Holds its run's channel key and, during a round, the round's mask key,
    self seed and the shares it holds for others; everything of a round is
    dropped once the client has answered its unmask request.  Roles
    (:class:`ScmaClient`, :class:`MsaClient`) own one and frame its outputs
    as messages.
    """

    def __reduce__(self):
        raise ProtocolError("a secure-aggregation client holds live key objects and cannot be "
                            "pickled or copied (a copy could answer a round twice)")

    def __init__(self, client_id):
        self.client_id = client_id
        self._channel = None           # private channel key of the current run
        self._runs = set()             # run ids this client has joined: never twice
        self.run_id = None
        self.digest = None
        self._reset_run()

    def _reset_run(self):
        self.ids = self.threshold = self.degree = self.graph = None
        self._aead = {}
        self._extra = {}
        self._summed = {}
        self._mac_key = self._mac = self._data_mac = None
        self._last = 0                 # last round shared (rounds only increase)
        self._round = None             # state of the round in progress
        self._revealed = {}            # round -> (peers, kinds) revealed: the consistency rule
        self._batch = None             # a key batch of the run's next rounds (msa._keybatch)

    # -- run set-up
    def open_run(self, run_id):
        """A fresh channel key for run ``run_id`` (its public bytes)."""
        run_id = bytes(run_id)
        if run_id in self._runs:
            raise ProtocolError("this client already joined that run id; every run needs "
                                "a fresh run id")
        self._runs.add(run_id)
        self._channel = new_key()
        self.run_id = run_id
        self.digest = None
        self._reset_run()
        return raw_public(self._channel)

    def join(self, params_bytes, threshold, degree, server_key, ids, keys, extra_peers=()):
        """Check the roster and derive the run's channel keys (with the
        neighbours, and with ``extra_peers`` for a protocol's own use)."""
        if self._channel is None or self.digest is not None:
            raise ProtocolError("a roster needs a key message first (one roster per run)")
        me = self.client_id
        ids, keys = tuple(ids), tuple(keys)
        check_graph_params(len(ids), threshold, degree)
        own = raw_public(self._channel)
        try:
            at = ids.index(me)
        except ValueError:
            at = None
        if at is None or keys[at] != own:
            raise ProtocolError("the roster does not carry this client's key")
        if len(set(keys)) != len(keys) or server_key in keys:
            raise ProtocolError("the roster repeats a public key")
        digest = roster_digest(self.run_id, params_bytes, threshold, degree, server_key,
                               ids, keys)
        graph = ring_neighbours(ring_seed(self.run_id, params_bytes, ids, keys), ids, degree, me)
        nbrs = [i for i in ids if i != me] if graph is None else graph
        aead, extra = {}, {}
        extra_set = set(extra_peers) & set(ids) - {me}
        nbr_set = set(nbrs)
        pos = {o: ids.index(o) for o in nbr_set | extra_set} if len(nbr_set | extra_set) * 8 \
            < len(ids) else {i: j for j, i in enumerate(ids)}
        for o in nbr_set | extra_set:
            secret = exchange(self._channel, keys[pos[o]], f"client {o}")
            if o in nbr_set:
                aead[o] = ChaCha20Poly1305(channel_key(secret, digest, me, o))
            if o in extra_set:
                extra[o] = ChaCha20Poly1305(channel_key(secret, digest, me, o, b"extra"))
        mac_key = server_mac_key(exchange(self._channel, server_key, "the server"), digest, me)
        self.ids, self.threshold, self.degree, self.graph = ids, threshold, degree, graph
        self.n_share = share_threshold(len(ids), threshold, degree)
        self._id_set = frozenset(ids)
        self._neighbours = frozenset(nbrs)
        self._aead, self._extra, self._mac_key, self.digest = aead, extra, mac_key, digest
        self._mac = KeyedMac(mac_key)  # the key schedule once per run
        self._summed = {}              # data digest -> survivors it was summed over
        self.data_key = os.urandom(32)
        self._data_mac = KeyedMac(self.data_key, DATA_PREFIX)
        self._channel = None           # the channel secrets are derived: drop the key

    def neighbours(self):
        return self._neighbours

    def channel(self, other):
        """The AEAD of the *extra* channel with ``other`` (one of the
        ``extra_peers`` of :meth:`join`): its own key, never the key the
        shares travel under."""
        if other not in self._extra:
            raise ProtocolError(f"no channel with client {other}")
        return self._extra[other]

    def tag(self, data):
        """``mac(MAC key, data)``: the tag of a message to the server."""
        return self._mac.tag(data)

    def data_digest(self, part):
        """``data_digest(data_key, part)``: the keyed digest of this
        client's data (one part) for the same-data rule."""
        return self._data_mac.digest(part)

    # -- step 1: share keys
    def _share_holders(self, first, last, participants):
        """The holders of this client's shares for rounds ``first .. last``
        (one round, or a key batch), after the refusals every key sharing
        makes: rounds after the last one and below MAX_ROUND, this client
        among the participants, all in the roster, at least the threshold
        of them and enough holders."""
        me = self.client_id
        parts = frozenset(participants)
        if first <= self._last:
            raise ProtocolError(f"round {first} is not after the last round {self._last}: "
                                "mask streams are never reused")
        if last >= MAX_ROUND:
            raise ProtocolError(f"round {last} exceeds the largest round {MAX_ROUND - 1}")
        if me not in parts:
            raise ProtocolError(f"client {me} is not a participant of round {first}")
        if not parts <= self._id_set:
            raise ProtocolError("participants outside the roster")
        if len(parts) < self.threshold:
            raise ProtocolError(f"round {first} has {len(parts)} participants, below the "
                                f"threshold {self.threshold}: refused")
        holders = sorted((self._neighbours & parts) | {me})
        if len(holders) < self.n_share:
            raise ProtocolError(f"round {first}: {len(holders)} holders for this client's "
                                f"shares, {self.n_share} are needed")
        return holders

    def share(self, round_, participants):
        """``(mask public key, [(holder, ciphertext)])`` for round ``round_``
        over ``participants``; the client refuses rounds below the threshold,
        rounds it is not in, repeated rounds and rounds whose holders
        could never reconstruct its secrets."""
        if self.digest is None:
            raise ProtocolError("receive the roster first")
        me = self.client_id
        parts = frozenset(participants)
        holders = self._share_holders(round_, round_, parts)
        sk, b = new_key(), os.urandom(32)
        pk = raw_public(sk)
        commit = self_commitment(b)
        xs = [h + 1 for h in holders]
        shares = _shamir.split([raw_private(sk), b], self.n_share, xs)
        out = []
        own = None
        for h, (s_sk, s_b) in zip(holders, shares):
            plain = SHARE_PLAIN.pack(me, h, round_) + _shamir.share_to_bytes(s_b) \
                + _shamir.share_to_bytes(s_sk)
            if h == me:
                own = plain
                continue
            nonce = struct.pack("<QI", round_, me)
            ct = self._aead[h].encrypt(nonce, plain, self._ad(round_, me, h, pk))
            out.append((h, ct))
        self._last = round_
        self._round = {"round": round_, "participants": parts, "sk": sk, "b": b, "pk": pk,
                       "held": {me: own}, "keys": None, "u2": None, "done": False}
        return pk, commit, out

    def _ad(self, round_, owner, holder, pk):
        return self.digest + struct.pack("<QII", round_, owner, holder) + bytes(pk)

    def _state(self, round_):
        st = self._round
        if st is None or st["round"] != round_:
            raise ProtocolError(f"round {round_} is not this client's open round")
        return st

    def _round_set(self, round_, clients, within, counted, rule):
        """``clients`` (the set the server announced for a step) as a
        frozenset; ProtocolError unless it holds this client, lies within
        ``within`` and reaches the threshold."""
        u = frozenset(clients)
        if self.client_id not in u or not u <= within:
            raise ProtocolError(f"round {round_}: {rule}")
        if len(u) < self.threshold:
            raise ProtocolError(f"round {round_}: {len(u)} {counted}, below the threshold "
                                f"{self.threshold}: refused")
        return u

    # -- step 2: receive shares, derive the round's mask keys
    def receive_shares(self, round_, survivors, items):
        """``survivors``: ``U2`` (clients whose shares the server relays);
        ``items``: ``(owner, owner's mask public key, ciphertext)`` for each
        neighbour in ``U2``.  Derives the pair keys of the round."""
        st = self._state(round_)
        if st["keys"] is not None:
            raise ProtocolError(f"round {round_}: shares already received")
        me = self.client_id
        u2 = self._round_set(round_, survivors, st["participants"], "clients shared keys",
                             "the sharing clients must be participants and include this client")
        expect = (self._neighbours & u2)
        got = {}
        for owner, pk, ct in items:
            if owner not in expect or owner in got:
                raise ProtocolError(f"round {round_}: unexpected or repeated shares of {owner}")
            nonce = struct.pack("<QI", round_, owner)
            try:
                plain = self._aead[owner].decrypt(nonce, bytes(ct),
                                                  self._ad(round_, owner, me, pk))
            except InvalidTag:
                raise ProtocolError(f"round {round_}: the shares of client {owner} fail "
                                    "authentication") from None
            if len(plain) != SHARE_PLAIN.size + 2 * _shamir.SHARE_BYTES \
                    or SHARE_PLAIN.unpack_from(plain) != (owner, me, round_):
                raise ProtocolError(f"round {round_}: malformed shares of client {owner}")
            got[owner] = (bytes(pk), plain)
        if set(got) != expect:
            raise ProtocolError(f"round {round_}: missing shares of clients "
                                f"{sorted(expect - set(got))}")
        if len((expect | {me})) < self.n_share:
            raise ProtocolError(f"round {round_}: too few holders survive")
        keys = {}
        for owner, (pk, plain) in got.items():
            secret = exchange(st["sk"], pk, f"client {owner}'s round key")
            keys[owner] = pair_mask_key(secret, self.digest, round_, me, owner)
        # everything checked: commit
        st["held"].update((owner, plain) for owner, (pk, plain) in got.items())
        st["keys"], st["u2"] = keys, u2
        # what step 3 may reveal, laid out ahead (no data involved): the
        # held owners in order, and the answer when every one of them
        # survives (the usual case): the self-seed share of each, as columns
        # (owners, kinds, shares).  Which shares go out is decided only by
        # the unmask request (:meth:`_held_share` serves any other answer)
        held = st["held"]
        order = tuple(sorted(o for o in held if o in u2))
        st["reveal"] = order
        st["reveal_all"] = (order, (B_SHARE,) * len(order),
                            tuple(self._held_share(st, o, B_SHARE) for o in order))
        st["participants"] = None      # checked against U2: no longer needed
        st["view"] = round_view(round_, u2)
        st["sk"] = None                # the pair keys are derived: drop the round key
        return keys

    @staticmethod
    def _held_share(st, owner, kind):
        """The encoded share of kind ``kind`` (:data:`B_SHARE` or
        :data:`SK_SHARE`) of ``owner``'s secrets that this client holds in
        round state ``st`` (sliced from the decrypted plaintext)."""
        at = SHARE_PLAIN.size + kind * _shamir.SHARE_BYTES
        return st["held"][owner][at:at + _shamir.SHARE_BYTES]

    def view(self, round_, request=b""):
        """Bytes binding what this client saw of the round (the sharers and
        the input request) into its input's tag: a server or network that
        shows clients different views makes the tags fail."""
        st = self._state(round_)
        if st.get("view") is None:
            raise ProtocolError(f"round {round_}: shares not received")
        return st["view"] + bytes(request)

    def mask_keys(self, round_):
        """(self seed, {neighbour: pair key}) of the round (after step 2)."""
        st = self._state(round_)
        if st["keys"] is None:
            raise ProtocolError(f"round {round_}: shares not received")
        return st["b"], st["keys"]

    def mark_sent(self, round_):
        st = self._state(round_)
        if st["done"]:
            raise ProtocolError(f"round {round_} was already answered")
        st["done"] = True
        st["b"] = None      # kept only as shares now: the input is masked and sent

    # -- step 3: unmask
    def reveal_all(self, round_):
        """``(owners, kinds, shares)`` that :meth:`unmask_columns` returns
        (the same tuples) when every owner this client holds shares of
        survives; known after step 2 (no data involved), so a caller may
        lay out its answer ahead of the round."""
        st = self._state(round_)
        if st.get("reveal_all") is None:
            raise ProtocolError(f"round {round_}: shares not received")
        return st["reveal_all"]

    def unmask(self, round_, survivors, data_digest=None, summed_over=None):
        """The shares this client reveals for round ``round_`` with survivors
        ``U3``: ``[(owner, kind, share bytes)]``; the round's state is
        dropped afterwards.  Refuses (and reveals nothing) when ``U3`` is
        below the threshold, not a subset of ``U2``, or would make it reveal
        both kinds of share of one peer."""
        return list(zip(*self.unmask_columns(round_, survivors, data_digest, summed_over)))

    def unmask_columns(self, round_, survivors, data_digest=None, summed_over=None):
        """:meth:`unmask` (the same checks and refusals) as three tuples
        ``(owners, kinds, shares)``; when every held owner survives these are
        the tuples of :meth:`reveal_all`."""
        st = self._state(round_)
        if st["u2"] is None or not st["done"]:
            raise ProtocolError(f"round {round_}: nothing was sent, nothing to unmask")
        u3 = self._round_set(round_, survivors, st["u2"], "survivors",
                             "survivors must be clients that shared keys, this one included")
        over = u3 if summed_over is None else frozenset(summed_over)
        if data_digest is not None:
            seen = self._summed.get(data_digest)
            if seen is not None and seen != over:
                raise ProtocolError(
                    f"round {round_}: the same data was summed over other survivors in an "
                    "earlier round of this run; two such sums would reveal the difference: "
                    "refused")
        order = st["reveal"]                   # the held owners in U2, sorted
        if u3.issuperset(order):               # all survived: laid out in step 2
            out = st["reveal_all"]
            kinds = out[1]
        else:
            kinds = tuple(B_SHARE if owner in u3 else SK_SHARE for owner in order)
            out = (order, kinds, tuple(self._held_share(st, owner, kind)
                                       for owner, kind in zip(order, kinds)))
        # what was revealed earlier in this round, as (owners, kinds) columns
        # (none in the usual case: the round closes after one answer)
        before = self._revealed.get(round_)
        if before is not None:
            revealed = dict(zip(*before))
            for owner, kind in zip(order, kinds):
                if revealed.get(owner, kind) != kind:
                    raise ProtocolError(f"round {round_}: client {owner} was a survivor and "
                                        "a dropout in two requests; nothing revealed")
            revealed.update(zip(order, kinds))
            record = (tuple(revealed), tuple(revealed.values()))
        else:
            record = (order, kinds)
        if data_digest is not None:
            self._summed[data_digest] = over
        # the round is over for this client: its secrets and held shares go
        self._round = None
        self._revealed = {round_: record}
        return out


# ------------------------------------------------------------------ server side

@functools.lru_cache(maxsize=None)
def _all_b(n):
    """``(B_SHARE,) * n`` (the kinds of an answer whose owners all survived)."""
    return (B_SHARE,) * n


class MaskingServer:
    """The server half: roster, relaying shares, recovery."""

    def __reduce__(self):
        raise ProtocolError("a secure-aggregation server holds live key objects and cannot be "
                            "pickled or copied")

    def __init__(self):
        self._channel = new_key()
        self.server_key = raw_public(self._channel)
        self._probe = new_key()          # tests peer keys for low order; no secret use
        self.digest = None

    def close_roster(self, run_id, params_bytes, threshold, degree, ids, keys):
        ids, keys = tuple(ids), tuple(keys)
        check_graph_params(len(ids), threshold, degree)
        if len(set(keys)) != len(keys):
            raise ProtocolError("two clients sent the same public key")
        self.digest = roster_digest(run_id, params_bytes, threshold, degree, self.server_key,
                                    ids, keys)
        self.ids, self.threshold, self.degree = ids, threshold, degree
        self.graph = neighbour_graph(ring_seed(run_id, params_bytes, ids, keys), ids, degree)
        self.n_share = share_threshold(len(ids), threshold, degree)
        self._holders_cache = {}         # owner -> its holders (fixed by the graph)
        self._xs_cache = {}              # holders -> their abscissas
        self._mac = {}
        for i, k in zip(ids, keys):
            self._mac[i] = server_mac_key(exchange(self._channel, k, f"client {i}"),
                                          self.digest, i)
        self._channel = None

    def neighbours(self, i):
        if self.graph is None:
            return tuple(o for o in self.ids if o != i)
        return self.graph[i]

    def check_tag(self, sender, data, tag):
        check_mac(self._mac[sender], data, tag, f"client {sender}")

    def tag_ok(self, sender, data, tag):
        """Whether ``tag`` authenticates ``data`` from ``sender`` (a roster id)."""
        return hmac.compare_digest(mac(self._mac[sender], data), bytes(tag))

    def view(self, st, request=b""):
        """The bytes a client that saw this round as the server did binds
        into its input's tag (see :meth:`MaskingClient.view`)."""
        if st.get("view") is None:
            st["view"] = round_view(st["round"], st["u2"])
        return st["view"] + bytes(request)

    def new_round(self, round_, participants):
        if len(participants) < self.threshold:
            raise ProtocolError(f"{len(participants)} participants, below the threshold "
                                f"{self.threshold}: clients refuse such a round")
        return {"round": round_, "u1": tuple(participants), "pks": {}, "cts": {},
                "u2": None, "u3": None, "shares": {}, "answered": set(), "commits": {}}

    def add_shares(self, st, sender, pk, commit, items):
        if st["u2"] is not None:
            raise ProtocolError(f"round {st['round']}: key sharing is closed")
        if sender not in st["u1"] or sender in st["pks"]:
            raise ProtocolError(f"client {sender}: not a participant, or shared twice")
        nb = set(self.neighbours(sender)) & set(st["u1"])
        holders = [h for h, _ in items]
        if set(holders) != nb or len(holders) != len(nb):
            raise ProtocolError(f"client {sender}: shares must go to each neighbour "
                                "participant once")
        # a low-order round key would make every neighbour's exchange fail
        # (one bad client knocking out its neighbourhood): refuse it here
        exchange(self._probe, pk, f"client {sender}'s round key")
        st["pks"][sender] = bytes(pk)
        st["commits"][sender] = bytes(commit)
        for h, ct in items:
            st["cts"][(sender, h)] = bytes(ct)

    def close_shares(self, st):
        u2 = tuple(sorted(st["pks"]))
        if len(u2) < self.threshold:
            raise ProtocolError(f"round {st['round']}: {len(u2)} clients shared keys, below "
                                f"the threshold {self.threshold}")
        st["u2"] = u2
        st["u2set"] = frozenset(u2)
        return u2

    def bundle_items(self, st, recipient):
        """``[(owner, owner's round key, ciphertext for recipient)]``."""
        if st["u2"] is None or recipient not in st["pks"]:
            raise ProtocolError(f"client {recipient} has no bundle in round {st['round']}")
        u2 = set(st["u2"])
        return [(o, st["pks"][o], st["cts"][(o, recipient)])
                for o in self.neighbours(recipient) if o in u2]

    def close_inputs(self, st, senders):
        u3 = tuple(sorted(senders))
        if len(u3) < self.threshold:
            raise ProtocolError(f"round {st['round']}: {len(u3)} inputs arrived, below the "
                                f"threshold {self.threshold}: the round cannot complete")
        st["u3"] = u3
        st["u3set"] = frozenset(u3)
        return u3

    def expected_unmask(self, st, sender):
        """``(owners, kinds)`` of the answer survivor ``sender`` owes in this
        round (after the unmask request): the sharers it holds shares of
        (itself and its neighbours in U2), increasing, each with the kind its
        fate asks for (a self-seed share for a survivor, a round-key share
        for a dropped client); built once per round and sender."""
        cache = st.get("expect")
        if cache is None:
            cache = st["expect"] = {}
        exp = cache.get(sender)
        if exp is None:
            u2 = st.get("u2set")
            if u2 is None:
                u2 = st["u2set"] = frozenset(st["u2"])
            u3 = st.get("u3set")
            if u3 is None:
                u3 = st["u3set"] = frozenset(st["u3"])
            owners = self._holders(sender)     # (the graph's, fixed for the run)
            if not u2.issuperset(owners):
                owners = tuple(o for o in owners if o in u2)
            if u3.issuperset(owners):
                kinds = _all_b(len(owners))
            else:
                kinds = tuple(B_SHARE if o in u3 else SK_SHARE for o in owners)
            exp = cache[sender] = (owners, kinds)
        return exp

    def add_unmask(self, st, sender, items):
        if st["u3"] is None:
            raise ProtocolError(f"round {st['round']}: no unmask request was sent")
        if sender not in st["u3"] or sender in st["answered"]:
            raise ProtocolError(f"client {sender}: not a survivor, or answered twice")
        owners, kinds = self.expected_unmask(st, sender)
        # every owner once, exactly the expected ones, each with the kind its
        # fate asks for; anything else is found (and named) by the loop below
        if len(items) != len(owners) or tuple(o for o, _, _ in items) != owners \
                or tuple(k for _, k, _ in items) != kinds:
            u3 = st["u3set"]
            mine = set(owners)
            seen = set()
            for owner, kind, share in items:
                want = B_SHARE if owner in u3 else SK_SHARE
                if owner not in mine or kind != want or owner in seen:
                    raise ProtocolError(f"client {sender}: unexpected share of {owner}")
                seen.add(owner)
            if seen != mine:
                raise ProtocolError(f"client {sender}: the unmask answer is incomplete")
        self._store_unmask(st, sender, [o for o, _, _ in items],
                           [bytes(s) for _, _, s in items])

    def add_unmask_checked(self, st, sender, shares):
        """Record survivor ``sender``'s answer, whose owners and kinds the
        caller found equal to :meth:`expected_unmask` (``shares``: one
        ``bytes`` per owner, in order) and whose sender it found a survivor
        that had not answered."""
        self._store_unmask(st, sender, st["expect"][sender][0], shares)

    def _store_unmask(self, st, sender, owners, shares):
        # stored by sender, as received (owner -> share): the recovery picks
        # each owner's shares from its holders that answered
        st["shares"][sender] = dict(zip(owners, shares))
        st["answered"].add(sender)

    def _holders(self, owner):
        """The clients that hold shares of ``owner``: itself and its
        neighbours (the graph is symmetric), increasing."""
        h = self._holders_cache.get(owner)
        if h is None:
            h = self._holders_cache[owner] = tuple(sorted(set(self.neighbours(owner))
                                                          | {owner}))
        return h

    def recover(self, st):
        """``(self seeds of U3 (n, 32) uint8, pair keys to remove (m, 32) uint8,
        negate flags (m,))``: subtracting every self stream and adding
        ``(-1)**negate`` times each pair stream leaves the survivors' sum.
        Raises :class:`ProtocolError` when some secret has too few shares
        (the server may wait for more unmask answers)."""
        u2, u3 = st["u2"], st["u3"]
        u3set = frozenset(u3)
        dropped = [v for v in u2 if v not in u3set]
        need = self.n_share
        owners = list(u3) + dropped
        by_sender = st["shares"]
        answered = st["answered"]               # the keys of by_sender
        xs_of = self._xs_cache
        groups = []
        for owner in owners:
            # its holders that answered (each answer held exactly the owners
            # its sender holds), lowest first
            hs = self._holders(owner)
            if not answered.issuperset(hs):
                hs = tuple(h for h in hs if h in by_sender)
            if len(hs) < need:
                raise ProtocolError(
                    f"round {st['round']}: {len(hs)} shares of client {owner}'s "
                    f"{'self seed' if owner in u3set else 'round key'}, {need} needed "
                    "(too many dropouts)")
            # exactly ``need`` shares, lowest holders first: survivors share
            # most holder sets, so the Lagrange weights are computed once and
            # cached; a wrong share is caught by the commitment / public key
            hs = hs[:need]
            xs = xs_of.get(hs)
            if xs is None:
                if len(xs_of) > 4 * len(self.ids):
                    xs_of.clear()
                xs = xs_of[hs] = tuple(h + 1 for h in hs)
            groups.append((xs, [by_sender[h][owner] for h in hs]))
        # every secret at once: the Lagrange weights depend on the holders
        # only (cached), so each secret is one dot product
        secrets = dict(zip(owners, _shamir.reconstruct_each(groups, need)))
        commits = st["commits"]
        for owner in u3:
            if self_commitment(secrets[owner]) != commits[owner]:
                raise ProtocolError(f"round {st['round']}: client {owner}'s self seed does not "
                                    "match its commitment (inconsistent shares)")
        selfs = np.frombuffer(b"".join(secrets[o] for o in u3), np.uint8).reshape(len(u3), 32)
        pair_keys, neg = [], []
        for v in dropped:
            try:
                sk = X25519PrivateKey.from_private_bytes(secrets[v])
            except ValueError:
                raise ProtocolError(f"round {st['round']}: client {v}'s round key does not "
                                    "reconstruct") from None
            if raw_public(sk) != st["pks"][v]:
                raise ProtocolError(f"round {st['round']}: client {v}'s reconstructed round "
                                    "key does not match its public key (inconsistent shares)")
            for u in self.neighbours(v):
                if u not in u3set:
                    continue
                k = pair_mask_key(exchange(sk, st["pks"][u], f"client {u}"), self.digest,
                                  st["round"], u, v)
                pair_keys.append(k)
                # u added +PRG(k) if u < v: remove it (negate), else add it back
                neg.append(1 if u < v else 0)
        pk = (np.frombuffer(b"".join(pair_keys), np.uint8).reshape(len(pair_keys), 32)
              if pair_keys else np.zeros((0, 32), np.uint8))
        return selfs, pk, np.asarray(neg, dtype=np.uint8), tuple(dropped)
