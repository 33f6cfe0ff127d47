"""Deep equality of estimator states (pickle round trips, replays)."""
import pickle
import types

import numpy as np


def assert_same_state(a, b, path="obj", _seen=None):
    """``a`` and ``b`` hold identical object graphs: same types, arrays equal
    byte for byte (dtype and shape too), floats equal bit for bit, the same
    generator states; locks are skipped (each object has its own)."""
    if _seen is None:
        _seen = set()
    if (id(a), id(b)) in _seen:
        return
    _seen.add((id(a), id(b)))
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a.dtype}{a.shape} != " \
                                                          f"{b.dtype}{b.shape}"
        if a.dtype == object:
            for i, (x, y) in enumerate(zip(a.ravel(), b.ravel())):
                assert_same_state(x, y, f"{path}.flat[{i}]", _seen)
        else:
            assert a.tobytes() == b.tobytes(), f"{path}: arrays differ"
    elif isinstance(a, np.random.Generator):
        assert_same_state(a.bit_generator.state, b.bit_generator.state, path, _seen)
    elif isinstance(a, np.random.SeedSequence):
        assert_same_state(a.state, b.state, path, _seen)
    elif isinstance(a, (float, np.generic)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, (str, bytes, int, bool, complex, type(None), type, range, slice,
                        types.FunctionType, types.BuiltinFunctionType)):
        assert a == b, f"{path}: {a!r} != {b!r}"
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: lengths {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_state(x, y, f"{path}[{i}]", _seen)
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            assert_same_state(a[k], b[k], f"{path}[{k!r}]", _seen)
    elif isinstance(a, (set, frozenset)):
        assert a == b, f"{path}: sets differ"
    elif type(a).__name__ in ("RLock", "lock", "_RLock"):
        return
    else:
        slots = [s for c in type(a).__mro__ for s in getattr(c, "__slots__", ())
                 if s != "__dict__"]
        if not hasattr(a, "__dict__") and not slots:
            assert pickle.dumps(a) == pickle.dumps(b), f"{path}: {type(a).__name__} differs"
            return
        for s in slots:
            assert hasattr(a, s) == hasattr(b, s), f"{path}.{s}: set in one only"
            if hasattr(a, s):
                assert_same_state(getattr(a, s), getattr(b, s), f"{path}.{s}", _seen)
        if hasattr(a, "__dict__"):
            da = {k: v for k, v in vars(a).items() if k != "_lock"}
            db = {k: v for k, v in vars(b).items() if k != "_lock"}
            assert_same_state(da, db, path, _seen)
