"""Search an object, its pickle or a file for the bytes of given values.

Used by the erasure tests: after a removal, none of the removed rows' values
may remain anywhere a user (or an attacker holding a pickle or a saved
model) can reach, while retained values are still found (which shows the
search itself works).

A value is searched as its float64 and its float32 byte patterns (native
byte order, as numpy stores them).  The object search walks every object
reachable through ``gc.get_referents`` (which sees ``__dict__``, slots,
containers, closures and the object attributes of Cython classes, including
the buffers behind typed memoryviews), and reads the raw memory of every
buffer-exporting object it meets (numpy arrays and their bases, bytes,
bytearray, memoryview, array.array).  Modules, classes and functions are not
entered: they are shared code, not the object's state.
"""
import gc
import io
import pickle
import types
import zipfile

import numpy as np

__all__ = ["patterns", "search_object", "search_bytes", "search_pickle",
           "search_file", "search_everywhere"]

_SKIP_TYPES = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
               types.MethodType, types.CodeType, types.FrameType)


def patterns(values):
    """Distinct float64 and float32 byte patterns of every value in ``values``.

    Zeros are left out: an erased row is zeros, and zeros are everywhere.
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[v != 0]
    out = set()
    for x in v.tolist():
        out.add(np.float64(x).tobytes())
        out.add(np.float32(x).tobytes())
    return sorted(out)


def search_bytes(data, pats):
    """Patterns of ``pats`` that occur in ``data``."""
    data = bytes(data)
    return [p for p in pats if p in data]


def _buffer_bytes(obj):
    if isinstance(obj, np.ndarray):
        try:
            return np.ascontiguousarray(obj).view(np.uint8).tobytes()
        except (TypeError, ValueError):       # object arrays: walked instead
            return None
    try:
        return bytes(memoryview(obj).cast("B"))
    except (TypeError, ValueError, NotImplementedError, BufferError):
        return None


def search_object(obj, pats, *, max_objects=2_000_000):
    """Where in the object graph of ``obj`` any pattern occurs.

    Returns a list of ``"<type name>: <n> pattern(s)"`` strings, one per
    buffer in which a pattern was found (empty when nothing was found).
    """
    pats = list(pats)
    seen = set()
    stack = [obj]
    hits = []
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, _SKIP_TYPES):
            continue
        seen.add(id(o))
        if len(seen) > max_objects:
            raise RuntimeError("object graph too large to search")
        if isinstance(o, (str, int, float, bool, type(None))):
            if isinstance(o, float):
                found = search_bytes(np.float64(o).tobytes(), pats)
                if found:
                    hits.append(f"float: {len(found)} pattern(s)")
            continue
        if isinstance(o, np.generic):
            found = search_bytes(o.tobytes(), pats)
            if found:
                hits.append(f"{type(o).__name__}: {len(found)} pattern(s)")
            continue
        buf = _buffer_bytes(o)
        if buf is not None:
            found = search_bytes(buf, pats)
            if found:
                hits.append(f"{type(o).__name__} of {len(buf)} bytes: {len(found)} pattern(s)")
        if isinstance(o, np.ndarray) and o.base is not None:
            stack.append(o.base)
        stack.extend(gc.get_referents(o))
    return hits


def search_pickle(obj, pats):
    """Patterns found in ``pickle.dumps(obj)`` (highest protocol)."""
    return search_bytes(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), pats)


def search_file(path, pats):
    """Patterns found in the file's bytes or, for a zip (npz) archive, in any
    member's decompressed bytes."""
    with open(path, "rb") as f:
        data = f.read()
    found = set(search_bytes(data, pats))
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for name in z.namelist():
                found.update(search_bytes(z.read(name), pats))
    return sorted(found)


def search_everywhere(obj, pats, *, saved_path=None):
    """Dict with the hits in the object graph, its pickle and (optionally)
    a file it saved: ``{"object": [...], "pickle": [...], "file": [...]}``."""
    out = {"object": search_object(obj, pats), "pickle": search_pickle(obj, pats)}
    if saved_path is not None:
        out["file"] = search_file(saved_path, pats)
    return out
