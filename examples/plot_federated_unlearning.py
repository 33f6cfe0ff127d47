"""
Federated k-means that forgets
==============================

Five clients keep their data; :class:`pyfkm.FederatedKMeans` (MUFC) learns
global centers from their securely aggregated summaries.  Client 0 then asks
to forget 50 of its points, and client 4 leaves.  A removal touches the
affected client only and is *exact*: the model is distributed as a refit on
the remaining data would be.  We compare the time of a removal with the time
of that refit.
"""
import time

import matplotlib.pyplot as plt
import numpy as np

import pyfkm
from pyfkm.datasets import make_gaussian_mixture, split_iid

# %%
# Data inside the public box [-0.5, 0.5]^d, split over five clients.
X, y, _ = make_gaussian_mixture(2500, 2, 5, random_state=0)
clients = [X[ids] for ids in split_iid(X, 5, random_state=1)]

model = pyfkm.FederatedKMeans(5, random_state=0).fit(clients)
before = model.cluster_centers_.copy()

# %%
# Client 0 forgets 50 points (ids are row positions in its own data).
forget = np.arange(50)
t0 = time.perf_counter()
report = model.remove(0, forget)
t_remove = time.perf_counter() - t0
print(report)

# %%
# Client 4 leaves the federation: its data, local model and aggregation
# state are erased.
t0 = time.perf_counter()
model.remove_clients([4])
t_leave = time.perf_counter() - t0

# %%
# Retraining from scratch on what remains, for comparison.
remaining = [np.delete(clients[0], forget, axis=0)] + clients[1:4]
t0 = time.perf_counter()
refit = pyfkm.FederatedKMeans(5, random_state=0).fit(remaining)
t_refit = time.perf_counter() - t0

# %%
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
ax0.scatter(X[:, 0], X[:, 1], s=2, c="0.8")
ax0.scatter(*before.T, marker="x", s=80, label="before removals")
ax0.scatter(*model.cluster_centers_.T, marker="+", s=120, label="after removals")
ax0.scatter(*refit.cluster_centers_.T, marker="o", s=60, facecolors="none",
            edgecolors="k", label="refit without them")
ax0.set_title("global centers")
ax0.legend(loc="lower right", fontsize=8)
ax1.bar(["remove 50 points", "client leaves", "refit"], [t_remove, t_leave, t_refit])
ax1.set_ylabel("seconds")
ax1.set_title("cost of forgetting")
fig.tight_layout()
