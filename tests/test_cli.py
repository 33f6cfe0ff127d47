"""The ``pyfkm`` command line (pyfkm.cli), run in-process through main([...]).

Errors first: every bad input exits with status 2 and one line
``pyfkm: error: ...`` on stderr (argparse's usage line before it for a bad
argument), never a traceback.  Then fit -> info -> forget round trips on
CSV and .npy files written here, with expectations from the data we wrote.
"""
import builtins
import json
import logging
import re
import time
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest

import pyfkm
from pyfkm import FederatedKMeans, PyfkmError
from pyfkm import cli
from pyfkm._cli_files import with_names
from pyfkm.cli import build_parser, main, read_clients

CENTERS = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])


def blobs(seed=0, n_per=40):
    """Three tight, far apart blobs; 'site' labels s0, s1, s2 (mixed)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), n_per)
    X = np.round(CENTERS[y] + rng.normal(scale=0.3, size=(y.size, 2)), 6)
    site = rng.integers(0, 3, size=y.size)
    return X, site


def write_csv(path, X, site=None, header=True):
    with open(path, "w") as f:
        if header:
            f.write("height,weight" + (",site" if site is not None else "") + "\n")
        for i, row in enumerate(X):
            cells = [repr(float(v)) for v in row]
            if site is not None:
                cells.append(f"s{site[i]}")
            f.write(",".join(cells) + "\n")
    return str(path)


def predict(fkm, X):
    """fkm's labels of X (with the model's feature names, as the command gives them)."""
    names = getattr(fkm, "feature_names_in_", None)
    return fkm.predict(with_names(X, None if names is None else list(names)))


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_error(capsys, *argv, match):
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (out, err)
    lines = [line for line in err.strip().splitlines()
             if not line.startswith("pyfkm: warning: ")]
    assert "Traceback" not in err
    assert re.match(r"pyfkm( \w+)?: error: ", lines[-1]), err
    assert re.search(match, lines[-1]), lines[-1]
    # our own errors are one line; argparse's have its usage line before
    assert len(lines) == 1 or lines[0].startswith("usage: pyfkm")
    return lines[-1]


@pytest.fixture
def csv_data(tmp_path):
    X, site = blobs()
    return write_csv(tmp_path / "data.csv", X, site), X, site


# -- errors -------------------------------------------------------------------------------

def test_missing_file(capsys, tmp_path):
    assert_error(capsys, "fit", tmp_path / "nope.csv", "-k", 2, match="no such file")
    assert_error(capsys, "info", tmp_path / "nope.npz", match="no such file")
    assert_error(capsys, "forget", tmp_path / "nope.npz", "--client", 0,
                 match="no such file")


def test_bad_csv(capsys, tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("a,b\n1,2\n3,x\n")
    assert_error(capsys, "fit", p, "-k", 1, match=r"line 3, column 'b': 'x' is not a number")
    p.write_text("1,2\n3,4,5\n")
    assert_error(capsys, "fit", p, "-k", 1, match="line 2 has 3 fields")
    p.write_text("")
    assert_error(capsys, "fit", p, "-k", 1, match="empty")
    p.write_text("a,b\n")
    assert_error(capsys, "fit", p, "-k", 1, match="no data rows")
    p.write_text("1,nan\n2,3\n")
    assert_error(capsys, "fit", p, "-k", 1, match="NaN or infinite")
    p.write_bytes(b"\xff\xfe\x00garbage")
    assert_error(capsys, "fit", p, "-k", 1, match="not a text CSV")
    q = tmp_path / "bad.npy"
    q.write_bytes(b"not an npy file")
    assert_error(capsys, "fit", q, "-k", 1, match="not a valid .npy")


def test_bad_arguments(capsys, csv_data, tmp_path):
    path, _, _ = csv_data
    assert_error(capsys, "demo", "--seed", -1, match=r"--seed: '-1' is not an integer >= 0")
    assert_error(capsys, "fit", path, "-k", 0, match="is not an integer >= 1")
    assert_error(capsys, "fit", path, match="required: -k/--clusters")
    assert_error(capsys, "fit", path, "-k", 2, "--seed", "x", match="--seed")
    assert_error(capsys, "fit", path, "-k", 2, "--bounds", 1, "inf", match="finite")
    assert_error(capsys, "nope", match="invalid choice")
    assert_error(capsys, match="required: COMMAND")


def test_more_clusters_than_points(capsys, csv_data):
    path, X, _ = csv_data
    assert_error(capsys, "fit", path, "--clients-column", "site", "-k", X.shape[0] + 1,
                 match=rf"--clusters {X.shape[0] + 1} is more than the {X.shape[0]} points")


def test_client_column_errors(capsys, csv_data, tmp_path):
    path, X, _ = csv_data
    assert_error(capsys, "fit", path, "--clients-column", "nope", "-k", 2,
                 match="no column named 'nope'")
    assert_error(capsys, "fit", path, "--clients-column", 7, "-k", 2,
                 match="--clients-column 7 but the file has 3 columns")
    # without the client column, its labels are not numbers
    assert_error(capsys, "fit", path, "-k", 2, match="'s[012]' is not a number")
    np.save(tmp_path / "a.npy", X)
    assert_error(capsys, "fit", tmp_path / "a.npy", "--clients-column", "site", "-k", 2,
                 match="no column names")
    assert_error(capsys, "fit", path, tmp_path / "a.npy", "--clients-column", 2, "-k", 2,
                 match="splits one file")


def test_data_outside_the_bounds(capsys, csv_data):
    path, _, _ = csv_data
    assert_error(capsys, "fit", path, "--clients-column", "site", "-k", 3,
                 "--bounds", 0, 1, match=r"values outside --bounds \[0, 1\]")
    assert_error(capsys, "fit", path, "--clients-column", "site", "-k", 3,
                 "--bounds", 20, -20, match="HIGH must be greater than LOW")


def test_forget_errors(capsys, csv_data, tmp_path):
    path, _, _ = csv_data
    model = tmp_path / "m.npz"
    assert run(capsys, "fit", path, "--clients-column", "site", "-k", 3, "--seed", 0,
               "--model", model, "--no-secure")[0] == 0
    before = model.read_bytes()
    assert_error(capsys, "forget", model, "--client", 3, match="unknown client 3")
    assert_error(capsys, "forget", model, "--client", 0, "--points", "0,x",
                 match="'x' is not a point id")
    assert_error(capsys, "forget", model, "--client", 0, "--points", "-1",
                 match="point ids must be >= 0")
    assert_error(capsys, "forget", model, "--client", 0, "--points", 100000,
                 match="no point 100000")
    assert_error(capsys, "forget", model, "--client", 0, "--client", 1, "--points", 0,
                 match="one --client")
    assert_error(capsys, "forget", model, "--client", 0, "--points", "1,1",
                 match="repeated")
    assert_error(capsys, "forget", model, "--client", 0, "--client", 1, "--client", 2,
                 match="cannot remove every client")
    assert model.read_bytes() == before          # a failed forget changes nothing
    assert run(capsys, "forget", model, "--client", 0, "--points", 5)[0] == 0
    assert_error(capsys, "forget", model, "--client", 0, "--points", 5,
                 match="already removed")
    assert run(capsys, "forget", model, "--client", 1)[0] == 0
    assert_error(capsys, "forget", model, "--client", 1, match="already left")


def test_not_a_model_file(capsys, csv_data, tmp_path):
    path, _, _ = csv_data
    assert_error(capsys, "info", path, match="not a pyfkm model")
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    assert_error(capsys, "info", tmp_path / "other.npz", match="no header")


def test_verbose_verbose_shows_the_traceback(csv_data):
    path, X, _ = csv_data
    with pytest.raises(PyfkmError, match="more than"):
        main(["fit", path, "--clients-column", "site", "-k", str(X.shape[0] + 1), "-vv"])


# -- version, help, parser ---------------------------------------------------------------

def test_version(capsys):
    rc, out, err = run(capsys, "--version")
    assert rc == 0 and out == f"pyfkm {pyfkm.__version__}\n" and err == ""


def test_help_names_the_program_and_every_command(capsys):
    rc, out, _ = run(capsys, "--help")
    assert rc == 0 and out.startswith("usage: pyfkm ")
    for cmd in ("demo", "fit", "forget", "info", "predict"):
        assert re.search(rf"^    {cmd} +\S", out, re.M), cmd
    rc, out, _ = run(capsys, "fit", "--help")
    assert rc == 0 and out.startswith("usage: pyfkm fit ")
    for opt in ("--clusters", "--clients-column", "--bounds", "--model", "--plot", "--seed",
                "--method"):
        assert opt in out
    parser = build_parser("python -m pyfkm")
    assert parser.format_usage().startswith("usage: python -m pyfkm ")


def test_verbosity_flags_before_or_after_the_command():
    p = build_parser()
    assert p.parse_args(["-v", "info", "m"]).verbose == 1
    assert p.parse_args(["info", "m", "-vv"]).verbose == 2
    assert p.parse_args(["info", "m"]).verbose == 0
    assert p.parse_args(["-q", "info", "m"]).quiet is True


# -- reading the data ---------------------------------------------------------------------

def test_read_clients_csv_with_a_client_column(csv_data):
    path, X, site = csv_data
    clients, names, features = read_clients([path], "site")
    assert names == ["s0", "s1", "s2"] and features == ["height", "weight"]
    for c, s in zip(clients, range(3)):
        np.testing.assert_array_equal(c, X[site == s])
    # the same column by index (2), and with a header-less file
    clients2, names2, _ = read_clients([path], 2)
    assert names2 == names and all(np.array_equal(a, b) for a, b in zip(clients, clients2))


def test_read_clients_numeric_labels_sort_numerically(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("10,1.0\n2,2.0\n10,3.0\n1,4.0\n")     # no header, client in column 0
    clients, names, features = read_clients([p], 0)
    assert names == ["1", "2", "10"] and features is None
    assert [c.ravel().tolist() for c in clients] == [[4.0], [2.0], [1.0, 3.0]]


def test_read_clients_folder_and_npy_column(tmp_path):
    X, _ = blobs()
    folder = tmp_path / "clients"
    folder.mkdir()
    np.save(folder / "b.npy", X[:10])
    write_csv(folder / "a.csv", X[10:25], header=False)
    (folder / "notes.txt").write_text("ignored")
    clients, names, _ = read_clients([folder])
    assert names == ["a", "b"]
    np.testing.assert_array_equal(clients[0], X[10:25])
    np.testing.assert_array_equal(clients[1], X[:10])
    np.save(tmp_path / "with_ids.npy", np.column_stack([X[:6], [3, 1, 3, 1, 2, 2]]))
    clients, names, _ = read_clients([tmp_path / "with_ids.npy"], 2)
    assert names == ["1", "2", "3"]
    np.testing.assert_array_equal(clients[2], X[[0, 2]])


# -- fit, info, forget ---------------------------------------------------------------------

def file_has_row(path, row):
    return np.ascontiguousarray(row, dtype=np.float64).tobytes() in path.read_bytes()


def test_fit_info_forget_round_trip(capsys, csv_data, tmp_path):
    path, X, site = csv_data
    model = tmp_path / "model.npz"
    rc, out, err = run(capsys, "fit", path, "--clients-column", "site", "-k", 3,
                       "--seed", 1, "--model", model, "--server-points", "centers")
    assert rc == 0
    assert "FederatedKMeans: 3 clients, 120 points, 2 features, 3 clusters" in out
    assert "0 = 's0'" in out and f"model saved to {model}" in out
    assert "computed from the data" in err              # the bounds warning
    fkm = FederatedKMeans.load(model)
    assert [int((~r).sum()) for r in fkm.removed_] == [int((site == s).sum()) for s in range(3)]
    # three far apart blobs: every true center has a fitted center nearby
    d = np.linalg.norm(CENTERS[:, None] - fkm.cluster_centers_[None], axis=2)
    assert d.min(axis=1).max() < 1.0
    objective = ((X - fkm.cluster_centers_[predict(fkm, X)]) ** 2).sum()
    assert f"objective {objective:.6g}" in out

    rc, out, _ = run(capsys, "info", model)
    assert rc == 0
    assert "FederatedKMeans model" in out and "version 3" in out
    assert "clusters 3 (K = 3), features 2" in out and "clients 3: 3 in the federation" in out
    assert f"client 0: {int((site == 0).sum())} points, 0 removed" in out
    assert f"objective on them {objective:.6g}" in out

    # forget two points of client 1 into a new file: they are gone from it
    rows = X[site == 1][[0, 3]]
    assert file_has_row(model, rows[0]) and file_has_row(model, rows[1])
    out_model = tmp_path / "forgot.npz"
    rc, out, _ = run(capsys, "forget", model, "--client", 1, "--points", "0, 3",
                     "--out", out_model)
    assert rc == 0 and "removed 2 points of client 1" in out
    assert f"model saved to {out_model}" in out
    after = FederatedKMeans.load(out_model)
    assert np.flatnonzero(after.removed_[1]).tolist() == [0, 3]
    assert int(after.aggregate_counts_.sum()) == int(fkm.aggregate_counts_.sum()) - 2
    assert not file_has_row(out_model, rows[0]) and not file_has_row(out_model, rows[1])
    assert file_has_row(model, rows[0])                 # --out left the original alone

    # a whole client leaves, in place; --points-file for client 0
    ids = tmp_path / "ids.txt"
    ids.write_text("1\n2, 4\n")
    assert run(capsys, "forget", out_model, "--client", 0, "--points-file", ids)[0] == 0
    assert np.flatnonzero(FederatedKMeans.load(out_model).removed_[0]).tolist() == [1, 2, 4]
    gone = X[site == 2]
    assert all(file_has_row(out_model, r) for r in gone[:3])
    rc, out, _ = run(capsys, "forget", out_model, "--client", 2)
    assert rc == 0 and "client 2 left the federation: 2 clients remain" in out
    final = FederatedKMeans.load(out_model)
    assert final.participants_ == [0, 1] and final.removed_[2] is None
    assert not any(file_has_row(out_model, r) for r in gone)
    rc, out, _ = run(capsys, "info", out_model)
    assert "clients 3: 2 in the federation, left: 2" in out
    assert f"points {int((site != 2).sum()) - 5} (5 removed" in out


def test_fit_a_folder_of_npy_files_with_public_bounds(capsys, tmp_path):
    X, _ = blobs(seed=2)
    folder = tmp_path / "clients"
    folder.mkdir()
    for i, part in enumerate(np.array_split(X, 4)):
        np.save(folder / f"client{i}.npy", part)
    model = tmp_path / "m.npz"
    rc, out, err = run(capsys, "fit", folder, "-k", 3, "--bounds", -5, 15, "--seed", 0,
                       "--model", model)
    assert rc == 0 and err == ""                         # public bounds: no warning
    assert "4 clients, 120 points" in out and "data box [-5, 15]" in out
    fkm = FederatedKMeans.load(model)
    assert fkm.bounds == (-5.0, 15.0) and len(fkm.removed_) == 4
    assert fkm.client_init == "means"                   # the command line's default
    rc, out, _ = run(capsys, "fit", folder, "-k", 3, "--bounds", -5, 15, "--model", model,
                     "--client-init", "k-means++", "--no-secure")
    fkm = FederatedKMeans.load(model)
    assert rc == 0 and fkm.client_init == "k-means++" and fkm.secure is False


def test_fit_kmeans_method_and_what_it_cannot_do(capsys, csv_data, tmp_path):
    path, X, _ = csv_data
    model = tmp_path / "km.npz"
    rc, out, _ = run(capsys, "fit", path, "--clients-column", "site", "-k", 3,
                     "--method", "kmeans", "--seed", 0, "--model", model)
    assert rc == 0 and "KMeans: 3 clients, 120 points" in out
    rc, out, _ = run(capsys, "info", model)
    assert rc == 0 and "KMeans model" in out and "clusters 3, features 2" in out
    assert "fitted on 120 points" in out
    assert_error(capsys, "forget", model, "--client", 0, match="cannot forget")


def test_quiet_prints_nothing_and_verbose_shows_library_logs(capsys, csv_data, tmp_path,
                                                             monkeypatch):
    path, _, _ = csv_data
    model = tmp_path / "m.npz"
    handlers = list(logging.getLogger("pyfkm").handlers)
    rc, out, err = run(capsys, "-q", "fit", path, "--clients-column", "site", "-k", 3,
                       "--model", model, "--no-secure")
    assert rc == 0 and out == "" and err == "" and model.exists()
    # a library log record (the library logs through logging.getLogger(__name__))
    real = FederatedKMeans.load

    def load_and_log(*a, **k):
        logging.getLogger("pyfkm.mufc.persistence").info("read %d clients", 3)
        return real(*a, **k)

    monkeypatch.setattr(FederatedKMeans, "load", load_and_log)
    assert "read 3 clients" not in run(capsys, "info", model)[2]
    rc, _, err = run(capsys, "-v", "info", model)
    assert "pyfkm: [pyfkm.mufc.persistence] read 3 clients" in err
    # main leaves the logging configuration as it found it
    assert logging.getLogger("pyfkm").handlers == handlers


def test_plot(capsys, csv_data, tmp_path):
    pytest.importorskip("matplotlib")
    path, _, _ = csv_data
    fig = tmp_path / "fig.png"
    rc, out, _ = run(capsys, "fit", path, "--clients-column", "site", "-k", 3, "--no-secure",
                     "--model", tmp_path / "m.npz", "--plot", fig)
    assert rc == 0 and f"plot saved to {fig}" in out
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert_error(capsys, "fit", path, "--clients-column", "site", "-k", 3, "--no-secure",
                 "--model", tmp_path / "m2.npz", "--plot", tmp_path / "fig.nope",
                 match=r"--plot .*fig.nope: the file name must end in one of .*\.png")
    assert not (tmp_path / "m2.npz").exists()          # checked before the fit


def test_plot_without_matplotlib_says_how_to_install_it(capsys, csv_data, tmp_path,
                                                         monkeypatch):
    real_import = builtins.__import__

    def no_mpl(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    path, _, _ = csv_data
    assert_error(capsys, "fit", path, "--clients-column", "site", "-k", 3, "--no-secure",
                 "--model", tmp_path / "m.npz", "--plot", tmp_path / "f.png",
                 match="pip install matplotlib")


def test_demo_quick(capsys):
    rc, out, _ = run(capsys, "demo", "--quick", "--seed", 2)
    assert rc == 0
    for head in ("1. KMeans", "2. FederatedKMeans", "3. Deletion-efficient",
                 "4. DPFederatedKMeans", "5. (k, z)-center", "Summary"):
        assert head in out


def test_quiet_demo_prints_nothing(capsys):
    assert run(capsys, "-q", "demo", "--quick") == (0, "", "")


def test_interrupt_exits_130_without_a_traceback(capsys, csv_data, monkeypatch):
    path, _, _ = csv_data

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(FederatedKMeans, "fit", interrupted)
    rc, _, err = run(capsys, "fit", path, "--clients-column", "site", "-k", 3)
    assert rc == 130 and err.splitlines()[-1] == "pyfkm: interrupted"


def test_csv_details(tmp_path):
    # a byte-order mark, Windows line ends, quoted cells, blank lines, ';'
    p = tmp_path / "excel.csv"
    p.write_bytes('\ufeffsite;a;b\r\n"x"; 1.5;"2"\r\n\r\ny;3;4e-1\r\n'.encode("utf-8"))
    clients, names, features = read_clients([p], "site", delimiter=";")
    assert names == ["x", "y"] and features == ["a", "b"]
    assert [c.tolist() for c in clients] == [[[1.5, 2.0]], [[3.0, 0.4]]]


def test_predict_labels_the_rows_as_the_model_does(capsys, csv_data, tmp_path):
    path, X, site = csv_data
    model = tmp_path / "m.npz"
    assert run(capsys, "fit", path, "--clients-column", "site", "-k", 3, "--seed", 0,
               "--model", model, "--no-secure")[0] == 0
    fkm = FederatedKMeans.load(model)
    labels = tmp_path / "labels.csv"
    rc, out, _ = run(capsys, "predict", model, path, "--clients-column", "site",
                     "--out", labels)
    assert rc == 0 and "120 points of 3 clients assigned to 3 clusters" in out
    sizes = np.bincount(predict(fkm, X), minlength=3)
    assert "cluster sizes: " + ", ".join(f"{i}: {m}" for i, m in enumerate(sizes)) in out
    lines = labels.read_text().splitlines()
    assert lines[0] == "client,point,cluster" and len(lines) == 121
    expected = [f"s{s},{i},{c}" for s in range(3)
                for i, c in enumerate(predict(fkm, X[site == s]))]
    assert lines[1:] == expected
    # a KMeans model file: the nearest of its centers
    km = tmp_path / "km.npz"
    assert run(capsys, "fit", path, "--clients-column", "site", "-k", 3, "--method", "kmeans",
               "--seed", 0, "--model", km)[0] == 0
    rc, out, _ = run(capsys, "predict", km, path, "--clients-column", "site")
    C = np.load(km)["cluster_centers"]
    near = ((X[:, None] - C[None]) ** 2).sum(axis=2).argmin(axis=1)
    sizes = np.bincount(near, minlength=3)
    assert rc == 0
    assert "cluster sizes: " + ", ".join(f"{i}: {m}" for i, m in enumerate(sizes)) in out
    np.save(tmp_path / "three.npy", np.zeros((4, 3)))
    assert_error(capsys, "predict", km, tmp_path / "three.npy", match="3 features, the model 2")
    assert_error(capsys, "predict", model, tmp_path / "three.npy", match="features")


# -- issue 21: an adversarial review of the command line ----------------------------------

def fit_model(capsys, path, model, *extra):
    rc, out, err = run(capsys, "fit", path, "--clients-column", "site", "-k", 3, "--seed", 0,
                       "--no-secure", "--model", model, *extra)
    assert rc == 0, err
    return out, err


def write_bomb(path, member="header.npy", mib=100):
    """A small zip whose member unpacks to ``mib`` MiB of spaces."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open(member, "w", force_zip64=True) as f:
            chunk = b" " * (1 << 20)
            for _ in range(mib):
                f.write(chunk)
    return path


@pytest.mark.parametrize("member", ["header.npy", "cluster_centers.npy"])
def test_a_decompression_bomb_is_refused_before_it_is_unpacked(capsys, tmp_path, member):
    bomb = write_bomb(tmp_path / "bomb.npz", member)
    assert bomb.stat().st_size < 1 << 20              # 100 MiB of spaces in ~100 KB
    for argv in (["info", bomb], ["predict", bomb, tmp_path / "x.csv"],
                 ["forget", bomb, "--client", 0]):
        tracemalloc.start()
        t0 = time.perf_counter()
        try:
            assert_error(capsys, *argv, match=r"unpack to 104,857,600 bytes, more than the "
                                              r"limit of 67,108,864")
            seconds = time.perf_counter() - t0
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert seconds < 3 and peak < 8 << 20, (seconds, peak)


def test_a_model_that_is_not_a_regular_file(capsys, tmp_path):
    assert_error(capsys, "info", tmp_path, match="not a regular file")


def test_data_derived_bounds_are_rounded_outward_and_forgotten(capsys, tmp_path):
    # the extremes are odd numbers in known rows: row 0 of client 'a' holds
    # the minimum, row 1 of client 'b' the maximum
    rng = np.random.default_rng(3)
    X = rng.uniform(1, 9, size=(60, 2)).round(3)
    lo_v, hi_v = 0.123456789012, 9.87654321098
    X[0, 0], X[3, 1] = lo_v, hi_v                      # rows 0 of a and 1 of b
    path = write_csv(tmp_path / "d.csv", X, site=np.array([0, 1] * 30))
    model = tmp_path / "m.npz"
    out, err = fit_model(capsys, path, model)
    assert "data box [0.1, 9.9]" in out and "[0.1, 9.9] was computed from the data" in err
    fkm = FederatedKMeans.load(model)
    assert fkm.bounds == (0.1, 9.9)

    def leaks(v):
        data = model.read_bytes()
        return np.float64(v).tobytes() in data or repr(v).encode() in data

    assert leaks(lo_v) and leaks(hi_v)                 # the rows themselves, before
    assert run(capsys, "forget", model, "--client", 0, "--points", 0)[0] == 0
    assert run(capsys, "forget", model, "--client", 1, "--points", 1)[0] == 0
    assert not leaks(lo_v) and not leaks(hi_v)
    rc, out, _ = run(capsys, "info", model)
    assert rc == 0 and "data box [0.1, 9.9]" in out
    assert "0.123" not in out and "9.87" not in out


@pytest.mark.parametrize("lo, hi, box", [
    (0.0, 1.0, (-0.1, 1.1)),          # a value on the grid moves out one step
    (-3.0, 5.0, (-3.1, 5.1)),
    (1234.5, 1234.5, (1200.0, 1300.0)),   # constant data: a box around it
    (-1e-7, 3e-7, (-1.1e-7, 3.1e-7)),
    (-2e99, 1e99, (-2.1e99, 1.1e99)),
    (1e6, 1e6 + 1e-9, (1e6 - 1e-7, 1e6 + 1e-7)),   # a range below the values' precision
    (0.0, 1e-310, (-1e-291, 1e-291)),              # a range near underflow
])
def test_data_bounds_hold_no_data_value(lo, hi, box):
    b = cli._data_bounds([np.array([[lo], [hi]])])
    assert b[0] < lo and b[1] > hi
    np.testing.assert_allclose(b, box, rtol=1e-12)


def test_values_too_large_for_a_box(capsys, tmp_path):
    p = tmp_path / "big.csv"
    p.write_text("a,b\n1e300,2e300\n3e300,-1e300\n1,2\n")
    for method in ("federated", "kmeans"):
        assert_error(capsys, "fit", p, "-k", 2, "--method", method, "--model",
                     tmp_path / "m.npz", match=r"values up to 3e\+300: too large for a data "
                                               r"box .*scale the data")
    assert_error(capsys, "fit", p, "-k", 2, "--bounds", "-1e301", "1e301",
                 match="too large")


def test_negative_bounds_in_scientific_notation(capsys, csv_data, tmp_path):
    path, _, _ = csv_data
    for bounds in (["-1e3", "1e3"], ["-1e3,1e3"], ["--bounds=-1e3,1e3"]):
        argv = bounds if bounds[0].startswith("--") else ["--bounds", *bounds]
        out, err = fit_model(capsys, path, tmp_path / "m.npz", *argv)
        assert "data box [-1000, 1000]" in out and err == ""
    p = build_parser()
    assert p.parse_args(["fit", "d.csv", "-k", "2", "--bounds", "-5", "15"]).bounds == \
        (-5.0, 15.0)
    assert_error(capsys, "fit", path, "-k", 2, "--bounds", "1,2,3", match="LOW,HIGH")
    assert_error(capsys, "fit", path, "-k", 2, "--bounds", "-1e3", match="--bounds")


def test_a_long_csv_cell_is_refused_with_bounded_memory(capsys, tmp_path):
    p = tmp_path / "long.csv"
    p.write_text("a,b\n" + "1,2\n" * 1000 + "3," + "1" * 100_001 + "\n" + "1,2\n" * 1000)
    tracemalloc.start()
    try:
        assert_error(capsys, "fit", p, "-k", 1, match=r"line 1002, column 'b': a cell of "
                                                       r"100,001 characters is not a number")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak


def test_csv_first_line_header_or_data(capsys, tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("1,2x\n3,4\n")                        # a typo, not a header
    assert_error(capsys, "fit", p, "-k", 1,
                 match=r"line 1, column 1: '2x' is not a number \(a first line with a "
                       r"number in it is data")
    p.write_text("a;b\n1;2\n3;4\n")
    assert_error(capsys, "fit", p, "-k", 1, match=r"try --delimiter ';'")
    assert_error(capsys, "fit", p, "-k", 1, "--clients-column", "a",
                 match=r"no column named 'a' .*try --delimiter ';'")
    p.write_text("a,a\n1,2\n")
    assert_error(capsys, "fit", p, "-k", 1, match="names column 'a' twice")


def test_forget_errors_name_the_option(capsys, csv_data, tmp_path, monkeypatch):
    path, _, _ = csv_data
    model = tmp_path / "m.npz"
    fit_model(capsys, path, model)
    assert_error(capsys, "forget", model, "--client", 0, "--points", "1,1",
                 match=r"^pyfkm: error: --points: point 1 is given twice")
    ids = tmp_path / "ids.txt"
    ids.write_text("1, " * 100)
    monkeypatch.setattr(cli, "MAX_IDS_FILE", 200)
    assert_error(capsys, "forget", model, "--client", 0, "--points-file", ids,
                 match=r"--points-file .*ids.txt: larger than 200 bytes")
    ids.write_text("1, x")
    assert_error(capsys, "forget", model, "--client", 0, "--points-file", ids,
                 match=r"--points-file .*ids.txt: 'x' is not a point id")


@pytest.mark.parametrize("method", ["federated", "kmeans"])
def test_feature_names_are_recorded_and_matched_by_name(capsys, csv_data, tmp_path, method):
    path, X, site = csv_data
    model = tmp_path / "m.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # no raw UserWarning
        fit_model(capsys, path, model, "--method", method)
        rc, out, _ = run(capsys, "info", model)
        assert rc == 0 and "feature names: height, weight" in out
        labels = tmp_path / "labels.csv"
        assert run(capsys, "predict", model, path, "--clients-column", "site",
                   "--out", labels)[0] == 0
        expected = labels.read_text()
        # the same rows with the columns swapped: the same labels
        swapped = tmp_path / "swapped.csv"
        with open(swapped, "w") as f:
            f.write("weight,site,height\n")
            for row, s in zip(X, site):
                f.write(f"{float(row[1])!r},s{s},{float(row[0])!r}\n")
        rc, out, _ = run(capsys, "predict", model, swapped, "--clients-column", "site",
                         "--out", labels)
        assert rc == 0 and "matched by name" in out
        assert labels.read_text() == expected
        # no header: the columns in the model's order, said so
        plain = write_csv(tmp_path / "plain.csv", X, site, header=False)
        rc, out, _ = run(capsys, "predict", model, plain, "--clients-column", 2, "--out",
                         labels)
        assert rc == 0 and "no header line" in out and labels.read_text() == expected
    other = tmp_path / "other.csv"
    other.write_text("height,age,site\n1,2,a\n")
    assert_error(capsys, "predict", model, other, "--clients-column", "site",
                 match=r"missing: 'weight'; unknown: 'age'; the model was fitted on height, "
                       "weight")


def test_files_with_headers_are_matched_by_name(tmp_path):
    folder = tmp_path / "clients"
    folder.mkdir()
    (folder / "a.csv").write_text("x,y\n1,2\n3,4\n")
    (folder / "b.csv").write_text("y,x\n20,10\n")
    clients, _, features = read_clients([folder])
    assert features == ["x", "y"] and clients[1].tolist() == [[10.0, 20.0]]
    (folder / "b.csv").write_text("y,z\n20,10\n")
    with pytest.raises(PyfkmError, match=r"b.csv: its columns \(y, z\) are not those of"):
        read_clients([folder])


def tamper(src, dst, head=None, centers=None, **extra):
    z = np.load(src)
    h = json.loads(z["header"].tobytes())
    arrays = {"header": z["header"], "cluster_centers": z["cluster_centers"], **extra}
    if head is not None:
        h = head(h)
        arrays["header"] = np.frombuffer(json.dumps(h).encode(), dtype=np.uint8)
    if centers is not None:
        arrays["cluster_centers"] = centers
    np.savez(dst, **arrays)
    return dst


def drop(key):
    return lambda h: {k: v for k, v in h.items() if k != key}


def put(key, value):
    return lambda h: {**h, key: value}


@pytest.mark.parametrize("change, match", [
    (dict(head=put("inertia", "abc")), r"inertia: 'abc' is not a finite number"),
    (dict(head=put("inertia", -1.0)), r"inertia: -1.0 is not a finite number >= 0"),
    (dict(head=put("params", [1, 2])), r"params: not an object"),
    (dict(head=put("params", {"n_clusters": 5})), r"params.n_clusters: 5 but the file has 3"),
    (dict(head=drop("n_iter")), r"n_iter: missing"),
    (dict(head=put("n_iter", 1.5)), r"n_iter: 1.5 is not an integer"),
    (dict(head=put("n_samples", 2)), r"n_samples: 2 points cannot give 3 clusters"),
    (dict(head=put("n_features", 3)), r"n_features: 3 but the centers have 2"),
    (dict(head=put("version", 2)), r"version: 2 is not supported"),
    (dict(head=put("version", True)), r"version: True is not supported"),
    (dict(head=put("extra", 1)), r"extra: unexpected field"),
    (dict(head=put("feature_names", ["a"])), r"feature_names: not a list of 2 distinct"),
    (dict(head=put("feature_names", ["a", "a"])), r"feature_names: not a list of 2 distinct"),
    (dict(centers=np.full((3, 2), np.nan)), r"cluster_centers: NaN or infinite"),
    (dict(centers=np.zeros((0, 2))), r"cluster_centers: shape \(0, 2\): no clusters"),
    (dict(centers=np.zeros(6)), r"cluster_centers: a 1-D float64 array, not a 2-D"),
    (dict(centers=np.zeros((3, 2), dtype=np.int64)), r"cluster_centers: a 2-D int64 array"),
    (dict(more=np.zeros(2)), r"more: unexpected array"),
])
def test_a_tampered_kmeans_file_is_refused(capsys, csv_data, tmp_path, change, match):
    path, _, _ = csv_data
    model = tmp_path / "km.npz"
    fit_model(capsys, path, model, "--method", "kmeans")
    bad = tamper(model, tmp_path / "bad.npz", **change)
    for argv in (["info", bad], ["predict", bad, path, "--clients-column", "site"]):
        line = assert_error(capsys, *argv, match=match)
        assert "the model is corrupt or was not written by pyfkm" in line


def test_a_kmeans_file_without_centers(capsys, csv_data, tmp_path):
    path, _, _ = csv_data
    model = tmp_path / "km.npz"
    fit_model(capsys, path, model, "--method", "kmeans")
    z = np.load(model)
    np.savez(tmp_path / "bad.npz", header=z["header"])
    assert_error(capsys, "info", tmp_path / "bad.npz", match="cluster_centers: missing")


# -- second review (issue 21) ------------------------------------------------------------

def test_files_with_and_without_a_header_are_refused(capsys, tmp_path):
    X, _ = blobs()
    a = write_csv(tmp_path / "a.csv", X[:40], header=True)
    b = write_csv(tmp_path / "b.csv", X[40:80], header=False)
    assert_error(capsys, "fit", a, b, "-k", "2", "--model", tmp_path / "m.npz",
                 match="some files have a header line and some do not")


def test_hostile_npy_data_files(capsys, tmp_path):
    # a 100-byte file announcing 2 TiB, and an array without columns
    big = tmp_path / "big.npy"
    with open(big, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f8", "fortran_order": False, "shape": (100_000_000_000, 3)})
        f.write(b"\0" * 24)
    assert_error(capsys, "fit", big, "-k", "2", "--model", tmp_path / "m.npz",
                 match="not a valid .npy file")
    np.save(tmp_path / "empty.npy", np.zeros((2, 0)))
    assert_error(capsys, "fit", tmp_path / "empty.npy", "-k", "1", "--model",
                 tmp_path / "m.npz", match="rows and columns")


@pytest.mark.parametrize("delimiter", ["", ";;", "\\t", '"'])
def test_bad_delimiter(capsys, csv_data, tmp_path, delimiter):
    path, _, _ = csv_data
    assert_error(capsys, "fit", path, "--clients-column", "site", "-k", "2", "--delimiter",
                 delimiter, "--model", tmp_path / "m.npz", match="must be one character")


def test_a_model_member_with_negative_dimensions_is_refused(capsys, csv_data, tmp_path):
    path, _, _ = csv_data
    model = tmp_path / "m.npz"
    assert run(capsys, "fit", path, "--clients-column", "site", "-k", "3", "--method",
               "kmeans", "--bounds", "-20", "20", "--model", model)[0] == 0
    with zipfile.ZipFile(model) as z:
        members = {n: z.read(n) for n in z.namelist()}
    raw = members["cluster_centers.npy"]
    hdr_end = raw.index(b"\n") + 1
    header = raw[:hdr_end].replace(b"(3, 2)", b"(-3, -2)")
    members["cluster_centers.npy"] = header + raw[hdr_end:]
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(bad, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    for cmd in ("info", "predict"):
        args = (cmd, bad) if cmd == "info" else (cmd, bad, path, "--clients-column", "site")
        assert_error(capsys, *args, match="negative dimension")


def test_many_client_labels_are_split_correctly(tmp_path):
    # (split in one grouping pass: a mask per label was quadratic)
    rng = np.random.default_rng(0)
    n = 40_000
    X = rng.uniform(0, 1, size=(n, 2))
    site = rng.integers(0, 8_000, size=n)
    path = tmp_path / "many.csv"
    with open(path, "w") as f:
        f.write("a,b,site\n")
        for (u, v), s in zip(X, site):
            f.write(f"{float(u)!r},{float(v)!r},c{s}\n")
    clients, names, _ = read_clients([path], "site")
    assert len(clients) == len(set(site.tolist())) and sum(len(c) for c in clients) == n
    # each client holds exactly its rows, in file order
    first = names[0]
    rows = np.flatnonzero(np.array([f"c{s}" for s in site]) == first)
    np.testing.assert_array_equal(clients[0], X[rows])
    last = names[-1]
    rows = np.flatnonzero(np.array([f"c{s}" for s in site]) == last)
    np.testing.assert_array_equal(clients[-1], X[rows])


def test_predict_names_a_missing_or_unknown_column(capsys, csv_data, tmp_path):
    path, X, site = csv_data
    model = tmp_path / "m.npz"
    assert run(capsys, "fit", path, "--clients-column", "site", "-k", "3", "--bounds", "-20",
               "20", "--model", model)[0] == 0
    one = tmp_path / "one.csv"
    with open(one, "w") as f:
        f.write("height,site\n" + "".join(f"{float(x)!r},s0\n" for x in X[:5, 0]))
    assert_error(capsys, "predict", model, one, "--clients-column", "site",
                 match="missing: 'weight'")
    three = tmp_path / "three.csv"
    with open(three, "w") as f:
        f.write("height,weight,age,site\n"
                + "".join(f"{float(a)!r},{float(b)!r},1.0,s0\n" for a, b in X[:5]))
    assert_error(capsys, "predict", model, three, "--clients-column", "site",
                 match="unknown: 'age'")
