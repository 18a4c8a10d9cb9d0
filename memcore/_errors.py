"""Exception hierarchy shared by the engine and the Python layer.

Every error raised on purpose by memcore or memcore_py derives from :class:`MemcoreError`.
Where an error is also a classic Python category, it inherits that builtin too (msgspec's
``DecodeError(MsgspecError, ValueError)`` habit), so callers may catch either.
"""

__all__ = ["MemcoreError", "InvalidArrayError", "PlanError"]


class MemcoreError(Exception):
    """Base class of every error memcore and memcore_py raise deliberately."""


class InvalidArrayError(MemcoreError, ValueError):
    """A kernel argument has the wrong dtype, shape, layout, range or would overflow int64.

    The message names the parameter and, where one exists, the first bad index.
    """


class PlanError(MemcoreError):
    """A memory plan violates its contract (overlapping live buffers, a storage too small).

    Raised by ``memcore.verify_offsets`` / ``memcore.verify_tokens``; the message names the
    first two conflicting buffers.
    """
