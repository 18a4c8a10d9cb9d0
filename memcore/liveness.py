"""Liveness over flat arrays: live intervals, the bytes live at each step, and their maximum.

The flat-array contract
-----------------------
Every memcore kernel speaks this contract; other modules refer here instead of repeating it.

- **Steps** are the binding positions ``0 .. n_steps-1`` of one planning unit (a block).
- **Values** (tensors, buffers) are numbered ``0 .. n-1``. For each value:

  ``def_pos : int64[n]``
      The step that defines it, or ``-1`` when it is defined before the block (a parameter).
  ``use_ptr : int64[n+1]``, ``use_pos : int64[n_uses]``
      Its uses in CSR form: the steps reading value ``i`` are
      ``use_pos[use_ptr[i]:use_ptr[i+1]]`` (any order; duplicates allowed; a step may not
      read a value before its definition).
  ``is_output : uint8[n]`` (bool accepted)
      1 when the value is live after the block (returned / used by a later block).

- **Intervals** are ``start, end : int64[n]`` with an *inclusive* ``end``:
  ``start = def_pos`` and ``end = max(def_pos, max(uses), n_steps if is_output)``. So
  ``end == n_steps`` means "live after the block" and an unused value has ``end == start``
  (``-1`` for an unused value defined before the block). These are TVM's
  ``AnalyzeLiveness`` sentinels (spec §3.3). Kernels that take intervals
  (:func:`max_live_bytes`, ``plan_offsets``, ``verify_offsets``) accept any int64
  ``start <= end``; only :func:`live_profile` needs them inside ``[-1, n_steps]``.
- **Sizes** are ``size : int64[n]`` bytes, ``>= 0``; their sum (after rounding up to an
  alignment) must fit in int64, which bounds every byte total the kernels compute.
- All arrays are 1-D; kernels read them as C-contiguous int64 (``const int64_t[::1]``) and
  never modify them. Wrappers accept any integer array-like and convert it when that is
  lossless (see :mod:`memcore._validate`); float, bool and object arrays are rejected with
  :class:`~memcore.InvalidArrayError`.

Design
------
Each public function validates its arguments once with the vectorised helpers of
:mod:`memcore._validate` (the one check that needs a per-use loop, a use before its
definition, is reported by the kernel), then calls ``memcore._liveness``: one linear pass for
the intervals, a difference array or a sort-and-sweep for the load over time.
"""

import numpy as np

from . import _liveness
from ._validate import (
    as_aligned_interval_arrays,
    as_flag_array,
    as_int64_array,
    as_int_scalar,
    check_length,
    check_range,
    first_true,
)
from ._errors import InvalidArrayError

__all__ = ["live_intervals", "max_live_bytes", "live_profile"]


def live_intervals(def_pos, use_ptr, use_pos, is_output, n_steps):
    """Compute each value's inclusive live interval from its definition and CSR uses.

    Parameters
    ----------
    def_pos : ndarray of shape (n,), dtype=int64
        Defining step of each value, in ``[-1, n_steps)``; -1 = defined before the block.
    use_ptr : ndarray of shape (n + 1,), dtype=int64
        CSR row pointer into ``use_pos``: ``use_ptr[0] == 0``, non-decreasing,
        ``use_ptr[n] == len(use_pos)``.
    use_pos : ndarray of shape (n_uses,), dtype=int64
        Steps reading each value, in ``[0, n_steps)`` and not before its ``def_pos``.
    is_output : ndarray of shape (n,), dtype=uint8 or bool
        Nonzero when the value is live after the block.
    n_steps : int
        Number of steps (bindings) in the block, ``>= 0``.

    Returns
    -------
    start : ndarray of shape (n,), dtype=int64
        Equal to ``def_pos`` (a new array).
    end : ndarray of shape (n,), dtype=int64
        Last step the value is live at, inclusive: ``n_steps`` for outputs, else the latest
        use, else ``start`` for an unused value.

    Raises
    ------
    InvalidArrayError
        Wrong dtype/shape/length, a malformed ``use_ptr``, a position out of range, or a use
        before its definition. The message names the parameter and the first bad index.

    Notes
    -----
    The contract is described once, in the :mod:`memcore.liveness` module docstring.
    One pass over the uses: O(n + n_uses) time, no allocation besides the outputs.

    Examples
    --------
    >>> import numpy as np
    >>> from memcore import live_intervals
    >>> start, end = live_intervals(
    ...     def_pos=[-1, 0, 1, 2], use_ptr=[0, 1, 3, 3, 3], use_pos=[0, 1, 2],
    ...     is_output=[0, 0, 0, 1], n_steps=3)
    >>> start.tolist(), end.tolist()
    ([-1, 0, 1, 2], [0, 2, 1, 3])
    """
    n_steps = as_int_scalar("n_steps", n_steps, low=0, high=np.iinfo(np.int64).max - 1)
    def_pos = as_int64_array("def_pos", def_pos)
    n = def_pos.shape[0]
    use_ptr = as_int64_array("use_ptr", use_ptr)
    use_pos = as_int64_array("use_pos", use_pos)
    is_output = as_flag_array("is_output", is_output, n, "len(def_pos)")
    check_length("use_ptr", use_ptr, n + 1, "len(def_pos) + 1")
    n_uses = use_pos.shape[0]
    if use_ptr[0] != 0:
        raise InvalidArrayError(f"use_ptr[0] must be 0; got {int(use_ptr[0])}")
    if use_ptr[n] != n_uses:
        raise InvalidArrayError(
            f"use_ptr[{n}] must be len(use_pos) = {n_uses}; got {int(use_ptr[n])}"
        )
    bad = first_true(use_ptr[1:] < use_ptr[:-1])
    if bad >= 0:
        raise InvalidArrayError(
            f"use_ptr must be non-decreasing; got use_ptr[{bad + 1}] = "
            f"{int(use_ptr[bad + 1])} < use_ptr[{bad}] = {int(use_ptr[bad])}"
        )
    check_range("def_pos", def_pos, -1, n_steps, f"n_steps={n_steps}")
    check_range("use_pos", use_pos, 0, n_steps, f"n_steps={n_steps}")
    start, end, bad = _liveness._py_live_intervals(
        def_pos, use_ptr, use_pos, is_output, n_steps
    )
    if bad >= 0:  # the kernel reports the first use before its value's definition
        v = int(np.searchsorted(use_ptr, bad, side="right")) - 1
        raise InvalidArrayError(
            f"use_pos[{bad}] = {int(use_pos[bad])} must not be before the definition of "
            f"value {v}; got def_pos[{v}] = {int(def_pos[v])}"
        )
    return start, end


def max_live_bytes(start, end, size, *, alignment=1, check=True):
    """Return the LOAD lower bound: the maximum over time of the bytes live at once.

    Parameters
    ----------
    start, end : ndarray of shape (n,), dtype=int64
        Inclusive live intervals (any int64 values with ``start <= end``; see the contract
        in :mod:`memcore.liveness`).
    size : ndarray of shape (n,), dtype=int64
        Bytes of each buffer, ``>= 0``.
    alignment : int, default=1
        Each size is first rounded up to a multiple of ``alignment`` (``>= 1``).
    check : bool, default=True
        Validate the arrays. ``False`` is for internal callers that build them (memcore_py's
        planning layer): C-contiguous int64 arrays of one length, ``start <= end``, sizes
        ``>= 0`` whose sum fits in int64, ``alignment == 1``.

    Returns
    -------
    int
        ``max_t sum(round_up(size[i]) for i with start[i] <= t <= end[i])``, 0 when n == 0.
        No packing of these buffers into one arena can be smaller.

    Raises
    ------
    InvalidArrayError
        Wrong dtype/shape/length, ``end < start``, a negative size, ``alignment < 1``, or a
        rounded size total that does not fit in int64.

    Notes
    -----
    When the step span ``max(end) - min(start)`` is at most ``4 n + 64`` a difference array
    over the span is used: O(n + span) time and memory. Otherwise the starts and ends are
    sorted and merged (starts before ends at equal times, since ``end`` is inclusive):
    O(n log n) time, O(n) memory, so step values as large as 1e12 cost nothing extra.

    Examples
    --------
    >>> from memcore import max_live_bytes
    >>> max_live_bytes([0, 1, 3], [1, 2, 4], [10, 20, 30])
    30
    >>> max_live_bytes([0, 1, 3], [1, 2, 4], [10, 20, 30], alignment=16)
    48
    """
    if check or alignment != 1:
        start, end, size = as_aligned_interval_arrays(start, end, size, alignment)
    return int(_liveness._py_max_live_bytes(start, end, size))


def live_profile(start, end, size, n_steps, *, alignment=1):
    """Return the bytes live at each step ``0 .. n_steps`` of a block.

    Parameters
    ----------
    start, end : ndarray of shape (n,), dtype=int64
        Inclusive live intervals in the contract's range: ``-1 <= start <= end <= n_steps``.
    size : ndarray of shape (n,), dtype=int64
        Bytes of each buffer, ``>= 0``.
    n_steps : int
        Number of steps in the block, ``>= 0``.
    alignment : int, default=1
        Each size is first rounded up to a multiple of ``alignment``.

    Returns
    -------
    profile : ndarray of shape (n_steps + 1,), dtype=int64
        ``profile[t]`` for ``t < n_steps`` is the bytes live at step t; ``profile[n_steps]``
        is the bytes live after the block (the outputs). A ``start`` of -1 (defined before
        the block) is clipped to 0, so an interval ``[-1, -1]`` (an unused parameter)
        appears nowhere; ``profile.max()`` can therefore be below :func:`max_live_bytes`,
        which also counts step -1.

    Raises
    ------
    InvalidArrayError
        As :func:`max_live_bytes`, plus ``start < -1`` or ``end > n_steps``.

    Notes
    -----
    A difference array over the steps: O(n + n_steps) time, O(n_steps) memory.

    Examples
    --------
    >>> from memcore import live_profile
    >>> live_profile([-1, 0, 1], [0, 2, 3], [10, 20, 30], n_steps=3).tolist()
    [30, 50, 50, 30]
    """
    n_steps = as_int_scalar("n_steps", n_steps, low=0, high=np.iinfo(np.int64).max - 2)
    start, end, size = as_aligned_interval_arrays(start, end, size, alignment)
    check_range("start", start, -1, n_steps + 1, f"n_steps={n_steps}")
    check_range("end", end, -1, n_steps + 1, f"n_steps={n_steps}")
    try:  # the kernel's one allocation: int64[n_steps + 2]
        return _liveness._py_live_profile(start, end, size, n_steps)
    except (MemoryError, ValueError) as exc:  # numpy: out of memory, or "array is too big"
        raise InvalidArrayError(
            f"n_steps={n_steps}: the profile needs {8 * (n_steps + 2)} bytes, more than can be allocated"
        ) from exc
