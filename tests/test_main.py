"""``python -m pyfkm`` and the ``pyfkm`` console script (pyfkm.__main__)."""
import subprocess
import sys

import pytest

import pyfkm
import pyfkm.__main__
import pyfkm.cli


def test_the_console_script_entry_point_is_the_cli():
    # pyproject.toml: pyfkm = "pyfkm.__main__:main"
    assert pyfkm.__main__.main is pyfkm.cli.main


@pytest.mark.slow
def test_python_m_pyfkm_names_itself_and_fails_cleanly():
    run = [sys.executable, "-m", "pyfkm"]
    p = subprocess.run(run + ["--help"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("usage: python -m pyfkm ")
    p = subprocess.run(run + ["--version"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == f"pyfkm {pyfkm.__version__}\n"
    # issue 21: this was a numpy traceback
    p = subprocess.run(run + ["demo", "--seed", "-1"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.splitlines()[-1] == \
        "python -m pyfkm demo: error: argument --seed: '-1' is not an integer >= 0"
