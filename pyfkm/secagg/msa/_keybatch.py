"""Key batches: steps 1-2 of several rounds of the masking protocol in one flight.

A run whose rounds are fixed in advance (``DPFederatedKMeans``: its round
count is set before the first round, for the accountant) shares the keys
of ``count`` rounds at once: each client draws, for every round, a fresh
X25519 round key and a fresh self seed (OS CSPRNG), and Shamir-shares all
of them among its holders exactly as :meth:`MaskingClient.share` does for
one round; one ChaCha20-Poly1305 ciphertext per pair carries the shares of
every round, bound to the run (roster digest), the batch's rounds, both ids
and every round public key.  Each round then opens without a message
(:func:`open_batch_round`): its participants take the place of its sharers,
its pair keys derive from that round's keys only, and the round continues
with the usual steps 3-4 on the same per-round state (so the consistency
rule, the thresholds and the same-data rule apply per round unchanged).
See ``docs/threat_model.md``.

The functions act on a :class:`~pyfkm.secagg._masking.MaskingClient` or
:class:`~pyfkm.secagg._masking.MaskingServer` (``m``) and its state; the
roles (:class:`~pyfkm.secagg.msa.MsaClient`,
:class:`~pyfkm.secagg.msa.MsaServer`) frame them as messages.
"""
import os
import struct

from cryptography.exceptions import InvalidTag

from ...exceptions import ProtocolError
from .. import _shamir
from .._keys import (exchange, is_small_order, new_key, pair_mask_key, raw_private, raw_public,
                     round_view, self_commitment)
from .._masking import B_SHARE, SHARE_PLAIN

# the plaintext for one holder is (owner, holder, first round, rounds) and then,
# per round, the two shares in SHARE_PLAIN's order (self seed, round key)
BATCH_PLAIN = struct.Struct("<IIQI")
MAX_BATCH = 1024              # rounds of one key batch
MAX_BATCH_BYTES = 1 << 26     # 64 MiB: clients refuse larger key batch messages
_BATCH_NONCE = 1 << 63        # batch nonces: (2**63 + first round, owner); a
#                               round's share nonces have round < 2**32


def batch_ct_bytes(count):
    """Bytes of one holder's ciphertext in a key batch of ``count`` rounds."""
    return BATCH_PLAIN.size + 2 * _shamir.SHARE_BYTES * count + 16


def max_batch_rounds(n_holders: int) -> int:
    """The most rounds one key batch may cover.

    A client's batch message carries, per round, its round public key and
    seed commitment and two Shamir shares for each of the other
    ``n_holders - 1`` holders; the bundle a client receives carries, per
    round and other holder, that holder's round key and its two shares for
    the recipient.  The count is the largest that keeps both within 64 MiB
    (``MAX_BATCH_BYTES``), at most 1024 rounds and at least 1.  A fit with
    more rounds shares the rest in later batches.

    Parameters
    ----------
    n_holders : int
        Holders of each client's shares (the client and its neighbours).

    Returns
    -------
    int
        Rounds per batch, in ``1 .. 1024``.

    Examples
    --------
    >>> from pyfkm.secagg import max_batch_rounds
    >>> max_batch_rounds(2), max_batch_rounds(1000)
    (1024, 684)
    """
    # per round: the sender's key and commitment, and per other holder two
    # shares (message) or a round key and two shares (bundle); per holder
    # its id, sharer id, ciphertext framing and tag; 4 KiB for the headers
    others = max(n_holders - 1, 0)
    per_round = 64 + others * (2 * _shamir.SHARE_BYTES + 32)
    fixed = 4096 + 64 * max(n_holders, 1)
    return max(1, min(MAX_BATCH, (MAX_BATCH_BYTES - fixed) // per_round))


def _batch_nonce(first, owner):
    return struct.pack("<QI", _BATCH_NONCE | first, owner)


def _by_round(plain, count):
    """The shares of a batch plaintext, per round (each round's two shares
    in SHARE_PLAIN's order), so that a round's can be dropped alone."""
    w, at = 2 * _shamir.SHARE_BYTES, BATCH_PLAIN.size
    return [plain[at + w * j:at + w * (j + 1)] for j in range(count)]


def _batch_ad(digest, first, count, owner, holder, pks):
    return (b"pyfkm/secagg/key-batch/v1" + digest + struct.pack("<QIII", first, count, owner,
                                                                   holder) + b"".join(pks))

# ------------------------------------------------------------------ client side

def share_batch(m, first, count, participants):
    """Step 1 of the ``count`` rounds ``first .. first + count - 1`` at
    once: per round a fresh X25519 round key and self seed (OS CSPRNG),
    Shamir-shared as :meth:`MaskingClient.share` does, all rounds' shares for one
    holder in one ciphertext (bound to the run, the rounds, both ids and
    every round public key).  Returns ``(public keys, commitments,
    [(holder, ciphertext)])``.  The same refusals as :meth:`MaskingClient.share`, for
    the batch's first round and with every round of it below
    :data:`MAX_ROUND`; the batch's rounds count as shared."""
    if m.digest is None:
        raise ProtocolError("receive the roster first")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_BATCH:
        raise ProtocolError(f"a key batch has 1 to {MAX_BATCH} rounds, got {count!r}")
    me = m.client_id
    parts = frozenset(participants)
    last = first + count - 1
    holders = m._share_holders(first, last, parts)
    if count > max_batch_rounds(len(holders)):
        raise ProtocolError(f"a key batch of {count} rounds to {len(holders) - 1} holders "
                            f"exceeds {MAX_BATCH_BYTES} bytes; at most "
                            f"{max_batch_rounds(len(holders))} rounds")
    sks = [new_key() for _ in range(count)]
    bs = [os.urandom(32) for _ in range(count)]
    pks = [raw_public(sk) for sk in sks]
    commits = [self_commitment(b) for b in bs]
    secrets = []
    for sk, b in zip(sks, bs):
        secrets += [b, raw_private(sk)]        # SHARE_PLAIN's order: self seed, round key
    rows = _shamir.split(secrets, m.n_share, [h + 1 for h in holders])
    enc = _shamir.share_to_bytes
    out, own = [], None
    for h, row in zip(holders, rows):
        plain = BATCH_PLAIN.pack(me, h, first, count) + b"".join(map(enc, row))
        if h == me:
            own = plain
            continue
        ct = m._aead[h].encrypt(_batch_nonce(first, me), plain,
                                   _batch_ad(m.digest, first, count, me, h, pks))
        out.append((h, ct))
    m._last = last
    m._round = None
    m._batch = {"first": first, "count": count, "next": first, "participants": parts,
                   "sks": sks, "bs": bs, "pks": pks, "held": {me: _by_round(own, count)},
                   "peer_pks": None, "u2": None}
    return pks, commits, out

def receive_batch(m, first, survivors, items):
    """Step 2 of a key batch: ``survivors`` are the clients whose batch
    the server relays (they may take part in the batch's rounds);
    ``items``: ``(owner, owner's round public keys, ciphertext)`` for
    each neighbour among them.  Checked as :meth:`MaskingClient.receive_shares` checks
    a round's shares, and every round key is refused if of small order;
    the pair keys are derived round by round (:func:`open_batch_round`)."""
    bt = m._batch
    if bt is None or bt["first"] != first:
        raise ProtocolError(f"no key batch of this client starts at round {first}")
    if bt["u2"] is not None:
        raise ProtocolError(f"round {first}: the key batch was already received")
    me, count = m.client_id, bt["count"]
    u2 = m._round_set(first, survivors, bt["participants"], "clients shared keys",
                         "the sharing clients must be participants and include this client")
    expect = m._neighbours & u2
    size = BATCH_PLAIN.size + 2 * _shamir.SHARE_BYTES * count
    got = {}
    for owner, pks, ct in items:
        if owner not in expect or owner in got:
            raise ProtocolError(f"round {first}: unexpected or repeated shares of {owner}")
        pks = tuple(bytes(k) for k in pks)
        if len(pks) != count or any(len(k) != 32 for k in pks):
            raise ProtocolError(f"round {first}: client {owner} sent {len(pks)} round keys, "
                                f"the batch has {count} rounds")
        try:
            plain = m._aead[owner].decrypt(_batch_nonce(first, owner), bytes(ct),
                                              _batch_ad(m.digest, first, count, owner,
                                                        me, pks))
        except InvalidTag:
            raise ProtocolError(f"round {first}: the shares of client {owner} fail "
                                "authentication") from None
        if len(plain) != size or BATCH_PLAIN.unpack_from(plain) != (owner, me, first, count):
            raise ProtocolError(f"round {first}: malformed shares of client {owner}")
        if any(map(is_small_order, pks)):
            raise ProtocolError(f"round {first}: a round key of client {owner} is not a "
                                "usable X25519 key (a low-order point)")
        got[owner] = (pks, plain)
    if set(got) != expect:
        raise ProtocolError(f"round {first}: missing shares of clients "
                            f"{sorted(expect - set(got))}")
    if len(expect | {me}) < m.n_share:
        raise ProtocolError(f"round {first}: too few holders survive")
    # everything checked: commit
    bt["held"].update((owner, _by_round(plain, count)) for owner, (_, plain) in got.items())
    bt["peer_pks"] = {owner: pks for owner, (pks, _) in got.items()}
    bt["u2"] = u2

def open_batch_round(m, round_, participants):
    """Steps 1-2 of round ``round_`` of the received key batch, without
    a message: the round's participants (a subset of the batch's
    sharers, this client among them, at least the threshold) take the
    places of the round's sharers; derives the round's pair keys with
    the neighbours among them and lays out the round's shares as
    :meth:`MaskingClient.receive_shares` does.  Rounds only increase: a round before
    or at the last one opened, outside the batch, or after a round this
    client shared on its own, is refused; the keys of the rounds passed
    over are dropped."""
    bt = m._batch
    if bt is None or bt["u2"] is None:
        raise ProtocolError(f"round {round_}: no key batch was received")
    first, count = bt["first"], bt["count"]
    if m._last != first + count - 1 or not bt["next"] <= round_ < first + count:
        raise ProtocolError(f"round {round_} is not a round of the key batch after the "
                            "last one opened: mask streams are never reused")
    me = m.client_id
    u = m._round_set(round_, participants, bt["u2"], "participants",
                        "the participants must have shared the key batch and include "
                        "this client")
    nbrs = m._neighbours & u
    if len(nbrs) + 1 < m.n_share:
        raise ProtocolError(f"round {round_}: too few holders survive")
    i = round_ - first
    sk, peer = bt["sks"][i], bt["peer_pks"]
    keys = {}
    for owner in nbrs:
        secret = exchange(sk, peer[owner][i], f"client {owner}'s round key")
        keys[owner] = pair_mask_key(secret, m.digest, round_, me, owner)
    # everything checked: commit (this round's and the passed-over
    # rounds' keys and held shares leave the batch: this round's live in
    # its round state, dropped with it as a round shared on its own)
    b, pk = bt["bs"][i], bt["pks"][i]
    order = tuple(sorted(nbrs | {me}))
    bheld = bt["held"]
    # each owner's shares of this round (self seed first, SHARE_PLAIN's
    # order), laid out as receive_shares lays out a round's plaintexts; the
    # answer when every owner survives holds the self-seed shares
    own = [bheld[o][i] for o in order]
    held = {o: SHARE_PLAIN.pack(o, me, round_) + c for o, c in zip(order, own)}
    for j in range(bt["next"] - first, i + 1):
        bt["sks"][j] = bt["bs"][j] = None
        for rounds in bheld.values():
            rounds[j] = None
    bt["next"] = round_ + 1
    st = m._round = {"round": round_, "participants": None, "sk": None, "b": b,
                        "pk": pk, "held": held, "keys": keys, "u2": u, "done": False}
    st["reveal"] = order
    st["reveal_all"] = (order, (B_SHARE,) * len(order),
                        tuple([c[:_shamir.SHARE_BYTES] for c in own]))
    st["view"] = round_view(round_, u)
    return keys


# ------------------------------------------------------------------ server side

def new_batch(m, first, count, participants):
    if len(participants) < m.threshold:
        raise ProtocolError(f"{len(participants)} participants, below the threshold "
                            f"{m.threshold}: clients refuse such a round")
    return {"first": first, "count": count, "u1": tuple(participants), "pks": {},
            "commits": {}, "cts": {}, "u2": None}

def add_batch_shares(m, bt, sender, count, pks, commits, items):
    """Record ``sender``'s key batch: ``count`` round keys and
    commitments, one ciphertext per neighbour participant; a round key
    of small order is refused (as :meth:`MaskingServer.add_shares` refuses one)."""
    if bt["u2"] is not None:
        raise ProtocolError(f"round {bt['first']}: key sharing is closed")
    if sender not in bt["u1"] or sender in bt["pks"]:
        raise ProtocolError(f"client {sender}: not a participant, or shared twice")
    if count != bt["count"] or len(pks) != count or len(commits) != count:
        raise ProtocolError(f"client {sender}: a key batch of {count} rounds, the server "
                            f"opened {bt['count']}")
    nb = set(m.neighbours(sender)) & set(bt["u1"])
    holders = [h for h, _ in items]
    if set(holders) != nb or len(holders) != len(nb):
        raise ProtocolError(f"client {sender}: shares must go to each neighbour "
                            "participant once")
    if any(map(is_small_order, pks)):
        raise ProtocolError(f"the public key of client {sender}'s round key is not a "
                            "usable X25519 key (a low-order point: no shared secret)")
    bt["pks"][sender] = tuple(bytes(k) for k in pks)
    bt["commits"][sender] = tuple(bytes(c) for c in commits)
    for h, ct in items:
        bt["cts"][(sender, h)] = bytes(ct)

def batch_sharers(m, bt):
    """The clients whose key batch arrived (what closes the batch);
    ProtocolError below the threshold."""
    u2 = tuple(sorted(bt["pks"]))
    if len(u2) < m.threshold:
        raise ProtocolError(f"round {bt['first']}: {len(u2)} clients shared keys, below "
                            f"the threshold {m.threshold}")
    return u2

def batch_bundle_items(m, bt, recipient):
    """``[(owner, owner's round keys, ciphertext for recipient)]``."""
    if bt["u2"] is None or recipient not in bt["pks"]:
        raise ProtocolError(f"client {recipient} has no bundle in the key batch of "
                            f"round {bt['first']}")
    u2 = set(bt["u2"])
    return [(o, bt["pks"][o], bt["cts"][(o, recipient)])
            for o in m.neighbours(recipient) if o in u2]

def batch_round(m, bt, round_, participants, sharers):
    """The state of round ``round_`` of key batch ``bt`` (whose sharers
    are ``sharers``) over ``participants`` (sharers of the batch), as
    :meth:`new_round` and :meth:`close_shares` leave it: the
    participants are the round's sharers, with that round's keys and
    commitments."""
    i = round_ - bt["first"]
    if not 0 <= i < bt["count"]:
        raise ProtocolError(f"round {round_} is not a round of the key batch")
    if not set(participants) <= set(sharers):
        raise ProtocolError(f"round {round_}: participants must have shared the key batch")
    st = m.new_round(round_, participants)
    st["pks"] = {o: bt["pks"][o][i] for o in participants}
    st["commits"] = {o: bt["commits"][o][i] for o in participants}
    m.close_shares(st)
    return st

