"""Plan checkers: offsets in one arena, and storages of a token plan.

See memcore/verify.py for what is checked and the argument validation; these kernels trust
their input (lengths consistent, ids in range) and report the first violation as a code and
the indices involved, which the wrapper turns into a ``PlanError`` message.

Design
------
- ``_verify_offsets``: a sweep over time. Starts and ends are sorted (numpy, before the
  nogil loop) and merged, starts first at equal times because ``end`` is inclusive. The live
  buffers of non-zero size are kept in a ``std::map`` from offset to buffer; the live set is
  conflict-free by induction, so a new buffer conflicts with some live buffer iff it
  overlaps its successor or its predecessor in offset order: two ``O(log n)`` probes.
  Total O(n log n) time, O(n) memory.
- ``_verify_tokens``: one pass over the event program tracking, per storage, the token that
  holds it and, per token, its outstanding references (the same rules as plan_tokens).
  O(n_events + n_tok + n_storage).
"""

import numpy as np

from cython.operator cimport dereference as deref, predecrement as dec
from libcpp.map cimport map as cpp_map
from libcpp.pair cimport pair

from memcore._typedefs cimport EV_REQUEST, idx_t, kind_t

#: Codes reported by _py_verify_tokens (memcore.verify turns them into messages).
cdef enum:
    OK = 0
    ERR_SHARED = 1          # two live tokens hold one storage (a = holder, b = newcomer)
    ERR_TOO_SMALL = 2       # storage smaller than a token on it (a = token)
    ERR_POOL = 3            # storage pool differs from a token's pool (a = token)
    ERR_SYM = 4             # symbolic classes mixed (a = token, b = the storage's class)
    ERR_REQUEST_TWICE = 5   # event sequence errors (a = token)
    ERR_DECREF_UNREQUESTED = 6
    ERR_DECREF_AT_ZERO = 7

TOKEN_CODES = {
    "ERR_SHARED": ERR_SHARED,
    "ERR_TOO_SMALL": ERR_TOO_SMALL,
    "ERR_POOL": ERR_POOL,
    "ERR_SYM": ERR_SYM,
    "ERR_REQUEST_TWICE": ERR_REQUEST_TWICE,
    "ERR_DECREF_UNREQUESTED": ERR_DECREF_UNREQUESTED,
    "ERR_DECREF_AT_ZERO": ERR_DECREF_AT_ZERO,
}


# -------------------------------------------------------------------------------------------
# verify_offsets
# -------------------------------------------------------------------------------------------

cdef int _verify_offsets(
    const idx_t[::1] start,
    const idx_t[::1] end,
    const idx_t[::1] size,
    const idx_t[::1] offset,
    const idx_t[::1] by_start,
    const idx_t[::1] by_end,
    idx_t* first,
    idx_t* second,
) except -1 nogil:
    """Return 1 and the conflicting pair (first = already live) or 0 when there is none."""
    cdef Py_ssize_t n = start.shape[0], i = 0, j = 0
    cdef cpp_map[idx_t, idx_t] live          # offset -> buffer, pairwise disjoint ranges
    cdef cpp_map[idx_t, idx_t].iterator it
    cdef idx_t a, lo, hi
    while i < n:
        if start[by_start[i]] <= end[by_end[j]]:
            a = by_start[i]
            i += 1
            if size[a] == 0:
                continue
            lo = offset[a]
            hi = lo + size[a]
            it = live.lower_bound(lo)
            # The first live range starting at or after lo must start at or after hi.
            if it != live.end() and deref(it).first < hi:
                first[0] = deref(it).second
                second[0] = a
                return 1
            # The last live range starting before lo must end at or before lo.
            if it != live.begin():
                dec(it)
                if deref(it).first + size[deref(it).second] > lo:
                    first[0] = deref(it).second
                    second[0] = a
                    return 1
            live.insert(pair[idx_t, idx_t](lo, a))
        else:
            a = by_end[j]
            j += 1
            if size[a] != 0:
                live.erase(offset[a])
    return 0


def _py_verify_offsets(start, end, size, offset):
    """Kernel on validated arrays; returns None or the first conflicting pair (i, j)."""
    cdef Py_ssize_t n = start.shape[0]
    if n == 0:
        return None
    cdef const idx_t[::1] start_v = start
    cdef const idx_t[::1] end_v = end
    cdef const idx_t[::1] size_v = size
    cdef const idx_t[::1] offset_v = offset
    cdef const idx_t[::1] by_start_v = np.argsort(start, kind="stable")
    cdef const idx_t[::1] by_end_v = np.argsort(end, kind="stable")
    cdef idx_t first = -1, second = -1
    cdef int found
    with nogil:
        found = _verify_offsets(
            start_v, end_v, size_v, offset_v, by_start_v, by_end_v, &first, &second
        )
    return (int(first), int(second)) if found else None


# -------------------------------------------------------------------------------------------
# verify_tokens
# -------------------------------------------------------------------------------------------

cdef int _verify_tokens(
    const idx_t[::1] tok_bytes,
    const idx_t[::1] tok_pool,
    const idx_t[::1] tok_refs,
    const idx_t[::1] tok_sym,
    const kind_t[::1] ev_kind,
    const idx_t[::1] ev_tok,
    const idx_t[::1] storage_of,
    const idx_t[::1] storage_bytes,
    const idx_t[::1] storage_pool,
    idx_t[::1] holder,
    idx_t[::1] sym_of,
    idx_t[::1] left,
    idx_t[::1] requested,
    idx_t* event,
    idx_t* a,
    idx_t* b,
) noexcept nogil:
    """Return OK or an ERR_* code with the event index and the tokens involved.

    holder[st] (-1 = free) and sym_of[st] (-2 = no token yet) start filled by the caller.
    """
    cdef Py_ssize_t e, n_events = ev_kind.shape[0]
    cdef bint has_sym = tok_sym.shape[0] > 0
    cdef idx_t p, st, sym
    for e in range(n_events):
        p = ev_tok[e]
        st = storage_of[p]
        event[0] = e
        a[0] = p
        if ev_kind[e] == EV_REQUEST:
            if requested[p]:
                return ERR_REQUEST_TWICE
            requested[p] = 1
            if holder[st] >= 0:
                a[0] = holder[st]
                b[0] = p
                return ERR_SHARED
            if storage_bytes[st] < tok_bytes[p]:
                return ERR_TOO_SMALL
            if storage_pool[st] != tok_pool[p]:
                return ERR_POOL
            sym = tok_sym[p] if has_sym else -1
            if sym_of[st] == -2:
                sym_of[st] = sym
            elif sym_of[st] != sym:
                b[0] = sym_of[st]
                return ERR_SYM
            left[p] = tok_refs[p]
            # A token nobody reads is live only at its request.
            if left[p] > 0:
                holder[st] = p
        else:
            if not requested[p]:
                return ERR_DECREF_UNREQUESTED
            if left[p] == 0:
                return ERR_DECREF_AT_ZERO
            left[p] -= 1
            if left[p] == 0:
                holder[st] = -1
    return OK


def _py_verify_tokens(
    tok_bytes, tok_pool, tok_refs, tok_sym, ev_kind, ev_tok,
    storage_of, storage_bytes, storage_pool,
):
    """Kernel on validated arrays; returns (code, event, a, b)."""
    cdef Py_ssize_t n_tok = tok_bytes.shape[0], n_storage = storage_bytes.shape[0]
    holder = np.full(n_storage, -1, dtype=np.int64)
    sym_of = np.full(n_storage, -2, dtype=np.int64)
    left = np.zeros(n_tok, dtype=np.int64)
    requested = np.zeros(n_tok, dtype=np.int64)
    cdef const idx_t[::1] bytes_v = tok_bytes
    cdef const idx_t[::1] pool_v = tok_pool
    cdef const idx_t[::1] refs_v = tok_refs
    cdef const idx_t[::1] sym_v = tok_sym
    cdef const kind_t[::1] kind_v = ev_kind
    cdef const idx_t[::1] ev_tok_v = ev_tok
    cdef const idx_t[::1] storage_of_v = storage_of
    cdef const idx_t[::1] storage_bytes_v = storage_bytes
    cdef const idx_t[::1] storage_pool_v = storage_pool
    cdef idx_t[::1] holder_v = holder
    cdef idx_t[::1] sym_of_v = sym_of
    cdef idx_t[::1] left_v = left
    cdef idx_t[::1] requested_v = requested
    cdef idx_t event = -1, a = -1, b = -1
    cdef int code
    with nogil:
        code = _verify_tokens(
            bytes_v, pool_v, refs_v, sym_v, kind_v, ev_tok_v,
            storage_of_v, storage_bytes_v, storage_pool_v,
            holder_v, sym_of_v, left_v, requested_v, &event, &a, &b,
        )
    return code, int(event), int(a), int(b)
