"""Offset packing kernels: priority orders, best-fit / first-fit placement, exact search.

See memcore/offsets.py for the public API, argument validation and the algorithm catalogue;
these kernels trust their input. Everything here works in *units* (sizes already rounded up
to the alignment and divided by it) and in *compressed time*: ``s[i] <= e[i]`` are integers
in ``[0, n_points)`` that preserve every interval intersection of the caller's steps.

Design
------
Orders (``_py_order``)
    Every greedy is "place the non-empty buffers one by one, in a fixed priority order".
    The order is a stable LSD radix sort (``_radix_argsort``: of the key minus its minimum,
    digits of up to 11 bits sized to the input; insertion sort below 25 ids) of the ids by
    one or more unsigned 64-bit keys, least significant key first, so ties always go to the
    lower buffer id. Descending keys are complemented; the area key (size x lifetime) needs
    128 bits and is sorted as two 64-bit keys. Breadth uses a max segment tree over the
    live-bytes profile; conflict degrees use prefix counts of starts / ends.

Placement rule (``_scan_gaps``)
    Given the placed buffers that conflict in time with the new one, sorted by offset, walk
    the gaps between them (starting with the gap above offset 0): *best fit* takes the
    smallest gap that is large enough (the lowest such gap on ties), *first fit* the lowest
    one; if none fits, the buffer goes right above the highest conflicting buffer. Only the
    *union* of the conflicting intervals matters, so they may be coalesced first.

Start order (``_place_sweep``)
    Buffers placed by increasing start conflict exactly with the placed buffers still live
    at their start, and those are pairwise disjoint: the rule becomes an ordinary
    allocator. Live offsets in a sorted array, a min-heap of ends for expiry, and (best
    fit) the free gaps in a list sorted by (size, bottom): one binary search per placement,
    a split per placement, a merge per expiry. O(n log L) + memmove, L = live buffers.

Any other order (``_place_bucketed``)
    Placed buffers are kept in a *levelled bucket index over time*: a buffer whose span
    covers ``p`` points lives on level ``l = bit_length((p - 1) >> sh0)``, whose buckets
    are ``2**(sh0 + l)`` points wide (level 0 about four times the median span), so it is
    stored in at most two buckets of its level.
    Each bucket keeps its entries sorted by offset (insertion by memmove; the final bucket
    sizes are known in advance, so all storage is one preallocated CSR array). A query for
    ``[s, e]`` visits, on every non-empty level, the buckets overlapping ``[s, e]``; with one
    or two buckets the rule runs directly on the merged, filtered entries (first fit stops
    at the first fitting gap); otherwise each bucket's conflicting entries (each buffer
    counted once, in the first visited bucket holding it) are coalesced into their union
    and the short sorted runs merged bottom-up. Cost per buffer: about the entries of the
    visited buckets (roughly twice the placed buffers it conflicts with).

Exact search (``_dfs``, ``_DfsSolver``)
    Time is cut into *sections* (between consecutive start / end+1 points); a floor per
    section is the height below which everything is decided. Each node computes, for every
    section, the lowest level any unplaced buffer covering it can still take (the highest
    floor of that buffer's span, minimised over the buffers): space below it is dead, and
    a section whose usable level plus the sizes still to place over it exceeds the target
    height prunes the node. It then takes the section with the lowest usable level (fail
    first on ties) and branches on each buffer that can sit exactly there, then on "that
    point stays empty" (the section's floor rises to the next level a buffer covering it
    could take). Complete: an exhausted search proves the height impossible. Iterative
    with an explicit stack and an undo trail, so it runs without the GIL and checks a
    deadline every 1024 nodes.

One call (``_py_heuristics``)
    ``plan_offsets`` without a search is one kernel call: sizes to units, time compression
    (``_compress``: a shift, or the ranks of the distinct steps), the max-live bound in
    units, then the heuristics in turn (order, gather, place, arena) until one reaches the
    bound, all on one scratch block sized for the largest of them. The bucket layout
    (``_bucket_layout``) depends on the set of buffers only, and every order starts from the
    same stable sort by size, so both are computed once.

Nothing here allocates inside ``nogil``: scratch arrays come from numpy first.
"""

import numpy as np

from libc.stdint cimport uint64_t
from libc.string cimport memcpy, memmove, memset

from memcore._bits cimport bit_length
from memcore._typedefs cimport idx_t


cdef extern from *:
    """
    #include <stdint.h>
    /* (a * b + c) as a 128-bit unsigned value split into two 64-bit halves. */
    static inline void memcore_mul_add_u128(uint64_t a, uint64_t b, uint64_t c,
                                            uint64_t *hi, uint64_t *lo) {
        unsigned __int128 p = (unsigned __int128)a * b + c;
        *hi = (uint64_t)(p >> 64);
        *lo = (uint64_t)p;
    }
    """
    void memcore_mul_add_u128(uint64_t a, uint64_t b, uint64_t c,
                              uint64_t *hi, uint64_t *lo) noexcept nogil


# Order codes; memcore/offsets.py names them (its _ORDER_CODE table).
cdef enum:
    ORD_SIZE = 0        # size desc
    ORD_START = 1       # start asc, size desc
    ORD_LIFETIME = 2    # (end - start) desc, size desc
    ORD_AREA = 3        # size * (end - start + 1) desc, size desc
    ORD_BREADTH = 4     # max live bytes over the lifetime desc, its first point asc, size desc
    ORD_CONFLICT = 5    # number of conflicting buffers desc, size desc

cdef enum:
    RADIX_BITS = 11
    RADIX = 2048

cdef uint64_t SIGN_BIT = 0x8000000000000000ULL

cdef idx_t IDX_MAX = 0x7FFFFFFFFFFFFFFF


# -------------------------------------------------------------------------------------------
# Stable radix argsort
# -------------------------------------------------------------------------------------------

cdef enum:
    INSERTION_MAX = 24  # below this many pairs, a (stable) insertion sort


cdef void _radix_argsort(
    uint64_t* key, idx_t* perm, uint64_t* key_tmp, idx_t* perm_tmp, Py_ssize_t n
) noexcept nogil:
    """Stable sort of the pairs (key[i], perm[i]) by key; the result is left in key/perm.

    key_tmp and perm_tmp are scratch of length n. LSD radix sort of ``key - min(key)``; the
    digit width (at most 11 bits) minimises passes x (count-table size + elements), so a
    small input does not pay for a large count table, and passes over digits that are equal
    for every element are skipped. A handful of pairs are insertion-sorted. (Any stable
    sort gives the same permutation.)
    """
    cdef Py_ssize_t i, x
    cdef Py_ssize_t count[RADIX]
    cdef Py_ssize_t pos, total, radix
    cdef uint64_t kmin, kmax, d, k
    cdef uint64_t* ka = key
    cdef uint64_t* kb = key_tmp
    cdef uint64_t* kswap
    cdef idx_t* pa = perm
    cdef idx_t* pb = perm_tmp
    cdef idx_t* pswap
    cdef idx_t p
    cdef Py_ssize_t best, cost
    cdef int shift = 0, bits, width, passes, range_bits
    if n <= 1:
        return
    if n <= INSERTION_MAX:
        for i in range(1, n):
            k = key[i]
            p = perm[i]
            x = i
            while x > 0 and key[x - 1] > k:
                key[x] = key[x - 1]
                perm[x] = perm[x - 1]
                x -= 1
            key[x] = k
            perm[x] = p
        return
    kmin = kmax = key[0]
    for i in range(1, n):
        if key[i] > kmax:
            kmax = key[i]
        if key[i] < kmin:
            kmin = key[i]
    if kmin == kmax:
        return  # one key value: already in (stable) order
    # digit width: the fewest (passes x (3 per bucket + 6 per element)) for this range
    range_bits = bit_length(kmax - kmin)
    bits = RADIX_BITS
    best = -1
    for passes in range((range_bits + RADIX_BITS - 1) // RADIX_BITS, range_bits + 1):
        width = (range_bits + passes - 1) // passes
        cost = passes * (3 * ((<Py_ssize_t>1) << width) + 6 * n)
        if best < 0 or cost < best:
            best = cost
            bits = width
    radix = (<Py_ssize_t>1) << bits
    while shift < 64 and ((kmax - kmin) >> shift) != 0:
        memset(count, 0, radix * sizeof(Py_ssize_t))
        for i in range(n):
            count[((ka[i] - kmin) >> shift) & (radix - 1)] += 1
        if count[((ka[0] - kmin) >> shift) & (radix - 1)] == n:
            shift += bits
            continue
        total = 0
        for i in range(radix):
            pos = count[i]
            count[i] = total
            total += pos
        for i in range(n):
            d = ((ka[i] - kmin) >> shift) & (radix - 1)
            pos = count[d]
            count[d] += 1
            kb[pos] = ka[i]
            pb[pos] = pa[i]
        kswap = ka
        ka = kb
        kb = kswap
        pswap = pa
        pa = pb
        pb = pswap
        shift += bits
    if pa != perm:
        memcpy(perm, pa, n * sizeof(idx_t))
        memcpy(key, ka, n * sizeof(uint64_t))


cdef void _sort_by(
    const uint64_t* key_of, idx_t* perm, uint64_t* key_buf, uint64_t* key_tmp,
    idx_t* perm_tmp, Py_ssize_t m
) noexcept nogil:
    """Stable-sort the m buffer ids in perm by key_of[id]."""
    cdef Py_ssize_t i
    for i in range(m):
        key_buf[i] = key_of[perm[i]]
    _radix_argsort(key_buf, perm, key_tmp, perm_tmp, m)


# -------------------------------------------------------------------------------------------
# Breadth: the max live bytes over each buffer's lifetime, and where it is first reached
# -------------------------------------------------------------------------------------------

cdef idx_t _units_profile(
    const idx_t* s, const idx_t* e, const idx_t* size, Py_ssize_t n, idx_t n_points,
    idx_t* profile
) noexcept nogil:
    """profile[t] = sum of the sizes of the buffers live at point t (0 <= t < n_points);
    returns its maximum (0 for no point), the max-live bound in units. profile has
    n_points + 1 slots."""
    cdef Py_ssize_t i
    cdef idx_t t, live = 0, peak = 0
    memset(profile, 0, (n_points + 1) * sizeof(idx_t))
    for i in range(n):
        profile[s[i]] += size[i]
        profile[e[i] + 1] -= size[i]
    for t in range(n_points):
        live += profile[t]
        profile[t] = live
        if live > peak:
            peak = live
    return peak


cdef inline idx_t _tree_width(idx_t n_points) noexcept nogil:
    """The power of two >= n_points (the leaves of the breadth segment tree)."""
    cdef idx_t width = 1
    while width < n_points:
        width *= 2
    return width


cdef void _max_breadth(
    const idx_t* s, const idx_t* e, const idx_t* size, Py_ssize_t n, idx_t n_points,
    idx_t* profile, idx_t* tree, idx_t* best_val, idx_t* best_at
) noexcept nogil:
    """best_val[i] = max profile over [s[i], e[i]], best_at[i] = first point reaching it.

    profile has n_points + 1 slots; tree (an iterative max segment tree of point indices,
    ties to the smaller index) has 2 * width slots, width = _tree_width(n_points).
    """
    cdef Py_ssize_t i
    cdef idx_t t, width = _tree_width(n_points), lo, hi, a, b, cand
    _units_profile(s, e, size, n, n_points, profile)
    for t in range(width):
        tree[width + t] = t if t < n_points else -1
    t = width - 1
    while t >= 1:
        a = tree[2 * t]
        b = tree[2 * t + 1]
        if b < 0 or (a >= 0 and profile[a] >= profile[b]):
            tree[t] = a
        else:
            tree[t] = b
        t -= 1
    for i in range(n):
        if size[i] == 0:
            best_val[i] = 0
            best_at[i] = s[i]
            continue
        lo = s[i] + width
        hi = e[i] + width + 1
        a = -1
        while lo < hi:
            if lo & 1:
                cand = tree[lo]
                if a < 0 or profile[cand] > profile[a] or (
                        profile[cand] == profile[a] and cand < a):
                    a = cand
                lo += 1
            if hi & 1:
                hi -= 1
                cand = tree[hi]
                if a < 0 or profile[cand] > profile[a] or (
                        profile[cand] == profile[a] and cand < a):
                    a = cand
            lo >>= 1
            hi >>= 1
        best_val[i] = profile[a]
        best_at[i] = a


cdef void _conflict_counts(
    const idx_t* s, const idx_t* e, const idx_t* size, Py_ssize_t n, idx_t n_points,
    idx_t* starts_le, idx_t* ends_lt, uint64_t* key
) noexcept nogil:
    """key[i] = ~(number of other non-empty buffers conflicting with buffer i).

    A buffer [s', e'] meets [s, e] iff s' <= e and not e' < s; with prefix counts over the
    points, that is #(s' <= e) - #(e' < s). starts_le / ends_lt have n_points + 1 slots,
    zeroed by the caller.
    """
    cdef Py_ssize_t i
    cdef idx_t t
    for i in range(n):
        if size[i] > 0:
            starts_le[s[i]] += 1
            ends_lt[e[i] + 1] += 1
    for t in range(1, n_points + 1):
        starts_le[t] += starts_le[t - 1]
        ends_lt[t] += ends_lt[t - 1]
    for i in range(n):
        # minus one for the buffer itself
        key[i] = ~<uint64_t>(starts_le[e[i]] - ends_lt[s[i]] - 1)


# -------------------------------------------------------------------------------------------
# Orders
# -------------------------------------------------------------------------------------------

cdef inline Py_ssize_t _order_scratch(int code, Py_ssize_t n, Py_ssize_t m, idx_t n_points) noexcept nogil:
    """int64 slots of scratch that _order_into needs for the order ``code``."""
    cdef Py_ssize_t need = n + 3 * m
    if code == ORD_AREA:
        need += n
    elif code == ORD_CONFLICT:
        need += 2 * (n_points + 1)
    elif code == ORD_BREADTH:
        need += n_points + 1 + 2 * _tree_width(n_points) + 2 * n
    return need


cdef void _order_into(
    int code, const idx_t* start, const idx_t* end, const idx_t* s, const idx_t* e,
    const idx_t* size, Py_ssize_t n, idx_t n_points, idx_t* perm, Py_ssize_t m,
    idx_t* scratch, const idx_t* by_size
) noexcept nogil:
    """perm[0:m] = the priority order of the m buffers with size > 0 for the order ``code``.

    ``start``/``end`` are the caller's steps (lifetimes and areas use them), ``s``/``e`` the
    compressed points (breadth and conflicts use them), ``size`` the sizes in units; all
    of length n. ``scratch`` holds ``_order_scratch(code, n, m, n_points)`` int64.
    ``by_size``: the ORD_SIZE order when already known (every order starts from it), else
    NULL.
    """
    cdef Py_ssize_t i, j = 0
    cdef uint64_t* key_of = <uint64_t*>scratch
    cdef uint64_t* key_buf = key_of + n
    cdef uint64_t* key_tmp = key_buf + m
    cdef idx_t* perm_tmp = <idx_t*>(key_tmp + m)
    cdef idx_t* extra = perm_tmp + m  # the order's own scratch
    cdef uint64_t* key2_of = <uint64_t*>extra  # ORD_AREA's high key
    cdef idx_t* profile
    cdef idx_t* tree
    cdef idx_t* bval
    cdef idx_t* bat
    cdef uint64_t hi, lo, vmin = 0xFFFFFFFFFFFFFFFF
    if m == 0:
        return
    # Step 1. Secondary key (size desc) for every order but ORD_SIZE's own.
    if by_size != NULL:
        memcpy(perm, by_size, m * sizeof(idx_t))
    else:
        for i in range(n):
            if size[i] > 0:
                perm[j] = i
                j += 1
        for i in range(n):
            key_of[i] = <uint64_t>(IDX_MAX - size[i])
        _sort_by(key_of, perm, key_buf, key_tmp, perm_tmp, m)
    # Step 2. Primary keys, least significant first.
    if code == ORD_START:
        # start ^ SIGN_BIT maps int64 order onto uint64 order
        for i in range(n):
            if (<uint64_t>start[i] ^ SIGN_BIT) < vmin:
                vmin = <uint64_t>start[i] ^ SIGN_BIT
        for i in range(n):
            key_of[i] = (<uint64_t>start[i] ^ SIGN_BIT) - vmin
        _sort_by(key_of, perm, key_buf, key_tmp, perm_tmp, m)
    elif code == ORD_LIFETIME:
        for i in range(n):
            key_of[i] = ~(<uint64_t>end[i] - <uint64_t>start[i])
        _sort_by(key_of, perm, key_buf, key_tmp, perm_tmp, m)
    elif code == ORD_AREA:
        for i in range(n):
            # size * (end - start + 1) = size * (end - start) + size, exact in 128 bits
            memcore_mul_add_u128(<uint64_t>size[i], <uint64_t>end[i] - <uint64_t>start[i],
                                 <uint64_t>size[i], &hi, &lo)
            key_of[i] = ~lo
            key2_of[i] = ~hi
        _sort_by(key_of, perm, key_buf, key_tmp, perm_tmp, m)
        _sort_by(key2_of, perm, key_buf, key_tmp, perm_tmp, m)
    elif code == ORD_BREADTH:
        profile = extra
        tree = profile + n_points + 1
        bval = tree + 2 * _tree_width(n_points)
        bat = bval + n
        _max_breadth(s, e, size, n, n_points, profile, tree, bval, bat)
        for i in range(n):
            key_of[i] = <uint64_t>bat[i]
        _sort_by(key_of, perm, key_buf, key_tmp, perm_tmp, m)
        for i in range(n):
            key_of[i] = <uint64_t>(IDX_MAX - bval[i])
        _sort_by(key_of, perm, key_buf, key_tmp, perm_tmp, m)
    elif code == ORD_CONFLICT:
        memset(extra, 0, 2 * (n_points + 1) * sizeof(idx_t))
        _conflict_counts(s, e, size, n, n_points, extra, extra + n_points + 1, key_of)
        _sort_by(key_of, perm, key_buf, key_tmp, perm_tmp, m)


def _py_order(int code, start, end, s, e, size, idx_t n_points):
    """Priority order of the buffers with size > 0 for the order ``code`` (int64 ids).

    ``start``/``end`` are the caller's steps (lifetimes and areas use them), ``s``/``e`` the
    compressed points (breadth uses them), ``size`` the sizes in units.
    """
    cdef const idx_t[::1] start_v = start
    cdef const idx_t[::1] end_v = end
    cdef const idx_t[::1] s_v = s
    cdef const idx_t[::1] e_v = e
    cdef const idx_t[::1] size_v = size
    cdef Py_ssize_t n = size.shape[0], i, m = 0
    for i in range(n):
        if size_v[i] > 0:
            m += 1
    perm = np.empty(m, dtype=np.int64)
    if m == 0:
        return perm
    cdef idx_t[::1] perm_v = perm
    cdef idx_t[::1] scratch = np.empty(_order_scratch(code, n, m, n_points), dtype=np.int64)
    with nogil:
        _order_into(code, &start_v[0], &end_v[0], &s_v[0], &e_v[0], &size_v[0], n, n_points,
                    &perm_v[0], m, &scratch[0], NULL)
    return perm


def _py_sort_by_keys(keys, perm):
    """Test hook and helper: stable-sort int64 ``perm`` by the uint64 rows of ``keys``.

    ``keys`` has shape (n_keys, n): row 0 is the most significant key, indexed by buffer id.
    Returns a new array.
    """
    perm = np.array(perm, dtype=np.int64, copy=True)
    cdef idx_t[::1] perm_v = perm
    cdef Py_ssize_t m = perm.shape[0], r
    if m == 0:
        return perm
    cdef uint64_t[::1] key_buf = np.empty(m, dtype=np.uint64)
    cdef uint64_t[::1] key_tmp = np.empty(m, dtype=np.uint64)
    cdef idx_t[::1] perm_tmp = np.empty(m, dtype=np.int64)
    cdef const uint64_t[::1] row
    for r in range(keys.shape[0] - 1, -1, -1):
        row = np.ascontiguousarray(keys[r], dtype=np.uint64)
        with nogil:
            _sort_by(&row[0], &perm_v[0], &key_buf[0], &key_tmp[0], &perm_tmp[0], m)
    return perm


# -------------------------------------------------------------------------------------------
# The placement rule
# -------------------------------------------------------------------------------------------

cdef inline idx_t _scan_gaps(
    const idx_t* pairs, Py_ssize_t k, idx_t size, bint first_fit
) noexcept nogil:
    """Offset for a buffer of ``size`` given k (offset, top) pairs sorted by offset."""
    cdef Py_ssize_t i
    cdef idx_t prev = 0, best = -1, best_gap = IDX_MAX, gap, off, top
    for i in range(k):
        off = pairs[2 * i]
        top = pairs[2 * i + 1]
        gap = off - prev
        if gap >= size and gap < best_gap:
            best = prev
            best_gap = gap
            if first_fit:
                return best
        if top > prev:
            prev = top
    return best if best >= 0 else prev


# -------------------------------------------------------------------------------------------
# Start-ordered placement: an allocator over the live buffers
# -------------------------------------------------------------------------------------------

cdef inline Py_ssize_t _gap_find(
    const idx_t* g_size, const idx_t* g_bot, Py_ssize_t ng, idx_t size, idx_t bot
) noexcept nogil:
    """First position in the (size, bottom)-sorted gap list not below (size, bot)."""
    cdef Py_ssize_t lo = 0, hi = ng, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if g_size[mid] < size or (g_size[mid] == size and g_bot[mid] < bot):
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t _gap_add(
    idx_t* g_size, idx_t* g_bot, Py_ssize_t ng, idx_t size, idx_t bot
) noexcept nogil:
    cdef Py_ssize_t j
    if size <= 0:
        return ng
    j = _gap_find(g_size, g_bot, ng, size, bot)
    memmove(&g_size[j + 1], &g_size[j], (ng - j) * sizeof(idx_t))
    memmove(&g_bot[j + 1], &g_bot[j], (ng - j) * sizeof(idx_t))
    g_size[j] = size
    g_bot[j] = bot
    return ng + 1


cdef inline Py_ssize_t _gap_remove(
    idx_t* g_size, idx_t* g_bot, Py_ssize_t ng, idx_t size, idx_t bot
) noexcept nogil:
    cdef Py_ssize_t j
    if size <= 0:
        return ng
    j = _gap_find(g_size, g_bot, ng, size, bot)
    memmove(&g_size[j], &g_size[j + 1], (ng - j - 1) * sizeof(idx_t))
    memmove(&g_bot[j], &g_bot[j + 1], (ng - j - 1) * sizeof(idx_t))
    return ng - 1


cdef bint _place_sweep(
    const idx_t* s, const idx_t* e, const idx_t* size, Py_ssize_t m, bint first_fit,
    idx_t* act_off, idx_t* tops, idx_t* heap_end, idx_t* heap_off,
    idx_t* g_size, idx_t* g_bot, idx_t* offset, idx_t limit
) noexcept nogil:
    """Place the buffers 0..m-1 (given by non-decreasing start) one by one; stop (False)
    at the first one whose top would exceed ``limit``.

    The placed buffers still live at the current start are pairwise disjoint, so the gaps
    of the placement rule are the gaps between neighbours in offset order, and a plain
    allocator with coalescing free gaps does the job:

    - ``act_off[0:na]``: offsets of the live buffers, sorted; ``tops[i + 1]`` the top of
      live buffer i, ``tops[0] = 0`` (gap i is ``act_off[i] - tops[i]``);
    - a min-heap of (end, offset) to find the buffers that expire (offsets are unique among
      live buffers, so a binary search locates each);
    - best fit only: the positive gaps as a list sorted by (size, bottom), so the smallest
      fitting gap, lowest on ties, is one binary search; a placement splits one gap, an
      expiry merges at most two.

    First fit walks the live buffers up to the first fitting gap. Scratch: act_off,
    heap_end, heap_off, g_size, g_bot of length m, tops of m + 1.
    """
    cdef Py_ssize_t k, i, na = 0, nh = 0, ng = 0, ins, lo, hi, mid
    cdef Py_ssize_t c, child, j
    cdef idx_t b, sb, sz, he, ho, off
    tops[0] = 0
    for k in range(m):
        b = k
        sb = s[b]
        sz = size[b]
        # Step 1. Remove the buffers that ended before this start (and merge their gaps).
        while nh > 0 and heap_end[0] < sb:
            ho = heap_off[0]
            lo = 0
            hi = na
            while lo < hi:
                mid = (lo + hi) >> 1
                if act_off[mid] < ho:
                    lo = mid + 1
                else:
                    hi = mid
            if not first_fit:
                ng = _gap_remove(g_size, g_bot, ng, act_off[lo] - tops[lo], tops[lo])
                if lo + 1 < na:
                    ng = _gap_remove(g_size, g_bot, ng, act_off[lo + 1] - tops[lo + 1],
                                     tops[lo + 1])
                    ng = _gap_add(g_size, g_bot, ng, act_off[lo + 1] - tops[lo], tops[lo])
            memmove(&act_off[lo], &act_off[lo + 1], (na - lo - 1) * sizeof(idx_t))
            memmove(&tops[lo + 1], &tops[lo + 2], (na - lo - 1) * sizeof(idx_t))
            na -= 1
            nh -= 1
            he = heap_end[nh]
            ho = heap_off[nh]
            c = 0
            while True:
                child = 2 * c + 1
                if child >= nh:
                    break
                if child + 1 < nh and heap_end[child + 1] < heap_end[child]:
                    child += 1
                if heap_end[child] >= he:
                    break
                heap_end[c] = heap_end[child]
                heap_off[c] = heap_off[child]
                c = child
            heap_end[c] = he
            heap_off[c] = ho
        # Step 2. The gap to use, else the top of the highest live buffer.
        ins = na
        if first_fit:
            for i in range(na):
                if act_off[i] - tops[i] >= sz:
                    ins = i
                    break
        else:
            j = _gap_find(g_size, g_bot, ng, sz, -1)
            if j < ng:
                # the live buffer right above that gap
                lo = 0
                hi = na
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if act_off[mid] <= g_bot[j]:
                        lo = mid + 1
                    else:
                        hi = mid
                ins = lo
        off = tops[ins]
        offset[b] = off
        if off + sz > limit:
            return False
        # Step 3. Insert into the sorted array, the gap list and the heap.
        if ins < na:
            if not first_fit:
                ng = _gap_remove(g_size, g_bot, ng, act_off[ins] - off, off)
                ng = _gap_add(g_size, g_bot, ng, act_off[ins] - off - sz, off + sz)
            memmove(&act_off[ins + 1], &act_off[ins], (na - ins) * sizeof(idx_t))
            memmove(&tops[ins + 2], &tops[ins + 1], (na - ins) * sizeof(idx_t))
        act_off[ins] = off
        tops[ins + 1] = off + sz
        na += 1
        he = e[b]
        c = nh
        nh += 1
        while c > 0 and heap_end[(c - 1) >> 1] > he:
            heap_end[c] = heap_end[(c - 1) >> 1]
            heap_off[c] = heap_off[(c - 1) >> 1]
            c = (c - 1) >> 1
        heap_end[c] = he
        heap_off[c] = off
    return True


# -------------------------------------------------------------------------------------------
# Arbitrary-order placement: the levelled bucket index
# -------------------------------------------------------------------------------------------

cdef void _count_buckets(
    const idx_t* s, const idx_t* e, Py_ssize_t m, int sh0,
    const idx_t* level_base, idx_t* count
) noexcept nogil:
    """count[g] = number of buffers stored in global bucket g (count zeroed by caller)."""
    cdef Py_ssize_t k
    cdef idx_t b, j
    cdef int lev, sh
    for k in range(m):
        b = k
        lev = bit_length(<uint64_t>(e[b] - s[b]) >> sh0)
        sh = sh0 + lev
        for j in range(s[b] >> sh, (e[b] >> sh) + 1):
            count[level_base[lev] + j] += 1


cdef void _merge_runs(
    idx_t* a, idx_t* b, idx_t* runs, Py_ssize_t n_runs, idx_t** result
) noexcept nogil:
    """Bottom-up merge of sorted runs of (offset, top) pairs.

    Run r is pairs [runs[r], runs[r + 1]) of ``a``; runs has n_runs + 1 entries and is
    overwritten. ``result`` receives whichever of a / b holds the merged pairs.
    """
    cdef Py_ssize_t r, w, i, j, k, o, i_end, j_end
    cdef int take_j
    cdef idx_t* src = a
    cdef idx_t* dst = b
    cdef idx_t* tmp
    while n_runs > 1:
        w = 0
        r = 0
        while r < n_runs:
            if r + 1 == n_runs:
                i = runs[r]
                i_end = runs[r + 1]
                memcpy(&dst[2 * i], &src[2 * i], (i_end - i) * 2 * sizeof(idx_t))
                runs[w] = runs[r]
                w += 1
                r += 1
                continue
            i = runs[r]
            i_end = runs[r + 1]
            j = i_end
            j_end = runs[r + 2]
            o = i
            while i < i_end and j < j_end:
                # branch-free step: pick the smaller head, advance its run
                take_j = src[2 * j] < src[2 * i]
                k = j if take_j else i
                dst[2 * o] = src[2 * k]
                dst[2 * o + 1] = src[2 * k + 1]
                j += take_j
                i += 1 - take_j
                o += 1
            if i < i_end:
                memcpy(&dst[2 * o], &src[2 * i], (i_end - i) * 2 * sizeof(idx_t))
            elif j < j_end:
                memcpy(&dst[2 * o], &src[2 * j], (j_end - j) * 2 * sizeof(idx_t))
            runs[w] = runs[r]
            w += 1
            r += 2
        runs[w] = runs[n_runs]
        n_runs = w
        tmp = src
        src = dst
        dst = tmp
    result[0] = src


cdef inline idx_t* _next_kept(
    idx_t* p, idx_t* stop, idx_t sb, idx_t eb, int first_bucket, int sh, idx_t j
) noexcept nogil:
    """First entry at or after p (stride 4) that the query [sb, eb] keeps in bucket j."""
    while p < stop and not ((p[2] <= eb) & (p[3] >= sb) &
                            (first_bucket | ((p[2] >> sh) == j))):
        p += 4
    return p


cdef idx_t _scan_buckets_2(
    idx_t* pa, idx_t* stop_a, int first_a, int sh_a, idx_t j_a,
    idx_t* pb, idx_t* stop_b, int first_b, int sh_b, idx_t j_b,
    idx_t sb, idx_t eb, idx_t size, bint first_fit
) noexcept nogil:
    """The placement rule over the kept entries of two offset-sorted buckets, merged on the
    fly (no copy); pass an empty second bucket (pb == stop_b) for a single one."""
    cdef idx_t prev = 0, best = -1, best_gap = IDX_MAX, gap
    cdef idx_t* p
    pa = _next_kept(pa, stop_a, sb, eb, first_a, sh_a, j_a)
    pb = _next_kept(pb, stop_b, sb, eb, first_b, sh_b, j_b)
    while pa < stop_a or pb < stop_b:
        if pb >= stop_b or (pa < stop_a and pa[0] <= pb[0]):
            p = pa
            pa = _next_kept(pa + 4, stop_a, sb, eb, first_a, sh_a, j_a)
        else:
            p = pb
            pb = _next_kept(pb + 4, stop_b, sb, eb, first_b, sh_b, j_b)
        gap = p[0] - prev
        if gap >= size and gap < best_gap:
            best = prev
            best_gap = gap
            if first_fit:
                return best
        if p[1] > prev:
            prev = p[1]
    return best if best >= 0 else prev


cdef bint _place_bucketed(
    const idx_t* s, const idx_t* e, const idx_t* size, Py_ssize_t m,
    bint first_fit, int sh0, int n_levels,
    const idx_t* level_base, const idx_t* bstart, idx_t* bfill,
    idx_t* ent, idx_t* tmp_a, idx_t* tmp_b, idx_t* runs, idx_t* visit, idx_t* offset,
    idx_t limit
) noexcept nogil:
    """Place the buffers 0..m-1 one by one with the levelled bucket index (module docs);
    stop (False) at the first one whose top would exceed ``limit``.

    ent holds 4 int64 per stored entry (offset, top, s, e); bucket g owns entries
    [bstart[g], bstart[g + 1]) of which the first bfill[g] are in use (bfill zeroed by the
    caller). tmp_a / tmp_b hold 2 * m int64; runs and visit (4 int64 per visited bucket)
    hold len(bstart) + 2 * n_levels + 2 rows.
    """
    cdef Py_ssize_t k, c, lo, hi, mid, f, v, n_visit
    cdef idx_t b, sb, eb, sz, j, j0, j1, g, off, cur_off, cur_top
    cdef idx_t* p
    cdef idx_t* q
    cdef idx_t* merged
    cdef idx_t* va
    cdef idx_t* vb
    cdef Py_ssize_t n_runs, n_pairs
    cdef int lev, sh, first_bucket
    cdef uint64_t used_levels = 0
    for k in range(m):
        b = k
        sb = s[b]
        eb = e[b]
        sz = size[b]
        # Step 1. The non-empty buckets that may hold placed buffers conflicting with
        # [sb, eb]: rows (bucket, j, j == j0, shift).
        n_visit = 0
        for lev in range(n_levels):
            if not (used_levels >> lev) & 1:
                continue
            sh = sh0 + lev
            j0 = sb >> sh
            j1 = eb >> sh
            for j in range(j0, j1 + 1):
                g = level_base[lev] + j
                if bfill[g] == 0:
                    continue
                visit[4 * n_visit] = g
                visit[4 * n_visit + 1] = j
                visit[4 * n_visit + 2] = j == j0
                visit[4 * n_visit + 3] = sh
                n_visit += 1
        # Step 2. Apply the rule: on the fly for one or two buckets, else gather the kept
        # entries of each bucket as a sorted run and merge the runs first.
        if n_visit == 0:
            off = 0
        elif n_visit <= 2:
            va = visit
            vb = visit + 4 * (n_visit - 1)
            p = &ent[4 * bstart[va[0]]]
            q = &ent[4 * bstart[vb[0]]]
            if n_visit == 1:
                q = p + 4 * bfill[va[0]]  # empty second stream
            off = _scan_buckets_2(
                p, p + 4 * bfill[va[0]], <int>va[2], <int>va[3], va[1],
                q, &ent[4 * bstart[vb[0]]] + 4 * bfill[vb[0]] if n_visit == 2 else q,
                <int>vb[2], <int>vb[3], vb[1], sb, eb, sz, first_fit)
        else:
            n_runs = 0
            n_pairs = 0
            for v in range(n_visit):
                g = visit[4 * v]
                j = visit[4 * v + 1]
                first_bucket = <int>visit[4 * v + 2]
                sh = <int>visit[4 * v + 3]
                f = bfill[g]
                runs[n_runs] = n_pairs
                p = &ent[4 * bstart[g]]
                q = &tmp_a[2 * n_pairs]
                # Keep the conflicting entries, coalesced into their union as we go (only
                # the gaps between them matter): in a packed arena a bucket's hundreds of
                # entries shrink to a few intervals, which makes the merge cheap.
                cur_off = -1
                cur_top = -1
                for c in range(f):
                    if (p[2] <= eb) & (p[3] >= sb) & (first_bucket | ((p[2] >> sh) == j)):
                        if p[0] <= cur_top:
                            if p[1] > cur_top:
                                cur_top = p[1]
                        else:
                            if cur_top >= 0:
                                q[0] = cur_off
                                q[1] = cur_top
                                q += 2
                            cur_off = p[0]
                            cur_top = p[1]
                    p += 4
                if cur_top >= 0:
                    q[0] = cur_off
                    q[1] = cur_top
                    q += 2
                c = (q - tmp_a) >> 1
                if c > n_pairs:
                    n_pairs = c
                    n_runs += 1
            runs[n_runs] = n_pairs
            merged = tmp_a
            if n_runs > 1:
                _merge_runs(tmp_a, tmp_b, runs, n_runs, &merged)
            off = _scan_gaps(merged, n_pairs, sz, first_fit)
        offset[b] = off
        if off + sz > limit:
            return False
        # Step 3. Store the buffer in its (at most two) buckets, sorted by offset.
        lev = bit_length(<uint64_t>(eb - sb) >> sh0)
        used_levels |= (<uint64_t>1) << lev
        sh = sh0 + lev
        for j in range(sb >> sh, (eb >> sh) + 1):
            g = level_base[lev] + j
            f = bfill[g]
            p = &ent[4 * bstart[g]]
            lo = 0
            hi = f
            while lo < hi:
                mid = (lo + hi) >> 1
                if p[4 * mid] <= off:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < f:
                memmove(&p[4 * (lo + 1)], &p[4 * lo], (f - lo) * 4 * sizeof(idx_t))
            p[4 * lo] = off
            p[4 * lo + 1] = off + sz
            p[4 * lo + 2] = sb
            p[4 * lo + 3] = eb
            bfill[g] = f + 1
    return True


cdef enum:
    MAX_LEVELS = 66     # bit_length of a span (<= 64) + 1, plus the end sentinel


cdef struct Layout:
    # The bucket index of _place_bucketed for one set of buffers (any order of them).
    int sh0             # level-0 buckets are 2**sh0 points wide
    int n_levels
    idx_t total         # buckets over all levels
    idx_t level_base[MAX_LEVELS]  # first global bucket of each level; [n_levels] = total


cdef void _bucket_layout(
    const idx_t* s, const idx_t* e, const idx_t* size, Py_ssize_t n, idx_t n_points,
    int sh0, Layout* lay
) noexcept nogil:
    """The bucket layout of the buffers with size > 0 (every buffer when size is NULL).

    ``sh0 < 0``: level-0 buckets about four times as wide as the median span, i.e. sh0 = 2 +
    bit_length of the (m // 2)-th smallest span, read off a histogram of the spans' bit
    lengths (bit_length is monotone): faster than buckets as wide as the median span on
    model pools and random workloads alike (fewer levels and buckets to visit). The
    layout depends on the set of buffers only, not on their order, and never changes a plan.
    """
    cdef Py_ssize_t hist[65]
    cdef Py_ssize_t i, m = 0, below = 0
    cdef idx_t span, max_span = 0, total = 0
    cdef int lev, bl
    memset(hist, 0, sizeof(hist))
    for i in range(n):
        if size != NULL and size[i] <= 0:
            continue
        span = e[i] - s[i]
        hist[bit_length(<uint64_t>span)] += 1
        if span > max_span:
            max_span = span
        m += 1
    if sh0 < 0:
        sh0 = 0
        for bl in range(65):
            below += hist[bl]
            if below > m // 2:
                sh0 = bl + 2
                break
    if sh0 > 62:
        sh0 = 62  # every shift sh0 + level stays below 64
    lay.sh0 = sh0
    lay.n_levels = bit_length(<uint64_t>max_span >> sh0) + 1
    for lev in range(lay.n_levels):
        lay.level_base[lev] = total
        total += ((n_points - 1) >> (sh0 + lev)) + 1
    lay.level_base[lay.n_levels] = total
    lay.total = total


cdef inline Py_ssize_t _place_scratch(const Layout* lay, Py_ssize_t m, bint sweep) noexcept nogil:
    """int64 slots of scratch that _place_gathered needs."""
    cdef Py_ssize_t rows
    if sweep:
        return 6 * m + 1
    rows = lay.total + 2 * lay.n_levels + 2
    # count, bstart, entries (4 int64 each, a buffer in at most two buckets), two pair
    # buffers, runs, visit
    return lay.total + (lay.total + 1) + 8 * m + 4 * m + rows + 4 * rows


cdef bint _place_gathered(
    const idx_t* s, const idx_t* e, const idx_t* size, Py_ssize_t m, bint first_fit,
    bint sweep, const Layout* lay, idx_t* scratch, idx_t* offset, idx_t limit
) noexcept nogil:
    """offset[k] = offset (units) of the k-th buffer placed, for the m buffers given in
    processing order (their attributes gathered in that order: one sequential read per
    buffer instead of three random ones). ``sweep`` requires non-decreasing ``s``; ``lay``
    is the layout of these buffers (unused by the sweep); ``scratch`` holds
    ``_place_scratch(lay, m, sweep)`` int64. Returns False, leaving the rest of ``offset``
    unset, as soon as a buffer's top would exceed ``limit`` (every top is at most the
    arena, so the plan's arena would too)."""
    cdef idx_t* count
    cdef idx_t* bstart
    cdef idx_t* ent
    cdef idx_t* tmp_a
    cdef idx_t* tmp_b
    cdef idx_t* runs
    cdef idx_t* visit
    cdef Py_ssize_t g, rows
    if m == 0:
        return True
    if sweep:
        return _place_sweep(s, e, size, m, first_fit, scratch, scratch + m,
                            scratch + 2 * m + 1, scratch + 3 * m + 1, scratch + 4 * m + 1,
                            scratch + 5 * m + 1, offset, limit)
    rows = lay.total + 2 * lay.n_levels + 2
    count = scratch
    bstart = count + lay.total
    ent = bstart + lay.total + 1
    tmp_a = ent + 8 * m
    tmp_b = tmp_a + 2 * m
    runs = tmp_b + 2 * m
    visit = runs + rows
    memset(count, 0, lay.total * sizeof(idx_t))
    _count_buckets(s, e, m, lay.sh0, lay.level_base, count)
    bstart[0] = 0
    for g in range(lay.total):
        bstart[g + 1] = bstart[g] + count[g]
    memset(count, 0, lay.total * sizeof(idx_t))
    return _place_bucketed(s, e, size, m, first_fit, lay.sh0, lay.n_levels, lay.level_base,
                           bstart, count, ent, tmp_a, tmp_b, runs, visit, offset, limit)


def _py_place(s, e, size, order, idx_t n_points, bint first_fit, bint sweep, int sh0=-1):
    """Offsets (units) of the buffers in ``order``, placed one by one by the rule.

    ``sweep=True`` requires ``order`` sorted by start (``s``) and uses the live-buffer
    allocator; otherwise the bucket index is used (``sh0 < 0``: chosen from the spans).
    Buffers not in ``order`` (size 0) get offset 0.
    """
    cdef Py_ssize_t n = s.shape[0], m = order.shape[0]
    offset = np.zeros(n, dtype=np.int64)
    if m == 0:
        return offset
    s_o = s[order]
    e_o = e[order]
    z_o = size[order]
    off_o = np.empty(m, dtype=np.int64)
    cdef const idx_t[::1] s_v = s_o
    cdef const idx_t[::1] e_v = e_o
    cdef const idx_t[::1] size_v = z_o
    cdef idx_t[::1] offset_v = off_o
    cdef Layout lay
    if not sweep:
        _bucket_layout(&s_v[0], &e_v[0], NULL, m, n_points, sh0, &lay)
    cdef idx_t[::1] scratch = np.empty(_place_scratch(&lay, m, sweep), dtype=np.int64)
    with nogil:
        _place_gathered(&s_v[0], &e_v[0], &size_v[0], m, first_fit, sweep, &lay, &scratch[0],
                        &offset_v[0], IDX_MAX)
    offset[order] = off_o
    return offset


# -------------------------------------------------------------------------------------------
# Time compression, and every heuristic of one call in one kernel
# -------------------------------------------------------------------------------------------

cdef bint _small_range(
    const idx_t* start, const idx_t* end, Py_ssize_t n, idx_t* lo, idx_t* hi
) noexcept nogil:
    """Whether the steps span at most 4 n + 64 points, with lo = min start and hi = max end
    (time is then only shifted by lo); n >= 1, start <= end."""
    cdef Py_ssize_t i
    cdef idx_t low = start[0], high = end[0]
    for i in range(1, n):
        if start[i] < low:
            low = start[i]
        if end[i] > high:
            high = end[i]
    lo[0] = low
    hi[0] = high
    # high >= low (an end is >= its start): the unsigned difference is exact
    return <uint64_t>high - <uint64_t>low <= <uint64_t>(4 * n + 64)


cdef idx_t _compress(
    const idx_t* start, const idx_t* end, Py_ssize_t n, bint small, idx_t lo, idx_t hi,
    idx_t* s, idx_t* e, idx_t* scratch
) noexcept nogil:
    """Compress time to points 0..n_points-1 preserving every intersection; returns n_points.

    A shift when the range is small, else the rank of each start / end among the distinct
    values of both (one radix argsort of the 2n values; ``scratch``: 8 n int64, unused when
    ``small``)."""
    cdef Py_ssize_t i, n2 = 2 * n
    cdef uint64_t* key
    cdef uint64_t* key_tmp
    cdef idx_t* perm
    cdef idx_t* perm_tmp
    cdef uint64_t vmin = 0xFFFFFFFFFFFFFFFF, v, last
    cdef idx_t rank = -1, j
    if small:
        for i in range(n):
            s[i] = start[i] - lo
            e[i] = end[i] - lo
        return hi - lo + 1
    key = <uint64_t*>scratch
    key_tmp = key + n2
    perm = <idx_t*>(key_tmp + n2)
    perm_tmp = perm + n2
    for i in range(n):
        key[i] = <uint64_t>start[i] ^ SIGN_BIT
        key[n + i] = <uint64_t>end[i] ^ SIGN_BIT
    for i in range(n2):
        if key[i] < vmin:
            vmin = key[i]
        perm[i] = i
    for i in range(n2):
        key[i] -= vmin
    _radix_argsort(key, perm, key_tmp, perm_tmp, n2)
    last = 0
    for i in range(n2):
        v = key[i]
        if rank < 0 or v != last:
            rank += 1
            last = v
        j = perm[i]
        if j < n:
            s[j] = rank
        else:
            e[j - n] = rank
    return rank + 1


def _py_compress(start, end):
    """``(s, e, n_points)``: the intervals ``[start, end]`` (int64, C-contiguous, of one
    length, ``start <= end``) in compressed time (``_compress``). ``n_points`` is 1 for no
    buffer."""
    cdef Py_ssize_t n = start.shape[0]
    if end.shape[0] != n:
        raise ValueError(f"_py_compress: {n} starts but {end.shape[0]} ends")
    s = np.empty(n, dtype=np.int64)
    e = np.empty(n, dtype=np.int64)
    if n == 0:
        return s, e, 1
    cdef const idx_t[::1] start_v = start
    cdef const idx_t[::1] end_v = end
    cdef idx_t[::1] s_v = s
    cdef idx_t[::1] e_v = e
    cdef idx_t lo, hi, n_points
    cdef bint small = _small_range(&start_v[0], &end_v[0], n, &lo, &hi)
    cdef idx_t[::1] scratch = np.empty(1 if small else 8 * n, dtype=np.int64)
    with nogil:
        n_points = _compress(&start_v[0], &end_v[0], n, small, lo, hi, &s_v[0], &e_v[0],
                             &scratch[0])
    return s, e, n_points


cdef enum:
    MAX_SPECS = 16
    # Phase 1 of _py_heuristics up to this many non-empty buffers: above it, a heuristic
    # close to the bound could run most of the way twice (phase 1, then phase 2).
    EARLY_STOP_MAX = 8192


cdef bint _run_spec(
    int code, bint first_fit, bint sweep, const idx_t* start, const idx_t* end,
    const idx_t* s, const idx_t* e, const idx_t* units, Py_ssize_t n, idx_t n_points,
    idx_t* perm, Py_ssize_t m, const Layout* lay, idx_t* scratch, const idx_t* by_size,
    idx_t limit, idx_t* arena
) noexcept nogil:
    """One heuristic of _py_heuristics: its order into perm, then in ``scratch`` (the order's
    scratch is dead by then) the buffers' attributes gathered in that order, their offsets
    (units, ``scratch[3m:4m]``) and the placement's scratch. Returns False when a top
    exceeded ``limit`` (placement stopped there), else True with the plan's arena.
    ``scratch`` holds max(_order_scratch, 4 m + _place_scratch) int64."""
    cdef Py_ssize_t i, j
    cdef idx_t top, peak = 0
    cdef idx_t* s_o = scratch
    cdef idx_t* e_o = s_o + m
    cdef idx_t* z_o = e_o + m
    cdef idx_t* off_o = z_o + m
    _order_into(code, start, end, s, e, units, n, n_points, perm, m, scratch, by_size)
    for j in range(m):
        i = perm[j]
        s_o[j] = s[i]
        e_o[j] = e[i]
        z_o[j] = units[i]
    if not _place_gathered(s_o, e_o, z_o, m, first_fit, sweep, lay, off_o + m, off_o, limit):
        return False
    for j in range(m):
        top = off_o[j] + z_o[j]
        if top > peak:
            peak = top
    arena[0] = peak
    return True


cdef inline void _keep(
    const idx_t* perm, const idx_t* off_o, Py_ssize_t m, idx_t* offset, idx_t* order
) noexcept nogil:
    """Scatter a finished plan's offsets to buffer ids (the others stay 0) and keep its
    order."""
    cdef Py_ssize_t j
    for j in range(m):
        offset[perm[j]] = off_o[j]
    memcpy(order, perm, m * sizeof(idx_t))


def _py_heuristics(start, end, size, idx_t alignment, specs):
    """Run greedy heuristics in turn until one reaches the max-live bound: one kernel call.

    Parameters
    ----------
    start, end, size : ndarray of shape (n,), dtype=int64, C-contiguous
        Inclusive intervals (``start <= end``) and byte sizes (``>= 0``; rounded up to
        ``alignment`` here, their aligned sum fitting in int64): trusted, as every kernel
        input.
    alignment : int
        ``>= 1``.
    specs : sequence of (order code, first fit, sweep)
        The heuristics, in the order to run them (1 to 16 of them; ``sweep`` only with the
        start order).

    Returns
    -------
    tuple
        ``(offset, arena, order, winner, cost, lower_bound)``: the byte offsets (int64, a new
        array) and arena bytes of the first plan with the smallest arena, the priority order
        (buffer ids) that produced it, its index in ``specs``, the seconds its order and
        placement took, and the max-live bound in bytes of the aligned sizes.

    Time is compressed and the sizes are turned into units once; every heuristic then
    reuses one scratch block (orders and placements run without the GIL). The result is
    that of running the heuristics in turn to the end until one reaches the bound, but a
    heuristic is cut short as soon as it cannot be the answer: first (phase 1, up to
    EARLY_STOP_MAX buffers) at its first top above the bound, then, only when none reaches
    it (phase 2, from the first heuristic again), at its first top that reaches the best
    arena so far.
    """
    cdef Py_ssize_t n = start.shape[0], m = 0, i, j, k, n_specs = len(specs)
    cdef int codes[MAX_SPECS]
    cdef bint first_fit[MAX_SPECS]
    cdef bint sweep[MAX_SPECS]
    cdef bint any_bucketed = False
    if end.shape[0] != n or size.shape[0] != n:
        raise ValueError(f"_py_heuristics: arrays of different lengths "
                         f"({n}, {end.shape[0]}, {size.shape[0]})")
    if alignment < 1:
        raise ValueError(f"_py_heuristics: alignment must be >= 1; got {alignment}")
    if not 1 <= n_specs <= MAX_SPECS:
        raise ValueError(f"_py_heuristics: 1 to {MAX_SPECS} heuristics; got {n_specs}")
    for k in range(n_specs):
        code, ff, sw = specs[k]
        if not ORD_SIZE <= code <= ORD_CONFLICT or (sw and code != ORD_START):
            raise ValueError(f"_py_heuristics: bad heuristic {specs[k]!r}")
        codes[k] = code
        first_fit[k] = ff
        sweep[k] = sw
        any_bucketed = any_bucketed or not sw
    offset = np.zeros(n, dtype=np.int64)
    if n == 0:
        return offset, 0, np.empty(0, dtype=np.int64), 0, 0.0, 0
    cdef const idx_t[::1] start_v = start
    cdef const idx_t[::1] end_v = end
    cdef const idx_t[::1] size_v = size
    cdef idx_t lo, hi, n_points, lb, arena, best_arena = 0
    cdef bint small = _small_range(&start_v[0], &end_v[0], n, &lo, &hi)
    # Step 1. Units (the sizes themselves at alignment 1), compressed time (block a: s, e
    # [, units] [, the compression's sort]).
    cdef Py_ssize_t own_units = n if alignment > 1 else 0
    cdef idx_t[::1] a = np.empty((2 * n if small else 10 * n) + own_units, dtype=np.int64)
    cdef idx_t* s = &a[0]
    cdef idx_t* e = s + n
    cdef const idx_t* units = e + n if own_units else &size_v[0]
    cdef idx_t* units_w = e + n
    cdef idx_t sz
    with nogil:
        for i in range(n):
            sz = size_v[i]
            if alignment > 1:
                sz = sz // alignment + (sz % alignment != 0)
                units_w[i] = sz
            if sz > 0:
                m += 1
        n_points = _compress(&start_v[0], &end_v[0], n, small, lo, hi, s, e, e + n + own_units)
    order = np.empty(m, dtype=np.int64)
    if m == 0:
        return offset, 0, order, 0, 0.0, 0
    # Step 2. One scratch block for every heuristic: the shared size order, the order, and
    # the largest scratch of any order, of any gathered placement (or of the bound).
    cdef Layout lay
    cdef Py_ssize_t work = n_points + 1, need
    if any_bucketed:
        _bucket_layout(s, e, units, n, n_points, -1, &lay)
    for k in range(n_specs):
        need = _order_scratch(codes[k], n, m, n_points)
        if need > work:
            work = need
        need = 4 * m + _place_scratch(&lay, m, sweep[k])
        if need > work:
            work = need
    # the shared size order only when several heuristics run (memory at a million buffers)
    cdef Py_ssize_t shared = m if n_specs > 1 else 0
    cdef idx_t[::1] blk = np.empty(shared + m + work, dtype=np.int64)
    cdef idx_t* by_size = &blk[0] if shared else NULL
    cdef idx_t* perm = &blk[0] + shared
    cdef idx_t* scratch = perm + m
    cdef idx_t* off_o = scratch + 3 * m  # a finished plan's offsets, in _run_spec's order
    cdef idx_t[::1] best_off = offset
    cdef idx_t[::1] best_order = order
    cdef Py_ssize_t winner = -1
    cdef double t0, cost = 0.0
    cdef bint done
    with nogil:
        lb = _units_profile(s, e, units, n, n_points, scratch)
        if by_size != NULL:
            _order_into(ORD_SIZE, &start_v[0], &end_v[0], s, e, units, n, n_points, by_size,
                        m, scratch, NULL)
        # Phase 1 (several heuristics, at most EARLY_STOP_MAX buffers): each heuristic stops
        # at its first top above the bound; one that finishes reaches the bound (an arena is
        # never below it) and the earlier ones all exceed it, so the first to finish wins.
        if n_specs > 1 and m <= EARLY_STOP_MAX:
            for k in range(n_specs):
                t0 = _now()
                done = _run_spec(codes[k], first_fit[k], sweep[k], &start_v[0], &end_v[0], s,
                                 e, units, n, n_points, perm, m, &lay, scratch, by_size, lb,
                                 &arena)
                if done:
                    _keep(perm, off_o, m, &best_off[0], &best_order[0])
                    winner = k
                    best_arena = arena
                    cost = _now() - t0
                    break
        # Phase 2 (no winner yet): the first plan with the smallest arena, in order, until
        # one reaches the bound; a heuristic stops at its first top that reaches the best
        # arena so far (it could only tie or lose: ties go to the earlier heuristic).
        if winner < 0:
            for k in range(n_specs):
                t0 = _now()
                done = _run_spec(codes[k], first_fit[k], sweep[k], &start_v[0], &end_v[0], s,
                                 e, units, n, n_points, perm, m, &lay, scratch, by_size,
                                 IDX_MAX if winner < 0 else best_arena - 1, &arena)
                if done:
                    _keep(perm, off_o, m, &best_off[0], &best_order[0])
                    winner = k
                    best_arena = arena
                    cost = _now() - t0
                    if arena <= lb:
                        break
        if alignment > 1:
            for i in range(n):
                best_off[i] *= alignment
    return offset, best_arena * alignment, order, winner, cost, lb * alignment


# -------------------------------------------------------------------------------------------
# Exact search: lowest-point depth-first search over sections
# -------------------------------------------------------------------------------------------

cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk_id, timespec* tp)
    int CLOCK_MONOTONIC


cdef inline double _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


def _py_monotonic():
    """The clock the search compares its deadline with (seconds)."""
    return _now()


cdef enum:
    DFS_FOUND = 1
    DFS_EXHAUSTED = 0
    DFS_TIMEOUT = -1

# Fields of one DFS stack frame.
cdef enum:
    F_SEC = 0       # the section being filled
    F_FLOOR = 1     # its floor when the node was created
    F_NEXT = 2      # next position in the section's start list
    F_WASTED = 3    # 1 once the waste child was generated
    F_PREV = 4      # last candidate tried here (symmetry check), -1 if none
    F_CHOICE = 5    # child applied below this frame: buffer id, or -1 for waste
    F_OLD = 6       # floor before the waste raise
    F_BEGIN = 7     # this node's candidates: cand[F_BEGIN:F_END]
    F_END = 8
    F_TRAIL = 9     # trail position of the placement applied below this frame
    STACK_FIELDS = 10


cdef bint _levels(
    Py_ssize_t n, Py_ssize_t n_sec, const idx_t* first, const idx_t* last,
    const char* placed, const idx_t* floor, const idx_t* rem, const idx_t* size,
    idx_t height, idx_t* g, idx_t* ef, idx_t* cnt
) noexcept nogil:
    """Lowest usable level of every section; False if one cannot take what is left.

    An unplaced buffer can only go at or above the highest floor of its span: g[i]. In a
    section nothing will ever sit below ef = min g over the unplaced buffers covering it
    (cnt of them reach it), and ef + (sizes still to place over it) must be <= height.
    """
    cdef Py_ssize_t i, c
    cdef idx_t gi
    for c in range(n_sec):
        ef[c] = IDX_MAX
        cnt[c] = 0
    for i in range(n):
        if placed[i]:
            continue
        gi = 0
        for c in range(first[i], last[i] + 1):
            if floor[c] > gi:
                gi = floor[c]
        g[i] = gi
        for c in range(first[i], last[i] + 1):
            if gi < ef[c]:
                ef[c] = gi
                cnt[c] = 1
            elif gi == ef[c]:
                cnt[c] += 1
    for c in range(n_sec):
        if rem[c] > 0 and ef[c] > height - rem[c]:
            return False
    return True


cdef int _dfs(
    Py_ssize_t n, Py_ssize_t n_sec,
    const idx_t* first, const idx_t* last, const idx_t* size,
    const idx_t* cover_ptr, const idx_t* cover_ids,
    idx_t height, idx_t smin, double deadline, idx_t* nodes, int rule,
    idx_t* floor, idx_t* rem, char* placed, idx_t* offset, idx_t* stack,
    Py_ssize_t max_depth, idx_t* cand, idx_t* cand_key, Py_ssize_t cand_cap,
    idx_t* trail, Py_ssize_t trail_cap, idx_t* g, idx_t* ef, idx_t* cnt,
    uint64_t seed, idx_t node_limit, bint* truncated
) noexcept nogil:
    """Find offsets with every top <= height, or prove there are none.

    Buffers 0..n-1 cover sections [first[i], last[i]]; cover_ids[cover_ptr[c]:
    cover_ptr[c + 1]] lists the buffers covering section c. floor, rem, ef, cnt (n_sec),
    placed, offset, g (n) are scratch initialised here; stack holds STACK_FIELDS int64 per
    depth (max_depth frames); cand / cand_key (cand_cap) hold the candidate lists of the
    frames on the stack and trail (trail_cap) the floors overwritten by placements.
    nodes[0] counts visited nodes. Returns DFS_FOUND (offset filled), DFS_EXHAUSTED or
    DFS_TIMEOUT; sets truncated when a scratch array was too small for some subtree.

    Node: every section's lowest usable level ef (see _levels); prune if a section cannot
    take what is left. Take the section with the lowest ef, fewest buffers able to sit
    there on ties (or least room left, ``rule >= 3``; fail first), leftmost on further
    ties. Children: (a) each unplaced buffer covering it whose lowest possible offset is
    that level, placed there, in the order of ``rule % 3``; (b) last, "waste": nothing will ever sit at (section, level), so the
    section's floor is raised to the lowest offset a buffer covering it can still take.
    Holes left under a placed buffer are below some section's ef, hence dead: the search
    is complete (a returned EXHAUSTED is a proof).
    """
    cdef Py_ssize_t i, c, d = 0, sec, k, top = 0, x, tp = 0
    cdef idx_t f, b, gg, fp, best_ef, best_cnt, key, lf, rf, nt
    cdef idx_t* fr
    cdef Py_ssize_t n_left = n
    cdef bint descend = True
    cdef uint64_t rng = seed * 0x9E3779B97F4A7C15ULL + 1
    cdef idx_t noise
    cdef idx_t limit = nodes[0] + node_limit
    cdef int ks = 0
    # scale for the branching keys: 4 * n_sec * (height >> ks) stays below 2**61
    while ((height >> ks) + 1) > (IDX_MAX >> 3) // (4 * (n_sec + 1)):
        ks += 1
    for c in range(n_sec):
        floor[c] = 0
        rem[c] = 0
    for i in range(n):
        placed[i] = 0
        for c in range(first[i], last[i] + 1):
            rem[c] += size[i]
    while True:
        fr = &stack[STACK_FIELDS * d]
        if descend:
            # Step 1. A new node: levels, pruning, the section to fill, its candidates.
            if n_left == 0:
                return DFS_FOUND
            nodes[0] += 1
            if nodes[0] >= limit:
                truncated[0] = True
                return DFS_TIMEOUT
            if (nodes[0] & 1023) == 0 and _now() > deadline:
                return DFS_TIMEOUT
            fr[F_BEGIN] = top
            fr[F_END] = top
            fr[F_NEXT] = top
            fr[F_WASTED] = 1  # a pruned node has no children at all
            fr[F_PREV] = -1
            fr[F_TRAIL] = tp
            if _levels(n, n_sec, first, last, placed, floor, rem, size, height, g, ef, cnt):
                sec = -1
                best_ef = IDX_MAX
                best_cnt = IDX_MAX
                for c in range(n_sec):
                    if rem[c] <= 0:
                        continue
                    # tie-break among the lowest sections: fewest candidates (rule < 3) or
                    # least room left (rule >= 3), both "fail first"
                    key = cnt[c] if rule < 3 else height - ef[c] - rem[c]
                    if ef[c] < best_ef or (ef[c] == best_ef and key < best_cnt):
                        best_ef = ef[c]
                        best_cnt = key
                        sec = c
                    elif seed and ef[c] == best_ef and key == best_cnt:
                        rng ^= rng << 13
                        rng ^= rng >> 7
                        rng ^= rng << 17
                        if (rng >> 40) & 1:
                            sec = c
                f = best_ef
                fr[F_SEC] = sec
                fr[F_FLOOR] = f
                fr[F_WASTED] = 0
                if top + (cover_ptr[sec + 1] - cover_ptr[sec]) > cand_cap:
                    truncated[0] = True
                else:
                    for k in range(cover_ptr[sec], cover_ptr[sec + 1]):
                        i = cover_ids[k]
                        if placed[i] or g[i] != f:
                            continue
                        # smaller key = tried first; heights and sizes scaled by
                        # 2**-ks so that every key fits in int64
                        if rule % 3 == 0:
                            key = -(last[i] - first[i]) * 4 * (height >> ks) - (size[i] >> ks)
                        elif rule % 3 == 1:
                            key = -(size[i] >> ks) * 4 * n_sec - (last[i] - first[i])
                        else:
                            nt = f + size[i]
                            lf = floor[first[i] - 1] if first[i] > 0 else -1
                            rf = floor[last[i] + 1] if last[i] + 1 < n_sec else -1
                            key = -(last[i] - first[i] + 1) * (size[i] >> ks)
                            if lf >= nt or lf < 0:
                                key -= IDX_MAX >> 3  # walled in (or at the edge) on the left
                            if rf >= nt or rf < 0:
                                key -= IDX_MAX >> 3  # and on the right
                        if seed:
                            # randomised: keep the rule's preference, shuffle within ~2x
                            rng ^= rng << 13
                            rng ^= rng >> 7
                            rng ^= rng << 17
                            if key < 0:
                                key = key // 2 - <idx_t>((rng >> 11) % <uint64_t>(-key // 2 + 1))
                        # insertion sort (lists are short); equal keys keep list order
                        x = top
                        while x > fr[F_BEGIN] and cand_key[x - 1] > key:
                            cand[x] = cand[x - 1]
                            cand_key[x] = cand_key[x - 1]
                            x -= 1
                        cand[x] = i
                        cand_key[x] = key
                        top += 1
                    fr[F_END] = top
        sec = fr[F_SEC]
        f = fr[F_FLOOR]
        # Step 2. Next candidate; identical buffers (same span and size) once per node.
        b = -1
        k = fr[F_NEXT]
        while k < fr[F_END]:
            i = cand[k]
            k += 1
            if fr[F_PREV] >= 0 and first[i] == first[fr[F_PREV]] and \
                    last[i] == last[fr[F_PREV]] and size[i] == size[fr[F_PREV]]:
                continue
            b = i
            break
        fr[F_NEXT] = k
        if b >= 0 and (d + 1 >= max_depth or
                       tp + (last[b] - first[b] + 1) > trail_cap):
            truncated[0] = True
            b = -1
            fr[F_NEXT] = fr[F_END]
        if b >= 0:
            fr[F_PREV] = b
            fr[F_CHOICE] = b
            fr[F_TRAIL] = tp
            placed[b] = 1
            n_left -= 1
            offset[b] = f
            for c in range(first[b], last[b] + 1):
                trail[tp] = floor[c]
                tp += 1
                floor[c] = f + size[b]
                rem[c] -= size[b]
            d += 1
            descend = True
            continue
        # Step 3. The waste child: the lowest buffer that will ever cover sec above f is
        # either held up elsewhere in its span (offset >= g) or rests on a buffer not
        # placed yet (offset >= f + smin).
        if not fr[F_WASTED]:
            fr[F_WASTED] = 1
            fp = IDX_MAX
            for k in range(cover_ptr[sec], cover_ptr[sec + 1]):
                i = cover_ids[k]
                if placed[i]:
                    continue
                # g[] may hold a deeper node's values by now: recompute from the floors,
                # which the undo has restored to this node's state
                gg = 0
                for c in range(first[i], last[i] + 1):
                    if floor[c] > gg:
                        gg = floor[c]
                if gg <= f:
                    gg = f + smin
                if gg < fp:
                    fp = gg
            if d + 1 >= max_depth:
                truncated[0] = True  # out of stack: this subtree stays unexplored
            elif fp <= height - rem[sec]:
                fr[F_CHOICE] = -1
                fr[F_OLD] = floor[sec]
                floor[sec] = fp
                d += 1
                descend = True
                continue
        # Step 4. Node exhausted: release its candidates, pop, undo the parent's child.
        top = fr[F_BEGIN]
        if d == 0:
            return DFS_EXHAUSTED
        d -= 1
        fr = &stack[STACK_FIELDS * d]
        b = fr[F_CHOICE]
        if b >= 0:
            placed[b] = 0
            n_left += 1
            tp = fr[F_TRAIL]
            for c in range(first[b], last[b] + 1):
                floor[c] = trail[tp + c - first[b]]
                rem[c] += size[b]
        else:
            floor[fr[F_SEC]] = fr[F_OLD]
        descend = False


cdef class _DfsSolver:
    """The exact search on one problem, set up once and run many times (restarts).

    Parameters
    ----------
    first, last : ndarray of shape (n,), dtype=int64
        Section span of each buffer (0-based, inclusive); sections are the elementary time
        intervals between consecutive start / end+1 points, so two buffers conflict iff
        their spans share a section.
    size : ndarray of shape (n,), dtype=int64
        Sizes (any unit, all > 0).
    """

    cdef Py_ssize_t n, n_sec, max_depth, cand_cap, trail_cap
    cdef idx_t smin
    cdef idx_t[::1] first, last, size, cover_ptr, cover_ids
    cdef idx_t[::1] floor, rem, ef, cnt, g, offset, stack, cand, key, trail
    cdef char[::1] placed
    cdef public idx_t nodes
    """Nodes visited over all runs."""

    def __init__(self, first, last, size):
        self.n = first.shape[0]
        self.first = np.ascontiguousarray(first, dtype=np.int64)
        self.last = np.ascontiguousarray(last, dtype=np.int64)
        self.size = np.ascontiguousarray(size, dtype=np.int64)
        self.nodes = 0
        if self.n == 0:
            return
        self.n_sec = int(last.max()) + 1
        self.smin = int(size.min())
        spans = last - first + 1
        owner = np.repeat(np.arange(self.n, dtype=np.int64), spans)
        sec = (np.arange(owner.shape[0], dtype=np.int64)
               - np.repeat(np.cumsum(spans) - spans, spans) + first[owner])
        by = np.argsort(sec, kind="stable")
        self.cover_ids = np.ascontiguousarray(owner[by])
        self.cover_ptr = np.searchsorted(sec[by], np.arange(self.n_sec + 1)).astype(np.int64)
        self.max_depth = 8 * (self.n + self.n_sec) + 64
        self.cand_cap = self.cover_ids.shape[0] + 1024
        self.trail_cap = self.cover_ids.shape[0] + 1
        self.floor = np.empty(self.n_sec, dtype=np.int64)
        self.rem = np.empty(self.n_sec, dtype=np.int64)
        self.ef = np.empty(self.n_sec, dtype=np.int64)
        self.cnt = np.empty(self.n_sec, dtype=np.int64)
        self.g = np.empty(self.n, dtype=np.int64)
        self.offset = np.zeros(self.n, dtype=np.int64)
        self.placed = np.empty(self.n, dtype=np.int8)
        self.stack = np.empty(STACK_FIELDS * self.max_depth, dtype=np.int64)
        self.cand = np.empty(self.cand_cap, dtype=np.int64)
        self.key = np.empty(self.cand_cap, dtype=np.int64)
        self.trail = np.empty(self.trail_cap, dtype=np.int64)

    @property
    def cover_size(self):
        """Sum of the spans: the work of one node is proportional to it."""
        return 0 if self.n == 0 else self.cover_ids.shape[0]

    def run(self, idx_t height, double deadline, int rule=2, uint64_t seed=0,
            idx_t node_limit=-1):
        """Search for offsets with every top <= height.

        Returns ``(status, offset)``: status 1 = found (``offset`` is a new array),
        0 = proven impossible, -1 = stopped (deadline, ``node_limit`` nodes, or scratch
        too small somewhere), ``offset`` None unless found. ``rule % 3`` picks the
        candidate order (0 longest span, 1 largest, 2 largest area walled in by its
        neighbours first), ``rule >= 3`` breaks ties between the lowest sections by least
        room left instead of fewest candidates; ``seed != 0`` randomises ties and shuffles
        candidates within about a factor two of the rule's score (for restarts).
        """
        if self.n == 0:
            return DFS_FOUND, np.zeros(0, dtype=np.int64)
        cdef bint truncated = False
        cdef int status
        cdef idx_t limit = node_limit if node_limit > 0 else IDX_MAX >> 1
        with nogil:
            status = _dfs(self.n, self.n_sec, &self.first[0], &self.last[0], &self.size[0],
                          &self.cover_ptr[0], &self.cover_ids[0], height, self.smin,
                          deadline, &self.nodes, rule, &self.floor[0], &self.rem[0],
                          &self.placed[0], &self.offset[0], &self.stack[0], self.max_depth,
                          &self.cand[0], &self.key[0], self.cand_cap, &self.trail[0],
                          self.trail_cap, &self.g[0], &self.ef[0], &self.cnt[0], seed,
                          limit, &truncated)
        if status == DFS_EXHAUSTED and truncated:
            status = DFS_TIMEOUT
        if status == DFS_FOUND:
            return status, np.array(self.offset, dtype=np.int64)
        return status, None
