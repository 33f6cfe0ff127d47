"""
Deleting points from Q-k-means
==============================

:class:`pyfkm.QKMeans` (Ginart et al., 2019) quantizes its centers to a
randomly phased lattice at every Lloyd iteration.  Most deletions then
cannot move any quantized center: ``remove`` certifies this from the
memoized iterations and returns at once; only a deletion that could change
the model retrains.  Either way the model equals, bit for bit, a fit
on the remaining points with the same ``random_state``.
"""
import time

import matplotlib.pyplot as plt
import numpy as np

import pyfkm
from pyfkm.datasets import make_blobs

X, y, _ = make_blobs(3000, 2, 4, random_state=0)
model = pyfkm.QKMeans(4, random_state=0).fit(X)

# %%
# 100 deletions, one at a time, of uniformly random remaining points (ids
# are the row positions of the fitted data).
rng = np.random.default_rng(1)
order = rng.permutation(len(X))[:100]
seconds, retrained = [], []
for i in order:
    report = model.remove([i])
    seconds.append(report.seconds)
    retrained.append(report.retrained)
seconds, retrained = np.array(seconds), np.array(retrained)

t0 = time.perf_counter()
refit = pyfkm.QKMeans(4, random_state=0).fit(np.delete(X, order, axis=0),
                                             sample_ids=np.delete(np.arange(len(X)), order))
t_refit = time.perf_counter() - t0
print(f"{retrained.sum()} of {len(order)} deletions retrained; "
      f"same centers as the refit: {np.array_equal(model.cluster_centers_, refit.cluster_centers_)}")

# %%
fig, ax = plt.subplots(figsize=(8, 3.5))
steps = np.arange(1, len(order) + 1)
ax.semilogy(steps[~retrained], seconds[~retrained], ".", label="certified (no retraining)")
ax.semilogy(steps[retrained], seconds[retrained], "o", color="C3", label="retrained")
ax.axhline(t_refit, color="k", ls="--", label="a full refit")
ax.set_xlabel("deletion")
ax.set_ylabel("seconds")
ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
fig.tight_layout()
