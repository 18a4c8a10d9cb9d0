"""Small helpers shared by the IR modules."""
from __future__ import annotations

import gc
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector for the duration of a walk.

    IR trees are acyclic, so walks that allocate many small objects (maps, result lists)
    create no cyclic garbage; on modules of 1e5+ bindings the collector's full passes over
    the live heap would otherwise cost more than the walk itself (measured 2-10x). The
    previous state is restored, also on error.
    """
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
