"""State comparisons of fitted ``FederatedKMeans`` models (pyfkm.mufc)."""
import numpy as np


def fitted_state(model, *, server=False):
    """Everything observable of a fitted model, for equality checks; with
    ``server``, the server's bins, counts and centers too."""
    out = [model.cluster_centers_, model.aggregate_bins_, model.aggregate_counts_]
    if server:
        out += [model._server.bins_, model._server.counts_, model._server.cluster_centers_]
    out += list(model.client_centers_) + list(model.client_sizes_)
    out += [c.removed_ for c in model._clients if c is not None]
    return out


def assert_same_fit(a, b, *, server=False):
    """``a`` and ``b`` hold equal fitted states; with ``server``, the server's
    state, the participants and the dropped clients are equal too."""
    sa, sb = fitted_state(a, server=server), fitted_state(b, server=server)
    assert len(sa) == len(sb)
    for x, y in zip(sa, sb):
        np.testing.assert_array_equal(x, y)
    if server:
        assert a._participants == b._participants
        assert a.dropped_clients_ == b.dropped_clients_
