"""The public API as a contract.

``PUBLIC``: the public names of pyfkm, of each subpackage and of the public
top-level modules, exactly (adding a name means adding it here).
``BEFORE_ISSUE_20``: every name users could import before issue 20 moved the
modules into subpackages; each stays importable from the same path, either
unchanged or through a deprecated alias that warns and returns the very
object of the new home (``DEPRECATED``), for one release.
"""
import importlib
import warnings

import pytest

PUBLIC = {
    "pyfkm": ["CapacityError", "DCKMeans", "DPFederatedKMeans", "DistributedKZCenter",
              "FederatedKMeans", "InvalidIdError", "InvalidInputError", "KMeans", "KZCenter",
              "Lattice", "ModelFileError", "NotFittedError", "NumericalError", "PyfkmError",
              "QKMeans", "RemovableSeeding", "RemovalReport", "dp", "kmeans_plusplus",
              "scale_to_box"],
    "pyfkm.core": ["kernels", "KMeans", "Lattice", "NoiseStream", "RemovableSeeding", "RemovalReport",
                   "discrete_gaussian_variance", "kmeans_plusplus", "lloyd", "new_noise_key",
                   "scale_to_box"],
    "pyfkm.mufc": ["BaselineRemovalReport", "FederatedDCKMeans", "FederatedKMeans",
                   "FederatedRemovalReport", "KFed", "MufcClient", "MufcServer", "merge_sparse",
                   "scale_to_box"],
    "pyfkm.dp": ["DPFederatedKMeans", "FederatedLloyd", "GLloyd", "NoiseStream",
                 "PrivacyAccountant", "SuLloyd", "analytic_gaussian_delta",
                 "analytic_gaussian_epsilon", "calibrate_analytic_gaussian",
                 "calibrate_iterations", "compose_gdp", "default_delta",
                 "discrete_gaussian_variance", "fastlloyd_iterations", "fastlloyd_noise_scales",
                 "fold_into_bounds", "gdp_delta", "gdp_epsilon", "gdp_mu", "new_noise_key",
                 "sphere_packing_init", "step_radius", "zcdp_epsilon"],
    "pyfkm.deletion": ["DCKMeans", "DeletionReport", "QKMeans", "auto_epsilon",
                       "auto_n_leaves"],
    "pyfkm.outliers": ["CommunicationReport", "DistributedKZCenter", "GuhaKZCenter",
                       "KZCenter", "MalkomesKZCenter", "UniformSamplingKZCenter",
                       "count_outliers", "kzcenter_radius", "make_noisy_blobs"],
    "pyfkm.secagg": ["DEFAULT_SCALE_BITS", "check_discrete_sigma", "default_threshold",
                     "setup_in_process", "sparse_degree", "AggregateMessage", "CapacityError", "DecodeError", "GroupKeyMessage",
                    "InputRequest", "InvalidInputError", "KeyMessage", "MaskedVectorMessage",
                    "MessageFormatError", "MsaClient", "MsaRosterMessage", "MsaServer",
                    "ProtocolError", "RosterMessage", "RoundMessage", "RoundTrip",
                    "ScmaClient", "ScmaParams", "ScmaReport", "ScmaResult", "ScmaServer",
                    "ShareBundle", "ShareMessage", "SyndromeMessage", "UnmaskMessage",
                    "UnmaskRequest", "msa_round", "secure_sum_sparse", "setup_msa",
                    # issue 22: MSA key batches
                    "KeyBatchBundle", "KeyBatchMessage", "max_batch_rounds", "msa_key_batch"],
    "pyfkm.field": ["kernels", "DEFAULT_PRIME", "DecodeError", "Field", "FieldError", "VandermondeSolver",
                   "berlekamp_massey", "factor", "is_prime", "ntt_prime", "poly_derivative",
                   "poly_divmod", "poly_eval", "poly_gcd", "poly_mul", "poly_powmod",
                   "poly_xgcd", "prev_prime", "roots", "squarefree_factorization",
                   "vandermonde_solve"],
    "pyfkm.metrics": ["best_kmeans_objective", "federated_loss_ratio", "federated_objective",
                     "kmeans_objective", "loss_ratio", "nmi"],
    "pyfkm.datasets": ["make_blobs", "make_gaussian_mixture", "split_iid", "split_non_iid"],
    "pyfkm.exceptions": ["CapacityError", "DecodeError", "FieldError", "InvalidIdError",
                        "InvalidInputError", "MessageFormatError", "ModelFileError",
                        "NotFittedError", "NumericalError", "ProtocolError", "PyfkmError"],
    "pyfkm.rng": ["as_generator", "spawn"],
}

BEFORE_ISSUE_20 = {
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


# old path -> (new home, names); "pyfkm" -> the attribute that moved
DEPRECATED = {
    "pyfkm.kmeans": ("pyfkm.core", None),
    "pyfkm.seeding": ("pyfkm.core", None),
    "pyfkm.lattice": ("pyfkm.core", None),
    "pyfkm.privacy": ("pyfkm.dp", None),
    "pyfkm.federated": ("pyfkm.dp", None),
    "pyfkm.baselines": ("pyfkm.mufc", None),
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_is_importable_and_listed(module):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        mod = importlib.import_module(module)
        missing = [n for n in PUBLIC[module] if not hasattr(mod, n)]
    assert not missing, f"{module} lost public names {missing}"
    listed = set(getattr(mod, "__all__", ()))
    assert set(PUBLIC[module]) <= listed, f"{module}.__all__ lacks {set(PUBLIC[module]) - listed}"
    new = listed - set(PUBLIC[module])
    assert not new, f"{module}.__all__ has names this contract does not list: {sorted(new)}"


@pytest.mark.parametrize("module", sorted(BEFORE_ISSUE_20))
def test_names_from_before_the_move_still_import(module):
    for name in BEFORE_ISSUE_20[module]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            obj = getattr(importlib.import_module(module), name)
        assert obj is not None


@pytest.mark.parametrize("old", sorted(DEPRECATED))
def test_moved_modules_warn_and_alias_the_new_home(old):
    new, _ = DEPRECATED[old]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        mod = importlib.import_module(old)  # importing the alias alone is silent
    assert set(mod.__all__) == set(BEFORE_ISSUE_20[old])
    for name in mod.__all__:
        with pytest.warns(DeprecationWarning, match=f"import {name} from {new}"):
            obj = getattr(mod, name)
        assert obj is getattr(importlib.import_module(new), name)
    with pytest.raises(AttributeError):
        mod.not_a_name
    # the warning points at the caller's line, not at pyfkm
    with pytest.warns(DeprecationWarning) as record:
        exec(f"from {old} import {mod.__all__[0]}", {})
    assert all(w.filename == "<string>" for w in record)


# Public functions the old flat modules had outside their __all__ (users
# imported them by name): the aliases resolve them too, from their new homes.
DEPRECATED_EXTRAS = {
    ("pyfkm.kmeans", "nearest_center"): "pyfkm.core.kmeans",
    ("pyfkm.lattice", "row_keys"): "pyfkm.core.lattice",
    ("pyfkm.baselines", "kfed_server"): "pyfkm.mufc.kfed",
    ("pyfkm.baselines", "dc_root"): "pyfkm.mufc.dckmeans",
}


@pytest.mark.parametrize("old, name", sorted(DEPRECATED_EXTRAS))
def test_moved_modules_alias_their_public_names_outside_all(old, name):
    new = DEPRECATED_EXTRAS[old, name]
    with pytest.warns(DeprecationWarning, match=f"import {name} from {new}") as record:
        exec(f"from {old} import {name} as obj", ns := {})
    assert ns["obj"] is getattr(importlib.import_module(new), name)
    assert all(w.filename == "<string>" for w in record)


def test_pyfkm_privacy_warns_and_is_pyfkm_dp():
    import pyfkm
    import pyfkm.dp
    with pytest.warns(DeprecationWarning, match="pyfkm.dp"):
        assert pyfkm.__getattr__("privacy") is pyfkm.dp
    with pytest.raises(AttributeError):
        pyfkm.__getattr__("nothing")
