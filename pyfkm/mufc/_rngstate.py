"""Generator states as JSON-able dicts, and back (validated).

How a numpy Generator travels in MUFC: in the roles' exports
(``MufcClient._export``, ``MufcServer._export``), in an executor task's
arguments and in a saved model's header.  A bit generator's name read back
is looked up only among numpy's own.
"""
import numpy as np

from ..exceptions import ModelFileError


def _rng_state(gen):
    """JSON-able state of a numpy Generator (bit generator name and state)."""
    return gen.bit_generator.state


_BIT_GENERATORS = {"PCG64": np.random.PCG64, "PCG64DXSM": np.random.PCG64DXSM,
                   "Philox": np.random.Philox, "SFC64": np.random.SFC64,
                   "MT19937": np.random.MT19937}


def _rng_from_state(state):
    """A Generator in the saved ``state``; only numpy's bit generators are
    accepted by name (a name read from a file is never looked up)."""
    if not isinstance(state, dict) or state.get("bit_generator") not in _BIT_GENERATORS:
        raise ModelFileError(
            "generator state: unknown bit generator "
            f"{state.get('bit_generator') if isinstance(state, dict) else state!r}")
    bitgen = _BIT_GENERATORS[state["bit_generator"]]()
    try:
        bitgen.state = state
    except (ValueError, TypeError, KeyError, OverflowError) as e:
        raise ModelFileError(f"generator state: invalid ({e})") from None
    return np.random.Generator(bitgen)
