"""Federations and centres shared by the tests of the MUFC server and its files."""
import numpy as np

from pyfkm.mufc import MufcServer


GAMMA = 0.125   # a power of two: bin centres (b + 1/2) * GAMMA + LOWER are exact
LOWER = -0.5


def server(k, d, n_init, seed, max_iter=300, tol=1e-4):
    return MufcServer(k, gamma=GAMMA, n_features=d, lower=LOWER, server_points="centers",
                      n_init=n_init, max_iter=max_iter, tol=tol,
                      random_state=np.random.default_rng(seed))


def copy_gen(gen):
    g = np.random.Generator(type(gen.bit_generator)())
    g.bit_generator.state = gen.bit_generator.state
    return g
