"""Compare a Lloyd trace run with the plain Lloyd loop, bit for bit."""
import numpy as np

from pyfkm._core import _lloyd


def assert_same_run(ref, got, what=""):
    Cr, lr, mr, ir, nr = ref
    Cg, lg, mg, ig, ng = got
    assert Cr.tobytes() == Cg.tobytes(), f"centers differ {what}"
    np.testing.assert_array_equal(lr, lg, err_msg=f"labels differ {what}")
    assert mr.tobytes() == mg.tobytes(), f"mind differs {what}"
    assert float(ir).hex() == float(ig).hex(), f"inertia differs {what}"
    assert nr == ng, f"n_iter differs {what}"


def both(tr, X, C0, w, max_iter, tol_abs, what=""):
    """Run ``tr`` and the plain Lloyd loop; they must agree bit for bit."""
    ref = _lloyd.lloyd_loop(X, C0, w, max_iter, tol_abs)
    got = tr.run(C0, w, max_iter, tol_abs)
    assert_same_run(ref, got, what)
    return got
