"""Build the C kernels (csrc/) and the Cython wrappers (pyfkm/_core/).

The C sources are compiled once into a static library with their own flags
(C11, -Wall -Wextra), then every Cython module links it.  Set DEBUG=1 in the
environment for an unoptimised build with assertions (-O0 -g -DFKM_DEBUG
-UNDEBUG): every FKM_ASSERT of csrc/ (the documented preconditions of the
kernels) is then live and aborts the process when violated.  FKM_ASSERT does
not rely on assert(), so the -DNDEBUG of Python's own CFLAGS cannot silence
it; -UNDEBUG is added anyway for any plain assert().  The Cython modules get
-DFKM_DEBUG too (the inline functions of the headers).
``pyfkm._core._field.debug_build()`` says which build is loaded.

Set SANITIZE=1 for a build under AddressSanitizer and UndefinedBehaviorSanitizer
(GCC or Clang): the library and the extensions get -fsanitize=address,undefined
-fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1 instead of -O3
(plus -fsanitize=float-cast-overflow and -fno-wrapv), and the extensions link
the sanitizer runtimes.  CPython itself is not sanitized, so the runtimes must
be preloaded when the tests run::

    SANITIZE=1 python setup.py build_ext --inplace
    LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
    ASAN_OPTIONS=detect_leaks=0 PYTHONMALLOC=malloc python -m pytest --capture=sys

(call the interpreter itself, not a shell-script shim such as pyenv's, which
the preloaded runtimes break).  .ci/run does this in a scratch copy of the
checkout.  SANITIZE=1 with DEBUG=1 keeps -O0 and the assertions.
"""
import os
import platform
import sys
from glob import glob

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_clib import build_clib as _build_clib
from setuptools.command.build_ext import build_ext as _build_ext

DEBUG = os.environ.get("DEBUG", "") not in ("", "0")
SANITIZE = os.environ.get("SANITIZE", "") not in ("", "0")
MSVC = sys.platform == "win32"
if SANITIZE and MSVC:
    sys.exit("SANITIZE=1 needs GCC or Clang")

# Optimisation and sanitizer flags shared by the library and the extensions.
if MSVC:
    opt_flags = []
elif DEBUG:
    opt_flags = ["-O0", "-g"]
elif SANITIZE:
    opt_flags = ["-O1", "-g"]
else:
    opt_flags = ["-O3"]
san_flags = ["-fsanitize=address,undefined"] if SANITIZE else []
# -fno-wrapv undoes the -fwrapv in Python's own CFLAGS, under which GCC does
# not report signed overflow (the C code must not rely on it: C11 leaves it
# undefined, and other Pythons' CFLAGS may lack -fwrapv).  float-cast-overflow
# (a double out of an integer type's range converted to it, undefined in C11)
# is not part of GCC's or Clang's "undefined" group.
san_compile = san_flags + (["-fno-sanitize-recover=undefined",
                            "-fsanitize=float-cast-overflow",
                            "-fno-sanitize-recover=float-cast-overflow",
                            "-fno-omit-frame-pointer", "-fno-wrapv"]
                           if SANITIZE else [])

if MSVC:
    c_flags = ["/O2"]
else:
    c_flags = ["-std=c11", "-Wall", "-Wextra", "-ffp-contract=off"]
    c_flags += opt_flags + (["-DFKM_DEBUG", "-UNDEBUG"] if DEBUG else []) + san_compile
    # musl (Alpine) has no ifunc, which GCC's target_clones needs: the
    # portable code paths only (cibuildwheel's musllinux wheels do the same)
    if sys.platform.startswith("linux") and platform.libc_ver()[0] != "glibc" \
            and glob("/lib/ld-musl-*.so.1"):
        c_flags.append("-DFKM_NO_CLONES")

csrc = sorted(glob(os.path.join("csrc", "*.c")))
headers = sorted(glob(os.path.join("csrc", "*.h")))
# obj_deps: every object also depends on every header, so editing a header
# (e.g. a type-generic *_impl.h body) rebuilds the library.
libraries = [("fkm", {"sources": csrc, "include_dirs": ["csrc"],
                      "cflags": c_flags, "obj_deps": {"": headers}})]

ext_flags = opt_flags + (["-DFKM_DEBUG"] if DEBUG and not MSVC else []) + san_compile
extensions = [
    Extension(
        name=path[:-4].replace(os.sep, "."),
        sources=[path],
        depends=csrc + headers + glob(os.path.join("pyfkm", "_core", "*.pxd")),
        include_dirs=["csrc", np.get_include()],
        libraries=["fkm"] + ([] if MSVC else ["m"]),
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
        extra_compile_args=ext_flags,
        extra_link_args=san_flags,
    )
    for path in sorted(glob(os.path.join("pyfkm", "_core", "*.pyx")))
]


def _jobs():
    """Compiler processes to run at once: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class build_clib(_build_clib):
    """build_clib that compiles the library's C files in parallel, one
    compiler process per core (the library is most of the build time, and
    its files are independent).  Objects and their order are those of the
    serial build; the first file is compiled alone, so that the output
    folders exist before the others start."""

    def build_libraries(self, libraries):
        serial = self.compiler.compile

        def compile_all(sources, *args, **kwargs):
            if len(sources) < 2 or _jobs() < 2:
                return serial(sources, *args, **kwargs)
            from concurrent.futures import ThreadPoolExecutor

            objects = serial(sources[:1], *args, **kwargs)
            with ThreadPoolExecutor(_jobs()) as pool:
                parts = pool.map(lambda src: serial([src], *args, **kwargs), sources[1:])
                for part in parts:
                    objects += part
            return objects

        self.compiler.compile = compile_all
        try:
            super().build_libraries(libraries)
        finally:
            del self.compiler.compile  # the instance attribute; the method again


class build_ext(_build_ext):
    """build_ext that builds the C library first.

    Plain ``setup.py build_ext --inplace`` only links ``libfkm.a`` and fails in
    a clean checkout unless ``build_clib`` ran before; ``build`` and pip run
    both anyway, and a command runs at most once per invocation.
    """

    def run(self):
        if self.distribution.has_c_libraries():
            self.run_command("build_clib")
        super().run()


setup(
    cmdclass={"build_clib": build_clib, "build_ext": build_ext},
    libraries=libraries,
    ext_modules=cythonize(
        extensions,
        compiler_directives={"language_level": "3", "embedsignature": True},
        nthreads=0 if MSVC else _jobs(),
    ),
)
