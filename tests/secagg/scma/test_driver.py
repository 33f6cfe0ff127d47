"""Tests of the in-process SCMA driver (pyfkm.secagg.scma._driver,
secure_sum_sparse): bad input, equality with the plain sum, reports.  The
oracles are described in tests/_helpers/scma.py."""
import numbers

import numpy as np
import pytest

from pyfkm.exceptions import InvalidInputError
from pyfkm.secagg import CapacityError, ScmaParams, SyndromeMessage, secure_sum_sparse
from _helpers.scma import P, P20, P31, assert_aggregate, expected_layout, plain_sum, random_clients


def test_driver_invalid_inputs():
    ok = (np.array([[0, 1]]), np.array([1]))
    with pytest.raises(InvalidInputError):
        secure_sum_sparse([ok, (np.array([[0, 9]]), np.array([1]))], 9)
    with pytest.raises(InvalidInputError):
        secure_sum_sparse([ok, (np.array([[0, 1]]), np.array([0]))], 9)
    with pytest.raises(InvalidInputError):
        secure_sum_sparse([ok, (np.array([[0, 1, 1]]), np.array([1]))], 9)
    with pytest.raises(InvalidInputError):       # index mode impossible for 9**30 >= p
        secure_sum_sparse([(np.zeros((1, 30), dtype=np.int64), np.array([1]))] * 2, 9,
                          mode="index")
    with pytest.raises(InvalidInputError):
        secure_sum_sparse([], 9)
    for bad in ([2], [-1], [True], [0.0]):        # dropouts are client positions
        with pytest.raises(InvalidInputError):
            secure_sum_sparse([ok, ok], 9, dropouts=bad)
    # a client above max_nonzeros (the default per-client bound)
    three = (np.array([[0, 1], [1, 1], [2, 1]]), np.array([1, 1, 1]))
    with pytest.raises(CapacityError):
        secure_sum_sparse([ok, three], 9, max_nonzeros=2)


# ---------------------------------------------------------------------------
# correctness: decoded aggregate == plain sum

DRIVER_CASES = [
    # (d, B, modulus, mode, expected resolved mode, n_instances)
    (3, 7, P, "auto", "index", 8),
    (2, 4, P, "index", "index", 4),
    (2, 2**30, P, "auto", "index", 3),        # nodes up to 2**60
    (61, 2, P, "auto", "index", 3),           # 61 binary coordinates
    (2, 5, 101, "auto", "index", 4),          # tiny field
    (10, 173, P, "auto", "hashed", 6),
    (3, 7, P, "hashed", "hashed", 4),
    (3, 2000, P31, "auto", "hashed", 4),      # small p, c = 2, partial last row
    (2, 1500, P20, "auto", "hashed", 3),      # c = 1
    (1, P20 - 1, P20, "hashed", "hashed", 3),  # d = 1, B = p - 1
    (62, 2, P, "auto", "hashed", 3),          # c = 61, rows = 2
]


@pytest.mark.parametrize("d, B, p, mode, resolved, n_inst", DRIVER_CASES)
def test_driver_equals_plain_sum(d, B, p, mode, resolved, n_inst):
    rng = np.random.default_rng(d * 1000 + (B % 997) + (p % 991))
    for inst in range(n_inst):
        n_clients = int(rng.integers(2, 7))
        pool = int(rng.integers(3, 14))
        # counts within the budget (p - 1) // (2 n): 8 for p = 101, n = 6
        clients = random_clients(rng, n_clients, d, B, max_nnz=5, pool_size=pool,
                                 max_count=1 if p == 101 else 50)
        if inst == 0:                                  # one client with 0 nonzeros
            clients[0] = (np.zeros((0, d), dtype=np.int64), np.zeros(0, dtype=np.int64))
        expected = plain_sum(clients, d)
        kw = {}
        if inst % 3 == 1:                              # M exactly reached
            kw["max_nonzeros"] = max(len(expected[1]), max(len(q) for _, q in clients), 1)
        bins, counts, report = secure_sum_sparse(clients, B, mode=mode, modulus=p, **kw)
        assert_aggregate(bins, counts, expected, d)
        assert report.mode == resolved
        assert report.modulus == p
        assert report.n_participants == n_clients
        assert report.incremental is False
        assert report.dropped == ()


def test_driver_all_empty_and_single_bin():
    d = 4
    empty = (np.zeros((0, d), dtype=np.int64), np.zeros(0, dtype=np.int64))
    for mode in ("index", "hashed"):
        bins, counts, _ = secure_sum_sparse([empty, empty, empty], 5, mode=mode,
                                            max_nonzeros=3)
        assert_aggregate(bins, counts, plain_sum([], d), d)
        one = (np.array([[4, 0, 3, 1]]), np.array([7]))
        bins, counts, _ = secure_sum_sparse([empty, one, empty, one], 5, mode=mode)
        assert_aggregate(bins, counts, (np.array([[4, 0, 3, 1]]), np.array([14])), d)


def test_driver_accepts_lists_and_sorts_rows():
    clients = [([[3, 1], [0, 2], [3, 0]], [1, 2, 3]), ([[0, 2], [1, 5]], [4, 1]),
               ([[1, 5]], [2])]
    for mode in ("index", "hashed"):
        bins, counts, report = secure_sum_sparse(clients, 6, mode=mode)
        # hand computed: (0,2): 2+4, (1,5): 1+2, (3,0): 3, (3,1): 1
        np.testing.assert_array_equal(bins, [[0, 2], [1, 5], [3, 0], [3, 1]])
        np.testing.assert_array_equal(counts, [6, 3, 3, 1])
        assert report.mode == mode


@pytest.mark.parametrize("d, B, p, mode", [(3, 7, P, "auto"), (10, 173, P, "auto"),
                                           (3, 2000, P31, "auto"), (2, 5, 101, "auto")])
def test_driver_report_bytes(d, B, p, mode):
    rng = np.random.default_rng(21)
    for inst in range(3):
        clients = random_clients(rng, 4, d, B, max_nnz=4, pool_size=8,
                                 max_count=3, empty_prob=0.3)
        nnz = sum(len(q) for _, q in clients)
        M = nnz if inst and nnz else 9
        kw = {} if inst and nnz else {"max_nonzeros": M}
        bins, counts, report = secure_sum_sparse(clients, B, mode=mode, modulus=p, **kw)
        assert_aggregate(bins, counts, plain_sum(clients, d), d)
        words = expected_layout(d, B, M, p, report.mode)[0]
        params = ScmaParams.create(d, B, M, modulus=p, mode=report.mode)
        assert params.message_words == words == report.message_words
        msg = SyndromeMessage(run_id=params.run_id, round=1, sender=3, modulus=p,
                              payload=np.zeros(words, dtype=np.uint64))
        assert report.bytes_per_client == len(msg.to_bytes())
        header = report.bytes_per_client - 8 * words
        assert 0 < header <= 256
        assert isinstance(report.server_bytes, numbers.Integral) and report.server_bytes > 0
        assert report.decode_seconds >= 0.0
        if inst == 0:
            header0 = header
        assert header == header0       # the header does not depend on M or the data
