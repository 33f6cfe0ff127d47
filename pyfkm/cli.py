"""The ``pyfkm`` command line: a demo, and federated k-means on your own files.

Subcommands (``pyfkm <command> --help`` says more):

``pyfkm demo [--seed N] [--quick]``
    Every system of pyfkm on synthetic data, timed, with a summary table
    (:func:`pyfkm.demo.run_demo`).
``pyfkm fit DATA... --clusters K [--clients-column COL] [--bounds LOW HIGH] [--model FILE]``
    Fit :class:`~pyfkm.FederatedKMeans` (or, with ``--method kmeans``,
    :class:`~pyfkm.KMeans`) on CSV or ``.npy`` files: one file with a column
    naming each row's client, or one file per client (several files, or a
    folder of them).  Saves the model, prints a summary, ``--plot FILE``
    draws the clusters (matplotlib).
``pyfkm forget MODEL --client ID [--points IDS | --points-file FILE] [--out FILE]``
    Remove points of one client, or whole clients, from a saved
    FederatedKMeans model (exact unlearning) and save it.
``pyfkm predict MODEL DATA... [--clients-column COL] [--out labels.csv]``
    Assign rows to the clusters of a saved model.
``pyfkm info MODEL``
    What a saved model is: estimator, clusters, features, clients,
    parameters, file version.

Errors (a missing or malformed file, a bad argument, an unknown client)
print ``pyfkm: error: <message>`` on stderr and exit with status 2;
``-vv`` shows the traceback instead.  ``-v`` shows the library's log
messages (logger ``"pyfkm"``), ``-q`` only errors.  Progress bars of long
secure rounds use :mod:`tqdm` when it is installed (``pip install tqdm``).

The files (data, KMeans model file, plot) are read and written by the
private :mod:`pyfkm._cli_files`.

Examples
--------
>>> main(["--version"])
pyfkm ...
0
"""
import argparse
import logging
import math
import os
import sys
import time

import numpy as np

import pyfkm
from ._cli_files import (CliError, check_plot_target, load_model, plot_clusters, read_clients,
                         save_kmeans, with_names, write_labels)
from .core import KMeans
from .core.kmeans import nearest_center
from .exceptions import PyfkmError
from .metrics import kmeans_objective
from .mufc import FederatedKMeans

__all__ = ["main", "build_parser", "read_clients"]

log = logging.getLogger(__name__)

# centers are printed when the table is this small
PRINT_CENTERS = 20 * 10
# the largest --points-file read (bytes)
MAX_IDS_FILE = 100 << 20
# the largest magnitude of a data value or a bound: k-means squares
# differences of values and sums them, which must stay finite
MAX_ABS = 1e100

# -- arguments ----------------------------------------------------------------------

def _nonneg_int(text):
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 0")
    return v


def _pos_int(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return v


def _finite_float(text):
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not np.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return v


def _bounds(text):
    """'LOW,HIGH' -> (LOW, HIGH), two finite numbers (``pyfkm fit --bounds``;
    ``--bounds LOW HIGH`` reaches here joined by :func:`_join_bounds`)."""
    bits = text.split(",")
    if len(bits) != 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not LOW,HIGH (two numbers)")
    lo, hi = (_finite_float(b.strip()) for b in bits)
    return lo, hi


def _join_bounds(argv):
    """``--bounds LOW HIGH`` as ``--bounds=LOW,HIGH``: argparse takes a
    token such as ``-1e3`` for an option, not for a negative number."""
    out, i = [], 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return out + argv[i:]
        pair = argv[i + 1:i + 3]
        if tok == "--bounds" and len(pair) == 2 and all(_is_float(t) for t in pair):
            out.append(f"--bounds={argv[i + 1]},{argv[i + 2]}")
            i += 3
            continue
        if tok == "--bounds" and i + 1 < len(argv) and argv[i + 1].startswith("-"):
            out.append(f"--bounds={argv[i + 1]}")      # --bounds -1e3,1e3
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


def _is_float(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


class _Parser(argparse.ArgumentParser):
    """An argument parser that reads ``--bounds LOW HIGH`` with negative
    numbers in any notation (see :func:`_join_bounds`)."""

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(_join_bounds(args), namespace)


def build_parser(prog="pyfkm"):
    """The argument parser of the ``pyfkm`` command.

    Parameters
    ----------
    prog : str, default="pyfkm"
        Program name shown in usage lines (``"python -m pyfkm"`` when run
        with ``-m``).

    Returns
    -------
    argparse.ArgumentParser

    Examples
    --------
    >>> parser = build_parser()
    >>> args = parser.parse_args(["fit", "data.csv", "--clusters", "3"])
    >>> args.command, args.data, args.clusters, args.method
    ('fit', ['data.csv'], 3, 'federated')
    >>> parser.parse_args(["fit", "data.csv", "-k", "3", "--bounds=-1e3,1e3"]).bounds
    (-1000.0, 1000.0)
    """
    def output_options(p, default):
        g = p.add_argument_group("output")
        g.add_argument("-v", "--verbose", action="count", default=default(0),
                       help="show the library's log messages (-v: info, -vv: debug and "
                            "tracebacks)")
        g.add_argument("-q", "--quiet", action="store_true", default=default(False),
                       help="print only errors (no summary, warnings or progress bars)")
        return p

    # after the command too (pyfkm fit -v ...); there its defaults must not
    # override the values given before the command (pyfkm -v fit ...)
    common = output_options(_Parser(add_help=False),
                            lambda v: argparse.SUPPRESS)
    parser = output_options(_Parser(
        prog=prog,
        description="pyfkm: federated k-means that is private and can forget.",
        epilog=f"Run '{prog} COMMAND --help' for a command's options. Errors exit with "
               "status 2 and a one-line message."), lambda v: v)
    parser.add_argument("--version", action="version", version=f"pyfkm {pyfkm.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser(
        "demo", parents=[common], help="every system of pyfkm on synthetic data, timed",
        description="Run every system of pyfkm (k-means and exact unlearning, federated "
                    "k-means with secure aggregation, deletion-efficient k-means, "
                    "differential privacy, outliers) on synthetic data, each in a short "
                    "timed section, then print a summary table.")
    demo.add_argument("--seed", type=_nonneg_int, default=0,
                      help="seed of the data and the algorithms (an integer >= 0; "
                           "default 0)")
    demo.add_argument("--quick", action="store_true",
                      help="small data: a few seconds instead of about half a minute")

    fit = sub.add_parser(
        "fit", parents=[common], help="fit federated k-means on CSV or .npy files",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fit federated k-means (MUFC, secure aggregation) on your data and save "
                    "the model.",
        epilog="DATA is one CSV or .npy file whose --clients-column says which client holds "
               "each row,\nor several files, or a folder of .csv/.npy files, one per client. "
               "A CSV may have a\nheader line (column names); every other column is a "
               "feature. Clients are numbered\nin the sorted order of their labels "
               "(numerically when every label is a number),\nor in the order of the files "
               "(sorted by name in a folder); a point's id is its\nposition among its "
               "client's rows, from 0.\n\n"
               f"example: {prog} fit data.csv --clients-column client --clusters 5 "
               "--model model.npz")
    fit.add_argument("data", nargs="+", metavar="DATA",
                     help="CSV/.npy file(s) or a folder of them")
    fit.add_argument("-k", "--clusters", type=_pos_int, required=True,
                     help="number of clusters K")
    fit.add_argument("--clients-column", metavar="NAME|INDEX",
                     help="column holding each row's client (a header name, or an index "
                          "from 0); with one DATA file")
    fit.add_argument("--delimiter", default=",", help="CSV field separator (default ',')")
    fit.add_argument("--bounds", type=_bounds, metavar="LOW,HIGH",
                     help="public range of every feature (the data box), as LOW,HIGH or "
                          "LOW HIGH (e.g. --bounds -1e3 1e3); default: the data's minimum "
                          "and maximum rounded outward to two significant digits of their "
                          "range, which still hints at them in a real federation")
    fit.add_argument("--method", choices=("federated", "kmeans"), default="federated",
                     help="federated: FederatedKMeans, which can forget (default); kmeans: "
                          "centralized KMeans on all rows")
    fit.add_argument("--model", metavar="FILE", default="model.npz",
                     help="where to save the model (default model.npz)")
    fit.add_argument("--seed", type=_nonneg_int, default=None,
                     help="seed of the algorithm (keys and masks never come from it)")
    fit.add_argument("--server-points", choices=("centers", "uniform"), default="centers",
                     help="what the server clusters: the aggregated bins' centres weighted "
                          "by their counts (default: fast to fit and to forget) or points "
                          "drawn in the bins (the paper's)")
    fit.add_argument("--client-init", choices=("means", "k-means++", "full"), default="means",
                     help="what each client sends: the means of its k-means++ seeds' cells "
                          "(default: the same cost as the seeds, a lower loss), the seeds "
                          "themselves (the MUFC paper's), or its centers after Lloyd; each "
                          "unlearns exactly")
    fit.add_argument("--no-secure", dest="secure", action="store_false",
                     help="sum the clients' counts in the clear (testing only: the server "
                          "then sees every client's vector)")
    fit.add_argument("--plot", metavar="FILE",
                     help="save a scatter plot of the clusters (needs matplotlib)")

    forget = sub.add_parser(
        "forget", parents=[common], help="remove points or clients from a saved model",
        description="Remove points of one client, or whole clients, from a saved "
                    "FederatedKMeans model; the model becomes what a fit without them "
                    "would give (in distribution) and no copy of them stays in the file.")
    forget.add_argument("model", metavar="MODEL", help="a model saved by 'pyfkm fit'")
    forget.add_argument("--client", type=_nonneg_int, action="append", required=True,
                        metavar="ID",
                        help="client index (as 'pyfkm fit' and 'pyfkm info' number them); "
                             "repeat it to remove several whole clients")
    pts = forget.add_mutually_exclusive_group()
    pts.add_argument("--points", metavar="IDS",
                     help="comma-separated point ids of that client (positions among its "
                          "rows, from 0); without --points the whole client leaves")
    pts.add_argument("--points-file", metavar="FILE",
                     help="a file of point ids (separated by commas, spaces or newlines)")
    forget.add_argument("--out", metavar="FILE",
                        help="save the new model here (default: replace MODEL)")

    predict = sub.add_parser(
        "predict", parents=[common], help="label data with a saved model's clusters",
        description="Assign every row of DATA (read as 'fit' reads it) to the nearest center "
                    "of a saved model; print the cluster sizes and write one line per row "
                    "(client, point, cluster) to --out.")
    predict.add_argument("model", metavar="MODEL", help="a model saved by 'pyfkm fit'")
    predict.add_argument("data", nargs="+", metavar="DATA",
                         help="CSV/.npy file(s) or a folder of them, as for 'fit'")
    predict.add_argument("--clients-column", metavar="NAME|INDEX",
                         help="column naming each row's client (dropped from the features)")
    predict.add_argument("--delimiter", default=",", help="CSV field separator (default ',')")
    predict.add_argument("--out", metavar="FILE",
                         help="write the labels here as CSV: client,point,cluster")

    info = sub.add_parser("info", parents=[common], help="describe a saved model",
                          description="Print what a saved model is: estimator, clusters, "
                                      "features, clients, parameters, file version.")
    info.add_argument("model", metavar="MODEL", help="a model saved by 'pyfkm fit'")
    return parser


# -- fit --------------------------------------------------------------------------------

def _check_magnitude(clients, names):
    """Refuse values too large for k-means' sums of squares."""
    for c, name in zip(clients, names):
        if c.size and np.abs(c).max() > MAX_ABS:
            raise CliError(f"client {name!r} has values up to {np.abs(c).max():.3g}: too large "
                           f"for a data box (at most {MAX_ABS:g} in absolute value); scale the "
                           "data first (e.g. to units where the values are near 1)")


def _outward(v, e, down):
    """``v`` rounded to a multiple of ``10**e`` strictly below (``down``) or
    above it: a value no data row holds."""
    k = math.floor(v / 10.0 ** e) if down else math.ceil(v / 10.0 ** e)
    while True:
        r = k * 10.0 ** e if e >= 0 else k / 10.0 ** -e
        if (r < v) if down else (r > v):
            return r
        k += -1 if down else 1


def _data_bounds(clients):
    """The data box from the data: its minimum and maximum rounded outward,
    strictly, to a multiple of a power of ten about a hundredth of the
    range (two significant digits of it), so that no row's value is stored
    in the model and forgetting the rows holding the extremes leaves no
    copy of them.

    >>> _data_bounds([np.array([[0.123456], [9.87654]])])
    (0.1, 9.9)
    >>> _data_bounds([np.array([[-3.0], [5.0]])])
    (-3.1, 5.1)
    """
    lo = float(min(c.min() for c in clients if c.size))
    hi = float(max(c.max() for c in clients if c.size))
    span = hi - lo if hi > lo else max(abs(lo), 1.0)   # constant data: a box around it
    # a step well above the values' float resolution (and above underflow)
    span = max(span, 1e-12 * max(abs(lo), abs(hi)), 1e-290)
    e = math.floor(math.log10(span)) - 1
    return _outward(lo, e, True), _outward(hi, e, False)


def _fmt_s(t):
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


def _print_centers(centers, say):
    if centers.size <= PRINT_CENTERS:
        say("centers:")
        for i, c in enumerate(centers):
            say(f"  {i:>3}  " + "  ".join(f"{v:10.4g}" for v in c))


def _cmd_fit(args, say):
    clients, names, features = read_clients(args.data, args.clients_column, args.delimiter)
    n = sum(c.shape[0] for c in clients)
    d = clients[0].shape[1]
    K = args.clusters
    if K > n:
        raise CliError(f"--clusters {K} is more than the {n} points in the data")
    if args.plot:
        check_plot_target(args.plot)
    federated = args.method == "federated"
    if federated:
        lo, hi = _fit_bounds(args.bounds, clients, names)
    # what is about to run, at once (a federated fit of many clients takes a while)
    say(f"{'FederatedKMeans' if federated else 'KMeans'}: {len(clients)} "
        f"client{'s' * (len(clients) != 1)}, {n:,} points, {d} feature{'s' * (d != 1)}, "
        f"{K} clusters")
    if features:
        say(f"features: {', '.join(features)}")
    if federated:
        shown = ", ".join(f"{i} = {name!r} ({c.shape[0]:,} points)"
                          for i, (name, c) in enumerate(zip(names, clients)) if i < 20)
        more = f", ... ({len(clients) - 20} more)" if len(clients) > 20 else ""
        say(f"clients (index = label): {shown}{more}")
    X = np.concatenate(clients)
    t0 = time.perf_counter()
    if federated:
        model = FederatedKMeans(K, bounds=(lo, hi), server_points=args.server_points,
                                client_init=args.client_init, secure=args.secure,
                                random_state=args.seed, progress=not args.quiet).fit(
            [with_names(c, features) for c in clients])
        seconds = time.perf_counter() - t0
        objective = kmeans_objective(X, model.cluster_centers_)
        fs = model.fit_seconds_
        split = (f" (clients {_fmt_s(fs['clients'])}, "
                 f"{'secure ' if args.secure else ''}aggregation {_fmt_s(fs['aggregation'])},"
                 f" server {_fmt_s(fs['server'])})")
        say(f"data box [{lo:g}, {hi:g}], grid step gamma {model.gamma_:.4g}")
        model.save(args.model)
    else:
        _check_magnitude(clients, names)
        model = KMeans(K, n_init=10, random_state=args.seed).fit(with_names(X, features))
        seconds = time.perf_counter() - t0
        objective, split = float(model.inertia_), " (best of 10 k-means++ and Lloyd runs)"
        save_kmeans(model, args.model, n)
    say(f"objective {objective:.6g} (sum of squared distances to the nearest center), "
        f"{objective / n:.4g} per point")
    say(f"time {_fmt_s(seconds)}{split}")
    _print_centers(model.cluster_centers_, say)
    say(f"model saved to {args.model}")
    if args.plot:
        plot_clusters(X, model, args.plot, features)
        say(f"plot saved to {args.plot}")
    return 0


def _fit_bounds(bounds, clients, names):
    """The data box: ``--bounds`` (checked against the data) or, with a
    warning, the data's own extremes."""
    if bounds is None:
        _check_magnitude(clients, names)
        lo, hi = _data_bounds(clients)
        log.warning("no --bounds: the data box [%g, %g] was computed from the data (its "
                    "minimum and maximum rounded outward; in a real federation the bounds must "
                    "be public knowledge: data-derived bounds hint at the clients' extremes)",
                    lo, hi)
        return lo, hi
    lo, hi = bounds
    if not hi > lo:
        raise CliError(f"--bounds {lo:g} {hi:g}: HIGH must be greater than LOW")
    if max(abs(lo), abs(hi)) > MAX_ABS:
        raise CliError(f"--bounds {lo:g} {hi:g}: too large (at most {MAX_ABS:g} in absolute "
                       "value); scale the data first")
    outside = [name for c, name in zip(clients, names)
               if c.size and (c.min() < lo or c.max() > hi)]
    if outside:
        raise CliError(f"clients {', '.join(map(repr, outside[:5]))} have values outside "
                       f"--bounds [{lo:g}, {hi:g}]")
    return lo, hi


# -- info -----------------------------------------------------------------------------------

def _cmd_info(args, say):
    kind, model, extra = load_model(args.model)
    if kind == "kmeans":
        head, centers = model, extra
        say(f"{args.model}: KMeans model (centralized k-means; it keeps no data and "
            f"cannot forget), file format {head.get('format')} version {head.get('version')}")
        say(f"clusters {centers.shape[0]}, features {centers.shape[1]}, fitted on "
            f"{head['n_samples']} points; inertia {head['inertia']:.6g}, "
            f"{head['n_iter']} Lloyd iterations")
        if head.get("feature_names"):
            say(f"feature names: {', '.join(head['feature_names'])}")
        say("parameters: " + ", ".join(f"{k}={v!r}" for k, v in
                                       sorted(head["params"].items())))
        _print_centers(centers, say)
        return 0
    fkm, head = model, extra
    say(f"{args.model}: FederatedKMeans model (MUFC, exact unlearning), file format "
        f"{head.get('format')} version {head.get('version')}")
    say(f"clusters {fkm.cluster_centers_.shape[0]} (K = {fkm.n_clusters}), features "
        f"{fkm.n_features_in_}, data box [{fkm.bounds[0]:g}, {fkm.bounds[1]:g}], grid step "
        f"gamma {fkm.gamma_:.4g} ({fkm.n_bins_per_dim_} bins per feature)")
    names = getattr(fkm, "feature_names_in_", None)
    if names is not None:
        say(f"feature names: {', '.join(map(str, names))}")
    removed = fkm.removed_
    parts = fkm.participants_
    left = [i for i, r in enumerate(removed) if r is None]
    n_live = sum(int((~r).sum()) for r in removed if r is not None)
    n_gone = sum(int(r.sum()) for r in removed if r is not None)
    say(f"clients {len(removed)}: {len(parts)} in the federation"
        + (f", left: {', '.join(map(str, left))}" if left else ""))
    say(f"points {n_live:,} ({n_gone:,} removed from clients still in the federation); "
        f"objective on them {fkm.inertia_:.6g} (sum of squared distances to the nearest "
        "center)")
    for i in parts[:20]:
        say(f"  client {i}: {int((~removed[i]).sum()):,} points, "
            f"{int(removed[i].sum()):,} removed")
    if len(parts) > 20:
        say(f"  ... ({len(parts) - 20} more)")
    params = {k: v for k, v in fkm.get_params().items() if k not in ("executor", "progress")}
    say("parameters: " + ", ".join(f"{k}={v!r}" for k, v in sorted(params.items())))
    _print_centers(fkm.cluster_centers_, say)
    return 0


# -- forget ----------------------------------------------------------------------------------

def _parse_ids(text, where):
    bits = [b for b in text.replace(",", " ").split() if b]
    if not bits:
        raise CliError(f"{where}: no point ids")
    try:
        ids = [int(b) for b in bits]
    except ValueError:
        bad = next(b for b in bits if not b.lstrip("-").isdigit())
        raise CliError(f"{where}: {bad!r} is not a point id (an integer >= 0)") from None
    if min(ids) < 0:
        raise CliError(f"{where}: point ids must be >= 0 (got {min(ids)})")
    seen = set()
    for i in ids:
        if i in seen:
            raise CliError(f"{where}: point {i} is given twice (repeated ids)")
        seen.add(i)
    return ids


def _read_ids_file(path):
    """The text of a --points-file, refused beyond MAX_IDS_FILE bytes (read
    no further: a device or a huge file is not read to its end)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_IDS_FILE + 1)
    except OSError as e:
        raise CliError(f"--points-file {path}: cannot read it ({e.strerror or e})") from None
    if len(data) > MAX_IDS_FILE:
        raise CliError(f"--points-file {path}: larger than {MAX_IDS_FILE:,} bytes; a file of "
                       "point ids is smaller")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise CliError(f"--points-file {path}: not a text file") from None


def _cmd_forget(args, say):
    kind, fkm, _ = load_model(args.model)
    if kind == "kmeans":
        raise CliError(f"{args.model} is a KMeans model: it keeps no data and cannot "
                       "forget; refit without the points, or fit with --method federated")
    fkm.set_params(progress=not args.quiet)
    clients = args.client
    n_clients = len(fkm.removed_)
    for c in clients:
        if c >= n_clients:
            raise CliError(f"unknown client {c}: the model has clients 0 to {n_clients - 1}")
        if c not in fkm.participants_:
            raise CliError(f"client {c} has already left the federation")
    if args.points_file:
        ids = _parse_ids(_read_ids_file(args.points_file), f"--points-file {args.points_file}")
    elif args.points is not None:
        ids = _parse_ids(args.points, "--points")
    else:
        ids = None
    t0 = time.perf_counter()
    if ids is None:
        rep = fkm.remove_clients(clients)
        what = (f"client{'s' * (len(clients) > 1)} {', '.join(map(str, clients))} left the "
                f"federation: {len(fkm.participants_)} clients remain")
    else:
        if len(clients) > 1:
            raise CliError("--points removes points of one --client; give one client")
        c = clients[0]
        n_rows = fkm.removed_[c].size
        bad = [i for i in ids if i >= n_rows]
        if bad:
            raise CliError(f"client {c} has points 0 to {n_rows - 1}; no point {bad[0]}")
        rep = fkm.remove(c, ids)
        what = (f"removed {len(ids)} point{'s' * (len(ids) != 1)} of client {c}: "
                f"{int((~fkm.removed_[c]).sum()):,} remain")
    seconds = time.perf_counter() - t0
    out = args.out or args.model
    fkm.save(out)
    say(what)
    say(f"client reseeded: {'yes, from position %d' % rep.position if rep.reseeded else 'no'}"
        f"; aggregate changed: {'yes' if rep.aggregate_changed else 'no'}; server "
        f"reclustered: {'yes' if rep.server_reclustered else 'no'}")
    say(f"time {_fmt_s(seconds)} (client {_fmt_s(rep.client_seconds)}, secure round "
        f"{_fmt_s(rep.aggregation_seconds)}, server {_fmt_s(rep.server_seconds)}, next "
        f"round's masks {_fmt_s(rep.offline_seconds)})")
    _print_centers(fkm.cluster_centers_, say)
    say(f"model saved to {out}")
    return 0


# -- predict ---------------------------------------------------------------------------------

def _match_columns(clients, features, fitted, say):
    """The clients' columns in the order of the model's feature names
    ``fitted`` (None: the model has none), matched by the data's header
    names ``features`` (None: no header, the columns taken in order)."""
    if fitted is None or features is None:
        if fitted is not None:
            say(f"the data has no column names (no header line): its columns are taken as "
                f"the model's features in order ({', '.join(fitted)})")
        elif features is not None:
            say(f"the model has no feature names (fitted without a header line): the data's "
                f"columns are taken in file order ({', '.join(features)})")
        return clients
    if features == fitted:
        return clients
    missing = [n for n in fitted if n not in features]
    unknown = [n for n in features if n not in fitted]
    if missing or unknown:
        raise CliError("the data's columns are not the model's features ("
                       + "; ".join(f"{what}: {', '.join(map(repr, names))}" for what, names in
                                   (("missing", missing), ("unknown", unknown)) if names)
                       + f"; the model was fitted on {', '.join(fitted)})")
    say(f"columns matched by name to the model's features: {', '.join(fitted)}")
    order = [features.index(n) for n in fitted]
    return [c[:, order] for c in clients]


def _cmd_predict(args, say):
    kind, model, extra = load_model(args.model)
    clients, names, features = read_clients(args.data, args.clients_column, args.delimiter)
    if kind == "federated":
        centers = model.cluster_centers_
        fitted = getattr(model, "feature_names_in_", None)
        fitted = None if fitted is None else [str(n) for n in fitted]
    else:
        head, centers = model, extra
        fitted = head.get("feature_names")
    # names first: a missing or unknown column is named, not only counted
    clients = _match_columns(clients, features, fitted, say)
    if clients[0].shape[1] != centers.shape[1]:
        raise CliError(f"the data has {clients[0].shape[1]} features, the model "
                       f"{centers.shape[1]}")
    if kind == "federated":
        labels = [model.predict(with_names(c, fitted)) for c in clients]
    else:
        labels = [nearest_center(np.ascontiguousarray(c), centers)[1] for c in clients]
    sizes = np.bincount(np.concatenate(labels), minlength=centers.shape[0])
    n = int(sizes.sum())
    say(f"{n:,} points of {len(clients)} client{'s' * (len(clients) != 1)} assigned to "
        f"{centers.shape[0]} clusters")
    say("cluster sizes: " + ", ".join(f"{i}: {int(m):,}" for i, m in enumerate(sizes)))
    if args.out:
        write_labels(args.out, names, labels)
        say(f"labels saved to {args.out}")
    return 0


# -- main -----------------------------------------------------------------------------------

class _Formatter(logging.Formatter):
    def format(self, record):
        msg = record.getMessage()
        if record.levelno >= logging.WARNING:
            return f"pyfkm: {record.levelname.lower()}: {msg}"
        return f"pyfkm: [{record.name}] {msg}"


COMMANDS = {"fit": _cmd_fit, "forget": _cmd_forget, "info": _cmd_info,
            "predict": _cmd_predict}


def main(argv=None, prog="pyfkm"):
    """Run the ``pyfkm`` command line.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).
    prog : str, default="pyfkm"
        Program name in usage and error lines.

    Returns
    -------
    int
        The exit status: 0 on success, 2 on an error (a one-line message
        on stderr; a traceback with ``-vv``), 130 when interrupted.

    Examples
    --------
    >>> main(["--version"])
    pyfkm ...
    0
    """
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:          # --help, --version, or a bad argument
        return 0 if e.code is None else e.code
    logger = logging.getLogger("pyfkm")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    level = (logging.ERROR if args.quiet else logging.WARNING if not args.verbose
             else logging.INFO if args.verbose == 1 else logging.DEBUG)
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    def say(line):
        if not args.quiet:
            print(line, flush=True)     # as it happens, also through a pipe

    try:
        if args.command == "demo":
            from .demo import run_demo
            run_demo(seed=args.seed, quick=args.quick, out=say, progress=not args.quiet)
            return 0
        return COMMANDS[args.command](args, say)
    except BrokenPipeError:          # pyfkm info model.npz | head
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except (PyfkmError, OSError) as e:
        if args.verbose >= 2:
            raise
        msg = str(e)
        if isinstance(e, OSError) and e.filename and str(e.filename) not in msg:
            msg = f"{e.filename}: {msg}"
        print(f"{prog}: error: {msg}", file=sys.stderr)
        return 2
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
