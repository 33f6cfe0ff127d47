"""
Federated k-means that forgets
==============================

Twenty clients keep their data; :class:`pyfkm.FederatedKMeans` (MUFC) learns
global centers from their securely aggregated summaries.  Client 0 then asks
to forget 50 of its points, and client 19 leaves.  A removal touches the
affected client only and is *exact*: the model is distributed as a refit on
the remaining data would be.  We compare the cost of the removals with the
cost of that refit.
"""
import time

import matplotlib.pyplot as plt
import numpy as np

import pyfkm
from pyfkm.datasets import make_gaussian_mixture, split_iid

# %%
# Data inside the public box [-0.5, 0.5]^d, split over 20 clients.
X, y, _ = make_gaussian_mixture(20_000, 2, 5, cluster_std=0.04, random_state=0)
clients = [X[ids] for ids in split_iid(X, 20, random_state=1)]

model = pyfkm.FederatedKMeans(5, server_points="centers", random_state=0).fit(clients)
before = model.cluster_centers_.copy()

# %%
# Client 0 forgets 50 points (ids are row positions in its own data).  The
# report says what happened: whether the client had to reseed, whether the
# server reclustered, the bytes sent and the time of each stage.
forget = np.arange(50)
removal = model.remove(0, forget)
print(removal)

# %%
# Client 19 leaves the federation: its data, local model and aggregation
# state are erased.
leave = model.remove_clients([19])

# %%
# Retraining from scratch on what remains, for comparison.
remaining = [np.delete(clients[0], forget, axis=0)] + clients[1:19]
t0 = time.perf_counter()
refit = pyfkm.FederatedKMeans(5, server_points="centers", random_state=0).fit(remaining)
t_refit = time.perf_counter() - t0

# %%
# A removal's *online* cost (the client's update, one secure difference
# round, the server's reclustering) is small; the key sharing for the next
# secure round (``offline_seconds``) does not depend on the data and can be
# prepared in advance.  The centers after the removals are distributed as
# the refit's; here they are also close to them.
def online(report):
    return report.client_seconds + report.aggregation_seconds + report.server_seconds


fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
ax0.scatter(X[::4, 0], X[::4, 1], s=1, c="0.8")
ax0.scatter(*before.T, marker="x", s=80, label="before removals")
ax0.scatter(*model.cluster_centers_.T, marker="+", s=120, label="after removals")
ax0.scatter(*refit.cluster_centers_.T, marker="o", s=60, facecolors="none",
            edgecolors="k", label="refit without them")
ax0.set_title("global centers")
ax0.legend(loc="lower right", fontsize=8)
names = ["remove 50 points", "client leaves", "refit"]
ax1.bar(names, [online(removal), online(leave), t_refit], label="online")
ax1.bar(names[:2], [removal.offline_seconds, leave.offline_seconds],
        bottom=[online(removal), online(leave)], color="0.7",
        label="key sharing for the next round (offline)")
ax1.set_ylabel("seconds")
ax1.set_title("cost of forgetting")
ax1.legend(fontsize=8)
fig.tight_layout()
