"""
What the server sees in a secure aggregation round
==================================================

Four clients hold a real vector each.  Through masked secure aggregation
(:class:`pyfkm.secagg.MsaClient` and :class:`pyfkm.secagg.MsaServer`) the
server learns only their sum: every vector it receives is masked with
pseudorandom words (keys from the operating system, never from a seed) that
cancel in the sum.  Every message below crosses as bytes, as it would over a
network.  See :doc:`/threat_model` for who may learn what.
"""
import matplotlib.pyplot as plt
import numpy as np

from pyfkm.secagg import (AggregateMessage, InputRequest, MaskedVectorMessage, RoundMessage,
                          ShareBundle, ShareMessage, UnmaskMessage, UnmaskRequest, setup_msa)

n_clients, n_words = 4, 32
rng = np.random.default_rng(0)
vectors = [np.sin(np.linspace(0, 3, n_words) + i) / 2 for i in range(n_clients)]
vectors = [v + rng.normal(0, 0.05, n_words) for v in vectors]

# %%
# Key agreement, then one round, step by step.
server, clients = setup_msa(n_clients, n_words)
rmsg = RoundMessage.from_bytes(server.start_round().to_bytes())
for c in clients:
    server.receive_shares(ShareMessage.from_bytes(c.share_keys(rmsg).to_bytes()))
for c in clients:
    c.receive_shares(ShareBundle.from_bytes(server.bundle(c.client_id).to_bytes()))
request = InputRequest.from_bytes(server.request_inputs().to_bytes())
seen = []
for c, v in zip(clients, vectors):
    wire = c.respond(request, v).to_bytes()
    message = MaskedVectorMessage.from_bytes(wire)
    seen.append(np.asarray(message.payload))
    server.receive(message)
unmask = UnmaskRequest.from_bytes(server.unmask_request().to_bytes())
for c in clients:
    server.receive_unmask(UnmaskMessage.from_bytes(c.unmask_shares(unmask).to_bytes()))
aggregate = AggregateMessage.from_bytes(server.finish_round().to_bytes())
total = clients[0].unmask(aggregate)
print("largest error of the decoded sum:", np.abs(total - sum(vectors)).max())

# %%
# Left: what client 0 holds.  Middle: what the server receives from it (the
# masked words, as fractions of the ring's size): indistinguishable from
# uniform noise.  Right: the sum every client decodes, equal to the plain sum
# up to the fixed-point rounding.
fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
axes[0].plot(vectors[0], ".-")
axes[0].set_title("client 0's vector")
ring = float(np.iinfo(seen[0].dtype).max) + 1.0
axes[1].plot(seen[0].astype(float) / ring, ".", color="C3")
axes[1].set_ylim(0, 1)
axes[1].set_title("what the server receives")
axes[2].plot(sum(vectors), "-", label="plain sum")
axes[2].plot(total, ".", label="decoded")
axes[2].legend(fontsize=8)
axes[2].set_title("the aggregate")
fig.tight_layout()
