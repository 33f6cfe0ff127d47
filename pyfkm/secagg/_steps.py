"""The server's steps that SCMA and MSA share: key collection and the
roster, key shares, bundles and unmasking (:mod:`._masking` does the work;
this frames it as messages).  A server class mixes this in and keeps
``run_id``, ``_m`` (a :class:`~._masking.MaskingServer`), ``_keys``,
``_roster``, ``_threshold``, ``_degree`` and ``_open`` (the round in
progress: a dict with ``step``, ``st``, ``got`` and ``req``), and gives
``_roster_message`` (its protocol's roster)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from ..exceptions import InvalidInputError, ProtocolError
from ._framing import _built
from ._keys import default_threshold
from ._messages import (ShareBundle, ShareMessage, UnmaskMessage, UnmaskRequest,
                        check_key_message, parse_unmask_answers)

if TYPE_CHECKING:
    from ._messages import KeyMessage
    from .msa._messages import MsaRosterMessage
    from .scma._messages import RosterMessage


def client_id(v: object) -> int:
    """A client id (an int, not a bool or a float), or InvalidInputError."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise InvalidInputError(f"client ids must be ints, got {v!r}")
    return int(v)


class RoundSteps:
    """Key collection, the roster, and steps 1, 2 and 4 of a round at the
    server (step 3, the inputs, and the final sum are each protocol's own)."""

    # for the type checker: what the server class keeps (module docstring)
    run_id: bytes
    _m: Any
    _keys: dict[int, Any]
    _roster: Any
    _threshold: int | None
    _degree: int
    _open: Any  # the round in progress (a dict), or None
    _roster_message: Callable[..., Any]

    def receive_key(self, msg: KeyMessage) -> None:
        """A client's key message (before the roster closes).

        Parameters
        ----------
        msg : KeyMessage
            The client's key for this run.

        Raises
        ------
        ProtocolError
            Not a :class:`KeyMessage`, a message of another run, a roster
            already sent, or a second key from the same client.
        """
        check_key_message(msg, self.run_id, self._keys, self._roster is not None)
        self._keys[msg.sender] = msg.public_key

    def roster(self) -> RosterMessage | MsaRosterMessage:
        """Close key collection; the roster every client receives.

        Returns
        -------
        RosterMessage or MsaRosterMessage
            The protocol's roster: the clients that sent keys, their keys, the
            threshold (default a strict majority), the graph degree and the
            server's channel key.  Later calls return the same roster.

        Raises
        ------
        ProtocolError
            No key was received, or two clients sent the same public key.
        InvalidInputError
            The threshold given to the server is not in ``[1, n clients]``.
        """
        if not self._keys:
            raise ProtocolError("no client keys received")
        if self._roster is None:
            ids, keys, t, deg = self._roster_fields()
            r = self._roster_message(ids, keys, t, deg, self._m.server_key)
            self._m.close_roster(self.run_id, r.params_bytes(), t, deg, ids, keys)
            self._roster = r
        return self._roster

    def _roster_fields(self) -> tuple[Any, Any, int, int]:
        """(ids, keys, threshold, degree) of the roster from the keys
        received: the threshold given (or a strict majority), checked against
        the number of clients; a degree reaching every other client is the
        complete graph (0)."""
        ids = tuple(sorted(self._keys))
        keys = tuple(self._keys[i] for i in ids)
        n = len(ids)
        t = default_threshold(n) if self._threshold is None else self._threshold
        if not isinstance(t, (int, np.integer)) or isinstance(t, bool) or not 1 <= t <= n:
            raise InvalidInputError(f"threshold {t!r} must be an int in [1, {n} clients]")
        return ids, keys, int(t), (self._degree if self._degree < n - 1 else 0)

    def _need(self, step: str) -> dict[str, Any]:
        if self._open is None or self._open["step"] != step:
            raise ProtocolError(f"no round is waiting for {step}")
        return self._open

    def _check_sender(self, msg: Any, cls: Any, st: dict[str, Any]) -> None:
        if not isinstance(msg, cls):
            raise ProtocolError(f"expected a {cls.__name__}")
        if msg.run_id != self.run_id or msg.round != st["round"]:
            raise ProtocolError(f"{cls.__name__} of another run or round")
        if msg.sender not in self._m._mac:
            raise ProtocolError(f"client {msg.sender} is not in the roster")
        self._m.check_tag(msg.sender, msg.signed_bytes(), msg.tag)

    def receive_shares(self, msg: ShareMessage) -> None:
        """Step 1: a client's :class:`ShareMessage` (authenticated).

        Parameters
        ----------
        msg : ShareMessage
            The client's round key, commitment and encrypted shares.

        Raises
        ------
        ProtocolError
            No round is collecting shares, a message of another run or round, a
            sender outside the roster or the round, a second message from it, a
            tag that fails (an altered or replayed message), or shares not
            addressed to each of its neighbours in the round.
        """
        o = self._need("shares")
        self._check_sender(msg, ShareMessage, o["st"])
        self._m.add_shares(o["st"], msg.sender, msg.round_key, msg.commitment,
                           list(zip(msg.holders, msg.ciphertexts)))

    def bundle(self, client_id_: int) -> ShareBundle:
        """Step 2: the :class:`ShareBundle` of one client that shared keys
        (the first call closes key sharing: ``U2``).

        Parameters
        ----------
        client_id_ : int
            The recipient, a client that shared keys in the open round.

        Returns
        -------
        ShareBundle
            The sharers, and the round keys and ciphertexts of the recipient's
            neighbours among them.

        Raises
        ------
        ProtocolError
            No round is relaying shares, the client did not share keys, or (on
            the first call) fewer than ``threshold`` clients shared keys.
        """
        o = self._open
        if o is None or o["step"] not in ("shares", "bundles"):
            raise ProtocolError("no round is relaying shares")
        st = o["st"]
        cid = client_id(client_id_)
        if cid not in st["pks"]:
            raise ProtocolError(f"client {cid} has no bundle in round {st['round']}")
        if o["step"] == "shares":             # everything checked: close U2
            self._m.close_shares(st)
            o["step"] = "bundles"
        items = self._m.bundle_items(st, cid)
        return _built(ShareBundle, run_id=self.run_id, round=st["round"], recipient=cid,
                      sharers=st["u2"], owners=tuple(i[0] for i in items),
                      round_keys=tuple(i[1] for i in items),
                      ciphertexts=tuple(i[2] for i in items))

    def unmask_request(self) -> UnmaskRequest:
        """Step 4: close inputs and name the survivors (those whose inputs
        arrived); raises :class:`ProtocolError` below the threshold.

        Returns
        -------
        UnmaskRequest
            The survivors ``U3``, broadcast to each of them.

        Raises
        ------
        ProtocolError
            No round is waiting for inputs, or fewer than ``threshold`` inputs
            arrived.
        """
        o = self._need("inputs")
        u3 = self._m.close_inputs(o["st"], o["got"])
        o["step"] = "unmask"
        return _built(UnmaskRequest, run_id=self.run_id, round=o["st"]["round"], survivors=u3)

    def receive_unmask(self, msg: UnmaskMessage) -> None:
        """Step 4: a survivor's revealed shares (authenticated).

        Parameters
        ----------
        msg : UnmaskMessage
            The shares the survivor reveals.

        Raises
        ------
        ProtocolError
            No unmask request is open, a message of another run or round, a
            sender that is not a survivor or answered already, a tag that fails,
            or an answer with unexpected or missing shares.
        """
        o = self._need("unmask")
        st = o["st"]
        self._check_sender(msg, UnmaskMessage, st)
        m, sender = self._m, msg.sender
        u3 = st.get("u3set")
        # the usual answer (a survivor's first, exactly the owners and kinds
        # it owes) is taken as the message's columns; anything else goes
        # through add_unmask, which names what is wrong
        if u3 is not None and sender in u3 and sender not in st["answered"] \
                and (msg.owners, msg.kinds) == m.expected_unmask(st, sender):
            m.add_unmask_checked(st, sender, msg.shares)
        else:
            m.add_unmask(st, sender, list(zip(msg.owners, msg.kinds, msg.shares)))

    def receive_unmask_many(self, datas: Iterable[bytes]) -> None:
        """Step 4: many survivors' unmask answers, as wire bytes.

        The same checks as ``receive_unmask(UnmaskMessage.from_bytes(data))``
        for each, in order: when every message passes they are taken
        together; otherwise the call raises the error :meth:`receive_unmask`
        (or the parser) gives for the first rejected one, *after* the ones
        before it, and takes none of them (a failed call changes nothing:
        the caller may send the batch again without the rejected message).

        Parameters
        ----------
        datas : iterable of bytes
            The answers' wire forms (:meth:`UnmaskMessage.to_bytes`).

        Raises
        ------
        MessageFormatError
            A message that does not parse.
        ProtocolError
            A message :meth:`receive_unmask` would refuse.
        """
        datas = list(datas)
        o = self._open
        if datas and o is not None and o["step"] == "unmask":
            st = o["st"]
            parsed = parse_unmask_answers(datas, self.run_id, st["round"])
            if parsed is not None and self._unmask_batch_ok(st, parsed):
                for sender, _, _, shares, _, _ in parsed:
                    self._m.add_unmask_checked(st, sender, shares)
                return
        # one by one, for the reference errors; undone if one is refused
        taken: list[int] = []
        try:
            for data in datas:
                msg = UnmaskMessage.from_bytes(data)
                self.receive_unmask(msg)
                taken.append(msg.sender)
        except BaseException:
            if taken:
                st = self._open["st"]
                for sender in taken:
                    st["shares"].pop(sender, None)
                    st["answered"].discard(sender)
            raise

    def _unmask_batch_ok(self, st: dict[str, Any], parsed: list[Any]) -> bool:
        """Whether every parsed answer passes what :meth:`receive_unmask`
        checks: a survivor's, once (none answered before, none twice in the
        batch), with exactly the owners and kinds it owes, and a valid tag."""
        m = self._m
        u3, answered = st.get("u3set"), st["answered"]
        if u3 is None:
            return False
        senders = [p[0] for p in parsed]
        if len(set(senders)) != len(senders) or not u3.issuperset(senders) \
                or not answered.isdisjoint(senders):
            return False
        for sender, owners, kinds, _, signed, tag in parsed:
            if (owners, kinds) != m.expected_unmask(st, sender) \
                    or not m.tag_ok(sender, signed, tag):
                return False
        return True
