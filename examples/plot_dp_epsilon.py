"""
Utility of DP federated k-means against epsilon
===============================================

:class:`pyfkm.DPFederatedKMeans` (FastLloyd) adds calibrated Gaussian noise
to the securely aggregated sums of every Lloyd iteration; its data live in
the box ``[-1, 1]^d`` (``bounds``).  A smaller privacy budget epsilon means
more noise and a worse clustering.  We measure the normalized intra-cluster
variance (NICV, the k-means objective over n; lower is better) against
epsilon, next to the non-private :class:`pyfkm.dp.FederatedLloyd`.
"""
import matplotlib.pyplot as plt
import numpy as np

import pyfkm
from pyfkm.datasets import make_gaussian_mixture, split_iid
from pyfkm.dp import FederatedLloyd

X, y, _ = make_gaussian_mixture(4000, 2, 4, box=(-1.0, 1.0), random_state=0)
clients = [X[ids] for ids in split_iid(X, 4, random_state=1)]

epsilons = [0.1, 0.3, 1.0, 3.0]
seeds = range(3)
nicv = np.array([[pyfkm.DPFederatedKMeans(4, epsilon=eps, random_state=s).fit(clients).nicv(X)
                  for s in seeds] for eps in epsilons])
baseline = FederatedLloyd(4, random_state=0).fit(clients).nicv(X)

# %%
# The accountant's record of one fit: what was spent, over how many
# iterations.
model = pyfkm.DPFederatedKMeans(4, epsilon=1.0, random_state=0).fit(clients)
print(model.privacy_)

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.errorbar(epsilons, nicv.mean(axis=1), yerr=nicv.std(axis=1), fmt="o-",
            label="DPFederatedKMeans")
ax.axhline(baseline, color="k", ls="--", label="FederatedLloyd (no privacy)")
ax.set_xscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel("NICV (lower is better)")
ax.legend(fontsize=8)
fig.tight_layout()
