"""Side-by-side timing of pyfkm.field and python-flint on the decoder workload, in one process.

The decoder recovers m planted points and their multiplicities from 2m power sums:

* m distinct nonzero roots r_j, uniform in F_p^*, with multiplicities q_j uniform in [1, 50];
* syndromes S_i = sum_j q_j r_j^i mod p for i = 0 .. 2m-1, generated exactly as the power series
  sum_j q_j / (1 - r_j z) = N(z) / Q(z) mod z^{2m} (a product tree of fmpz_mod_poly, then one
  series inversion; checked against the direct sum on small m).

Steps timed (pyfkm vs FLINT):

(a) ``bm``     Berlekamp-Massey: ``pyfkm.field.berlekamp_massey(S, p)`` vs
               ``fmpz_mod_poly_ctx(p).minpoly(S)``.
(b) ``roots``  roots of the recovered minimal polynomial f = reverse(connection polynomial):
               ``pyfkm.field.roots(f, p, require_split=True)`` vs FLINT's
               ``nmod_poly(f, p).roots()`` and ``fmpz_mod_poly(f).roots()``; both are reported,
               the faster one is "FLINT".
(c) ``vdm``    transposed Vandermonde solve sum_j c_j x_j^i = S_i (i < m) for the recovered roots:
               ``pyfkm.field.vandermonde_solve(x, S[:m], p)`` vs the same math with FLINT
               primitives:
               F = prod (y - x_j) (product tree of fmpz_mod_poly), Q = rev(F), R = S Q mod z^m
               (``mul_low``), Rt = rev(R) padded to length m, c_j = Rt(x_j) / F'(x_j)
               (two ``multipoint_evaluate`` calls, then one division per node).  Building F is
               included, as pyfkm's call builds its own tree.

Every output is checked: BM against FLINT's minpoly and against prod (y - r_j), the roots against
the planted roots, the solve against the planted multiplicities and FLINT's answer.

Both sides run single-threaded (threadpoolctl caps BLAS/OpenMP at one thread) and are timed in
CPU time (time.process_time) because other jobs share the machine.  pyfkm gets numpy uint64
arrays, FLINT gets lists of Python ints (its natural input); conversions of the inputs are inside
the timings on both sides.  Each measurement is repeated ``--repeats`` times, the runs of the two
libraries interleaved, and medians are reported; a measurement whose first run takes more than
``--max-repeat-seconds`` is not repeated (FLINT's nmod_poly root finding grows about quadratically:
about 2 minutes at m = 10000).  Ratios are FLINT median / pyfkm median (> 1 means pyfkm is faster).

Usage::

    python benchmarks/compare_flint.py [--m 100,1000,4000,10000] [--prime P] [--repeats 5]
        [--seed 0] [--max-repeat-seconds 5] [--nmod-max-m M] [--flint-only]

Acceptance targets (shown at the end): every step within 2x of FLINT (ratio >= 0.5) at m = 1000
and m = 10000, and sub-quadratic growth of pyfkm's root finding, time(10000) / time(1000) < 100.
"""
import argparse
import math
import sys

import numpy as np
from _timing import call, interleave, single_thread
from _timing import format_seconds as fmt

try:
    import flint
except ImportError:         # main() says what to install
    flint = None

M_VALUES = [100, 1000, 4000, 10000]
MAX_MULTIPLICITY = 50
FALLBACK_PRIME = 4611615649683210241  # pyfkm.field.DEFAULT_PRIME, for --flint-only runs
TARGET_RATIO = 0.5      # FLINT / pyfkm >= 0.5: pyfkm within 2x of FLINT
TARGET_MS = (1000, 10000)
TARGET_GROWTH = 100.0   # pyfkm roots time(10000) / time(1000) < 100 (quadratic would be 100)


# --------------------------------------------------------------------------- workload

def planted(m, p, seed):
    """m distinct roots uniform in F_p^* (sorted) and multiplicities uniform in [1, 50]."""
    if m > p - 1:
        raise ValueError(f"m = {m} distinct nonzero roots do not exist mod p = {p}")
    rng = np.random.default_rng(seed)
    found = set()
    while len(found) < m:
        found.update(int(v) for v in rng.integers(1, p, size=m - len(found), dtype=np.int64))
    roots = sorted(found)
    mult = [int(v) for v in rng.integers(1, MAX_MULTIPLICITY + 1, size=m)]
    return roots, mult


def syndromes(roots, mult, n, p):
    """S_i = sum_j q_j r_j^i mod p for i < n, as a list of Python ints.

    sum_j q_j / (1 - r_j z) = N(z) / Q(z) with Q = prod (1 - r_j z); a product tree combines the
    pairs (N, Q) as (N_a Q_b + N_b Q_a, Q_a Q_b), then S = N * Q^{-1} mod z^n.
    """
    ctx = flint.fmpz_mod_poly_ctx(p)
    nodes = [(ctx([q % p]), ctx([1, p - r])) for r, q in zip(roots, mult)]
    while len(nodes) > 1:
        nxt = [(a[0] * b[1] + b[0] * a[1], a[1] * b[1])
               for a, b in zip(nodes[0::2], nodes[1::2])]
        if len(nodes) % 2:
            nxt.append(nodes[-1])
        nodes = nxt
    num, den = nodes[0]
    s = [int(c) for c in num.mul_low(den.inverse_series_trunc(n), n).coeffs()]
    return s + [0] * (n - len(s))


def syndromes_direct(roots, mult, n, p):
    """The same sums term by term, O(n m): the check of ``syndromes`` on small m."""
    out = [0] * n
    for r, q in zip(roots, mult):
        x = q % p
        for i in range(n):
            out[i] = (out[i] + x) % p
            x = x * r % p
    return out


def self_check(p):
    """The fast syndrome generator agrees with the direct sum (m = 1, 2, 3, 64, odd tree sizes)."""
    for m, seed in ((1, 11), (2, 12), (3, 13), (64, 14), (77, 15)):
        if m > p - 1:
            continue
        roots, mult = planted(m, p, seed)
        assert syndromes(roots, mult, 2 * m, p) == syndromes_direct(roots, mult, 2 * m, p), m


# --------------------------------------------------------------------------- FLINT side

def flint_bm(ctx, s):
    return ctx.minpoly(s)


def flint_roots_fmpz_mod(ctx, f):
    return ctx(f).roots(multiplicities=True)


def flint_roots_nmod(f, p):
    return flint.nmod_poly(f, p).roots()


def flint_product_linear(ctx, xs):
    """F = prod (y - x_j) by a balanced product tree."""
    p = ctx.modulus()
    level = [ctx([(p - x) % p, 1]) for x in xs]
    while len(level) > 1:
        nxt = [a * b for a, b in zip(level[0::2], level[1::2])]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def flint_vandermonde(ctx, xs, s):
    """c with sum_j c_j x_j^i = s_i (i < m): c_j = Rt(x_j) / F'(x_j), see the module docstring."""
    m = len(xs)
    F = flint_product_linear(ctx, xs)
    Q = F.reverse(degree=m)                       # prod (1 - x_j z)
    R = ctx(s[:m]).mul_low(Q, m)                  # N(z) = S(z) Q(z) mod z^m
    Rt = R.reverse(degree=m - 1)
    num = Rt.multipoint_evaluate(xs)
    den = F.derivative().multipoint_evaluate(xs)
    return [a / b for a, b in zip(num, den)]


# --------------------------------------------------------------------------- report

def fmt_ratio(a, b):
    return "-" if a is None or b is None else f"**{a / b:.2f}x**"


# --------------------------------------------------------------------------- one size

def _median(r, side):
    """Median seconds of ``side`` in the interleave result ``r``; None if it did not run."""
    return r[side].median if side in r else None


def _runs(r, side):
    return r[side].runs if side in r else 0


def run_size(m, p, args, fld):
    roots, mult = planted(m, p, args.seed + m)
    t_syn, s = call(lambda: syndromes(roots, mult, 2 * m, p))
    if m <= args.direct_check_max_m:
        assert s == syndromes_direct(roots, mult, 2 * m, p), "syndrome generator is wrong"
    ctx = flint.fmpz_mod_poly_ctx(p)
    s_np = np.array(s, dtype=np.uint64)
    s_head = s[:m]
    s_head_np = s_np[:m].copy()
    roots_np = np.array(roots, dtype=np.uint64)
    mult_mod = [q % p for q in mult]
    F_true = flint_product_linear(ctx, roots)
    res = {"m": m, "syn": t_syn}
    reps, cap = args.repeats, args.max_repeat_seconds

    # (a) Berlekamp-Massey
    fns = {"flint": lambda: flint_bm(ctx, s)}
    if fld is not None:
        fns["pyfkm"] = lambda: fld.berlekamp_massey(s_np, p)
    r = interleave(fns, reps, max_first_seconds=cap)
    minpoly = r["flint"].result
    assert minpoly == F_true, "FLINT minpoly != prod (y - r_j)"
    f_list = [int(c) for c in minpoly.coeffs()]   # monic minimal polynomial, low degree first
    res["bm"] = (_median(r, "pyfkm"), r["flint"].median)
    res["bm_runs"] = (_runs(r, "pyfkm"), r["flint"].runs)
    if fld is not None:
        C = r["pyfkm"].result
        assert C.dtype == np.uint64 and len(C) == m + 1 and int(C[0]) == 1, "BM: bad shape"
        assert [int(c) for c in C[::-1]] == f_list, "BM: reverse(C) != FLINT minpoly"

    # (b) root finding of f = reverse(C) (monic, m distinct linear factors)
    f_np = np.array(f_list, dtype=np.uint64)
    fns = {"fmpz_mod": lambda: flint_roots_fmpz_mod(ctx, f_list)}
    if args.nmod_max_m is None or m <= args.nmod_max_m:
        fns["nmod"] = lambda: flint_roots_nmod(f_list, p)
    if fld is not None:
        seeds = iter(range(10 ** 6))
        fns["pyfkm"] = lambda: fld.roots(f_np, p, require_split=True, random_state=next(seeds))
    r = interleave(fns, reps, max_first_seconds=cap)
    got = sorted((int(x), int(e)) for x, e in r["fmpz_mod"].result)
    assert got == [(x, 1) for x in roots], "FLINT fmpz_mod_poly roots wrong"
    if "nmod" in r:
        got = sorted((int(x), int(e)) for x, e in r["nmod"].result)
        assert got == [(x, 1) for x in roots], "FLINT nmod_poly roots wrong"
    t_fm = r["fmpz_mod"].median
    t_nm = _median(r, "nmod")
    res["roots_fmpz_mod"], res["roots_nmod"] = t_fm, t_nm
    res["roots_fmpz_mod_runs"] = r["fmpz_mod"].runs
    res["roots_nmod_runs"] = _runs(r, "nmod")
    best = min(t for t in (t_fm, t_nm) if t is not None)
    res["roots_best"] = "nmod" if t_nm is not None and t_nm < t_fm else "fmpz_mod"
    res["roots"] = (_median(r, "pyfkm"), best)
    res["roots_runs"] = (_runs(r, "pyfkm"), res[f"roots_{res['roots_best']}_runs"])
    if fld is not None:
        x, e = r["pyfkm"].result
        assert x.dtype == np.uint64 and [int(v) for v in x] == roots, "pyfkm roots != planted"
        assert len(e) == m and all(int(v) == 1 for v in e), "pyfkm multiplicities != 1"
        x_found = x
    else:
        x_found = roots_np

    # (c) transposed Vandermonde solve with the recovered roots
    x_list = [int(v) for v in x_found]
    fns = {"flint": lambda: flint_vandermonde(ctx, x_list, s_head)}
    if fld is not None:
        fns["pyfkm"] = lambda: fld.vandermonde_solve(x_found, s_head_np, p)
    r = interleave(fns, reps, max_first_seconds=cap)
    assert [int(c) for c in r["flint"].result] == mult_mod, "FLINT Vandermonde != multiplicities"
    res["vdm"] = (_median(r, "pyfkm"), r["flint"].median)
    res["vdm_runs"] = (_runs(r, "pyfkm"), r["flint"].runs)
    if fld is not None:
        c = r["pyfkm"].result
        assert c.shape == (m,) and [int(v) for v in c] == mult_mod, \
            "pyfkm vandermonde_solve != planted multiplicities"
    return res


# --------------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", default=",".join(map(str, M_VALUES)),
                    help="comma-separated numbers of planted roots (default %(default)s)")
    ap.add_argument("--prime", type=int, default=None,
                    help="prime modulus (default pyfkm.field.DEFAULT_PRIME)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-repeat-seconds", type=float, default=5.0,
                    help="do not repeat a measurement whose first run took longer")
    ap.add_argument("--nmod-max-m", type=int, default=None,
                    help="skip FLINT nmod_poly root finding above this m (it is quadratic)")
    ap.add_argument("--direct-check-max-m", type=int, default=200,
                    help="check the syndromes against the direct O(m^2) sum up to this m")
    ap.add_argument("--flint-only", action="store_true",
                    help="time the FLINT side only (no pyfkm.field needed)")
    args = ap.parse_args(argv)
    if flint is None:
        sys.exit("compare_flint.py compares with python-flint, which is not installed: "
                 "pip install python-flint (it is in the bench extra: pip install -e \".[bench]\")")
    ms = [int(v) for v in args.m.split(",") if v.strip()]

    fld = None
    if not args.flint_only:
        import pyfkm
        import pyfkm.field as fld
    default_prime = fld.DEFAULT_PRIME if fld is not None else FALLBACK_PRIME
    p = default_prime if args.prime is None else args.prime
    if not flint.fmpz(p).is_prime() or not MAX_MULTIPLICITY < p < 2 ** 63:
        ap.error(f"--prime must be a prime with {MAX_MULTIPLICITY} < p < 2**63")
    self_check(p)

    who = "FLINT only" if fld is None else f"pyfkm {pyfkm.__version__} vs python-flint"
    print(f"# {who} {flint.__version__}, numpy {np.__version__}; p = {p}"
          f"{' (DEFAULT_PRIME)' if p == default_prime else ''}; 1 thread, CPU time, median of "
          f"{args.repeats} (runs over {args.max_repeat_seconds:g} s not repeated)")
    print("| m | step | pyfkm | FLINT | ratio FLINT/pyfkm | FLINT detail |")
    print("|---|---|---|---|---|---|")
    results = {}
    with single_thread():
        for m in ms:
            res = run_size(m, p, args, fld)
            results[m] = res
            for step, label in (("bm", "BM"), ("roots", "roots"), ("vdm", "Vandermonde")):
                ours, theirs = res[step]
                runs_ours, runs_theirs = res[step + "_runs"]
                R = args.repeats
                detail = ""
                if step == "bm":
                    detail = f"minpoly; syndromes generated in {fmt(res['syn'])}"
                elif step == "roots":
                    nm = res["roots_nmod"]
                    nm_s = "skipped" if nm is None else fmt(nm, res["roots_nmod_runs"], R)
                    fm_s = fmt(res["roots_fmpz_mod"], res["roots_fmpz_mod_runs"], R)
                    detail = (f"fmpz_mod_poly {fm_s}, nmod_poly {nm_s}; "
                              f"best {res['roots_best']}")
                elif step == "vdm":
                    detail = "product tree + mul_low + 2 multipoint_evaluate"
                print(f"| {m:,} | {label} | {fmt(ours, runs_ours, R)} | "
                      f"{fmt(theirs, runs_theirs, R)} | "
                      f"{fmt_ratio(theirs, ours)} | {detail} |", flush=True)

    # growth of root finding
    print()
    done = sorted(results)
    for a, b in zip(done, done[1:]):
        ga = [results[b]["roots"][0], results[a]["roots"][0]]
        fa = results[b]["roots_fmpz_mod"] / results[a]["roots_fmpz_mod"]
        line = f"roots growth m = {a:,} -> {b:,} (x{b / a:g}): "
        if None not in ga:
            g = ga[0] / ga[1]
            line += f"pyfkm x{g:.1f} (exponent {math.log(g) / math.log(b / a):.2f}), "
        line += f"FLINT fmpz_mod_poly x{fa:.1f} (exponent {math.log(fa) / math.log(b / a):.2f})"
        print(line)

    if fld is None:
        return 0
    print("\nAcceptance targets:")
    ok_all = True
    for m in TARGET_MS:
        if m not in results:
            print(f"- m = {m:,}: not measured")
            continue
        for step, label in (("bm", "BM"), ("roots", "roots"), ("vdm", "Vandermonde")):
            ours, theirs = results[m][step]
            ok = theirs / ours >= TARGET_RATIO
            ok_all &= ok
            print(f"- {label} within 2x of FLINT at m = {m:,}: ratio {theirs / ours:.2f} "
                  f"(>= {TARGET_RATIO}) {'yes' if ok else '**NO**'}")
    if 1000 in results and 10000 in results:
        g = results[10000]["roots"][0] / results[1000]["roots"][0]
        ok = g < TARGET_GROWTH
        ok_all &= ok
        print(f"- pyfkm roots time(10000) / time(1000) = {g:.1f} (< {TARGET_GROWTH:g}) "
              f"{'yes' if ok else '**NO**'}")
    else:
        print("- roots growth 1000 -> 10000: not measured (needs --m with 1000 and 10000)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
