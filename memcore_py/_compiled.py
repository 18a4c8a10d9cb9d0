"""Loading the compiled helpers of the Python layer.

The binding table, its readers, the passes' rule kernels and writers, and other hot loops are
Cython extensions built by ``setup.py`` (its ``EXTENSIONS`` lists them).
They are imported on first use, never at package import, and there is no Python fallback:
a missing extension is an :class:`ImportError` that says how to build it, the same message
as the engine's (:mod:`memcore`).
"""
from __future__ import annotations

import importlib
import sys

__all__ = ["load_compiled"]


def load_compiled(name: str):
    """The compiled module ``name`` (``"memcore_py.analysis._storage_walk"``).

    Raises
    ------
    ImportError
        When the extension is not built, saying how to build it.
    """
    module = sys.modules.get(name)
    if module is not None:
        return module
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if (getattr(exc, "name", "") or "") == name:
            raise ImportError(
                f"memcore's compiled helper {name} is missing. Build the extensions with "
                "`pip install -e .` (or `python setup.py build_ext --inplace`) from the "
                "repository root."
            ) from exc
        raise
