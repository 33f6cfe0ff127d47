"""Deletion-efficient centralized k-means (Ginart et al., NeurIPS 2019):
Q-k-means and DC-k-means, whose deletions equal retraining bit for bit.

Ginart, Guan, Valiant, Zou, "Making AI Forget You: Data Deletion in Machine
Learning", NeurIPS 2019.  Both estimators support ``remove(ids)``, whose
result is *identical* (bit for bit) to fitting again on the remaining data
with the same ``random_state`` and the same ``sample_ids``; it is therefore
distributed exactly as retraining.

How the randomness is laid out so that this is checkable
--------------------------------------------------------
* Every random quantity attached to a point is a function of a model key
  and of the point's *id* (``sample_ids``, the row positions by default),
  never of its row position or of ``n``: a counter-based hash (splitmix64)
  of ``(key, id, step)`` gives a uniform draw.  Removing points therefore
  never changes the draws of the others.
* k-means++ (D^2) seeding is done as an *exponential race*: seed ``j`` is
  the point minimising ``E_ij / D_i^2`` (``D_i`` the distance to the seeds
  chosen so far, ``E_ij = -log U_ij`` unit exponentials; the first seed
  minimises ``E_i0``).  ``P(i wins) = D_i^2 / sum D^2``: exactly D^2
  sampling.  Removing a point that is not a seed leaves every ``D_i`` and
  every ``E_ij`` of the others unchanged, so every seed stays the winner.
* The lattice phases of the ``max_iter`` Q-Lloyd iterations are drawn up
  front from the generator (``max_iter * n_features`` uniforms, whatever
  ``n`` and the early stop).

Modules: :mod:`.qkmeans` (QKMeans) over :mod:`._qlloyd` (its Q-Lloyd run,
memo and certification); :mod:`.dckmeans` (DCKMeans) over :mod:`._dctree`
(the tree, the node k-means and the race traces); :mod:`._checks` (the
checks of an unpickled state); :mod:`._common` (what both share: keyed
randomness, ids, all-or-nothing writes, the locked estimator base).
"""
from ._common import DeletionReport
from ._qlloyd import auto_epsilon
from .dckmeans import DCKMeans, auto_n_leaves
from .qkmeans import QKMeans

__all__ = ["QKMeans", "DCKMeans", "DeletionReport", "auto_epsilon", "auto_n_leaves"]
