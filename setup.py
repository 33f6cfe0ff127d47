"""Build the C kernels (csrc/) and the Cython wrappers (pyfkm/_core/).

The C sources are compiled once into a static library with their own flags
(C11, -Wall -Wextra), then every Cython module links it.  Set DEBUG=1 in the
environment for an unoptimised build with assertions (-O0 -g -DFKM_DEBUG).
"""
import os
import sys
from glob import glob

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("DEBUG", "") not in ("", "0")
MSVC = sys.platform == "win32"

if MSVC:
    c_flags = ["/O2"]
else:
    c_flags = ["-std=c11", "-Wall", "-Wextra", "-ffp-contract=off"]
    c_flags += ["-O0", "-g", "-DFKM_DEBUG"] if DEBUG else ["-O3"]

csrc = sorted(glob(os.path.join("csrc", "*.c")))
headers = sorted(glob(os.path.join("csrc", "*.h")))
# obj_deps: every object also depends on every header, so editing a header
# (e.g. a type-generic *_impl.h body) rebuilds the library.
libraries = [("fkm", {"sources": csrc, "include_dirs": ["csrc"],
                      "cflags": c_flags, "obj_deps": {"": headers}})]

ext_flags = [] if MSVC else (["-O0", "-g"] if DEBUG else ["-O3"])
extensions = [
    Extension(
        name=path[:-4].replace(os.sep, "."),
        sources=[path],
        depends=csrc + headers + glob(os.path.join("pyfkm", "_core", "*.pxd")),
        include_dirs=["csrc", np.get_include()],
        libraries=["fkm"] + ([] if MSVC else ["m"]),
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
        extra_compile_args=ext_flags,
    )
    for path in sorted(glob(os.path.join("pyfkm", "_core", "*.pyx")))
]

setup(
    libraries=libraries,
    ext_modules=cythonize(
        extensions,
        compiler_directives={"language_level": "3", "embedsignature": True},
    ),
)
