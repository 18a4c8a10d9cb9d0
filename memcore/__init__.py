"""memcore: Cython kernels for memory planning over flat numpy arrays.

The engine knows nothing about any IR. Steps are binding positions of one planning unit;
see :mod:`memcore.liveness` for the flat-array contract every kernel shares.

Public kernels
--------------
live_intervals, max_live_bytes, live_profile      -- liveness and the LOAD lower bound
plan_tokens, TokenPlan, EV_REQUEST, EV_DECREF     -- TVM Relax / Relay token allocation
plan_offsets, OffsetPlan                          -- offset packing into one arena
verify_offsets, verify_tokens                     -- independent plan checks
read_minimalloc_csv, write_minimalloc_csv         -- MiniMalloc CSV problems
"""

try:
    from . import _liveness  # noqa: F401  (the build check: compiled kernels must exist)
except ImportError as exc:  # pragma: no cover - only on a broken install
    raise ImportError(
        "memcore's compiled kernels are missing (memcore._liveness could not be imported). "
        "Build them with `pip install -e .` (or `python setup.py build_ext --inplace`) "
        "from the repository root."
    ) from exc

from ._errors import InvalidArrayError, MemcoreError, PlanError
from .liveness import live_intervals, live_profile, max_live_bytes
from .tokens import EV_DECREF, EV_REQUEST, TokenPlan, plan_tokens
from .offsets import OffsetPlan, plan_offsets
from .verify import verify_offsets, verify_tokens
from .io import read_minimalloc_csv, write_minimalloc_csv

__version__ = "0.1.0"

__all__ = [
    "MemcoreError",
    "InvalidArrayError",
    "PlanError",
    "live_intervals",
    "max_live_bytes",
    "live_profile",
    "plan_tokens",
    "TokenPlan",
    "EV_REQUEST",
    "EV_DECREF",
    "plan_offsets",
    "OffsetPlan",
    "verify_offsets",
    "verify_tokens",
    "read_minimalloc_csv",
    "write_minimalloc_csv",
]
