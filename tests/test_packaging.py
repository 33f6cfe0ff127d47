"""The wheel tooling: tools/check_wheel.py (what .ci/wheel checks in every
built wheel) on small hand-made wheels, and the [tool.cibuildwheel] table.

Building a real wheel takes minutes; .ci/wheel does that (build, auditwheel
repair, contents check, install in a fresh venv, smoke test).
"""
import importlib.util
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_wheel = load_tool("check_wheel")

TAG = "cp311-cp311-manylinux_2_31_x86_64"
LICENSE = b"BSD-3-Clause, the text\n"


@pytest.fixture
def source(tmp_path):
    """A source root with one module, one .pxd and two .pyx."""
    root = tmp_path / "src"
    (root / "pyfkm" / "_core").mkdir(parents=True)
    (root / "LICENSE").write_bytes(LICENSE)
    (root / "pyfkm" / "__init__.py").write_text("")
    (root / "pyfkm" / "_core" / "__init__.py").write_text("")
    (root / "pyfkm" / "_core" / "_csrc.pxd").write_text("")
    (root / "pyfkm" / "_core" / "_field.pyx").write_text("")
    (root / "pyfkm" / "_core" / "_lloyd.pyx").write_text("")
    return root


def entries(tag=TAG, wheel_tags=None):
    """The entries of a wheel of ``source`` that passes every check."""
    dist = "pyfkm-0.1.dist-info"
    tags = "".join(f"Tag: {t}\n" for t in (wheel_tags or [tag]))
    return {
        "pyfkm/__init__.py": b"",
        "pyfkm/_core/__init__.py": b"",
        "pyfkm/_core/_csrc.pxd": b"",
        "pyfkm/_core/_field.cpython-311-x86_64-linux-gnu.so": b"not an ELF file",
        "pyfkm/_core/_lloyd.cpython-311-x86_64-linux-gnu.so": b"not an ELF file",
        f"{dist}/licenses/LICENSE": LICENSE,
        f"{dist}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n{tags}".encode(),
        f"{dist}/METADATA": b"Name: pyfkm\nRequires-Dist: numpy>=1.23\n"
                            b"Requires-Dist: scipy>=1.9\nRequires-Dist: cryptography>=41\n"
                            b"Requires-Dist: pytest>=7; extra == \"test\"\n",
        f"{dist}/RECORD": b"",
    }


def make_wheel(tmp_path, files, tag=TAG):
    path = tmp_path / f"pyfkm-0.1-{tag}.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path


def problems_of(tmp_path, source, files, tag=TAG):
    problems, _ = check_wheel.check(make_wheel(tmp_path, files, tag), source)
    return problems


def test_bad_file_name_raises(tmp_path):
    with pytest.raises(ValueError, match="not a wheel file name"):
        check_wheel.wheel_tags("pyfkm-0.1.whl")


@pytest.mark.parametrize("data", [b"not an ELF file", b"\x7fELF\x03\x01"])
def test_non_elf_data_raises(data):
    with pytest.raises(ValueError, match="not an ELF file"):
        check_wheel.elf_sections(data)


def test_a_complete_wheel_passes(tmp_path, source):
    problems, summary = check_wheel.check(make_wheel(tmp_path, entries()), source)
    assert problems == []
    assert "extensions: _field, _lloyd" in summary
    assert check_wheel.main([str(make_wheel(tmp_path, entries())), str(source)]) == 0


def test_the_bare_linux_tag_is_refused(tmp_path, source):
    tag = "cp311-cp311-linux_x86_64"
    problems = problems_of(tmp_path, source, entries(tag), tag)
    assert len(problems) == 1 and "auditwheel" in problems[0]
    assert check_wheel.main([str(make_wheel(tmp_path, entries(tag), tag)), str(source)]) == 1


def test_wheel_tags_must_match_the_file_name(tmp_path, source):
    files = entries(wheel_tags=["cp311-cp311-linux_x86_64"])
    (problem,) = problems_of(tmp_path, source, files)
    assert problem.startswith("WHEEL lists tags")


@pytest.mark.parametrize("license_data", [None, b"another licence\n"])
def test_the_license_must_be_the_sources(tmp_path, source, license_data):
    files = entries()
    if license_data is None:
        del files["pyfkm-0.1.dist-info/licenses/LICENSE"]
    else:
        files["pyfkm-0.1.dist-info/licenses/LICENSE"] = license_data
    (problem,) = problems_of(tmp_path, source, files)
    assert "LICENSE" in problem


@pytest.mark.parametrize("name", [
    "pyfkm/_core/__init__.py",
    "pyfkm/_core/_csrc.pxd",
    "pyfkm/_core/_lloyd.cpython-311-x86_64-linux-gnu.so",
])
def test_every_module_pxd_and_extension_is_required(tmp_path, source, name):
    files = entries()
    del files[name]
    (problem,) = problems_of(tmp_path, source, files)
    assert ("_lloyd" if name.endswith(".so") else name) in problem


def test_runtime_dependencies_are_required(tmp_path, source):
    files = entries()
    files["pyfkm-0.1.dist-info/METADATA"] = (b"Name: pyfkm\nRequires-Dist: numpy\n"
                                            b"Requires-Dist: scipy; extra == \"x\"\n")
    (problem,) = problems_of(tmp_path, source, files)
    assert "['scipy', 'cryptography']" in problem


@pytest.mark.parametrize("name", ["tests/test_x.py", "pyfkm.libs/libgomp.so.1"])
def test_stray_files_and_grafted_libraries_are_refused(tmp_path, source, name):
    files = entries()
    files[name] = b""
    problems = problems_of(tmp_path, source, files)
    assert problems and all("unexpected top-level" in p or "grafted" in p for p in problems)


@pytest.mark.slow
def test_elf_rpath_and_debug_information_are_found(tmp_path):
    """A shared library built here with -g and an RPATH is flagged; the same
    without them (an $ORIGIN-relative RUNPATH is fine) is not.  (Starts a
    compiler.)"""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "x.c").write_text("int f(int x) { return x + 1; }\n")

    def build(*flags):
        out = tmp_path / "x.so"
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(out), str(tmp_path / "x.c"), *flags],
                       check=True)
        return out.read_bytes()

    bad = check_wheel.elf_problems("x.so", build("-g", "-Wl,-rpath,/opt/build/lib"))
    assert len(bad) == 2
    assert "debug information" in bad[0] and "/opt/build/lib" in bad[1]
    assert check_wheel.elf_problems("x.so", build("-g0", "-Wl,-rpath,$ORIGIN/../lib")) == []


def cibuildwheel_table():
    tomllib = pytest.importorskip("tomllib")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["cibuildwheel"]


def test_cibuildwheel_tests_the_wheel_with_the_smoke_script():
    table = cibuildwheel_table()
    for path in table["test-sources"]:
        assert (ROOT / path).is_file(), path
    assert "tools/smoke_wheel.py" in table["test-sources"]
    assert "smoke_wheel.py" in table["test-command"]


def test_cibuildwheel_skips_what_the_c_cannot_build():
    """Free-threaded and 32-bit builds are skipped (unsigned __int128 in
    csrc/), and Windows is (MSVC has neither __int128 nor GCC attributes)."""
    table = cibuildwheel_table()
    skip = " ".join(table["skip"])
    for pattern in ("cp3??t-*", "*_i686", "*-win*"):
        assert pattern in skip
    assert "unsigned __int128" in (ROOT / "csrc" / "fkm_field.h").read_text()


def test_musllinux_builds_without_function_clones():
    """musl has no ifunc, so GCC refuses target_clones there: the override
    must define the macro that csrc/fkm_common.h still reads."""
    table = cibuildwheel_table()
    (override,) = [o for o in table["overrides"] if "musllinux" in o["select"]]
    assert "-DFKM_NO_CLONES" in override["environment"]["CFLAGS"]
    assert "!defined(FKM_NO_CLONES)" in (ROOT / "csrc" / "fkm_common.h").read_text()
