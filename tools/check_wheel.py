"""Check that a built pyfkm wheel holds what an installation needs.

    python tools/check_wheel.py WHEEL [SOURCE_ROOT]

SOURCE_ROOT (default: the checkout this file lives in) says what to expect:

- the file name carries a ``manylinux`` (or ``musllinux``, macOS) platform
  tag, never the bare ``linux_*`` tag that no other machine accepts, and the
  ``Tag:`` lines of the WHEEL file name the same tags;
- the dist-info holds the LICENSE of the source root, byte for byte, and the
  METADATA names the runtime dependencies (numpy, scipy, cryptography);
- every ``pyfkm/**/*.py`` of the source is in the wheel, every
  ``pyfkm/_core/*.pxd`` (users cimport them), and one compiled extension per
  ``pyfkm/_core/*.pyx``;
- nothing else at the top level (no tests/, csrc/, benchmarks/) and no
  libraries grafted by auditwheel (the extensions need only libc and libm);
- no ELF extension carries an RPATH or RUNPATH (a folder of the build
  machine; ``$ORIGIN``-relative entries are fine) or debug information.

Prints one line per kind of content and exits with status 1 and the list of
problems when any check fails.
"""
import re
import struct
import sys
import zipfile
from pathlib import Path, PurePosixPath

RUNTIME_DEPS = ("numpy", "scipy", "cryptography")
# Platform tags another machine can accept (PEP 600, PEP 656, macOS, Windows).
PORTABLE_PLAT = re.compile(r"^(manylinux_\d+_\d+_|manylinux\d+_|musllinux_\d+_\d+_|macosx_|win)")


def wheel_tags(name):
    """The (python, abi, platform) tags of a wheel file name, expanded."""
    parts = name[:-len(".whl")].split("-")
    if len(parts) not in (5, 6):
        raise ValueError(f"{name!r} is not a wheel file name")
    pys, abis, plats = parts[-3:]
    return {(p, a, q) for p in pys.split(".") for a in abis.split(".") for q in plats.split(".")}


def expected_contents(root):
    """(python files, .pxd files, extension names) the wheel must hold."""
    pkg = Path(root) / "pyfkm"
    rel = lambda p: PurePosixPath(p.relative_to(root)).as_posix()  # noqa: E731
    pys = sorted(rel(p) for p in pkg.rglob("*.py") if "__pycache__" not in p.parts)
    pxds = sorted(rel(p) for p in (pkg / "_core").glob("*.pxd"))
    exts = sorted(p.stem for p in (pkg / "_core").glob("*.pyx"))
    return pys, pxds, exts


def elf_sections(data):
    """{name: (type, offset, size, link)} of the sections of an ELF file.

    A minimal reader of the section header table (ELF32/64, either byte
    order): enough to find debug sections and the dynamic section.
    """
    if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise ValueError("not an ELF file")
    is64, end = data[4] == 2, "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x3A)
        fmt = end + "IIQQQQIIQQ"
    else:
        shoff, = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x2E)
        fmt = end + "IIIIIIIIII"
    headers = [struct.unpack_from(fmt, data, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx]
    names = data[strtab[4]:strtab[4] + strtab[5]]
    out = {}
    for h in headers:
        name = names[h[0]:names.index(b"\0", h[0])].decode()
        out[name] = (h[1], h[4], h[5], h[6])
    return out, headers, is64, end


def elf_problems(name, data):
    """What is wrong with the ELF file ``name`` (bytes ``data``) of a wheel:
    debug information, or an RPATH/RUNPATH entry not relative to $ORIGIN."""
    sections, headers, is64, end = elf_sections(data)
    problems = []
    debug = sorted(n for n in sections if n.startswith(".debug_"))
    if debug:
        problems.append(f"{name} has debug information ({debug[0]}): build with -g0")
    for kind, offset, size, link in sections.values():
        if kind != 6:  # SHT_DYNAMIC
            continue
        strtab = headers[link]
        step = 16 if is64 else 8
        for pos in range(offset, offset + size, step):
            tag, val = struct.unpack_from(end + ("qQ" if is64 else "iI"), data, pos)
            if tag == 0:  # DT_NULL
                break
            if tag in (15, 29):  # DT_RPATH, DT_RUNPATH
                start = strtab[4] + val
                path = data[start:data.index(b"\0", start)].decode()
                bad = [p for p in path.split(":") if p and not p.startswith("$ORIGIN")]
                if bad:
                    problems.append(f"{name} has {'RPATH' if tag == 15 else 'RUNPATH'} {bad}: "
                                    "a folder of the machine that built it")
    return problems


def check(wheel, root):
    """The list of problems of the wheel (empty when it is fine) and a summary."""
    wheel, root = Path(wheel), Path(root)
    problems, summary = [], []
    tags = wheel_tags(wheel.name)
    plats = sorted({t[2] for t in tags})
    bad = [p for p in plats if not PORTABLE_PLAT.match(p)]
    if bad:
        problems.append(f"platform tag(s) {bad} install only on the machine that built the "
                        "wheel: repair it with auditwheel")
    summary.append(f"platform tags: {', '.join(plats)}")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        dist = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
        if len(dist) != 1:
            problems.append(f"expected one .dist-info folder, found {sorted(dist)}")
            return problems, summary
        (dist,) = dist
        wheel_meta = z.read(f"{dist}/WHEEL").decode()
        listed = {tuple(line.split(":", 1)[1].strip().split("-"))
                  for line in wheel_meta.splitlines() if line.startswith("Tag:")}
        if listed != tags:
            problems.append(f"WHEEL lists tags {sorted(listed)}, the file name {sorted(tags)}")
        licenses = [n for n in names if n.startswith(dist + "/") and
                    PurePosixPath(n).name == "LICENSE"]
        source_license = (root / "LICENSE").read_bytes()
        if not licenses:
            problems.append(f"no LICENSE in {dist}")
        elif all(z.read(n) != source_license for n in licenses):
            problems.append(f"{licenses} differ from the source's LICENSE")
        else:
            summary.append(f"license: {licenses[0]}")
        metadata = z.read(f"{dist}/METADATA").decode()
        requires = {re.split(r"[\s<>=!~;\[(]", line.split(":", 1)[1].strip())[0].lower()
                    for line in metadata.splitlines() if line.startswith("Requires-Dist:")
                    and "extra ==" not in line}
        missing_deps = [d for d in RUNTIME_DEPS if d not in requires]
        if missing_deps:
            problems.append(f"METADATA does not require {missing_deps}")
        pys, pxds, exts = expected_contents(root)
        for kind, want in (("python modules", pys), (".pxd files", pxds)):
            missing = [n for n in want if n not in names]
            if missing:
                problems.append(f"missing {kind}: {missing}")
            summary.append(f"{kind}: {len(want) - len(missing)} of {len(want)}")
        built = {}
        for n in names:
            p = PurePosixPath(n)
            if p.parent.as_posix() == "pyfkm/_core" and p.suffix in (".so", ".pyd"):
                built.setdefault(p.name.split(".")[0], []).append(n)
        for paths in built.values():
            for n in paths:
                data = z.read(n)
                if data[:4] == b"\x7fELF":
                    problems.extend(elf_problems(n, data))
        missing = [e for e in exts if e not in built]
        if missing:
            problems.append(f"no compiled extension for {missing}")
        summary.append(f"extensions: {', '.join(sorted(built))}")
        top = sorted({n.split("/")[0] for n in names} - {"pyfkm", dist})
        if top:
            problems.append(f"unexpected top-level entries {top}")
        grafted = sorted(n for n in names if n.split("/")[0].endswith(".libs")
                         or n.startswith("pyfkm/.libs/"))
        if grafted:
            problems.append(f"auditwheel grafted libraries {grafted}: the extensions should "
                            "need only libc and libm")
    return problems, summary


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else Path(__file__).resolve().parent.parent
    problems, summary = check(argv[0], root)
    print(f"{Path(argv[0]).name}:")
    for line in summary:
        print("  " + line)
    if problems:
        print("problems:\n" + "\n".join("  - " + p for p in problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
