"""Smoke test of an installed pyfkm: what a user of the wheel runs first.

    python smoke_wheel.py

Run it with the interpreter of the environment the wheel went into, from a
folder outside the source checkout (.ci/wheel and cibuildwheel's
test-command copy it into a scratch folder).  It

1. imports pyfkm and every compiled extension of pyfkm._core (at least
   _field, _kcenter, _lattice, _lloyd, _noise and _seeding), prints their
   paths and fails unless they come from the environment's site-packages
   (not from a source tree on sys.path);
2. runs the ``pyfkm`` console script of that environment: ``--version``
   (must print pyfkm.__version__), ``demo --quick``, and ``fit`` on a CSV it
   writes (three well separated blobs held by three clients), once with a
   clients column and a saved model (then ``info`` on that model), once
   without.

Every step prints what it runs and how long it took; the first failure
stops the script with status 1.
"""
import importlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

EXTENSIONS = ("_field", "_kcenter", "_lattice", "_lloyd", "_noise", "_seeding")


def fail(message):
    print("FAILED: " + message, file=sys.stderr)
    sys.exit(1)


def installed_dirs():
    """The site-packages folders of the running environment."""
    paths = sysconfig.get_paths()
    return {Path(paths[k]).resolve() for k in ("purelib", "platlib")}


def within(path, dirs):
    path = Path(path).resolve()
    return any(d == path or d in path.parents for d in dirs)


def check_imports():
    import pyfkm

    dirs = installed_dirs()
    print(f"pyfkm {pyfkm.__version__} from {pyfkm.__file__}")
    if not within(pyfkm.__file__, dirs):
        fail(f"pyfkm was imported from {pyfkm.__file__}, not from {sorted(map(str, dirs))}")
    core = Path(pyfkm.__file__).parent / "_core"
    found = sorted({p.name.split(".")[0] for s in EXTENSION_SUFFIXES for p in core.glob("*" + s)})
    missing = sorted(set(EXTENSIONS) - set(found))
    if missing:
        fail(f"no compiled extension for {missing} in {core} (found {found})")
    for name in found:
        module = importlib.import_module(f"pyfkm._core.{name}")
        print(f"  pyfkm._core.{name}: {module.__file__}")
        if not within(module.__file__, dirs):
            fail(f"pyfkm._core.{name} was imported from {module.__file__}")
    return pyfkm.__version__


def console_script():
    """The pyfkm script installed next to this interpreter."""
    here = os.path.dirname(sys.executable)
    script = shutil.which("pyfkm", path=here) or shutil.which("pyfkm")
    if script is None:
        fail(f"no pyfkm console script next to {sys.executable} or on PATH")
    if not within(script, {Path(here).resolve()}):
        print(f"  (pyfkm script from PATH: {script})")
    return script


def run(args, cwd, timeout=300):
    """Run the console script in ``cwd``; its output (last lines) and time."""
    print("$ pyfkm " + " ".join(args[1:]), flush=True)
    t = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)
    lines = proc.stdout.rstrip().splitlines()
    for line in lines[-15:]:
        print("  | " + line)
    print(f"  exit status {proc.returncode}, {time.perf_counter() - t:.1f} s", flush=True)
    if proc.returncode != 0:
        fail(f"`pyfkm {' '.join(args[1:])}` exited with status {proc.returncode}")
    return proc.stdout


def write_csv(path):
    """Three blobs (centres 10 apart, unit spread) held by 3 clients of 100 rows
    each (every client holds all blobs); a header row.  Also a copy without
    the clients column."""
    import numpy as np

    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0, 0.0], [10.0, 0.0, 0.0], [0.0, 10.0, 5.0]])
    with open(path, "w") as f:
        f.write("site,x,y,z\n")
        for i in range(300):
            x = centres[i % 3] + rng.normal(size=3)
            f.write(f"site{i // 100 + 1}," + ",".join(f"{v:.6f}" for v in x) + "\n")
    with open(path) as f, open(path.with_name("plain.csv"), "w") as g:
        for line in f:
            g.write(line.split(",", 1)[1])
    return path, path.with_name("plain.csv")


def main():
    t0 = time.perf_counter()
    version = check_imports()
    script = console_script()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        out = run([script, "--version"], tmp, timeout=60)
        if version not in out:
            fail(f"`pyfkm --version` printed {out.strip()!r}, not the version {version}")
        run([script, "demo", "--quick"], tmp)
        data, plain = write_csv(tmp / "clients.csv")
        model = tmp / "model.npz"
        run([script, "fit", str(data), "--clusters", "3", "--clients-column", "site",
             "--bounds", "-5", "15", "--model", str(model), "--seed", "0"], tmp)
        if not model.is_file() or model.stat().st_size == 0:
            fail(f"`pyfkm fit --model {model}` wrote no model file")
        out = run([script, "info", str(model)], tmp, timeout=60)
        if "300" not in out:
            fail("`pyfkm info` does not report the 300 points of the CSV")
        run([script, "fit", str(plain), "--clusters", "3", "--seed", "0"], tmp)
    print(f"smoke test passed in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
