"""Liveness kernels: intervals from CSR uses, and the bytes live over time.

See memcore/liveness.py for the flat-array contract and for argument validation; these
kernels trust their input (every index in range, lengths consistent, totals fit in int64).

Design
------
- ``live_intervals``: one pass over the CSR uses, O(n + n_uses).
- ``max_live_bytes``: the LOAD lower bound. Two strategies with the same result:
  a difference array over the step range ``[min(start), max(end)]`` when that range is small
  (O(n + span), no sort), else a sweep over the sorted starts and sorted ends (O(n log n);
  the sort is numpy's, before the nogil loop). At equal times starts are taken before ends,
  because ``end`` is inclusive: a buffer ending at t and one starting at t are live together.
- ``live_profile``: a difference array over ``0..n_steps`` (the caller bounds n_steps).

Nothing here allocates inside ``nogil``: outputs and scratch arrays come from numpy first.
"""

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int64_t

from memcore._typedefs cimport flag_t, idx_t

cnp.import_array()


# -------------------------------------------------------------------------------------------
# live_intervals
# -------------------------------------------------------------------------------------------

cdef idx_t _live_intervals(
    const idx_t[::1] def_pos,
    const idx_t[::1] use_ptr,
    const idx_t[::1] use_pos,
    const flag_t[::1] is_output,
    idx_t n_steps,
    idx_t[::1] start,
    idx_t[::1] end,
) noexcept nogil:
    """Fill start/end; return -1, or the first index k with use_pos[k] < its def_pos.

    Uses before the definition are the one check left to the kernel (the wrapper would
    need an O(n_uses) owner array for it); the scan stops there and the wrapper raises.
    """
    cdef Py_ssize_t i, k, n = def_pos.shape[0]
    cdef idx_t d, last
    for i in range(n):
        d = def_pos[i]
        last = d
        for k in range(use_ptr[i], use_ptr[i + 1]):
            if use_pos[k] > last:
                last = use_pos[k]
            elif use_pos[k] < d:
                return k
        if is_output[i]:
            last = n_steps
        start[i] = d
        end[i] = last
    return -1


def _py_live_intervals(def_pos, use_ptr, use_pos, is_output, idx_t n_steps):
    """The kernel on validated arrays: (start, end, bad_use); bad_use = -1 when valid."""
    cdef Py_ssize_t n = def_pos.shape[0]
    start = np.empty(n, dtype=np.int64)
    end = np.empty(n, dtype=np.int64)
    cdef idx_t[::1] start_v = start
    cdef idx_t[::1] end_v = end
    cdef const idx_t[::1] def_v = def_pos
    cdef const idx_t[::1] ptr_v = use_ptr
    cdef const idx_t[::1] use_v = use_pos
    cdef const flag_t[::1] out_v = is_output
    cdef idx_t bad_use
    with nogil:
        bad_use = _live_intervals(def_v, ptr_v, use_v, out_v, n_steps, start_v, end_v)
    return start, end, bad_use


# -------------------------------------------------------------------------------------------
# max_live_bytes
# -------------------------------------------------------------------------------------------

cdef idx_t _max_live_diff(
    const idx_t* start,
    const idx_t* end,
    const idx_t* size,
    Py_ssize_t n,
    idx_t low,
    idx_t* diff,
    Py_ssize_t m,
) noexcept nogil:
    """Difference array over [low, low + m - 1); ``diff`` (m slots) is zeroed by the caller."""
    cdef Py_ssize_t i, t
    cdef idx_t live = 0, peak = 0
    for i in range(n):
        diff[start[i] - low] += size[i]
        diff[end[i] - low + 1] -= size[i]
    for t in range(m):
        live += diff[t]
        if live > peak:
            peak = live
    return peak


cdef idx_t _max_live_sweep(
    const idx_t[::1] start_sorted,
    const idx_t[::1] start_size,
    const idx_t[::1] end_sorted,
    const idx_t[::1] end_size,
) noexcept nogil:
    """Merge the sorted starts with the sorted ends; starts first at equal times.

    ``start_size[i]`` is the size of the buffer with the i-th smallest start, and
    ``end_size`` likewise (gathered by numpy, so the sweep reads memory in order).
    """
    cdef Py_ssize_t n = start_sorted.shape[0], i = 0, j = 0
    cdef idx_t live = 0, peak = 0
    while i < n:
        if start_sorted[i] <= end_sorted[j]:
            live += start_size[i]
            if live > peak:
                peak = live
            i += 1
        else:
            live -= end_size[j]
            j += 1
    return peak


cdef const idx_t* _int64_data(object a, Py_ssize_t n) noexcept:
    """The elements of ``a`` when it is a 1-d C-contiguous native-order int64 ndarray of
    length ``n`` (any length when ``n < 0``), else NULL."""
    if not cnp.PyArray_Check(a):
        return NULL
    cdef cnp.ndarray arr = <cnp.ndarray>a
    if (cnp.PyArray_NDIM(arr) != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(arr) or cnp.PyArray_TYPE(arr) != cnp.NPY_INT64
            or not cnp.PyArray_ISNOTSWAPPED(arr) or (n >= 0 and cnp.PyArray_DIM(arr, 0) != n)):
        return NULL
    return <const idx_t*>cnp.PyArray_DATA(arr)


cdef object _max_live_small(const idx_t* start, const idx_t* end, const idx_t* size, Py_ssize_t n):
    """The difference-array peak when the step span is at most ``4 * n + 64``, else None."""
    cdef idx_t low = start[0], high = end[0], peak
    cdef Py_ssize_t i
    for i in range(1, n):  # a C loop: numpy's min / max cost more than this on small inputs
        if start[i] < low:
            low = start[i]
        if end[i] > high:
            high = end[i]
    # high - low cannot overflow as an unsigned difference; compare before subtracting.
    if <unsigned long long>high - <unsigned long long>low > <unsigned long long>(4 * n + 64):
        return None
    cdef cnp.npy_intp m = high - low + 2
    diff = cnp.PyArray_ZEROS(1, &m, cnp.NPY_INT64, 0)
    cdef idx_t* diff_p = <idx_t*>cnp.PyArray_DATA(<cnp.ndarray>diff)
    with nogil:
        peak = _max_live_diff(start, end, size, n, low, diff_p, m)
    return peak


def _py_max_live_bytes(start, end, size):
    """Kernel on validated arrays (``size`` already rounded to the alignment).

    Chooses the difference array when the step span is at most ``4 * n + 64``, else sorts.
    Arrays that are 1-d C-contiguous int64 are read through their data pointers (typed
    memoryviews cost more to set up than the whole count on small inputs); others go
    through memoryviews, which raise ValueError for a wrong dtype or layout.
    """
    cdef const idx_t* start_p = _int64_data(start, -1)
    cdef Py_ssize_t n
    cdef const idx_t* end_p
    cdef const idx_t* size_p
    if start_p is not NULL:
        n = cnp.PyArray_DIM(<cnp.ndarray>start, 0)
        end_p = _int64_data(end, n)
        size_p = _int64_data(size, n)
        if end_p is not NULL and size_p is not NULL:
            if n == 0:
                return 0
            peak = _max_live_small(start_p, end_p, size_p, n)
            if peak is not None:
                return peak
    n = start.shape[0]
    if n == 0:
        return 0
    cdef const idx_t[::1] start_v = start
    cdef const idx_t[::1] end_v = end
    cdef const idx_t[::1] size_v = size
    if end_v.shape[0] != n or size_v.shape[0] != n:
        raise ValueError(f"_py_max_live_bytes: arrays of different lengths "
                         f"({n}, {end_v.shape[0]}, {size_v.shape[0]})")
    peak = _max_live_small(&start_v[0], &end_v[0], &size_v[0], n)
    if peak is not None:
        return peak
    cdef const idx_t[::1] start_sorted, start_size, end_sorted, end_size
    cdef idx_t swept
    # Ties need no stable order: every start at time t is taken before any end at t.
    by_start = np.argsort(start)
    by_end = np.argsort(end)
    start_sorted = start[by_start]
    start_size = size[by_start]
    end_sorted = end[by_end]
    end_size = size[by_end]
    with nogil:
        swept = _max_live_sweep(start_sorted, start_size, end_sorted, end_size)
    return swept


# -------------------------------------------------------------------------------------------
# live_profile
# -------------------------------------------------------------------------------------------

cdef void _live_profile(
    const idx_t[::1] start,
    const idx_t[::1] end,
    const idx_t[::1] size,
    idx_t[::1] profile,
) noexcept nogil:
    """profile has n_steps + 2 slots (the last absorbs end + 1 == n_steps + 1)."""
    cdef Py_ssize_t i, t, n = start.shape[0], m = profile.shape[0]
    cdef idx_t s, live = 0
    for i in range(n):
        s = start[i] if start[i] > 0 else 0
        if end[i] < s:  # e.g. [-1, -1]: live only before the block
            continue
        profile[s] += size[i]
        profile[end[i] + 1] -= size[i]
    for t in range(m):
        live += profile[t]
        profile[t] = live


def _py_live_profile(start, end, size, idx_t n_steps):
    """Kernel on validated arrays; returns int64[n_steps + 1]."""
    profile = np.zeros(n_steps + 2, dtype=np.int64)
    cdef idx_t[::1] profile_v = profile
    cdef const idx_t[::1] start_v = start
    cdef const idx_t[::1] end_v = end
    cdef const idx_t[::1] size_v = size
    with nogil:
        _live_profile(start_v, end_v, size_v, profile_v)
    return profile[: n_steps + 1]
