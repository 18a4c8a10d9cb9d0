"""Argument validation shared by every memcore kernel wrapper.

Validation happens once, at the boundary (sklearn ``check_array``, numpy.random's single
``check_constraint``): each public wrapper in ``memcore`` turns its arguments into the exact
arrays its kernel expects with the helpers below, and the kernel then trusts them. Every
check is a vectorised numpy expression (no Python loop over elements), and every failure
raises :class:`~memcore.InvalidArrayError` with the grammar
``<what> must be <expectation>; got <actual>``, naming the parameter and the first bad index::

    use_pos must be C-contiguous int64; got float64 array of shape (12,)
    use_pos[7] = 40 is out of range [0, 40) (n_steps=40)

Coercion policy (one rule for every kernel): an argument may be any array-like of an
*integer* dtype (lists, other integer widths, non-contiguous views, read-only arrays). It is
converted with ``np.ascontiguousarray(..., dtype=np.int64)`` only when that is lossless
(uint64 values above 2**63-1 are rejected); arrays that already are C-contiguous int64 are
passed through without a copy. Float, bool (except for flag arrays), complex, object and
string arrays are rejected rather than silently truncated. An empty list is accepted as an
empty int64 array.
"""

import operator

import numpy as np

from ._errors import InvalidArrayError

__all__ = [
    "INT64_MAX",
    "as_int64_array",
    "as_flag_array",
    "as_int8_array",
    "as_int_scalar",
    "as_interval_arrays",
    "check_length",
    "check_range",
    "check_nonnegative",
    "check_not_less",
    "check_sum_fits",
    "exact_sum",
    "first_true",
]

#: Largest int64 value; every size, offset and byte total must stay at or below it.
INT64_MAX = int(np.iinfo(np.int64).max)
_INT64_MIN = int(np.iinfo(np.int64).min)


def _describe(arr):
    """``'float64 array of shape (12,)'`` for the "got ..." part of a message."""
    return f"{arr.dtype} array of shape {arr.shape}"


def _as_integer_ndarray(name, value, expectation):
    """Return ``value`` as a 1-D ndarray of an integer (or bool) dtype, or raise."""
    if isinstance(value, np.ndarray):
        arr = value
    else:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError) as exc:  # ragged nested lists and the like
            raise InvalidArrayError(
                f"{name} must be {expectation}; got {type(value).__name__} that numpy "
                f"cannot convert ({exc})"
            ) from exc
        if arr.size == 0 and arr.dtype.kind == "f" and arr.ndim == 1:
            # np.asarray([]) is float64; an empty list is a valid empty int64 array.
            arr = np.empty(0, dtype=np.int64)
    if arr.ndim != 1:
        raise InvalidArrayError(
            f"{name} must be a 1-D {expectation}; got {_describe(arr)}"
        )
    return arr


def as_int64_array(name, value):
    """Return ``value`` as a 1-D C-contiguous int64 ndarray (no copy when it already is one).

    Parameters
    ----------
    name : str
        Parameter name used in error messages.
    value : array-like of an integer dtype
        Anything ``np.asarray`` accepts whose dtype is a signed or unsigned integer.

    Returns
    -------
    ndarray of shape (n,), dtype=int64
        C-contiguous; the input itself when it was already C-contiguous int64.

    Raises
    ------
    InvalidArrayError
        Not 1-D, not an integer dtype (float, bool, object, ...), or a uint64 value that
        does not fit in int64.
    """
    arr = _as_integer_ndarray(name, value, "C-contiguous int64 array")
    if arr.dtype == np.int64:
        return np.ascontiguousarray(arr)
    if arr.dtype.kind not in "iu":
        raise InvalidArrayError(
            f"{name} must be C-contiguous int64; got {_describe(arr)}"
        )
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size:
        bad = first_true(arr > np.uint64(INT64_MAX))
        if bad >= 0:
            raise InvalidArrayError(
                f"{name} must fit in int64; got {name}[{bad}] = {int(arr[bad])} "
                f"(uint64 array of shape {arr.shape})"
            )
    return np.ascontiguousarray(arr, dtype=np.int64)


def as_flag_array(name, value, n, n_name):
    """Return a 0/1 flag array (bool or any integer dtype) as C-contiguous uint8 of length n.

    Raises
    ------
    InvalidArrayError
        Not 1-D, not bool/integer, wrong length, or a value other than 0 and 1.
    """
    arr = _as_integer_ndarray(name, value, "bool or uint8 array")
    if arr.dtype == np.bool_:
        check_length(name, arr, n, n_name)
        return np.ascontiguousarray(arr).view(np.uint8)
    if arr.dtype.kind not in "iu":
        raise InvalidArrayError(f"{name} must be bool or uint8; got {_describe(arr)}")
    check_length(name, arr, n, n_name)
    bad = first_true((arr != 0) & (arr != 1))
    if bad >= 0:
        raise InvalidArrayError(f"{name}[{bad}] = {int(arr[bad])} must be 0 or 1")
    return np.ascontiguousarray(arr, dtype=np.uint8)


def as_int8_array(name, value, code_names):
    """Return an integer code array as C-contiguous int8, every value a valid code.

    Parameters
    ----------
    code_names : sequence of str
        ``code_names[c]`` names code ``c``; the valid codes are ``0 .. len(code_names)-1``.
    """
    arr = _as_integer_ndarray(name, value, "int8 array")
    if arr.dtype.kind not in "iu":
        raise InvalidArrayError(f"{name} must be int8; got {_describe(arr)}")
    bad = -1
    if arr.size and (arr.min() < 0 or arr.max() >= len(code_names)):
        bad = first_true((arr < 0) | (arr >= len(code_names)))
    if bad >= 0:
        valid = ", ".join(f"{c} ({label})" for c, label in enumerate(code_names))
        raise InvalidArrayError(f"{name}[{bad}] = {int(arr[bad])} must be one of {valid}")
    return np.ascontiguousarray(arr, dtype=np.int8)


def as_int_scalar(name, value, *, low=None, high=INT64_MAX):
    """Return ``value`` as a Python int in ``[low, high]`` (``operator.index`` semantics).

    Raises
    ------
    InvalidArrayError
        Not an integer (bool and float are rejected) or outside the range.
    """
    if isinstance(value, (bool, np.bool_)):
        raise InvalidArrayError(f"{name} must be an integer; got bool {value!r}")
    try:
        result = operator.index(value)
    except TypeError:
        raise InvalidArrayError(
            f"{name} must be an integer; got {type(value).__name__} {value!r}"
        ) from None
    if low is not None and result < low:
        raise InvalidArrayError(f"{name} must be >= {low}; got {result}")
    if high is not None and result > high:
        raise InvalidArrayError(f"{name} must be <= {high}; got {result}")
    return result


def exact_sum(arr):
    """Exact Python-int sum of a non-negative int64 array (no wrap-around).

    The high and low 32-bit halves are summed separately; each partial sum fits in int64
    for arrays shorter than 2**31.
    """
    high = int(np.sum(arr >> 32, dtype=np.int64))
    low = int(np.sum(arr & 0xFFFFFFFF, dtype=np.int64))
    return (high << 32) + low


def first_true(mask):
    """Index of the first True in a boolean array, or -1 (vectorised)."""
    if mask.size == 0:
        return -1
    i = int(np.argmax(mask))
    return i if mask[i] else -1


def check_length(name, arr, n, n_name):
    """Raise unless ``len(arr) == n``; ``n_name`` says where n comes from."""
    if arr.shape[0] != n:
        raise InvalidArrayError(
            f"{name} must have length {n} ({n_name}); got {_describe(arr)}"
        )


def check_range(name, arr, low, high, context=""):
    """Raise unless every value is in the half-open range ``[low, high)``.

    ``context`` (e.g. ``"n_steps=40"``) is appended in parentheses.
    """
    if arr.size == 0 or (arr.min() >= low and arr.max() < high):
        return  # two reductions; the mask is only built to locate a failure
    bad = first_true((arr < low) | (arr >= high))
    if bad >= 0:
        suffix = f" ({context})" if context else ""
        raise InvalidArrayError(
            f"{name}[{bad}] = {int(arr[bad])} is out of range [{low}, {high}){suffix}"
        )


def check_nonnegative(name, arr):
    """Raise unless every value is >= 0."""
    if arr.size == 0 or arr.min() >= 0:
        return
    bad = first_true(arr < 0)
    if bad >= 0:
        raise InvalidArrayError(f"{name} must be >= 0; got {name}[{bad}] = {int(arr[bad])}")


def check_not_less(name, arr, other_name, other):
    """Raise unless ``arr >= other`` elementwise (e.g. ``end >= start``)."""
    bad = first_true(arr < other)
    if bad >= 0:
        raise InvalidArrayError(
            f"{name} must be >= {other_name}; got {name}[{bad}] = {int(arr[bad])} < "
            f"{other_name}[{bad}] = {int(other[bad])}"
        )


def as_interval_arrays(start, end, size):
    """Validate inclusive live intervals with sizes: int64 arrays of one length,
    ``end >= start``, ``size >= 0``. Returns ``(start, end, size)`` as int64 arrays."""
    start = as_int64_array("start", start)
    n = start.shape[0]
    end = as_int64_array("end", end)
    size = as_int64_array("size", size)
    check_length("end", end, n, "len(start)")
    check_length("size", size, n, "len(start)")
    check_not_less("end", end, "start", start)
    check_nonnegative("size", size)
    return start, end, size

def check_sum_fits(name, arr, *, alignment=1):
    """Raise unless the sum of ``arr`` rounded up to ``alignment`` fits in int64.

    ``arr`` must already be non-negative int64 and ``alignment >= 1``. The exact sum is
    computed without overflow by adding the high and low 32-bit halves separately.

    Returns
    -------
    int
        The exact sum of the rounded values.
    """
    if arr.size == 0:
        return 0
    if alignment > 1:
        limit = INT64_MAX - (alignment - 1)
        bad = first_true(arr > limit)
        if bad >= 0:
            raise InvalidArrayError(
                f"{name}[{bad}] = {int(arr[bad])} rounded up to alignment {alignment} must "
                f"fit in int64; got a value above {limit}"
            )
        arr = (arr + (alignment - 1)) // alignment * alignment
    total = exact_sum(arr)
    if total > INT64_MAX:
        what = f"{name} rounded up to alignment {alignment}" if alignment > 1 else name
        raise InvalidArrayError(
            f"sum of {what} must fit in int64 (<= {INT64_MAX}); got {total}"
        )
    return total
