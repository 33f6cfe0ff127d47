"""The public API as a contract: every public name of pyfkm and of today's
public modules stays importable from where users import it (issue 20 moves
modules; a moved name keeps an import path, with a deprecation warning for
one release).  Adding a name means adding it here; removing one needs a
deprecation path first."""
import importlib

import pytest

PUBLIC = {
    "pyfkm": ["CapacityError", "DCKMeans", "DPFederatedKMeans", "DistributedKZCenter",
              "FederatedKMeans", "InvalidIdError", "InvalidInputError", "KMeans", "KZCenter",
              "Lattice", "ModelFileError", "NotFittedError", "NumericalError", "PyfkmError",
              "QKMeans", "RemovableSeeding", "RemovalReport", "kmeans_plusplus", "privacy"],
    "pyfkm.secagg": ["AggregateMessage", "CapacityError", "DecodeError", "GroupKeyMessage",
                     "InputRequest", "InvalidInputError", "KeyMessage", "MaskedVectorMessage",
                     "MessageFormatError", "MsaClient", "MsaRosterMessage", "MsaServer",
                     "ProtocolError", "RosterMessage", "RoundMessage", "RoundTrip",
                     "ScmaClient", "ScmaParams", "ScmaReport", "ScmaResult", "ScmaServer",
                     "ShareBundle", "ShareMessage", "SyndromeMessage", "UnmaskMessage",
                     "UnmaskRequest", "msa_round", "secure_sum_sparse", "setup_msa"],
    "pyfkm.field": ["DEFAULT_PRIME", "DecodeError", "Field", "FieldError", "VandermondeSolver",
                    "berlekamp_massey", "factor", "is_prime", "ntt_prime", "poly_derivative",
                    "poly_divmod", "poly_eval", "poly_gcd", "poly_mul", "poly_powmod",
                    "poly_xgcd", "prev_prime", "roots", "squarefree_factorization",
                    "vandermonde_solve"],
    "pyfkm.privacy": ["NoiseStream", "PrivacyAccountant", "analytic_gaussian_delta",
                      "analytic_gaussian_epsilon", "calibrate_analytic_gaussian",
                      "calibrate_iterations", "compose_gdp", "default_delta",
                      "discrete_gaussian_variance", "fastlloyd_iterations",
                      "fastlloyd_noise_scales", "gdp_delta", "gdp_epsilon", "gdp_mu",
                      "new_noise_key", "zcdp_epsilon"],
    "pyfkm.federated": ["DPFederatedKMeans", "FederatedLloyd", "GLloyd", "SuLloyd",
                        "fold_into_bounds", "sphere_packing_init", "step_radius"],
    "pyfkm.metrics": ["best_kmeans_objective", "federated_loss_ratio", "federated_objective",
                      "kmeans_objective", "loss_ratio", "nmi"],
    "pyfkm.datasets": ["make_blobs", "make_gaussian_mixture", "split_iid", "split_non_iid"],
    "pyfkm.baselines": ["BaselineRemovalReport", "FederatedDCKMeans", "KFed"],
    "pyfkm.outliers": ["CommunicationReport", "DistributedKZCenter", "GuhaKZCenter",
                       "KZCenter", "MalkomesKZCenter", "UniformSamplingKZCenter",
                       "count_outliers", "kzcenter_radius", "make_noisy_blobs"],
    "pyfkm.deletion": ["DCKMeans", "DeletionReport", "QKMeans", "auto_epsilon",
                       "auto_n_leaves"],
    "pyfkm.mufc": ["FederatedKMeans", "FederatedRemovalReport", "MufcClient", "MufcServer",
                   "merge_sparse", "scale_to_box"],
    "pyfkm.kmeans": ["KMeans", "lloyd"],
    "pyfkm.seeding": ["RemovableSeeding", "RemovalReport", "kmeans_plusplus"],
    "pyfkm.lattice": ["Lattice"],
    "pyfkm.exceptions": ["CapacityError", "DecodeError", "FieldError", "InvalidIdError",
                         "InvalidInputError", "MessageFormatError", "ModelFileError",
                         "NotFittedError", "NumericalError", "ProtocolError", "PyfkmError"],
    "pyfkm.rng": ["as_generator", "spawn"],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_is_importable_and_listed(module):
    mod = importlib.import_module(module)
    missing = [n for n in PUBLIC[module] if not hasattr(mod, n)]
    assert not missing, f"{module} lost public names {missing}"
    listed = set(getattr(mod, "__all__", ()))
    assert set(PUBLIC[module]) <= listed, f"{module}.__all__ lacks {set(PUBLIC[module]) - listed}"
    new = listed - set(PUBLIC[module])
    assert not new, f"{module}.__all__ has names this contract does not list: {sorted(new)}"
