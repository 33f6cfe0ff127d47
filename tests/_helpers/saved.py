"""Read and forge the ``.npz`` files that ``FederatedKMeans.save`` writes."""
import io
import json

import numpy as np


def read_saved(path):
    """The header and arrays of a file written by ``save``."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    head = json.loads(bytes(arrays.pop("header")).decode())
    return head, arrays


def write_saved(path, head, arrays):
    """Write ``head`` and ``arrays`` as ``save`` does (to forge a file)."""
    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(json.dumps(head).encode(), dtype=np.uint8), **arrays)
    path.write_bytes(buf.getvalue())
