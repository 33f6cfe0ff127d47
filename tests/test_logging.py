"""Library code reports through logging (issue 21): silent by default (a
NullHandler on the "pyfkm" logger, nothing printed), INFO records from the
long operations when the application asks for them."""
import logging
import subprocess
import sys

import numpy as np

import pyfkm


def _clients():
    rng = np.random.default_rng(0)
    return [rng.uniform(-0.5, 0.5, size=(30, 2)) for _ in range(3)]


def test_fit_and_removals_log_at_info(caplog):
    with caplog.at_level(logging.INFO, logger="pyfkm"):
        fkm = pyfkm.FederatedKMeans(2, random_state=0).fit(_clients())
        fkm.remove(0, [1])
        fkm.remove_clients([2])
        pyfkm.DPFederatedKMeans(2, epsilon=1.0).fit(_clients())
        pyfkm.QKMeans(2, random_state=0).fit(np.concatenate(_clients())).remove([0])
    text = [(r.name, r.getMessage()) for r in caplog.records]
    names = {n for n, _ in text}
    assert {"pyfkm.mufc.estimator", "pyfkm.dp._lloyd_base", "pyfkm.deletion._common"} <= names
    msgs = " | ".join(m for _, m in text)
    assert "fitted 3 clients, 2 centers" in msgs and "secure aggregation" in msgs
    assert "removal from client 0" in msgs and "clients left: 2 participants" in msgs
    assert "epsilon spent" in msgs and "QKMeans: removed 1 point(s)" in msgs


def test_silent_by_default():
    code = ("import numpy as np, pyfkm\n"
            "rng = np.random.default_rng(0)\n"
            "c = [rng.uniform(-0.5, 0.5, size=(30, 2)) for _ in range(3)]\n"
            "pyfkm.FederatedKMeans(2, random_state=0).fit(c).remove(0, [1])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "" and out.stderr == ""
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("pyfkm").handlers)
