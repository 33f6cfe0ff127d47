"""Files of the ``pyfkm`` command line (:mod:`pyfkm.cli`): the clients'
data (CSV or ``.npy``), the KMeans model file and the ``--plot`` figure.

Kept apart from :mod:`pyfkm.cli`, which holds the arguments and the
commands; every function here raises :class:`CliError` (an
:class:`~pyfkm.exceptions.InvalidInputError`) with a message naming the
file for anything wrong in what it reads.
"""
import array
import csv
import json
import os
import pathlib
import stat
import zipfile
import zlib

import numpy as np

from .exceptions import InvalidInputError, ModelFileError
from .core.kmeans import nearest_center
from .mufc import FederatedKMeans
from .mufc.persistence import parse_npy, write_model

__all__ = []

DATA_SUFFIXES = (".csv", ".npy")
KMEANS_FORMAT, KMEANS_VERSION = "pyfkm.cli.KMeans", 1
# points drawn by --plot at most (a uniform sample of them)
PLOT_POINTS = 20_000
# the longest numeric CSV cell (a float64 needs at most 24 characters)
MAX_CELL_CHARS = 64
# a model file's members may unpack to at most max(4 x the file's size,
# 64 MiB) bytes in all: FederatedKMeans.load's default limit, checked here
# from the archive's directory before a member is read
MODEL_MIN_LIMIT = 64 << 20


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


def _delimiter_hint(cells, delimiter):
    """' (... try --delimiter ';')' when a line read as one field holds
    another common separator; '' otherwise."""
    if len(cells) != 1:
        return ""
    for sep, shown in ((";", "';'"), ("\t", "$'\\t'"), ("|", "'|'"), (",", "','")):
        if sep != delimiter and sep in cells[0]:
            return f" (the fields look separated by {sep!r}: try --delimiter {shown})"
    return ""


def check_delimiter(delimiter):
    """``delimiter`` if it is one character (not a quote or a line end)."""
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\"\r\n":
        shown = repr(delimiter)
        raise CliError(f"--delimiter {shown} must be one character, e.g. ',' or ';' (a tab: "
                       "--delimiter $'\\t' in bash)")
    return delimiter


def _csv_rows(f, delimiter):
    """(line number, stripped cells) of the non-blank lines of a CSV."""
    reader = csv.reader(f, delimiter=delimiter)
    for r in reader:
        cells = [c.strip() for c in r]
        if any(cells):
            yield reader.line_num, cells


def _read_csv(path, column, delimiter):
    """(features, client labels or None, feature names or None) of one CSV.

    The first line is a header when none of its feature cells is a number.
    Rows are converted to floats as they are read (memory: 8 bytes a value,
    plus the labels); a numeric cell longer than ``MAX_CELL_CHARS`` is an
    error naming its line and column."""
    try:
        # utf-8-sig: a byte-order mark (spreadsheets write one) is not part
        # of the first column's name
        with open(path, newline="", encoding="utf-8-sig") as f:
            return _parse_csv(path, _csv_rows(f, delimiter), column, delimiter)
    except UnicodeDecodeError:
        raise CliError(f"{path}: not a text CSV file") from None
    except csv.Error as e:
        raise CliError(f"{path}: not a valid CSV file ({e})") from None


def _parse_csv(path, rows, column, delimiter):
    first_line, first = next(rows, (None, None))
    if first is None:
        raise CliError(f"{path}: the file is empty")
    width = len(first)
    hint = _delimiter_hint(first, delimiter)
    if isinstance(column, str):
        if column not in first:
            raise CliError(f"{path}: no column named {column!r} in the header "
                           f"({', '.join(first)}){hint}")
        col, header = first.index(column), True
    else:
        col = column
        if col is not None and col >= width:
            raise CliError(f"{path}: --clients-column {col} but the file has {width} "
                           f"column{'s' * (width != 1)} (indices from 0){hint}")
        # a header has no number among its feature cells ('1,2x' is a
        # data row with a typo, not a header)
        header = not any(_is_number(c) for j, c in enumerate(first) if j != col)
    feat = [j for j in range(width) if j != col]
    if not feat:
        raise CliError(f"{path}: no feature columns")
    names = None
    if header:
        names = [first[j] for j in feat]
        dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if dup is not None:
            raise CliError(f"{path}: the header names column {dup!r} twice")
    values = array.array("d")
    labels = None if col is None else []

    def take(line, cells):
        if len(cells) != width:
            raise CliError(f"{path}: line {line} has {len(cells)} fields, the first line "
                           f"has {width}{_delimiter_hint(cells, delimiter)}")
        for i, j in enumerate(feat):
            c = cells[j]
            what = f"column {names[i]!r}" if names else f"column {j}"
            if len(c) > MAX_CELL_CHARS:
                raise CliError(f"{path}: line {line}, {what}: a cell of {len(c):,} "
                               f"characters is not a number (at most {MAX_CELL_CHARS})")
            try:
                values.append(float(c))
            except ValueError:
                why = (" (a first line with a number in it is data, not a header)"
                       if line == first_line else "")
                raise CliError(f"{path}: line {line}, {what}: {c!r} is not a number"
                               f"{why}{_delimiter_hint(cells, delimiter)}") from None
        if labels is not None:
            labels.append(cells[col])

    if not header:
        take(first_line, first)
    for line, cells in rows:
        take(line, cells)
    if not values:
        raise CliError(f"{path}: a header line but no data rows")
    X = np.frombuffer(values, dtype=np.float64).reshape(-1, len(feat)).copy()
    return X, labels, names


def _read_npy(path, column):
    """(features, client labels or None) of one .npy file (a 2-D numeric array)."""
    try:
        # memory-mapped first: a header announcing more data than the file
        # holds fails here instead of allocating it
        a = np.load(path, allow_pickle=False, mmap_mode="r")
        a = np.array(a) if isinstance(a, np.ndarray) else a
    except (ValueError, EOFError, OSError, MemoryError) as e:
        raise CliError(f"{path}: not a valid .npy file ({e})") from None
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "biuf":
        raise CliError(f"{path}: not a numeric array")
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise CliError(f"{path}: expected a 2-D array with rows and columns, got shape "
                       f"{a.shape}")
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
    check_delimiter(delimiter)
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
    parts, names, features, named = [], [], None, None
    headers = set()
    for p in paths:
        if os.path.isdir(p):
            raise CliError(f"{p}: a folder; give one folder alone, or files")
        X, labels, fn = _read_file(p, column, delimiter)
        headers.add(fn is not None)
        if len(headers) > 1:
            raise CliError(f"{p}: some files have a header line and some do not; columns "
                           "could not be matched: give every file a header (or none)")
        if fn is not None and features is None:
            features, named = fn, p
        elif fn is not None and fn != features:
            # the files' columns are matched by name, to the first header's order
            if sorted(fn) != sorted(features):
                raise CliError(f"{p}: its columns ({', '.join(fn)}) are not those of "
                               f"{named} ({', '.join(features)})")
            X = X[:, [fn.index(n) for n in features]]
        if labels is None:
            parts.append(X)
            names.append(pathlib.Path(p).stem)
        else:
            # one grouping pass (a mask per label would be quadratic in
            # the number of labels)
            order = _label_order(labels)
            where = {name: j for j, name in enumerate(order)}
            code = np.fromiter((where[v] for v in labels), dtype=np.int64, count=len(labels))
            idx = np.argsort(code, kind="stable")
            cuts = np.searchsorted(code[idx], np.arange(len(order) + 1))
            for j, name in enumerate(order):
                parts.append(X[idx[cuts[j]:cuts[j + 1]]])
                names.append(name)
    d = {c.shape[1] for c in parts}
    if len(d) > 1:
        raise CliError(f"the files have different numbers of features: {sorted(d)}")
    for c, name in zip(parts, names):
        if not np.isfinite(c).all():
            raise CliError(f"client {name!r}: NaN or infinite values (clean or drop them "
                           "first)")
    return parts, names, features


class _Named:
    """An array with column names, as estimators read a DataFrame's: its
    ``columns`` become the fitted model's ``feature_names_in_``."""

    def __init__(self, X, columns):
        self.X, self.columns = X, list(columns)
        self.shape = X.shape

    def __len__(self):
        return self.X.shape[0]

    def __array__(self, dtype=None, copy=None):
        return self.X if dtype is None else self.X.astype(dtype, copy=False)


def with_names(X, names):
    """``X`` as an estimator's input carrying the column ``names`` (None:
    ``X`` itself), so that fit records them and predict checks them."""
    return X if names is None else _Named(X, names)


def save_kmeans(model, path, n):
    """A KMeans model as an npz archive (no pickle): its centers and a JSON
    header, written to a temporary file and renamed."""
    head = {"format": KMEANS_FORMAT, "version": KMEANS_VERSION,
            "params": {k: v for k, v in model.get_params().items()
                       if isinstance(v, (int, float, str, type(None)))},
            "n_features": int(model.n_features_in_), "n_samples": int(n),
            "inertia": float(model.inertia_), "n_iter": int(model.n_iter_)}
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        head["feature_names"] = [str(v) for v in names]
    # the library's writer: temporary file, fsync, rename; never over a
    # device, a pipe or a folder
    write_model(path, head, {"cluster_centers": np.ascontiguousarray(model.cluster_centers_)})


# -- reading saved models -----------------------------------------------------------------

class _Archive:
    """The members of a model file (an npz archive), read one by one after
    checking, from the archive's directory, that they unpack to at most
    ``max(4 * file size, MODEL_MIN_LIMIT)`` bytes in all (a small file that
    would unpack to gigabytes is refused before anything is unpacked)."""

    def __init__(self, path):
        self.path = path
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise CliError(f"{path}: no such file") from None
        except OSError as e:
            raise CliError(f"{path}: cannot read the file ({e.strerror or e})") from None
        if not stat.S_ISREG(st.st_mode):
            raise CliError(f"{path}: not a regular file")
        self.limit = max(4 * st.st_size, MODEL_MIN_LIMIT)
        self.zip = self._guard(lambda: zipfile.ZipFile(path))
        try:
            infos = self.zip.infolist()
            total = sum(i.file_size for i in infos)
            if total > self.limit:
                raise ModelFileError(
                    f"{path}: not a pyfkm model file: its members unpack to {total:,} "
                    f"bytes, more than the limit of {self.limit:,} (4 times the file's size "
                    f"or {MODEL_MIN_LIMIT >> 20} MiB)")
            self.members = {}
            for i in infos:
                if not i.filename.endswith(".npy") or i.filename[:-4] in self.members:
                    raise ModelFileError(f"{path}: not a pyfkm model file (archive member "
                                         f"{i.filename!r})")
                if i.flag_bits & 0x1 or i.compress_type not in (zipfile.ZIP_STORED,
                                                                zipfile.ZIP_DEFLATED):
                    raise ModelFileError(f"{path}: archive member {i.filename!r} is encrypted "
                                         "or compressed with a method pyfkm does not write")
                self.members[i.filename[:-4]] = i
        except BaseException:
            self.zip.close()
            raise

    def _guard(self, read):
        try:
            return read()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError,
                ValueError, NotImplementedError, RuntimeError, OverflowError) as e:
            raise ModelFileError(f"{self.path}: not a pyfkm model file, or a damaged one "
                                 f"({type(e).__name__}: {e})") from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.zip.close()

    def array(self, name):
        """Member ``name`` as an array (plain numeric dtypes only, exactly
        as long as its header says), or None when there is none."""
        info = self.members.get(name)
        if info is None:
            return None

        def read():
            with self.zip.open(info) as f:
                return f.read(info.file_size + 1)
        return parse_npy(self._guard(read), f"{self.path}: {name}")


_KMEANS_KEYS = {"format", "version", "params", "n_features", "n_samples", "inertia", "n_iter"}


def _check_kmeans(path, head, centers, members):
    """The header and centers of a KMeans model file, every field checked."""
    def fail(field, why):
        raise ModelFileError(f"{path}: {field}: {why}; the model is corrupt or was not "
                             "written by pyfkm")

    def integer(key, lo):
        v = head[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            fail(key, f"{v!r} is not an integer >= {lo}")
        return v

    extra = sorted(set(members) - {"header", "cluster_centers"})
    if extra:
        fail(extra[0], "unexpected array")
    missing = sorted(_KMEANS_KEYS - set(head))
    if missing:
        fail(missing[0], "missing")
    unknown = sorted(set(head) - _KMEANS_KEYS - {"feature_names"})
    if unknown:
        fail(unknown[0], "unexpected field")
    if head["version"] != KMEANS_VERSION or isinstance(head["version"], bool):
        fail("version", f"{head['version']!r} is not supported (this pyfkm reads version "
             f"{KMEANS_VERSION})")
    params = head["params"]
    if not isinstance(params, dict) or any(
            not isinstance(v, (int, float, str, type(None))) for v in params.values()):
        fail("params", "not an object of numbers, strings and nulls")
    if centers is None:
        fail("cluster_centers", "missing")
    if centers.dtype.kind != "f" or centers.ndim != 2:
        fail("cluster_centers", f"a {centers.ndim}-D {centers.dtype} array, not a 2-D float "
             "array")
    k, d = centers.shape
    if k < 1 or d < 1:
        fail("cluster_centers", f"shape {centers.shape}: no clusters or no features")
    if not np.isfinite(centers).all():
        fail("cluster_centers", "NaN or infinite values")
    if integer("n_features", 1) != d:
        fail("n_features", f"{head['n_features']} but the centers have {d} features")
    if integer("n_samples", 1) < k:
        fail("n_samples", f"{head['n_samples']} points cannot give {k} clusters")
    integer("n_iter", 0)
    if "n_clusters" in params and params["n_clusters"] != k:
        fail("params.n_clusters", f"{params['n_clusters']!r} but the file has {k} centers")
    v = head["inertia"]
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v) or v < 0:
        fail("inertia", f"{v!r} is not a finite number >= 0")
    names = head.get("feature_names")
    if names is not None and not (isinstance(names, list) and len(names) == d
                                  and all(isinstance(n, str) for n in names)
                                  and len(set(names)) == d):
        fail("feature_names", f"not a list of {d} distinct strings")
    return head, np.ascontiguousarray(centers, dtype=np.float64)


def load_model(path):
    """('federated', FederatedKMeans, header) or ('kmeans', header dict, centers).

    Nothing in the file is trusted: the archive's sizes are checked before
    anything is unpacked, a FederatedKMeans file is read by
    :meth:`FederatedKMeans.load <pyfkm.FederatedKMeans.load>` and every
    field of a KMeans file is checked here."""
    path = os.fspath(path)
    with _Archive(path) as a:
        hdr = a.array("header")
        if hdr is None:
            raise CliError(f"{path}: not a pyfkm model (no header)")
        try:
            if hdr.dtype != np.uint8 or hdr.ndim != 1:
                raise ValueError("not a byte array")
            head = json.loads(hdr.tobytes().decode())
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            raise ModelFileError(f"{path}: not a pyfkm model (bad header: {e})") from None
        if not isinstance(head, dict):
            raise ModelFileError(f"{path}: not a pyfkm model (bad header)")
        if head.get("format") == KMEANS_FORMAT:
            head, centers = _check_kmeans(path, head, a.array("cluster_centers"), a.members)
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
    C = model.cluster_centers_
    labels = nearest_center(np.ascontiguousarray(X, dtype=np.float64),
                            np.ascontiguousarray(C, dtype=np.float64))[1]
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
