"""Token allocation kernel: TVM Relax's TokenAllocator1D + StorageAllocator over an event program.

See memcore/tokens.py for the semantics (spec §1.4 / §1.8) and the argument validation; this
kernel trusts its input (token ids in range, kinds valid, pools dense in ``[0, n_pools)``).

Design
------
- Constant sizes: per pool class, the free storages ordered by key = the storage's bytes at
  release, equal keys in release order. TVM keeps one ``std::multimap`` (which appends a key
  after its equals); its two picks in ``RequestReuse`` are the first entry with key >= s
  (the earliest released among the smallest such keys) and the entry just before it (the
  latest released among the largest keys < s). Here the order is split into 64 *buckets*
  by bit length of the key (bucket k holds keys in ``[2**(k-1), 2**k)``, bucket 0 the key
  0) with a 64-bit occupancy mask per pool, so both picks are a look into one small bucket
  plus, if it has no answer, one bit scan to the next non-empty bucket up or down. A
  bucket holds up to ``SMALL_CAP`` entries inline (buckets average under two entries on
  random workloads). Inline lookups and updates have no data-dependent branches: a
  position is a count over all ``SMALL_CAP`` slots, a shift one fixed-size move through a
  local buffer (the slots are padded to ``SMALL_STRIDE`` so the move never leaves the
  bucket). Early-exit scans and variable-length shifts (which gcc turned into memmove
  calls) were mispredicted on most events; bench/README.md ("Engine: liveness and tokens")
  has the measurements. Beyond ``SMALL_CAP`` entries a bucket becomes a
  *blocked sorted list* (the ``sortedcontainers`` idea): a vector of sorted blocks of at
  most ``BLOCK_CAP`` entries plus the last key of each block, so a lookup is a binary
  search in one contiguous block and an update a short ``memmove``. No event allocates
  (a multimap version spent half its time in malloc/free and rebalancing, and a single
  sorted list per pool in its dependent-load binary search). With more than
  ``MAX_BUCKETED_POOLS`` pools each pool is one blocked list, so memory stays O(n_pools).
  Worst case for a bucket of F storages: O(log F + BLOCK_CAP + F / BLOCK_CAP) per
  operation.
- Symbolic sizes live under key -1 in TVM's multimap and are scanned in insertion order for
  the first entry of the same symbolic class. Since that scan only ever matches the same
  (pool, class), one FIFO ``std::deque`` per (pool, class) gives the same pick in O(1); the
  classes are few, so they sit in a ``std::map``. Constant requests never see them (their
  window starts at ``s / match_range >= 0``).
- ``left[tok]`` counts the references a token still holds; at 0 its storage is released.
  A storage is held by one token at a time (it is only reused after release), so the
  per-token count is TVM's ``ref_counter`` of the storage token.
- Sequence errors (DECREF before REQUEST, DECREF at count 0, REQUEST twice) stop the loop
  and are returned as a code plus the event index; the wrapper raises.

Complexity: O(n_events (log F + BLOCK_CAP)) time for F free storages in the largest
bucket, O(n_tok + n_pools) memory.
"""

import numpy as np

cimport cython
cimport numpy as cnp
from cython.operator cimport dereference as deref
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.string cimport memcpy, memmove
from libcpp.deque cimport deque
from libcpp.map cimport map as cpp_map
from libcpp.pair cimport pair
from libcpp.vector cimport vector

from memcore._bits cimport bit_length, lowest_bit

from memcore._typedefs cimport EV_REQUEST, idx_t, kind_t

cnp.import_array()

#: Kernel return codes (memcore.tokens turns them into messages).
cdef enum:
    OK = 0
    ERR_REQUEST_TWICE = 1
    ERR_DECREF_UNREQUESTED = 2
    ERR_DECREF_AT_ZERO = 3

ERROR_CODES = {
    "ERR_REQUEST_TWICE": ERR_REQUEST_TWICE,
    "ERR_DECREF_UNREQUESTED": ERR_DECREF_UNREQUESTED,
    "ERR_DECREF_AT_ZERO": ERR_DECREF_AT_ZERO,
}

#: A free-list block is split in two when it grows past this many entries.
cdef enum:
    BLOCK_CAP = 256

#: A bucket keeps up to this many entries inline before it becomes a blocked sorted list
#: (defined in C below: the inline helpers unroll fixed-trip loops over it).

#: Above this many pools, a pool's free list is one bucket (64 buckets cost 3.5 KB a pool).
cdef enum:
    MAX_BUCKETED_POOLS = 256

cdef idx_t INT64_MAX = 0x7FFFFFFFFFFFFFFF



cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #define MEMCORE_SMALL_CAP 8
    /* Inline bucket helpers: fixed-trip loops over all MEMCORE_SMALL_CAP slots whose
       comparisons feed adds, not jumps. Data-dependent early-exit
       scans mispredicted on every other call, and the compiler turned the variable-length
       shifts into two out-of-line memmove calls per removal. Slots >= n hold garbage that
       is masked out (no sentinel: INT64_MAX is a valid key). */
    static inline int memcore_small_count_less(const int64_t* keys, int n, int64_t s) {
        int c = 0;
        for (int t = 0; t < MEMCORE_SMALL_CAP; t++) c += (t < n) & (keys[t] < s);
        return c;
    }
    static inline int memcore_small_count_le(const int64_t* keys, int n, int64_t s) {
        int c = 0;
        for (int t = 0; t < MEMCORE_SMALL_CAP; t++) c += (t < n) & (keys[t] <= s);
        return c;
    }
    /* Bucket L's slots start at L * MEMCORE_SMALL_STRIDE: CAP slots plus CAP of padding,
       so a shift is one fixed-size move of CAP - 1 slots (a few vector loads and stores)
       that may read and write garbage past slot CAP - 1 but never leaves L. */
    #define MEMCORE_SMALL_STRIDE (2 * MEMCORE_SMALL_CAP)
    /* memmove of CAP - 1 slots through a local buffer: fixed-size memcpys inline as vector
       loads and stores, where gcc emitted a memmove call through the PLT. */
    static inline void memcore_small_move(int64_t* dst, const int64_t* src) {
        int64_t tmp[MEMCORE_SMALL_CAP - 1];
        memcpy(tmp, src, sizeof(tmp));
        memcpy(dst, tmp, sizeof(tmp));
    }
    /* Remove slot i < CAP: slots i+1.. move down one. */
    static inline int64_t memcore_small_remove(int64_t* keys, int64_t* sts, int i) {
        int64_t st = sts[i];
        memcore_small_move(keys + i, keys + i + 1);
        memcore_small_move(sts + i, sts + i + 1);
        return st;
    }
    /* Insert (key, st) at slot j < CAP: slots j.. move up one. */
    static inline void memcore_small_insert(int64_t* keys, int64_t* sts, int j,
                                            int64_t key, int64_t st) {
        memcore_small_move(keys + j + 1, keys + j);
        memcore_small_move(sts + j + 1, sts + j);
        keys[j] = key;
        sts[j] = st;
    }
    """
    enum: SMALL_CAP "MEMCORE_SMALL_CAP"
    enum: SMALL_STRIDE "MEMCORE_SMALL_STRIDE"
    int small_count_less "memcore_small_count_less"(const idx_t* keys, int n, idx_t s) noexcept nogil
    int small_count_le "memcore_small_count_le"(const idx_t* keys, int n, idx_t s) noexcept nogil
    idx_t small_remove "memcore_small_remove"(idx_t* keys, idx_t* sts, int i) noexcept nogil
    void small_insert "memcore_small_insert"(idx_t* keys, idx_t* sts, int j, idx_t key, idx_t st) noexcept nogil

ctypedef pair[idx_t, idx_t] pool_sym_t               # (pool, symbolic class)


# -------------------------------------------------------------------------------------------
# A large free list (one bucket of one pool): a blocked sorted list of (key, storage)
# -------------------------------------------------------------------------------------------

cdef struct Entry:
    idx_t key                      # bytes of the storage when it was released
    idx_t st                       # storage id

cdef struct FreeList:
    vector[vector[Entry]] blocks   # sorted by key across and within blocks, equal keys in
                                   # release order; non-empty unless it is the only block
    vector[idx_t] last_key         # last_key[b] == blocks[b].back().key
    Py_ssize_t size                # number of entries


cdef Entry _EMPTY = Entry(0, 0)


cdef inline Py_ssize_t _first_block(const FreeList* fl, idx_t key, bint strict) noexcept nogil:
    """First block whose last key is >= key (> key if strict), or the number of blocks."""
    cdef Py_ssize_t lo = 0, hi = fl.last_key.size(), mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if fl.last_key[mid] > key or (not strict and fl.last_key[mid] == key):
            hi = mid
        else:
            lo = mid + 1
    return lo


cdef inline Py_ssize_t _search(const Entry* a, Py_ssize_t n, idx_t key, bint strict) noexcept nogil:
    """First index whose key is >= key (> key if strict) in a sorted block, or n.

    Branch-free halving (the comparison feeds a conditional move, not a jump): the keys
    are unpredictable, and mispredicted branches dominated the loop otherwise.
    """
    cdef const Entry* base = a
    cdef Py_ssize_t half
    if n == 0:
        return 0
    if strict:
        while n > 1:
            half = n >> 1
            base += half * <Py_ssize_t>(base[half - 1].key <= key)
            n -= half
    else:
        while n > 1:
            half = n >> 1
            base += half * <Py_ssize_t>(base[half - 1].key < key)
            n -= half
    if strict:
        return (base - a) + (base[0].key <= key)
    return (base - a) + (base[0].key < key)


cdef int _list_insert(FreeList* fl, idx_t key, idx_t st) except -1 nogil:
    """Insert after every entry with a key <= key (so after its equals)."""
    cdef Py_ssize_t b, i, n, half
    cdef vector[Entry]* blk
    cdef Entry* a
    if fl.blocks.empty():
        fl.blocks.push_back(vector[Entry]())
        fl.last_key.push_back(key)
    b = 0 if fl.blocks.size() == 1 else _first_block(fl, key, True)
    if b == <Py_ssize_t>fl.blocks.size():
        b -= 1
    blk = &fl.blocks[b]
    n = blk.size()
    i = _search(blk.data(), n, key, True)
    # Grow by one (a copy of the last entry, or a placeholder), shift the tail, write the
    # fields in place: building an Entry on the stack and copying it stalled on
    # store-to-load forwarding, and resize() was an out-of-line call.
    if n:
        blk.push_back(blk.back())
        a = blk.data()
        if i < n:
            memmove(a + i + 1, a + i, (n - 1 - i) * sizeof(Entry))
    else:
        blk.push_back(_EMPTY)
        a = blk.data()
    a[i].key = key
    a[i].st = st
    fl.size += 1
    if i == n:
        fl.last_key[b] = key
    if blk.size() > BLOCK_CAP:
        # Split: the upper half moves to a new block right after b.
        fl.blocks.insert(fl.blocks.begin() + b + 1, vector[Entry]())
        fl.last_key.insert(fl.last_key.begin() + b + 1, fl.last_key[b])
        blk = &fl.blocks[b]
        half = blk.size() >> 1
        fl.blocks[b + 1].assign(blk.begin() + half, blk.end())
        blk.resize(half)
        fl.last_key[b] = blk.back().key
    return 0


cdef inline idx_t _list_erase(FreeList* fl, Py_ssize_t b, Py_ssize_t i) noexcept nogil:
    """Remove entry i of block b; return its storage id."""
    cdef vector[Entry]* blk = &fl.blocks[b]
    cdef idx_t st = blk.data()[i].st
    blk.erase(blk.begin() + i)
    fl.size -= 1
    if blk.empty():
        if fl.blocks.size() > 1:
            fl.blocks.erase(fl.blocks.begin() + b)
            fl.last_key.erase(fl.last_key.begin() + b)
        else:
            fl.last_key[0] = -1  # below every key: lookups in the empty list find nothing
    elif i == <Py_ssize_t>blk.size():
        fl.last_key[b] = blk.back().key
    return st


cdef inline void _list_lower(
    const FreeList* fl, idx_t key, Py_ssize_t* b, Py_ssize_t* i
) noexcept nogil:
    """Position of the first entry with a key >= key; (n_blocks, 0) when there is none."""
    b[0] = 0 if fl.blocks.size() == 1 and fl.last_key[0] >= key else _first_block(fl, key, False)
    i[0] = 0
    if b[0] < <Py_ssize_t>fl.blocks.size():
        i[0] = _search(fl.blocks[b[0]].data(), fl.blocks[b[0]].size(), key, False)


cdef inline bint _list_prev(const FreeList* fl, Py_ssize_t* b, Py_ssize_t* i) noexcept nogil:
    """Step (b, i) back one entry; False when it is the first position."""
    if i[0] > 0:
        i[0] -= 1
    elif b[0] > 0:
        b[0] -= 1
        i[0] = fl.blocks[b[0]].size() - 1
    else:
        return False
    return True


cdef inline idx_t _list_key(const FreeList* fl, Py_ssize_t b, Py_ssize_t i) noexcept nogil:
    return fl.blocks[b].data()[i].key


cdef inline idx_t _window_high(idx_t s, idx_t match_range) noexcept nogil:
    """s * match_range, saturated at INT64_MAX (s >= 0, match_range >= 1)."""
    if s > INT64_MAX // match_range:
        return INT64_MAX
    return s * match_range


# -------------------------------------------------------------------------------------------
# The allocator: free lists + storage table
# -------------------------------------------------------------------------------------------

@cython.final
cdef class _TokenAllocator:
    """The free pools and the storage table; one instance per plan_tokens call.

    A free list ``L = pool * n_buckets + k`` is in *small mode* while ``small_n[L] >= 0``:
    its entries sit in the inline arrays ``small_key/small_st[L * SMALL_STRIDE:]``, sorted the
    same way. A ninth entry moves the list to ``free_const[L]`` (a blocked sorted list) until
    it empties again. Small mode is only used with 64 buckets per pool, so its arrays stay
    small (at most ``MAX_BUCKETED_POOLS * 64 * SMALL_STRIDE`` slots).
    """
    cdef vector[FreeList] free_const                    # per (pool, bucket): large lists
    cdef size_t n_lists                                 # free lists: pools x buckets
    cdef idx_t* small_v                                 # small_key then small_st (one block)
    cdef vector[int] small_n_v                          # entries in small mode, -1 = large
    cdef idx_t* small_key                               # per (pool, bucket): SMALL_CAP keys
    cdef idx_t* small_st                                # ... and their storages
    cdef int* small_n                                   # small_n_v.data()
    cdef vector[unsigned long long] free_mask           # per pool: bit k = bucket k non-empty
    cdef int n_buckets                                  # 64, or 1 with many pools
    cdef cpp_map[pool_sym_t, deque[idx_t]] free_sym     # per (pool, class): FIFO of storages
    cdef idx_t match_range                              # size window factor; 0 = no reuse
    cdef idx_t high_limit                               # INT64_MAX // match_range
    cdef int range_shift                                # log2(match_range) if a power of 2
    cdef idx_t n_storage                                # storages created so far
    # per storage (n_tok slots, the most there can be; plain vectors: typed memoryviews
    # cost more to set up than the whole event loop on small programs)
    cdef vector[idx_t] storage_bytes                    # max bytes requested per storage
    cdef vector[idx_t] storage_pool                     # dense pool id per storage
    cdef vector[idx_t] storage_sym                      # symbolic class per storage, -1 = const

    def __cinit__(self, idx_t n_pools, idx_t n_tok, idx_t match_range):
        cdef bint bucketed = n_pools <= MAX_BUCKETED_POOLS
        cdef size_t n_lists = n_pools * (64 if bucketed else 1)
        # A named value: Cython passes a conditional expression to a const T& parameter
        # through a reference to a temporary that is gone by the time resize reads it.
        cdef int small_n_init = 0 if bucketed else -1
        cdef size_t n_small = n_lists * SMALL_STRIDE if bucketed else 1
        self.n_buckets = 64 if bucketed else 1
        self.n_lists = n_lists
        if not bucketed:  # every list large from the start; else made when one overflows
            self.free_const.resize(n_lists)
        self.small_n_v.resize(n_lists, small_n_init)
        # Not initialised: a slot is read only below its list's count, or as masked-out
        # garbage by the fixed-trip helpers (zeroing 16 KB a pool cost half of a small plan).
        self.small_v = <idx_t*>PyMem_Malloc(2 * n_small * sizeof(idx_t))
        if self.small_v is NULL:
            raise MemoryError()
        self.small_key = self.small_v
        self.small_st = self.small_v + n_small
        self.small_n = self.small_n_v.data() if n_lists else NULL
        self.free_mask.resize(n_pools)  # value-initialised: 0
        self.match_range = match_range
        # Hoisted divisions: a 64-bit idiv per request was a visible share of the loop.
        self.high_limit = INT64_MAX // match_range if match_range > 0 else INT64_MAX
        self.range_shift = -1
        if match_range > 0 and (match_range & (match_range - 1)) == 0:
            self.range_shift = bit_length(<unsigned long long>match_range) - 1
        self.n_storage = 0
        self.storage_bytes.resize(n_tok)
        self.storage_pool.resize(n_tok)
        self.storage_sym.resize(n_tok)

    def __dealloc__(self):
        PyMem_Free(self.small_v)

    cdef inline idx_t fresh(self, idx_t s, idx_t pool, idx_t sym) noexcept nogil:
        cdef idx_t st = self.n_storage
        self.n_storage += 1
        self.storage_bytes[st] = s
        self.storage_pool[st] = pool
        self.storage_sym[st] = sym
        return st

    cdef inline int release(self, idx_t st) except -1 nogil:
        cdef idx_t sym = self.storage_sym[st]
        if sym >= 0:
            self.free_sym[pool_sym_t(self.storage_pool[st], sym)].push_back(st)
        else:
            self.insert(self.storage_pool[st], self.storage_bytes[st], st)
        return 0

    cdef inline int bucket(self, idx_t key) noexcept nogil:
        return bit_length(key) if self.n_buckets > 1 else 0

    # --- positions in free list L: (b, i), b = -1 in small mode ---------------------------

    cdef inline bint lower(self, Py_ssize_t L, idx_t s, Py_ssize_t* b, Py_ssize_t* i) noexcept nogil:
        """Position of the first key >= s (True), or the end position (False)."""
        cdef int n = self.small_n[L]
        cdef Py_ssize_t j
        if n >= 0:
            j = small_count_less(self.small_key + L * SMALL_STRIDE, n, s)
            b[0] = -1
            i[0] = j
            return j < n
        _list_lower(&self.free_const[L], s, b, i)
        return b[0] < <Py_ssize_t>self.free_const[L].blocks.size()

    cdef inline bint prev(self, Py_ssize_t L, Py_ssize_t* b, Py_ssize_t* i) noexcept nogil:
        if b[0] < 0:
            if i[0] == 0:
                return False
            i[0] -= 1
            return True
        return _list_prev(&self.free_const[L], b, i)

    cdef inline void first(self, Py_ssize_t L, Py_ssize_t* b, Py_ssize_t* i) noexcept nogil:
        b[0] = -1 if self.small_n[L] >= 0 else 0
        i[0] = 0

    cdef inline void last(self, Py_ssize_t L, Py_ssize_t* b, Py_ssize_t* i) noexcept nogil:
        cdef FreeList* fl
        if self.small_n[L] >= 0:
            b[0] = -1
            i[0] = self.small_n[L] - 1
        else:
            fl = &self.free_const[L]
            b[0] = fl.blocks.size() - 1
            i[0] = fl.blocks[b[0]].size() - 1

    cdef inline idx_t key_at(self, Py_ssize_t L, Py_ssize_t b, Py_ssize_t i) noexcept nogil:
        if b < 0:
            return self.small_key[L * SMALL_STRIDE + i]
        return _list_key(&self.free_const[L], b, i)

    cdef inline idx_t take(
        self, idx_t pool, int k, Py_ssize_t L, Py_ssize_t b, Py_ssize_t i
    ) noexcept nogil:
        """Remove entry (b, i) of free list L (bucket k of pool); return its storage id."""
        cdef idx_t st
        cdef idx_t* keys
        cdef idx_t* sts
        cdef int n
        cdef bint empty
        if b < 0:
            keys = self.small_key + L * SMALL_STRIDE
            sts = self.small_st + L * SMALL_STRIDE
            n = self.small_n[L] - 1
            st = small_remove(keys, sts, <int>i)
            self.small_n[L] = n
            empty = n == 0
        else:
            st = _list_erase(&self.free_const[L], b, i)
            empty = self.free_const[L].size == 0
            if empty and self.n_buckets > 1:
                self.small_n[L] = 0  # back to small mode
        # Branch-free: whether a bucket empties is unpredictable.
        self.free_mask[pool] &= ~((<unsigned long long>empty) << k)
        return st

    cdef inline int insert(self, idx_t pool, idx_t key, idx_t st) except -1 nogil:
        """Release storage st with the given key into its pool (after equal keys)."""
        cdef int k = self.bucket(key)
        cdef Py_ssize_t L = pool * self.n_buckets + k, j
        cdef int n = self.small_n[L]
        cdef idx_t* keys
        cdef idx_t* sts
        self.free_mask[pool] |= 1ULL << k
        if n >= 0:
            keys = self.small_key + L * SMALL_STRIDE
            sts = self.small_st + L * SMALL_STRIDE
            if n < SMALL_CAP:
                small_insert(keys, sts, small_count_le(keys, n, key), key, st)
                self.small_n[L] = n + 1
                return 0
            # Full: move the entries (in order) to the large list of L.
            if self.free_const.size() == 0:  # the first list to overflow
                self.free_const.resize(self.n_lists)
            for j in range(n):
                _list_insert(&self.free_const[L], keys[j], sts[j])
            self.small_n[L] = -1
        _list_insert(&self.free_const[L], key, st)
        return 0

    cdef inline idx_t take_constant(
        self, idx_t pool, idx_t s, idx_t low, idx_t high, bint* below
    ) noexcept nogil:
        """Remove and return TVM's pick for s among keys in [low, high], or -1.

        Sets *below when the pick is smaller than s (the caller enlarges it).
        """
        cdef unsigned long long mask = self.free_mask[pool], rest
        cdef int k = self.bucket(s), k2
        cdef Py_ssize_t L = pool * self.n_buckets + k, L2
        cdef Py_ssize_t b = 0, i = 0, b2, i2
        cdef bint in_bucket = (mask >> k) & 1
        cdef bint found = False
        if mask == 0:
            return -1
        # The pick is (k2, L2, b2, i2), taken at the single exit (one inlined copy of take).
        # Step 3. The smallest key >= s (earliest released among equals), if <= high:
        # in s's bucket, else first in the next non-empty bucket up.
        rest = mask >> k >> 1
        if in_bucket and self.lower(L, s, &b, &i):
            if self.key_at(L, b, i) <= high:
                k2 = k; L2 = L; b2 = b; i2 = i
                found = True
            else:
                rest = 0  # the smallest key >= s is in this bucket and too large
        if not found and rest:
            k2 = k + 1 + lowest_bit(rest)
            L2 = pool * self.n_buckets + k2
            self.first(L2, &b2, &i2)
            found = self.key_at(L2, b2, i2) <= high
        if not found:
            # Step 4. Else the entry just before: the largest key < s (latest released
            # among equals), if >= low: in s's bucket, else last in the next non-empty
            # bucket down.
            if in_bucket and self.prev(L, &b, &i):
                if self.key_at(L, b, i) < low:
                    return -1
                k2 = k; L2 = L; b2 = b; i2 = i
            else:
                rest = mask & ((1ULL << k) - 1)
                if rest == 0:
                    return -1
                k2 = bit_length(rest) - 1
                L2 = pool * self.n_buckets + k2
                self.last(L2, &b2, &i2)
                if self.key_at(L2, b2, i2) < low:
                    return -1
        below[0] = not found  # only once there is a pick: the caller writes storage_bytes[st]
        return self.take(pool, k2, L2, b2, i2)

    cdef inline idx_t reuse(self, idx_t s, idx_t pool, idx_t sym) noexcept nogil:
        """RequestReuse: a free storage for (s, pool, sym), or -1. Steps as in TVM."""
        cdef idx_t st, low, high
        cdef bint below = False
        cdef cpp_map[pool_sym_t, deque[idx_t]].iterator q
        # Step 0. match_range 0 disables reuse.
        if self.match_range == 0:
            return -1
        # Step 1. Symbolic: the earliest released storage of the same class, as is.
        if sym >= 0:
            q = self.free_sym.find(pool_sym_t(pool, sym))
            if q == self.free_sym.end() or deref(q).second.empty():
                return -1
            st = deref(q).second.front()
            deref(q).second.pop_front()
            return st
        # Step 2. Constant: keys in [s / match_range, s * match_range] of this pool;
        # Steps 3-4 in _free_take. A smaller storage is enlarged to s.
        if self.range_shift >= 0:
            low = s >> self.range_shift  # s >= 0: the same as s // match_range
        else:
            low = s // self.match_range
        high = INT64_MAX if s > self.high_limit else s * self.match_range
        st = self.take_constant(pool, s, low, high, &below)
        if below:
            self.storage_bytes[st] = s
        return st


cdef int _plan_tokens(
    _TokenAllocator alloc,
    const idx_t* bytes_p,
    const idx_t* pool_p,
    const idx_t* refs_p,
    const idx_t* tok_sym,
    const kind_t* kind_p,
    const idx_t* ev_tok_p,
    Py_ssize_t n_events,
    bint release_zero_ref,
    idx_t* storage_of_p,
    idx_t* left_p,
    idx_t* bad_event,
) except -1 nogil:
    """Run the event program; return OK or an ERR_* code with *bad_event set.

    Raw pointers: the compiler cannot keep memoryview data pointers in registers across the
    stores of this loop (reloading them doubled the loop's instruction count), and setting
    up typed memoryviews cost more than the whole loop on small programs. ``tok_sym`` is
    NULL when no token is symbolic; ``storage_of_p`` starts all -1, ``left_p`` anything.
    """
    cdef Py_ssize_t e
    cdef bint has_sym = tok_sym != NULL
    cdef idx_t p, st, refs, sym, s
    for e in range(n_events):
        p = ev_tok_p[e]
        if kind_p[e] == EV_REQUEST:
            if storage_of_p[p] >= 0:
                bad_event[0] = e
                return ERR_REQUEST_TWICE
            refs = refs_p[p]
            sym = tok_sym[p] if has_sym else -1
            s = bytes_p[p]
            st = -1
            # Relax: a token nobody reads gets fresh storage that is never released.
            if refs > 0 or release_zero_ref:
                st = alloc.reuse(s, pool_p[p], sym)
            if st < 0:
                st = alloc.fresh(s, pool_p[p], sym)
            elif s > alloc.storage_bytes[st]:  # symbolic: keep the maximum
                alloc.storage_bytes[st] = s
            storage_of_p[p] = st
            left_p[p] = refs
            # Relay: an output nobody reads is released right after its request.
            if refs == 0 and release_zero_ref:
                alloc.release(st)
        else:
            if storage_of_p[p] < 0:
                bad_event[0] = e
                return ERR_DECREF_UNREQUESTED
            if left_p[p] == 0:
                bad_event[0] = e
                return ERR_DECREF_AT_ZERO
            left_p[p] -= 1
            if left_p[p] == 0:
                alloc.release(storage_of_p[p])
    return OK


cdef int _array_data(object a, Py_ssize_t itemsize, Py_ssize_t n, str name, const void** data) except -1:
    """Point ``data[0]`` at the elements of ``a``: a 1-d C-contiguous native-order ndarray of
    signed integers of ``itemsize`` bytes, of length ``n`` (any length when ``n < 0``).
    Raises ValueError otherwise."""
    cdef cnp.ndarray arr
    if not cnp.PyArray_Check(a):
        raise ValueError(f"{name} must be a numpy array; got {type(a).__name__}")
    arr = <cnp.ndarray>a
    if (cnp.PyArray_NDIM(arr) != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(arr)
            or not cnp.PyArray_ISSIGNED(arr) or cnp.PyArray_ITEMSIZE(arr) != itemsize
            or not cnp.PyArray_ISNOTSWAPPED(arr)):
        raise ValueError(f"{name} must be a 1-d C-contiguous int{8 * itemsize} array; got {a.dtype} "
                         f"with shape {a.shape}")
    if n >= 0 and cnp.PyArray_DIM(arr, 0) != n:
        raise ValueError(f"{name} must have length {n}; got {cnp.PyArray_DIM(arr, 0)}")
    data[0] = cnp.PyArray_DATA(arr)
    return 0


cdef inline object _int64_empty(Py_ssize_t n):
    """A new, uninitialised int64 ndarray of ``n`` elements (through the numpy C API: np.empty
    costs more than a whole small plan)."""
    cdef cnp.npy_intp dim = n
    return cnp.PyArray_EMPTY(1, &dim, cnp.NPY_INT64, 0)


cdef object _int64_array(const idx_t* src, Py_ssize_t n):
    """A new read-only int64 ndarray holding ``src[0:n]``."""
    out = _int64_empty(n)
    if n:
        memcpy(cnp.PyArray_DATA(<cnp.ndarray>out), src, n * sizeof(idx_t))
    cnp.PyArray_CLEARFLAGS(<cnp.ndarray>out, cnp.NPY_ARRAY_WRITEABLE)
    return out


def _py_plan_tokens(
    tok_bytes,
    tok_pool_dense,
    idx_t n_pools,
    tok_refs,
    tok_sym,
    ev_kind,
    ev_tok,
    idx_t match_range,
    bint release_zero_ref,
):
    """Kernel on validated arrays (pools dense, tok_sym empty when there is none).

    The arrays must be 1-d C-contiguous int64 (``ev_kind`` int8) of consistent lengths
    (ValueError otherwise); their values are trusted.

    Returns
    -------
    (code, bad_event, storage_of, storage_bytes, storage_pool_dense); the storage arrays are
    trimmed to n_storage, and all three are read-only (as TokenPlan keeps them). ``code`` is
    0 or one of ERROR_CODES.
    """
    cdef Py_ssize_t n_tok, n_events, i
    cdef const void* bytes_p
    cdef const void* pool_p
    cdef const void* refs_p
    cdef const void* sym_p
    cdef const void* kind_p
    cdef const void* ev_tok_p
    _array_data(tok_bytes, 8, -1, "tok_bytes", &bytes_p)
    n_tok = cnp.PyArray_DIM(<cnp.ndarray>tok_bytes, 0)
    _array_data(tok_pool_dense, 8, n_tok, "tok_pool", &pool_p)
    _array_data(tok_refs, 8, n_tok, "tok_refs", &refs_p)
    _array_data(tok_sym, 8, -1, "tok_sym", &sym_p)
    if cnp.PyArray_DIM(<cnp.ndarray>tok_sym, 0) == 0:
        sym_p = NULL
    elif cnp.PyArray_DIM(<cnp.ndarray>tok_sym, 0) != n_tok:
        raise ValueError(f"tok_sym must be empty or have length {n_tok}; got {cnp.PyArray_DIM(<cnp.ndarray>tok_sym, 0)}")
    _array_data(ev_kind, 1, -1, "ev_kind", &kind_p)
    n_events = cnp.PyArray_DIM(<cnp.ndarray>ev_kind, 0)
    _array_data(ev_tok, 8, n_events, "ev_tok", &ev_tok_p)
    cdef _TokenAllocator alloc = _TokenAllocator(n_pools, n_tok, match_range)
    storage_of = _int64_empty(n_tok)
    cdef idx_t* storage_of_p = <idx_t*>cnp.PyArray_DATA(<cnp.ndarray>storage_of)
    cdef vector[idx_t] left = vector[idx_t](n_tok)
    cdef idx_t bad_event = -1
    cdef int code
    with nogil:
        for i in range(n_tok):
            storage_of_p[i] = -1
        code = _plan_tokens(
            alloc, <const idx_t*>bytes_p, <const idx_t*>pool_p, <const idx_t*>refs_p, <const idx_t*>sym_p,
            <const kind_t*>kind_p, <const idx_t*>ev_tok_p, n_events,
            release_zero_ref, storage_of_p, left.data(), &bad_event,
        )
    n = alloc.n_storage
    cnp.PyArray_CLEARFLAGS(<cnp.ndarray>storage_of, cnp.NPY_ARRAY_WRITEABLE)
    return (
        code,
        bad_event,
        storage_of,
        _int64_array(alloc.storage_bytes.data(), n),
        _int64_array(alloc.storage_pool.data(), n),
    )
