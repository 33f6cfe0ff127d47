"""FKM_ASSERT is live in DEBUG=1 builds and absent from release builds.

The C library is compiled here twice (with and without ``-DFKM_DEBUG``, as
``DEBUG=1 python setup.py ...`` and a normal build do) into a small driver,
``tests/c/assert_fires.c``, that calls ``fkm_lloyd_loop_f64`` with a NaN in
``X``: a precondition its header documents and release builds do not check.
The debug driver must stop with the handler's message, naming the
condition; the release driver must return normally.  A valid call returns
in both.  Building the package needs a C compiler, so one is here.
"""
import os
import re
import pathlib
import shlex
import signal
import subprocess
import sysconfig

import pytest

pytestmark = pytest.mark.slow  # compiles the C library twice (~15 s)

ROOT = pathlib.Path(__file__).resolve().parents[1]
CSRC = ROOT / "csrc"
DRIVER = ROOT / "tests" / "c" / "assert_fires.c"


# Neither the compiler nor the drivers run under the sanitizer runtimes that
# CI's sanitizer stage preloads into the interpreter.
_ENV = {k: v for k, v in os.environ.items()
        if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}


def _cc():
    cc = sysconfig.get_config_var("CC") or "cc"
    return shlex.split(cc)[:1]  # the compiler, without Python's own flags


@pytest.fixture(scope="module")
def drivers(tmp_path_factory):
    out = tmp_path_factory.mktemp("assert")
    sources = [str(p) for p in sorted(CSRC.glob("*.c"))] + [str(DRIVER)]
    built = {}
    for name, extra in (("debug", ["-DFKM_DEBUG", "-UNDEBUG"]), ("release", ["-DNDEBUG"])):
        exe = out / name
        cmd = (_cc() + ["-std=c11", "-O0", "-ffp-contract=off", f"-I{CSRC}", *extra,
                        *sources, "-o", str(exe), "-lm", "-lpthread"])
        res = subprocess.run(cmd, capture_output=True, text=True, env=_ENV)
        assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
        built[name] = exe
    return built


def _run(exe, arg):
    return subprocess.run([str(exe), arg], capture_output=True, text=True, timeout=60,
                          env=_ENV)


def test_debug_build_stops_at_a_broken_precondition(drivers):
    res = _run(drivers["debug"], "nan")
    assert res.returncode == -signal.SIGABRT, (res.returncode, res.stdout, res.stderr)
    # the handler's line: file, line, function, the condition (isfinite may
    # be a macro, printed as expanded)
    assert re.fullmatch(r"pyfkm: \S*fkm_lloyd_loop\.c:\d+: \w+: precondition failed: "
                        r"\w*isfinite ?\(X\[t\]\)\n", res.stderr), res.stderr
    assert "rc=" not in res.stdout  # stopped inside the call


def test_release_build_does_not_check_it(drivers):
    res = _run(drivers["release"], "nan")
    assert res.returncode == 0, res.stderr
    assert res.stderr == "" and res.stdout.startswith("rc=")


@pytest.mark.parametrize("build", ["debug", "release"])
def test_valid_call_returns_in_both_builds(drivers, build):
    res = _run(drivers[build], "ok")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "rc=0 labels=0,0,1,1"
    assert res.stderr == ""


def test_driver_rejects_bad_usage(drivers):
    assert _run(drivers["debug"], "bogus").returncode == 2
