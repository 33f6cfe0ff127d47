"""Saved MUFC models: the file format, written atomically, read trusting nothing.

A model file is one ``.npz`` archive (no pickle): the arrays of the clients
(``c<i>.*``) and of the server (``s.*``), and a JSON header (format name,
version, parameters, generator states) stored as the byte array
``header``.  ``write_model`` writes it to a temporary name in the same
folder, syncs it and renames it, so a crash never leaves a half-written
model.  ``_read_model`` parses the archive itself (sizes checked against
the archive's directory and each array's header before anything is
allocated; no pickles, no object dtypes) and ``_ModelReader`` validates
every field before the estimator is built.  Pickles of
:class:`pyfkm.mufc.FederatedKMeans` go through the same arrays, header and
reader.

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> from pyfkm.mufc import FederatedKMeans
>>> rng = np.random.default_rng(0)
>>> fkm = FederatedKMeans(2, server_points="centers", secure=False, random_state=0).fit(
...     [rng.uniform(-0.5, 0.5, size=(30, 2)) for _ in range(2)])
>>> with tempfile.TemporaryDirectory() as folder:
...     fkm.save(os.path.join(folder, "model.npz"))
...     back = FederatedKMeans.load(os.path.join(folder, "model.npz"))
>>> np.array_equal(back.cluster_centers_, fkm.cluster_centers_)
True
"""
import io
import json
import os
import stat
import tempfile
import zipfile
import zlib

import numpy as np

from ..exceptions import InvalidInputError, ModelFileError
from ._rngstate import _rng_from_state
from .aggregation import merge_sparse
from .client import _MAX_BINS, MufcClient, _n_bins
from .server import MufcServer

__all__ = []


def write_model(path, head, arrays):
    """Write ``arrays`` and the JSON header ``head`` (stored as the byte
    array ``header``) to ``path`` as one npz archive: written to a temporary
    name in the same folder, flushed and synced to disk, then renamed; the
    temporary file is removed on any error."""
    arrays["header"] = np.frombuffer(json.dumps(head).encode(), dtype=np.uint8)
    # through a symbolic link the file it names is replaced (replacing the
    # link would leave the old model, with any removed rows, in place)
    path = os.path.realpath(os.fspath(path))
    d = os.path.dirname(path)
    if not os.path.isdir(d):
        raise InvalidInputError(f"cannot save to {path!r}: folder {d!r} does not exist")
    check_replaceable(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".pyfkm-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(d)


def check_replaceable(path):
    """Refuse to replace anything but a regular file (``path`` has its
    symbolic links resolved): a model saved over a device, a pipe or a
    folder would destroy it (``/dev/null`` as root).  A file with other hard
    links gets a warning: they keep the old content, removed rows included."""
    import stat
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInputError(
            f"cannot save to {path!r}: it exists and is not a regular file; choose a file name")
    if st.st_nlink > 1:
        import warnings
        warnings.warn(f"{path!r} has {st.st_nlink - 1} other hard link(s): they keep the old "
                      "model (and any rows removed since)", UserWarning, stacklevel=4)


def _fsync_dir(d):
    """Sync a folder after a rename into it (POSIX; a no-op where folders
    cannot be opened)."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- reading saved models: nothing read is trusted ---------------------------

def _read_model(path, max_bytes=None):
    """``(header, arrays)`` of the model file ``path`` (a str): the arrays
    read by :func:`_read_npz`, the header parsed from its JSON bytes (not
    yet validated: see ``_ModelReader``)."""
    arrays = _read_npz(path, max_bytes)
    hdr = arrays.pop("header", None)
    if hdr is None or hdr.dtype != np.uint8 or hdr.ndim != 1:
        raise ModelFileError(f"{path}: header: missing or not a byte array")
    try:
        head = json.loads(hdr.tobytes().decode())
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ModelFileError(f"{path}: header: not JSON ({e})") from None
    return head, arrays


def _read_npz(path, max_bytes=None):
    """The arrays of an npz file, each parsed from its bytes after checking
    that the archive's directory and the array headers promise no more than
    ``max_bytes`` in all (so a small file cannot make the reader allocate
    much more than its size)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ModelFileError(f"{path}: not a regular file")
            if max_bytes is not None and st.st_size > int(max_bytes):
                raise ModelFileError(f"{path}: the file is larger than max_bytes={max_bytes}")
            data = f.read(st.st_size + 1)
    except OSError as e:
        raise ModelFileError(f"{path}: cannot read the file ({e})") from None
    if len(data) != st.st_size:
        raise ModelFileError(f"{path}: the file changed while it was read")
    limit = max(4 * len(data), 64 << 20) if max_bytes is None else int(max_bytes)
    buf = io.BytesIO(data)
    try:
        if not zipfile.is_zipfile(buf):
            raise ModelFileError(f"{path}: not a pyfkm model file (not an npz archive)")
        out = {}
        with zipfile.ZipFile(buf) as z:
            infos = z.infolist()
            if sum(i.file_size for i in infos) > limit:
                raise ModelFileError(
                    f"{path}: the archive's arrays take more than max_bytes={limit} bytes")
            for info in infos:
                name = info.filename
                if not name.endswith(".npy") or name[:-4] in out:
                    raise ModelFileError(f"{path}: unexpected archive member {name!r}")
                if info.flag_bits & 0x1 or \
                        info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                    raise ModelFileError(
                        f"{path}: archive member {name!r} is encrypted or compressed "
                        "with a method pyfkm does not write")
                with z.open(info) as f:
                    raw = f.read(info.file_size + 1)
                out[name[:-4]] = parse_npy(raw, f"{path}: {name[:-4]}")
        return out
    except ModelFileError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError,
            ValueError, NotImplementedError, KeyError, OverflowError, RuntimeError) as e:
        raise ModelFileError(
            f"{path}: damaged or truncated model file ({type(e).__name__}: {e})") from None


def parse_npy(raw, where):
    """An array from the bytes of one .npy member (no pickles, no object
    dtypes, the data exactly as long as the header says); ModelFileError
    naming ``where`` otherwise.  Shared with the command line's model files."""
    f = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"npy version {version}")
    except ValueError as e:
        raise ModelFileError(f"{where}: bad array header ({e})") from None
    if dtype.hasobject or dtype.kind not in "biuf" or dtype.fields is not None:
        raise ModelFileError(f"{where}: dtype {dtype} is not a plain numeric type")
    if any(int(s) < 0 for s in shape):
        raise ModelFileError(f"{where}: negative dimension in shape {shape}")
    count = 1
    for s in shape:
        count *= int(s)
    body = raw[f.tell():]
    if count * dtype.itemsize != len(body):
        raise ModelFileError(
            f"{where}: the header announces {count * dtype.itemsize} bytes, "
            f"the archive holds {len(body)}")
    a = np.frombuffer(body, dtype=dtype, count=count)
    return a.reshape(shape, order="F" if fortran else "C").copy()


class _ModelReader:
    """Validates a saved model's header and arrays field by field, then
    builds the estimator (the constructors it calls trust their input)."""

    def __init__(self, cls, head, arrays, where):
        self.cls, self.head, self.arrays, self.where = cls, head, arrays, where
        self.used = {"header"}

    def fail(self, field, why):
        raise ModelFileError(f"{self.where}: {field}: {why}; the model is corrupt "
                             "or was not written by pyfkm")

    # scalars of the JSON header
    def value(self, d, key, field, kind, lo=None, hi=None, choices=None):
        if not isinstance(d, dict) or key not in d:
            self.fail(field, "missing")
        v = d[key]
        if kind == "int":
            if not isinstance(v, int) or isinstance(v, bool):
                self.fail(field, f"{v!r} is not an integer")
        elif kind == "float":
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v):
                self.fail(field, f"{v!r} is not a finite number")
            v = float(v)
        elif kind == "bool":
            if not isinstance(v, bool):
                self.fail(field, f"{v!r} is not a boolean")
        elif kind == "str":
            if not isinstance(v, str):
                self.fail(field, f"{v!r} is not a string")
        if lo is not None and v < lo or hi is not None and v > hi:
            self.fail(field, f"{v!r} is out of range [{lo}, {hi}]")
        if choices is not None and v not in choices:
            self.fail(field, f"{v!r} is not one of {sorted(choices)}")
        return v

    def same(self, d, key, field, expected, kind):
        v = self.value(d, key, field, kind)
        if v != expected:
            self.fail(field, f"{v!r} differs from the model's {expected!r}")
        return v

    def rng(self, state, field):
        try:
            return _rng_from_state(state)
        except ModelFileError as e:
            self.fail(field, str(e))

    def array(self, name, kinds, shape, dtype=None):
        """Array ``name`` of a dtype kind in ``kinds`` and the given shape
        (None: any length on that axis), converted to ``dtype`` exactly."""
        a = self.arrays.get(name)
        if a is None:
            self.fail(name, "missing")
        self.used.add(name)
        if a.dtype.kind not in kinds:
            self.fail(name, f"dtype {a.dtype} is not of kind {kinds!r}")
        if a.ndim != len(shape) or any(s is not None and s != t for s, t in zip(shape, a.shape)):
            self.fail(name, f"shape {a.shape} is not {tuple('n' if s is None else s for s in shape)}")
        if dtype is not None and a.dtype != dtype:
            b = a.astype(dtype)
            if not np.array_equal(b, a):
                self.fail(name, f"values do not fit {np.dtype(dtype).name}")
            a = b
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            self.fail(name, "NaN or infinite values")
        return np.ascontiguousarray(a)

    def read(self):
        h = self.head
        if not isinstance(h, dict):
            self.fail("header", "not a JSON object")
        if h.get("format") != self.cls._FORMAT:
            self.fail("format", f"{h.get('format')!r} is not {self.cls._FORMAT!r}")
        version = h.get("version")
        if type(version) is not int or version not in self.cls._READS:
            self.fail("version", f"{version!r} is not supported (this pyfkm reads versions "
                      f"{', '.join(map(str, self.cls._READS))})")
        self.version = version
        obj = self.params(h.get("params"))
        self.d = d = self.value(h, "n_features", "n_features", "int", 1, 1 << 20)
        self.K, _, self.lo, self.hi = obj._check_params(1, d)
        self.gamma = g = self.value(h, "gamma", "gamma", "float")
        if g <= 0 or (not isinstance(obj.gamma, str) and g != float(obj.gamma)):
            self.fail("gamma", f"{g!r} is not positive or differs from the parameter")
        self.B = self.value(h, "n_bins_per_dim", "n_bins_per_dim", "int", 1)
        if (self.hi - self.lo) / g > _MAX_BINS or self.B != _n_bins(self.lo, self.hi, g):
            self.fail("n_bins_per_dim", f"{self.B} does not match gamma and bounds")
        self.obj = obj
        heads = h.get("clients")
        if not isinstance(heads, list) or not 1 <= len(heads) <= 1 << 24:
            self.fail("clients", "not a non-empty list")
        L = len(heads)
        parts = h.get("participants")
        if not isinstance(parts, list) or not parts or \
                any(not isinstance(i, int) or isinstance(i, bool) for i in parts) or \
                parts != sorted(set(parts)) or parts[0] < 0 or parts[-1] >= L:
            self.fail("participants", f"must be distinct sorted client indices in [0, {L})")
        clients = []
        part_set = set(parts)
        for i, ch in enumerate(heads):
            if i not in part_set:   # departed: nothing of it is read (versions < 3
                clients.append(None)  # stored its data: dropped here)
                if version >= 3 and ch is not None:
                    self.fail(f"clients[{i}]", "a departed client must store nothing")
                continue
            clients.append(self.client(i, ch, version))
        server = self.server(h.get("server"))
        agg = merge_sparse([clients[i].sparse_counts() for i in parts], d)
        if not (np.array_equal(agg[0], server.bins_) and np.array_equal(agg[1], server.counts_)):
            self.fail("s.bins/s.counts", "the aggregate is not the sum of the clients' vectors")
        if version >= 3:
            extra = sorted(set(self.arrays) - self.used)
            if extra:
                self.fail(extra[0], "unexpected array")
        obj._clients, obj._server, obj._participants = clients, server, parts
        obj.gamma_, obj.n_bins_per_dim_, obj.n_features_in_ = g, self.B, d
        obj.bytes_sent_ = self.value(h, "bytes_sent", "bytes_sent", "int", 0)
        fs = h.get("fit_seconds", {})          # absent before version 3
        obj.fit_seconds_ = {k: self.value(fs, k, f"fit_seconds.{k}", "float", lo=0)
                            for k in (("clients", "aggregation", "server") if fs else ())}
        obj._agg_rng = self.rng(h.get("agg_rng"), "agg_rng")
        dr = h.get("dropped", [])
        if not isinstance(dr, list) or any(not isinstance(i, int) or isinstance(i, bool)
                                           for i in dr):
            self.fail("dropped", "must be a list of client indices")
        obj.dropped_clients_ = tuple(i for i, c in enumerate(clients) if c is None
                                     and i in set(dr))
        names = h.get("feature_names")  # optional: a fit on DataFrames
        if names is not None:
            if not (isinstance(names, list) and len(names) == d
                    and all(isinstance(v, str) for v in names)):
                self.fail("feature_names", f"must be a list of {d} strings")
            obj.feature_names_in_ = np.array(names, dtype=object)
        obj._agg = obj._make_aggregator(
            d, self.B, [None if c is None else c.X.shape[0] for c in clients], parts)
        obj._publish()
        return obj

    # parameters added after a format version, with the value older files meant
    _NEW_PARAMS = {"threshold": None, "neighbors": "auto", "client_timeout": None,
                   "progress": False}

    def params(self, p):
        names = set(self.cls._param_names())
        if isinstance(p, dict):
            p = {**{k: v for k, v in self._NEW_PARAMS.items() if k in names}, **p}
        if not isinstance(p, dict) or set(p) != names:
            self.fail("params", f"must have exactly the keys {sorted(names)}")
        p = dict(p)
        b = p["bounds"]
        if not isinstance(b, list) or len(b) != 2 or \
                any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in b):
            self.fail("params.bounds", f"{b!r} is not two numbers")
        p["bounds"] = (float(b[0]), float(b[1]))
        rs = p["random_state"]
        if rs is not None and (not isinstance(rs, int) or isinstance(rs, bool) or rs < 0):
            self.fail("params.random_state", f"{rs!r} is not None or an int >= 0")
        if p["executor"] is not None:
            self.fail("params.executor", "must be null")
        for key, kind, kw in (("n_clusters", "int", dict(lo=1, hi=1 << 24)),
                              ("n_init", "int", dict(lo=1, hi=1 << 16)),
                              ("max_iter", "int", dict(lo=1, hi=1 << 30)),
                              ("tol", "float", dict(lo=0)),
                              ("secure", "bool", {}),
                              ("server_points", "str", dict(choices={"uniform", "centers"})),
                              ("client_init", "str",
                               dict(choices={"k-means++", "means", "full"}))):
            self.value(p, key, f"params.{key}", kind, **kw)
        if p["gamma"] != "auto":
            self.value(p, "gamma", "params.gamma", "float", lo=0)
        if p["modulus"] is not None:
            self.value(p, "modulus", "params.modulus", "int", 3, (1 << 63) - 1)
        if p["threshold"] is not None:
            self.value(p, "threshold", "params.threshold", "int", 1, 1 << 32)
        if p["neighbors"] != "auto":
            self.value(p, "neighbors", "params.neighbors", "int", 0, 1 << 32)
            if p["neighbors"] % 2:
                self.fail("params.neighbors", "must be even")
        if p["client_timeout"] is not None:
            self.value(p, "client_timeout", "params.client_timeout", "float", lo=0)
        if p["progress"] is not False:
            self.fail("params.progress", "must be false (a callable is not stored)")
        return self.cls(**p)

    def client(self, i, ch, version):
        f, pre = f"clients[{i}]", f"c{i}."
        if not isinstance(ch, dict):
            self.fail(f, "not an object")
        obj = self.obj
        for key, expected, kind in (("n_clusters", self.K, "int"), ("gamma", self.gamma, "float"),
                                    ("lower", self.lo, "float"), ("upper", self.hi, "float"),
                                    ("client_init", obj.client_init, "str"),
                                    ("max_iter", obj.max_iter, "int"),
                                    ("tol", float(obj.tol), "float")):
            self.same(ch, key, f"{f}.{key}", expected, kind)
        X = self.array(pre + "X", "f", (None, self.d))
        if X.dtype not in (np.float64, np.float32):
            self.fail(pre + "X", f"dtype {X.dtype} is not native float64 or float32")
        n = X.shape[0]
        removed = self.array(pre + "removed", "b", (n,))
        active = self.array(pre + "active", "iu", (None,), np.int64)
        if active.size and (active[0] < 0 or active[-1] >= n or (np.diff(active) <= 0).any()):
            self.fail(pre + "active", f"must be increasing ids in [0, {n})")
        inactive = np.ones(n, dtype=bool)
        inactive[active] = False
        if not removed[inactive].all():
            self.fail(pre + "removed", "a point outside the seeding is not marked removed")
        X = X.copy()
        if version < 3:
            X[removed] = 0              # erase what older versions kept
        elif (X[removed] != 0).any():
            self.fail(pre + "X", "a removed row is not erased")
        live = X[~removed]
        if live.size and (live.min() < self.lo or live.max() > self.hi):
            self.fail(pre + "X", f"values outside the box [{self.lo}, {self.hi}]")
        k = self.same(ch, "k", f"{f}.k", min(self.K, active.size), "int")
        rng = self.rng(ch.get("rng"), f"{f}.rng")
        st = ch.get("seeding")
        arrays = {pre + "X": X, pre + "removed": removed, pre + "active": active}
        head = dict(ch, rng=None)
        if k == 0:
            if st is not None:
                self.fail(f"{f}.seeding", "must be null for a client without points")
        else:
            if not isinstance(st, dict):
                self.fail(f"{f}.seeding", "missing")
            for key in ("n_active", "n_positive"):
                self.value(st, key, f"{f}.seeding.{key}", "int", 0, active.size)
            for name in ("removed", "mind", "labels", "centers", "counts", "wsizes"):
                kinds = "f" if name in ("mind", "wsizes") else "biu"
                size = active.size if name in ("removed", "mind", "labels") else k
                arrays[pre + "s." + name] = self.array(pre + "s." + name, kinds, (size,))
            if not np.array_equal(arrays[pre + "s.removed"].astype(bool), removed[active]):
                self.fail(pre + "s.removed", "differs from the client's removed points")
        try:
            return MufcClient._restore(head, pre, arrays, rng=rng)
        except (ValueError, TypeError) as e:
            self.fail(f, str(e))

    def server(self, sh):
        obj = self.obj
        if not isinstance(sh, dict):
            self.fail("server", "not an object")
        for key, expected, kind in (("n_clusters", self.K, "int"), ("gamma", self.gamma, "float"),
                                    ("lower", self.lo, "float"), ("d", self.d, "int"),
                                    ("server_points", obj.server_points, "str"),
                                    ("n_init", obj.n_init, "int"),
                                    ("max_iter", obj.max_iter, "int"),
                                    ("tol", float(obj.tol), "float")):
            self.same(sh, key, f"server.{key}", expected, kind)
        self.value(sh, "inertia", "server.inertia", "float", lo=0)
        self.value(sh, "n_iter", "server.n_iter", "int", 0)
        if "seeds" in sh:
            self.value(sh, "seeds", "server.seeds", "bool")
        rng = self.rng(sh.get("rng"), "server.rng")
        d, B = self.d, self.B
        bins = self.array("s.bins", "iu", (None, d), np.int64)
        m = bins.shape[0]
        if bins.size and (bins.min() < 0 or bins.max() >= B):
            self.fail("s.bins", f"coordinates outside [0, {B})")
        counts = self.array("s.counts", "iu", (m,), np.int64)
        if (counts <= 0).any():
            self.fail("s.counts", "counts must be positive")
        uniform = obj.server_points == "uniform"
        n_pts = int(counts.sum(dtype=object)) if uniform else m
        kk = min(self.K, n_pts)
        centers = self.array("s.centers", "f", (kk, d), np.float64)
        slack = self.gamma + 1e-9 * max(abs(self.lo), abs(self.hi))
        if centers.size and (centers.min() < self.lo - slack or centers.max() > self.hi + slack):
            self.fail("s.centers", f"centers outside the box [{self.lo}, {self.hi}]")
        samples = self.array("s.samples", "f", (n_pts if uniform else 0, d), np.float64)
        if uniform and n_pts:
            b = np.repeat(bins, counts, axis=0)
            lo = self.lo + b * self.gamma
            tol = 1e-9 * max(abs(self.lo), abs(self.hi), self.gamma)
            if (samples < lo - tol).any() or (samples > lo + self.gamma + tol).any():
                self.fail("s.samples", "a sample lies outside its bin")
        arrays = {"s.bins": bins, "s.counts": counts, "s.centers": centers,
                  "s.samples": samples}
        if not sh.get("seeds") and self.version >= 2 and obj.server_points == "centers" and kk:
            self.fail("s.seeds", "missing (a fitted 'centers' server keeps its seeds)")
        if sh.get("seeds"):
            arrays["s.seeds"] = self.array("s.seeds", "iu", (obj.n_init, None), np.int64)
        return MufcServer._restore(dict(sh, rng=None), arrays, rng=rng)
