"""``pyfkm.secagg._shamir.reconstruct_each`` (issue 22): one secret per
sharing from exactly ``threshold`` shares, the server's usual recovery.

Expected values come from a pure-Python Lagrange interpolation written out
in this file (``lagrange_secret``: the naive per-term formula with
``pow(., -1, p)``), and errors from :func:`reconstruct` on the same shares
(its own tests check it against sympy and fractions).
"""
import random

import pytest

from pyfkm.secagg import ProtocolError
from pyfkm.secagg._shamir import (PRIME, reconstruct, reconstruct_each, reconstruct_many,
                                  share_to_bytes, split)


def lagrange_secret(xs, values):
    """f(0) mod PRIME of the polynomial through (xs[i], values[i])."""
    total = 0
    for i, (xi, yi) in enumerate(zip(xs, values)):
        num = den = 1
        for j, xj in enumerate(xs):
            if j != i:
                num = num * xj % PRIME
                den = den * (xj - xi) % PRIME
        total += yi * num * pow(den, -1, PRIME)
    return total % PRIME


def sharings(seed, n_groups=12, t=5, pool=40):
    rng = random.Random(seed)
    secrets, groups = [], []
    for _ in range(n_groups):
        xs = tuple(sorted(rng.sample(range(1, pool), t)))
        secret = rng.randbytes(32)
        shares = split([secret], t, list(xs))
        secrets.append(secret)
        groups.append((xs, [share_to_bytes(row[0]) for row in shares]))
    return secrets, groups


def one_by_one_error(groups, t):
    for xs, shares in groups:
        try:
            reconstruct(xs, [(s,) for s in shares], t)
        except ProtocolError as e:
            return str(e)
    return None


# ---------------------------------------------------------------- errors first

def test_share_not_below_prime_gives_reconstructs_error():
    _, groups = sharings(1)
    xs, shares = groups[4]
    shares = list(shares)
    shares[2] = share_to_bytes(PRIME - 1)[:-1] + b"\x02"       # >= PRIME
    groups[4] = (xs, shares)
    with pytest.raises(ProtocolError) as e:
        reconstruct_each(groups, 5)
    assert str(e.value) == one_by_one_error(groups, 5)


@pytest.mark.parametrize("bad", [b"\x00" * 32, "x" * 33, None])
def test_malformed_share_gives_reconstructs_error(bad):
    _, groups = sharings(2)
    xs, shares = groups[0]
    groups[0] = (xs, [bad] + list(shares[1:]))
    with pytest.raises(ProtocolError) as e:
        reconstruct_each(groups, 5)
    assert str(e.value) == one_by_one_error(groups, 5)


def test_int_shares_are_taken_as_reconstruct_takes_them():
    secrets, groups = sharings(7)
    xs, shares = groups[3]
    groups[3] = (xs, [int.from_bytes(b, "little") for b in shares])    # decoded shares
    assert reconstruct_each(groups, 5) == secrets


def test_repeated_node_gives_reconstructs_error():
    _, groups = sharings(3)
    xs, shares = groups[1]
    groups[1] = ((xs[0],) + xs[:-1], shares)
    with pytest.raises(ProtocolError) as e:
        reconstruct_each(groups, 5)
    assert str(e.value) == one_by_one_error(groups, 5)


def test_tampered_share_matches_the_one_by_one_result_or_error():
    _, groups = sharings(4, n_groups=30)
    rng = random.Random(9)
    for k in range(len(groups)):
        xs, shares = groups[k]
        shares = list(shares)
        v = int.from_bytes(shares[0], "little")
        shares[0] = share_to_bytes((v + rng.randrange(1, PRIME)) % PRIME)
        groups[k] = (xs, shares)
    err = one_by_one_error(groups, 5)
    if err is None:
        got = reconstruct_each(groups, 5)
        assert got == [reconstruct(xs, [(s,) for s in sh], 5)[0] for xs, sh in groups]
    else:
        with pytest.raises(ProtocolError) as e:
            reconstruct_each(groups, 5)
        assert str(e.value) == err


# ---------------------------------------------------------------- equalities

@pytest.mark.parametrize("seed", range(4))
def test_secrets_equal_the_lagrange_oracle(seed):
    secrets, groups = sharings(seed, t=3 + seed)
    got = reconstruct_each(groups, 3 + seed)
    assert got == secrets
    for (xs, shares), s in zip(groups, got):
        want = lagrange_secret(xs, [int.from_bytes(b, "little") for b in shares])
        assert want == int.from_bytes(s, "little")


def test_more_shares_than_threshold_are_checked_like_reconstruct():
    secrets, groups = sharings(5, t=4)
    rng = random.Random(5)
    xs, shares = groups[2]
    extra = tuple(sorted(set(rng.sample(range(50, 90), 2))))
    more = split([secrets[2]], 4, list(xs + extra))       # a fresh polynomial
    groups[2] = (xs + extra, [share_to_bytes(r[0]) for r in more])
    assert reconstruct_each(groups, 4) == secrets
    groups[2] = (xs + extra, [share_to_bytes(r[0]) for r in more][:-1] + [share_to_bytes(1)])
    with pytest.raises(ProtocolError, match="does not lie on the polynomial"):
        reconstruct_each(groups, 4)


def test_lists_and_empty_input():
    secrets, groups = sharings(6)
    assert reconstruct_each([[list(xs), list(sh)] for xs, sh in groups], 5) == secrets
    assert reconstruct_each([], 5) == []


@pytest.mark.parametrize("group", [(), ([1, 2],), ([1, 2], [b"x"], [b"y"]), 7, None])
def test_group_not_a_pair_gives_reconstruct_manys_error(group):
    a = bytes(range(32))
    good = ([1, 2], [s[0] for s in split([a], 2, [1, 2, 3])[:2]])
    with pytest.raises(ProtocolError, match="group 1 must be a pair"):
        reconstruct_many([good, group], 2)
    with pytest.raises(ProtocolError, match="group 1 must be a pair"):
        reconstruct_each([good, group], 2)


# ------------------------------------------- the compiled path (p256_dots) and its cache

def test_node_tuples_seen_before_are_rechecked_when_they_are_other_objects():
    # the fast path remembers node tuples by identity; an equal tuple of
    # other types (True == 1, 2.0 == 2) is another object and gets the
    # reference error, before and after the int tuple was seen
    secrets, groups = sharings(8, t=3)
    xs, shares = groups[0]
    assert reconstruct_each(groups, 3) == secrets
    for odd in [(True,) + xs[1:], (float(xs[0]),) + xs[1:]]:
        bad = [(odd, shares)] + groups[1:]
        with pytest.raises(ProtocolError) as e:
            reconstruct_each(bad, 3)
        assert str(e.value) == one_by_one_error(bad, 3)
    assert reconstruct_each(groups, 3) == secrets


@pytest.mark.parametrize("seed", range(6))
def test_arbitrary_shares_give_the_oracle_secret_or_reconstructs_error(seed):
    # shares drawn anywhere in [0, PRIME), edge values included: the value at
    # 0 is often >= 2**256 (not a secret), which must raise as reconstruct does
    rng = random.Random(seed)
    edge = [0, 1, PRIME - 1, PRIME - 2, 2 ** 256 - 1, 2 ** 256, 2 ** 64]
    t = 1 + seed
    groups = []
    for _ in range(20):
        xs = tuple(sorted(rng.sample(range(1, 2 ** 32 + 1), t)))
        vals = [rng.choice(edge) if rng.random() < 0.5 else rng.randrange(PRIME)
                for _ in range(t)]
        groups.append((xs, [share_to_bytes(v) for v in vals]))
    for k in range(len(groups)):
        part = groups[k:k + 1]
        err = one_by_one_error(part, t)
        if err is None:
            (got,) = reconstruct_each(part, t)
            xs, shares = part[0]
            want = lagrange_secret(xs, [int.from_bytes(b, "little") for b in shares])
            assert int.from_bytes(got, "little") == want
        else:
            with pytest.raises(ProtocolError) as e:
                reconstruct_each(part, t)
            assert str(e.value) == err
    err = one_by_one_error(groups, t)
    if err is not None:
        with pytest.raises(ProtocolError) as e:
            reconstruct_each(groups, t)
        assert str(e.value) == err


def test_split_at_the_largest_abscissas_matches_horner_on_python_integers(monkeypatch):
    # split draws its coefficients from _urandom; with a fixed stream the
    # shares must equal the polynomial evaluated here with Python integers
    import itertools as it

    from pyfkm.secagg import _shamir
    stream = it.count(1)
    monkeypatch.setattr(_shamir, "_urandom",
                        lambda k: bytes((next(stream) * 37) % 256 for _ in range(k)))
    secrets = [bytes([255]) * 32, bytes(32), bytes(range(32))]
    xs = [1, 2, 2 ** 32, 2 ** 32 - 1, 12345]
    t = 4
    nb = (PRIME.bit_length() + 7) // 8 + 1
    limit = (1 << (8 * nb)) // PRIME * PRIME
    stream2 = it.count(1)
    coefs = []
    while len(coefs) < len(secrets) * (t - 1):
        v = int.from_bytes(bytes((next(stream2) * 37) % 256 for _ in range(nb)), "little")
        if v < limit:
            coefs.append(v % PRIME)
    shares = split(secrets, t, xs)
    for i, x in enumerate(xs):
        for j, s in enumerate(secrets):
            a = [int.from_bytes(s, "little")] + coefs[j * (t - 1):(j + 1) * (t - 1)]
            assert shares[i][j] == sum(c * pow(x, k, PRIME) for k, c in enumerate(a)) % PRIME
