"""Files of the ``pyfkm`` command line (:mod:`pyfkm.cli`): the clients'
data (CSV or ``.npy``), the KMeans model file and the ``--plot`` figure.

Kept apart from :mod:`pyfkm.cli`, which holds the arguments and the
commands; every function here raises :class:`CliError` (an
:class:`~pyfkm.exceptions.InvalidInputError`) with a message naming the
file for anything wrong in what it reads.
"""
import csv
import json
import os
import pathlib
import tempfile

import numpy as np

from .exceptions import InvalidInputError, ModelFileError
from .mufc import FederatedKMeans

__all__ = []

DATA_SUFFIXES = (".csv", ".npy")
KMEANS_FORMAT, KMEANS_VERSION = "pyfkm.cli.KMeans", 1
# points drawn by --plot at most (a uniform sample of them)
PLOT_POINTS = 20_000


class CliError(InvalidInputError):
    """A problem with the command line's input (files, arguments)."""


# -- reading the data -----------------------------------------------------------------

def _parse_column(spec):
    """'3' -> 3 (an index), 'client' -> 'client' (a name), None -> None."""
    if spec is None:
        return None
    try:
        i = int(spec)
    except ValueError:
        return spec
    if i < 0:
        raise CliError(f"--clients-column {spec}: a column index must be >= 0")
    return i


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_csv(path, column, delimiter):
    """(features, client labels or None, feature names or None) of one CSV."""
    try:
        # utf-8-sig: a byte-order mark (spreadsheets write one) is not part
        # of the first column's name
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f, delimiter=delimiter)
            rows = [(reader.line_num, cells) for cells in
                    ([c.strip() for c in r] for r in reader) if any(cells)]
    except UnicodeDecodeError:
        raise CliError(f"{path}: not a text CSV file") from None
    except csv.Error as e:
        raise CliError(f"{path}: not a valid CSV file ({e})") from None
    if not rows:
        raise CliError(f"{path}: the file is empty")
    first = rows[0][1]
    width = len(first)
    if isinstance(column, str):
        if column not in first:
            raise CliError(f"{path}: no column named {column!r} in the header "
                           f"({', '.join(first)})")
        col, header = first.index(column), True
    else:
        col = column
        if col is not None and col >= width:
            raise CliError(f"{path}: --clients-column {col} but the file has {width} "
                           "columns (indices from 0)")
        header = any(not _is_number(c) for j, c in enumerate(first) if j != col)
    names = None
    if header:
        names = [c for j, c in enumerate(first) if j != col]
        rows = rows[1:]
        if not rows:
            raise CliError(f"{path}: a header line but no data rows")
    feat = [j for j in range(width) if j != col]
    if not feat:
        raise CliError(f"{path}: no feature columns")
    for line, cells in rows:
        if len(cells) != width:
            raise CliError(f"{path}: line {line} has {len(cells)} fields, the first line "
                           f"has {width}")
    table = np.array([cells for _, cells in rows], dtype=str)
    try:
        X = table[:, feat].astype(np.float64)
    except ValueError:              # find the first cell that is not a number
        for line, cells in rows:
            for i, j in enumerate(feat):
                if not _is_number(cells[j]):
                    what = f"column {names[i]!r}" if names else f"column {j}"
                    raise CliError(f"{path}: line {line}, {what}: {cells[j]!r} is not a "
                                   "number") from None
        raise
    labels = None if col is None else table[:, col].tolist()
    return X, labels, names


def _read_npy(path, column):
    """(features, client labels or None) of one .npy file (a 2-D numeric array)."""
    try:
        a = np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as e:
        raise CliError(f"{path}: not a valid .npy file ({e})") from None
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "biuf":
        raise CliError(f"{path}: not a numeric array")
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] == 0:
        raise CliError(f"{path}: expected a 2-D array with rows, got shape {a.shape}")
    if isinstance(column, str):
        raise CliError(f"{path}: a .npy file has no column names; give --clients-column "
                       "as an index from 0")
    if column is None:
        return a.astype(np.float64), None
    if column >= a.shape[1]:
        raise CliError(f"{path}: --clients-column {column} but the array has "
                       f"{a.shape[1]} columns (indices from 0)")
    if a.shape[1] < 2:
        raise CliError(f"{path}: no feature columns")
    lab = a[:, column]
    labels = [f"{v:g}" if not float(v).is_integer() else str(int(v)) for v in lab.tolist()]
    return np.delete(a, column, axis=1).astype(np.float64), labels


def _read_file(path, column, delimiter):
    suffix = pathlib.Path(path).suffix.lower()
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file or folder")
    if suffix == ".npy":
        X, labels = _read_npy(path, column)
        return X, labels, None
    return _read_csv(path, column, delimiter)


def _label_order(labels):
    """Distinct labels sorted (numerically when every label is a number)."""
    uniq = set(labels)
    if all(_is_number(u) for u in uniq):
        return sorted(uniq, key=lambda u: (float(u), u))
    return sorted(uniq)


def read_clients(paths, clients_column=None, delimiter=","):
    """Read the clients' data from CSV or ``.npy`` files.

    Parameters
    ----------
    paths : sequence of str or path-like
        One file whose ``clients_column`` says which client holds each row;
        or several files, or one folder of ``.csv``/``.npy`` files (sorted by
        name), one client per file.
    clients_column : str or int, optional
        The column naming each row's client: a CSV header name or an index
        from 0 (one file only).  Dropped from the features.
    delimiter : str, default=","
        CSV field separator.

    Returns
    -------
    clients : list of ndarray of shape (n_l, n_features), float64
        In the order of the sorted labels (numerically when every label is
        a number), or of the files.
    names : list of str
        Each client's label (or file name).
    feature_names : list of str or None
        From the CSV header, when there is one.

    Raises
    ------
    InvalidInputError
        A missing, empty or malformed file, a non-numeric or non-finite
        value, files with different numbers of features.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "data.csv")
    ...     with open(path, "w") as f:
    ...         _ = f.write("x,y,site\\n0.1,0.2,b\\n0.3,0.4,a\\n0.5,0.6,b\\n")
    ...     clients, names, features = read_clients([path], "site")
    >>> names, [c.shape for c in clients], features
    (['a', 'b'], [(1, 2), (2, 2)], ['x', 'y'])
    """
    paths = [os.fspath(p) for p in paths]
    column = clients_column if isinstance(clients_column, int) else \
        _parse_column(clients_column)
    if len(paths) == 1 and os.path.isdir(paths[0]):
        folder = paths[0]
        files = sorted(os.path.join(folder, n) for n in os.listdir(folder)
                       if n.lower().endswith(DATA_SUFFIXES) and not n.startswith("."))
        if not files:
            raise CliError(f"{folder}: no .csv or .npy files in the folder")
        paths = files
    if len(paths) > 1 and column is not None:
        raise CliError("--clients-column splits one file; with several files (or a folder) "
                       "each file is one client")
    parts, names, features = [], [], None
    for p in paths:
        if os.path.isdir(p):
            raise CliError(f"{p}: a folder; give one folder alone, or files")
        X, labels, fn = _read_file(p, column, delimiter)
        if labels is None:
            parts.append(X)
            names.append(pathlib.Path(p).stem)
        else:
            lab = np.array(labels, dtype=object)
            for name in _label_order(labels):
                parts.append(X[lab == name])
                names.append(name)
        features = features or fn
    d = {c.shape[1] for c in parts}
    if len(d) > 1:
        raise CliError(f"the files have different numbers of features: {sorted(d)}")
    for c, name in zip(parts, names):
        if not np.isfinite(c).all():
            raise CliError(f"client {name!r}: NaN or infinite values (clean or drop them "
                           "first)")
    return parts, names, features


def save_kmeans(model, path, n):
    """A KMeans model as an npz archive (no pickle): its centers and a JSON
    header, written to a temporary file and renamed."""
    head = {"format": KMEANS_FORMAT, "version": KMEANS_VERSION,
            "params": {k: v for k, v in model.get_params().items()
                       if isinstance(v, (int, float, str, type(None)))},
            "n_features": int(model.n_features_in_), "n_samples": int(n),
            "inertia": float(model.inertia_), "n_iter": int(model.n_iter_)}
    arrays = {"header": np.frombuffer(json.dumps(head).encode(), dtype=np.uint8),
              "cluster_centers": np.ascontiguousarray(model.cluster_centers_)}
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CliError(f"cannot save to {path!r}: folder {folder!r} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".pyfkm-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# -- reading saved models -----------------------------------------------------------------

def _header(path):
    """(format, version) from a saved model's JSON header."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if "header" not in z.files:
                raise CliError(f"{path}: not a pyfkm model (no header)")
            hdr = z["header"]
            head = json.loads(hdr.tobytes().decode())
            centers = z["cluster_centers"] if "cluster_centers" in z.files else None
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except (ValueError, OSError, EOFError, UnicodeDecodeError) as e:
        raise CliError(f"{path}: not a pyfkm model file ({e})") from None
    if not isinstance(head, dict):
        raise CliError(f"{path}: not a pyfkm model (bad header)")
    return head, centers


def load_model(path):
    """('federated', FederatedKMeans, header) or ('kmeans', header dict, centers)."""
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file")
    head, centers = _header(path)
    fmt = head.get("format")
    if fmt == KMEANS_FORMAT:
        if centers is None or centers.ndim != 2 or centers.dtype.kind != "f":
            raise ModelFileError(f"{path}: cluster_centers: missing or not a 2-D float array")
        return "kmeans", head, centers
    return "federated", FederatedKMeans.load(path), head


def write_labels(path, names, labels):
    """CSV lines ``client,point,cluster`` (a header line first)."""
    try:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["client", "point", "cluster"])
            for name, lab in zip(names, labels):
                w.writerows((name, i, int(c)) for i, c in enumerate(lab))
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror or e}") from None


# -- plot ------------------------------------------------------------------------------------

def check_plot_target(path):
    """Fail early (before a long fit) when ``--plot`` cannot be written:
    matplotlib missing, or a file extension it does not know."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise CliError("--plot needs matplotlib: pip install matplotlib "
                       "(or pip install 'pyfkm[plot]')") from None
    ext = pathlib.Path(path).suffix.lstrip(".").lower()
    known = FigureCanvasBase.get_supported_filetypes()
    if ext not in known:
        raise CliError(f"--plot {path}: the file name must end in one of "
                       f"{', '.join('.' + e for e in sorted(known))}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CliError(f"--plot {path}: folder {folder!r} does not exist")


def plot_clusters(X, model, path, features=None):
    """Scatter of the first two features (or of a 2-D SVD projection when
    there are more than two) coloured by cluster, with the centers."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise CliError("--plot needs matplotlib: pip install matplotlib "
                       "(or pip install 'pyfkm[plot]')") from None
    labels = model.predict(X)
    C = model.cluster_centers_
    if X.shape[0] > PLOT_POINTS:
        keep = np.random.default_rng(0).choice(X.shape[0], PLOT_POINTS, replace=False)
        X, labels = X[keep], labels[keep]
    d = X.shape[1]
    if d == 1:
        P, Q = np.column_stack([X[:, 0], np.zeros(len(X))]), np.column_stack(
            [C[:, 0], np.zeros(len(C))])
        xlabel, ylabel = (features or ["feature 0"])[0], ""
    elif d == 2:
        P, Q = X, C
        xlabel, ylabel = features[:2] if features else ("feature 0", "feature 1")
    else:
        mean = X.mean(axis=0)
        _, _, vt = np.linalg.svd(X - mean, full_matrices=False)
        P, Q = (X - mean) @ vt[:2].T, (C - mean) @ vt[:2].T
        xlabel, ylabel = "first principal direction", "second principal direction"
    fig = Figure(figsize=(6.4, 5.2))
    ax = fig.subplots()
    cmap, n_colors = ("tab10", 10) if C.shape[0] <= 10 else ("tab20", 20)
    ax.scatter(P[:, 0], P[:, 1], c=labels % n_colors, s=6 if len(P) < 5000 else 2, cmap=cmap,
               vmin=0, vmax=n_colors - 1, alpha=0.7, linewidths=0)
    ax.scatter(Q[:, 0], Q[:, 1], c="black", marker="x", s=80, label="centers")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{type(model).__name__}, {C.shape[0]} clusters")
    ax.legend(loc="best")
    try:
        fig.savefig(path, dpi=120)
    except ValueError as e:          # an unknown file extension
        raise CliError(f"--plot {path}: {e}") from None
