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
    "as_aligned_interval_arrays",
    "as_token_program",
    "TOKEN_EVENT_NAMES",
    "SEQUENCE_ERRORS",
    "raise_sequence_error",
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

#: Event kinds of a token program, indexed by kind code (``memcore.EV_REQUEST`` = 0,
#: ``memcore.EV_DECREF`` = 1).
TOKEN_EVENT_NAMES = ("EV_REQUEST", "EV_DECREF")

#: The malformed-sequence errors both token kernels report, by the name their code tables
#: (``_tokens.ERROR_CODES``, ``_verify.TOKEN_CODES``) give them.
SEQUENCE_ERRORS = ("ERR_REQUEST_TWICE", "ERR_DECREF_UNREQUESTED", "ERR_DECREF_AT_ZERO")


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


def as_aligned_interval_arrays(start, end, size, alignment):
    """:func:`as_interval_arrays` plus ``alignment >= 1`` and a rounded size total that fits
    in int64. Returns ``(start, end, size)`` with each size rounded up to ``alignment``."""
    start, end, size = as_interval_arrays(start, end, size)
    alignment = as_int_scalar("alignment", alignment, low=1)
    check_sum_fits("size", size, alignment=alignment)
    if alignment > 1:
        size = (size + (alignment - 1)) // alignment * alignment
    return start, end, size


def as_token_program(tok_bytes, tok_pool, tok_refs, ev_kind, ev_tok, tok_sym):
    """Validate a token event program (:func:`memcore.plan_tokens`, :func:`memcore.verify_tokens`).

    Returns the arrays as the kernels want them; ``tok_sym`` is an empty array when None.
    The event *sequence* (a token requested twice, a decref before the request or at count
    0) is checked by the kernels, which report it for :func:`raise_sequence_error`.
    """
    tok_bytes = as_int64_array("tok_bytes", tok_bytes)
    n_tok = tok_bytes.shape[0]
    tok_pool = as_int64_array("tok_pool", tok_pool)
    tok_refs = as_int64_array("tok_refs", tok_refs)
    check_length("tok_pool", tok_pool, n_tok, "len(tok_bytes)")
    check_length("tok_refs", tok_refs, n_tok, "len(tok_bytes)")
    check_nonnegative("tok_bytes", tok_bytes)
    check_nonnegative("tok_pool", tok_pool)
    check_nonnegative("tok_refs", tok_refs)
    if tok_sym is None:
        tok_sym = np.empty(0, dtype=np.int64)
    else:
        tok_sym = as_int64_array("tok_sym", tok_sym)
        check_length("tok_sym", tok_sym, n_tok, "len(tok_bytes)")
        bad = first_true(tok_sym < -1)
        if bad >= 0:
            raise InvalidArrayError(
                f"tok_sym must be >= -1 (-1 = constant size); got tok_sym[{bad}] = "
                f"{int(tok_sym[bad])}"
            )
    ev_kind = as_int8_array("ev_kind", ev_kind, TOKEN_EVENT_NAMES)
    ev_tok = as_int64_array("ev_tok", ev_tok)
    check_length("ev_tok", ev_tok, ev_kind.shape[0], "len(ev_kind)")
    check_range("ev_tok", ev_tok, 0, n_tok, f"n_tok={n_tok}")
    return tok_bytes, tok_pool, tok_refs, ev_kind, ev_tok, tok_sym


def raise_sequence_error(error, e, ev_tok, tok_refs):
    """Raise the InvalidArrayError for a malformed event sequence a kernel found at event ``e``.

    ``error`` is one of :data:`SEQUENCE_ERRORS`.
    """
    p = int(ev_tok[e])
    if error == "ERR_REQUEST_TWICE":
        detail = (
            f"token {p} must be requested at most once; got a second EV_REQUEST at event {e}"
        )
    elif error == "ERR_DECREF_UNREQUESTED":
        detail = (
            f"an EV_DECREF of token {p} must come after its EV_REQUEST; got EV_DECREF at "
            f"event {e} before any EV_REQUEST"
        )
    elif error == "ERR_DECREF_AT_ZERO":
        detail = (
            f"an EV_DECREF of token {p} needs an outstanding reference; got EV_DECREF at "
            f"event {e} with its count already 0 (tok_refs[{p}] = {int(tok_refs[p])})"
        )
    else:  # pragma: no cover - internal invariant
        raise AssertionError(f"internal error: unknown event sequence error {error!r}")
    raise InvalidArrayError(f"ev_tok[{e}] = {p}: {detail}")


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
