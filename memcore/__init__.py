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

The kernels are loaded on first use (PEP 562), so ``import memcore`` and the error classes
stay cheap. A missing compiled extension is an ``ImportError`` that says how to build it; the
package never falls back to the pure-Python references in ``memcore._reference``.
"""
import importlib

from ._errors import InvalidArrayError, MemcoreError, PlanError

#: The version of memcore and memcore_py: the one place it is written (pyproject.toml reads it).
__version__ = "0.1.0"

#: public name -> submodule that defines it
_LAZY = {
    "live_intervals": "liveness",
    "max_live_bytes": "liveness",
    "live_profile": "liveness",
    "plan_tokens": "tokens",
    "TokenPlan": "tokens",
    "EV_REQUEST": "tokens",
    "EV_DECREF": "tokens",
    "plan_offsets": "offsets",
    "OffsetPlan": "offsets",
    "verify_offsets": "verify",
    "verify_tokens": "verify",
    "read_minimalloc_csv": "io",
    "write_minimalloc_csv": "io",
}

__all__ = ["MemcoreError", "InvalidArrayError", "PlanError", *_LAZY]


def __getattr__(name):
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'memcore' has no attribute {name!r}")
    try:
        module = importlib.import_module(f".{module_name}", __name__)
    except ImportError as exc:
        missing = getattr(exc, "name", "") or ""
        if missing.startswith("memcore._"):
            raise ImportError(
                f"memcore's compiled kernel {missing} is missing. Build the extensions with "
                "`pip install -e .` (or `python setup.py build_ext --inplace`) from the "
                "repository root."
            ) from exc
        raise
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
