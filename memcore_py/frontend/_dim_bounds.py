"""The ``dim_bounds`` argument of the importers (:func:`~memcore_py.frontend.from_onnx`,
:func:`~memcore_py.frontend.from_exported_program`): one entry's check, shared."""
from __future__ import annotations

from ..errors import FrontendError

__all__ = ["dim_bound_range"]


def dim_bound_range(name: str, bound) -> tuple:
    """``(lower, upper or None)`` of the ``dim_bounds`` entry ``name: bound``.

    Raises
    ------
    FrontendError
        ``bound`` is not a pair of ints (the upper may be None) with
        ``0 <= lower <= upper``.
    """
    try:
        lo, hi = bound
        lo, hi = int(lo), None if hi is None else int(hi)
    except (TypeError, ValueError):
        raise FrontendError(f"dim_bounds[{name!r}] must be (lower, upper) ints (upper may be None); "
                            f"got {bound!r}") from None
    if lo < 0 or (hi is not None and hi < lo):
        raise FrontendError(f"dim_bounds[{name!r}] = {bound!r} is not a range 0 <= lower <= upper")
    return lo, hi
