# The compiled Cython module _seeding.pyx, typed as Any: its functions are
# private kernels that pyfkm's Python layer validates for and calls.
from typing import Any

def __getattr__(name: str) -> Any: ...
