"""Tests of ScmaParams (pyfkm.secagg.scma._params): bad parameters, the message
layout and the automatic mode, the count budget.  The oracles are described
in tests/_helpers/scma.py."""
import numpy as np
import pytest

from pyfkm.exceptions import InvalidInputError
from pyfkm.secagg import CapacityError, ScmaParams, secure_sum_sparse
from _helpers.scma import P, P20, P31, expected_layout, make_params, make_run


@pytest.mark.parametrize("args, kw", [
    ((0, 4, 3), {}),                               # n_dims < 1
    ((2, 0, 3), {}),                               # bins_per_dim < 1
    ((2, 4, -1), {}),                              # max_nonzeros < 0
    ((2, 4, 3), {"modulus": 100}),                 # not prime
    ((2, 4, 3), {"modulus": 2**64 + 13}),          # too large
    ((2, 4, 3), {"mode": "dense"}),                # unknown mode
    ((3, 5, 3), {"modulus": 101, "mode": "index"}),    # B**d = 125 >= p: index impossible
    ((1, 200, 3), {"modulus": 101, "mode": "hashed"}),  # B > p: c = floor(log_B p) = 0
    ((2.5, 4, 3), {}),                             # non-integer n_dims
])
def test_params_invalid(args, kw):
    with pytest.raises(InvalidInputError):
        ScmaParams.create(*args, **kw)


def test_params_layout_and_auto_mode():
    cases = [
        # (d, B, M, p, expected mode)
        (2, 3, 4, 11, "index"),           # 9 = p - 2 < p - 1
        (2, 5, 3, 101, "index"),          # 25
        (3, 5, 3, 101, "hashed"),         # 125; c = 2, rows = 2
        (2, 11, 3, 101, "hashed"),        # 121; c = 1, rows = 2
        (10, 173, 7, P, "hashed"),        # c = 8, rows = 2
        (3, 2000, 5, P31, "hashed"),      # c = 2, rows = 2
        (2, 2**30, 5, P, "index"),
        (61, 2, 5, P, "index"),           # 2**61 < p - 1
        (62, 2, 5, P, "hashed"),          # 2**62 > p; c = 61, rows = 2
        (3, 7, 5, P, "index"),
    ]
    for d, B, M, p, mode in cases:
        params = ScmaParams.create(d, B, M, modulus=p)
        words, c, rows = expected_layout(d, B, M, p, mode)
        assert params.mode == mode, (d, B, p)
        assert (params.n_dims, params.bins_per_dim, params.max_nonzeros) == (d, B, M)
        assert params.modulus == p
        assert params.n_syndromes == 2 * M
        assert params.n_payload_rows == rows
        assert params.message_words == words
        if mode == "hashed":
            assert params.coords_per_element == c
        assert params.max_client_nonzeros == M       # default
        assert isinstance(params.run_id, bytes) and len(params.run_id) == 16
    # forcing hashed mode on a small grid is allowed
    params = ScmaParams.create(3, 7, 5, mode="hashed")
    assert params.mode == "hashed"
    assert params.message_words == expected_layout(3, 7, 5, P, "hashed")[0]
    # explicit run id and client bound are kept
    rid = bytes(range(16))
    params = ScmaParams.create(3, 7, 5, run_id=rid, max_client_nonzeros=2)
    assert params.run_id == rid and params.max_client_nonzeros == 2
    # run ids and hash seeds come from the OS: two calls never agree (a
    # collision of 128 or 256 random bits), whatever random_state says
    a, b = ScmaParams.create(3, 7, 5), ScmaParams.create(3, 7, 5)
    assert a.run_id != b.run_id and a.hash_seed != b.hash_seed


def test_params_auto_mode_boundary():
    # mode="auto" picks index iff B**d < p: the nodes 1 .. B**d are then all
    # nonzero field elements.  At B**d = p - 1 index mode still works (and is
    # picked); at B**d >= p it cannot, and hashed mode is picked.
    for d, B, M, p in [(1, 10, 4, 11), (2, 10, 3, 101), (1, P20 - 1, 3, P20)]:
        params = ScmaParams.create(d, B, M, modulus=p)
        assert params.mode == "index", (d, B, p)
        assert params.message_words == expected_layout(d, B, M, p, "index")[0]
    for d, B, M, p in [(2, 4, 3, 11), (2, 11, 3, 101), (3, 5, 3, 101), (2, 10, 3, 101)]:
        params = ScmaParams.create(d, B, M, modulus=p)
        assert params.mode == ("hashed" if B ** d >= p else "index"), (d, B, p)
    # the boundary case decodes correctly in index mode: node p - 1 is used
    # (counts within the budget (p - 1) // (2 n) = 2 of each client)
    bins, counts, rep = secure_sum_sparse([([[9]], [2]), ([[9], [0]], [1, 1])], 10, modulus=11)
    assert rep.mode == "index"
    assert bins.tolist() == [[0], [9]] and counts.tolist() == [1, 3]


def test_count_budget_is_p_minus_1_over_2n():
    # The contract: one client's total count is at most (p - 1) // (2 n) for
    # a roster of n, so an honest aggregate stays in [0, (p - 1) / 2].
    # p = 101, n = 2: 25.
    params = make_params(2, 5, 3, modulus=101)
    _, clients = make_run(params, [0, 1])
    assert clients[0].count_budget == 25
    with pytest.raises(CapacityError):
        clients[0].set_data(np.array([[1, 1]]), np.array([101]))
    with pytest.raises(CapacityError):
        clients[0].set_data(np.array([[1, 1], [2, 2]]), np.array([13, 13]))  # 26 > 25
    with pytest.raises(CapacityError):
        clients[0].set_data(np.array([[1, 1]]), np.array([26]))
    clients[0].set_data(np.array([[1, 1], [2, 2]]), np.array([12, 13]))      # 25
    # n = 5: (100) // 10 = 10
    _, clients = make_run(params, range(5))
    assert clients[3].count_budget == 10
    with pytest.raises(CapacityError):
        clients[3].set_data(np.array([[1, 1]]), np.array([11]))
    clients[3].set_data(np.array([[1, 1]]), np.array([10]))


def test_max_client_nonzeros_bound():
    params = make_params(3, 7, 6, max_client_nonzeros=2)
    _, clients = make_run(params, [0, 1])
    with pytest.raises(CapacityError):
        clients[0].set_data(np.array([[0, 0, 0], [0, 0, 1], [0, 0, 2]]), np.ones(3, dtype=np.int64))
    clients[0].set_data(np.array([[0, 0, 0], [0, 0, 1]]), np.ones(2, dtype=np.int64))
