"""
Clustering with outliers: (k, z)-center
=======================================

Four Gaussian clusters plus uniform noise.  :class:`pyfkm.KZCenter`
(centralized) and :class:`pyfkm.DistributedKZCenter` (data split over four
machines, communication independent of the number of outliers z) choose k
centers that cover all points but at most about z, which they declare
outliers.
"""
import matplotlib.pyplot as plt
import numpy as np

import pyfkm
from pyfkm.outliers import make_noisy_blobs

X, noise, _ = make_noisy_blobs(2000, 2, 4, 100, random_state=0)

central = pyfkm.KZCenter(4, 100).fit(X)
distributed = pyfkm.DistributedKZCenter(4, 100, random_state=0).fit(np.array_split(X, 4))
for name, model in [("KZCenter", central), ("DistributedKZCenter", distributed)]:
    flagged = model.is_outlier(X)
    print(f"{name}: radius {model.radius_:.2f}, {flagged.sum()} outliers declared, "
          f"{(flagged & noise).sum()} of them planted noise")

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True, sharey=True)
for ax, (name, model) in zip(axes, [("KZCenter", central),
                                    ("DistributedKZCenter", distributed)]):
    flagged = model.is_outlier(X)
    ax.scatter(*X[~flagged].T, s=3, c=model.predict(X[~flagged]), cmap="tab10")
    ax.scatter(*X[flagged].T, s=10, marker="x", c="k", label="declared outlier")
    for c in model.cluster_centers_:
        ax.add_patch(plt.Circle(c, model.radius_, fill=False, color="C3"))
    ax.set_title(name)
    ax.set_aspect("equal")
axes[0].legend(loc="upper right", fontsize=8)
fig.tight_layout()
