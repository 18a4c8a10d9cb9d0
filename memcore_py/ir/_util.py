"""Small helpers shared by the IR modules."""
from __future__ import annotations

import gc

__all__ = ["gc_paused"]


class gc_paused:
    """Pause Python's cyclic garbage collector for the duration of a walk (a context manager).

    IR trees are acyclic, so walks that allocate many small objects (maps, result lists)
    create no cyclic garbage; on modules of 1e5+ bindings the collector's full passes over
    the live heap would otherwise cost more than the walk itself. The
    previous state is restored, also on error. Resuming allocates nothing (a class, not a
    generator), so it does not itself start a collection over the objects the walk made.
    """

    __slots__ = ("_was_enabled",)

    def __enter__(self):
        self._was_enabled = gc.isenabled()
        if self._was_enabled:
            gc.disable()
        return self

    def __exit__(self, *exc_info):
        if self._was_enabled:
            gc.enable()
        return False
