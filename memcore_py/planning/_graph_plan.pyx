"""Relay's GraphPlanMemory over a graph-executor graph in one compiled pass (built by ``setup.py``; no fallback).

Design
------
:func:`plan_relay` takes the flat arrays of a :class:`~memcore_py.planning.graph_model.GraphModel`
and, without the GIL, walks the nodes once in order doing what Relay's ``StorageAllocator``
does (spec tvm_passes.md §1.8; the rules in words are in
:mod:`memcore_py.planning.graph_plan_memory`):

1. checks every index it will read (node kinds, CSR pointers, inputs of earlier nodes, heads,
   scope indices, sizes ``>= 0`` whose total fits in int64, so no byte sum below can wrap):
   a :class:`GraphModel` built by ``from_arrays`` has passed most of these already, one built
   by hand has not, and the kernel never reads out of bounds;
2. resolves ``__nop`` aliases (an input is always an earlier entry, so one forward pass),
   counts each token's readers (input slots and heads, through aliases; +1 for inputs,
   parameters and constants, which are never freed) and writes each token's live interval
   in node steps (for the lower bound and arena mode);
3. runs the nodes: an input node gets fresh storages; an operator requests a storage for
   each flat output (the best free one of its (device, scope) pool within the
   ``match_range`` window, else a fresh one), then releases its 0-reader outputs, then drops
   one reference of each input slot's token, releasing storages that reach 0; a ``__nop``
   drops the reference of its input slot;
4. writes the per-entry and per-storage results: storage id (flat storages numbered in
   creation order), the storage's creating entry, its device, Relay's first size and the
   final size.

Texture-scope entries are skipped (their tokens are Relay's 2-D allocator's, run in Python by
:mod:`.texture`); the caller merges the ids. With ``record`` the kernel also writes the event
program of steps 3 (``EV_REQUEST`` per requested flat output, an ``EV_DECREF`` per released
0-reader output of a multi-output node, whose count becomes 1, and per flat input slot), the
form :func:`memcore.plan_tokens` and :func:`memcore.verify_tokens` take: the verification
view (:func:`~memcore_py.planning.graph_plan_memory.relay_token_program`).

Free lists. Relay keeps one ``std::multimap`` keyed by a free storage's bytes (equal keys in
release order); a request of s bytes takes the first entry with key in ``[s, s * match_range]``,
else the last one in ``[s // match_range, s)``, skipping tokens of another device. Here each
(device, scope) pool has its own list, which gives the same picks, kept as a *blocked sorted
list*: a vector of sorted blocks of at most ``BLOCK_CAP`` ``(key, storage)`` pairs, so both
picks are a binary search and an update a short move (O(log F + BLOCK_CAP + F / BLOCK_CAP)
for F free storages). On real graphs a pool holds a handful of free storages, so this is one
small block.

Why the engine's allocator is not called: :func:`memcore.plan_tokens` runs the same rule (its
``release_zero_ref`` mode) with 64 size buckets per pool, tuned for millions of events; its
setup (the bucket tables, output arrays, argument views) costs more than this whole walk on
a small graph. This walk needs no event program and no setup beyond
its output arrays (made with numpy's C API) and one scratch block, and is checked against
the engine on the recorded program (the tests run both on the same graphs) and against a
pure-Python reading of Relay.

Arrays are read as raw pointers after ``_view`` checked dtype, dimension,
contiguity and length; nothing is allocated inside ``nogil`` except the free-list vectors.
"""
cimport cython
cimport numpy as cnp
from libc.stdint cimport int8_t, int64_t, uint8_t
from libc.string cimport memcpy
from libcpp.map cimport map as cpp_map
from libcpp.pair cimport pair
from libcpp.vector cimport vector

from memcore._typedefs cimport EV_DECREF, EV_REQUEST

import numpy as np

from memcore_py.planning.graph_model import GraphError

cnp.import_array()

#: Node kinds (memcore_py.planning.graph_model.KIND_*).
cdef enum:
    KIND_INPUT = 0
    KIND_OP = 1
    KIND_NOP = 2

#: Error codes of the walk (the wrapper turns them into GraphError messages with the index).
cdef enum:
    OK = 0
    ERR_ROW_PTR = 1
    ERR_INPUT_PTR = 2
    ERR_KIND = 3
    ERR_INPUT_WITH_INPUTS = 4
    ERR_NOP_ARITY = 5
    ERR_INPUT_ORDER = 6
    ERR_HEAD = 7
    ERR_SCOPE = 8
    ERR_BYTES = 9
    ERR_BYTES_TOTAL = 10

ERROR_CODES = {
    "ERR_ROW_PTR": ERR_ROW_PTR,
    "ERR_INPUT_PTR": ERR_INPUT_PTR,
    "ERR_KIND": ERR_KIND,
    "ERR_INPUT_WITH_INPUTS": ERR_INPUT_WITH_INPUTS,
    "ERR_NOP_ARITY": ERR_NOP_ARITY,
    "ERR_INPUT_ORDER": ERR_INPUT_ORDER,
    "ERR_HEAD": ERR_HEAD,
    "ERR_SCOPE": ERR_SCOPE,
    "ERR_BYTES": ERR_BYTES,
    "ERR_BYTES_TOTAL": ERR_BYTES_TOTAL,
}

#: Rows of the scratch block (int64[C_N_ROWS, n_entries]): per entry Relay's Init count
#: (readers + heads), the event program's count of a token, the references a token still
#: holds, the (device, scope) pool of a flat token (-1 for others); per storage (first
#: n_storages columns) its final bytes and creating entry; the flat tokens in request order
#: (first n_tokens columns).
cdef enum:
    C_ROW_PROTO = 0
    C_ROW_REFS = 1
    C_ROW_LEFT = 2
    C_ROW_POOL = 3
    C_ROW_ST_BYTES = 4
    C_ROW_ST_CREATOR = 5
    C_ROW_TOKENS = 6
    C_N_ROWS = 7

cdef enum:
    BLOCK_CAP = 64

cdef int64_t INT64_MAX = 0x7FFFFFFFFFFFFFFF
#: the data pointer handed out for an empty array (never dereferenced)
cdef int64_t _EMPTY_GUARD = 0
#: dtype names for messages
_TYPE_NAMES = {cnp.NPY_INT8: "int8", cnp.NPY_INT64: "int64", cnp.NPY_UINT8: "uint8"}


cdef struct Entry:
    int64_t key          # bytes of the storage when it was released
    int64_t st           # storage id


ctypedef vector[Entry] Block
# Blocks sorted by key, equal keys in release order. No block is empty, except the only one
# (kept with its capacity: a pool whose list empties and refills does not allocate again).
ctypedef vector[Block] FreeList
ctypedef pair[int64_t, int64_t] pool_key_t


cdef inline Py_ssize_t _block_search(const Block* blk, int64_t key, bint after_equals) noexcept nogil:
    """First index whose key is >= key (> key when after_equals), or the block's size."""
    cdef Py_ssize_t lo = 0, hi = blk.size(), mid
    cdef const Entry* a = blk.data()
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid].key < key or (after_equals and a[mid].key == key):
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t _first_block(const FreeList* fl, int64_t key, bint after_equals) noexcept nogil:
    """First block whose last key is >= key (> key when after_equals), or the number of blocks."""
    cdef Py_ssize_t lo = 0, hi = fl.size(), mid
    cdef int64_t last
    while lo < hi:
        mid = (lo + hi) >> 1
        last = fl[0][mid].back().key
        if last < key or (after_equals and last == key):
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef void _insert(FreeList* fl, int64_t key, int64_t st) noexcept nogil:
    """Add a free storage after every entry of key <= key (Relay's multimap insert)."""
    cdef Py_ssize_t b, i, half
    cdef Entry item
    item.key = key
    item.st = st
    if fl.empty():
        fl.push_back(Block())
        fl[0][0].reserve(8)
    if fl.size() == 1:
        b = 0
    else:
        b = _first_block(fl, key, True)
        if b == <Py_ssize_t>fl.size():
            b -= 1
    i = _block_search(&fl[0][b], key, True)
    fl[0][b].insert(fl[0][b].begin() + i, item)
    if fl[0][b].size() > BLOCK_CAP:
        half = fl[0][b].size() >> 1
        fl.insert(fl.begin() + b + 1, Block(fl[0][b].begin() + half, fl[0][b].end()))
        fl[0][b].resize(half)


cdef inline int64_t _take(FreeList* fl, Py_ssize_t b, Py_ssize_t i) noexcept nogil:
    """Remove entry i of block b; return its storage."""
    cdef int64_t st = fl[0][b][i].st
    fl[0][b].erase(fl[0][b].begin() + i)
    if fl[0][b].empty() and fl.size() > 1:
        fl.erase(fl.begin() + b)
    return st


cdef inline int64_t _request(FreeList* fl, int64_t s, int64_t match_range, int64_t high_limit) noexcept nogil:
    """Relay's RequestReuse in one pool: the storage taken for s bytes, or -1."""
    cdef Py_ssize_t nb = fl.size(), b, i
    cdef int64_t high
    if match_range == 0 or nb == 0 or fl[0][0].empty():  # (an empty block is the only one)
        return -1
    high = INT64_MAX if s > high_limit else s * match_range
    if nb == 1:
        b = 0 if fl[0][0].back().key >= s else 1
    else:
        b = _first_block(fl, s, False)
    if b < nb:
        i = _block_search(&fl[0][b], s, False)
        if fl[0][b][i].key <= high:
            return _take(fl, b, i)
    # the entry just before: the latest released of the largest keys < s
    if b < nb and i > 0:
        i -= 1
    elif b > 0:
        b -= 1
        i = fl[0][b].size() - 1
    else:
        return -1
    if fl[0][b][i].key >= s // match_range:
        return _take(fl, b, i)
    return -1


cdef struct Walk:
    # inputs
    Py_ssize_t n_nodes, n_entries, n_slots, n_heads, n_scopes
    const int8_t* kind
    const int64_t* row_ptr
    const int64_t* in_ptr
    const int64_t* in_entry
    const int64_t* heads
    const int64_t* nbytes
    const int64_t* device
    const int64_t* scope
    const uint8_t* scope_tex
    int64_t match_range
    # outputs (rows of the per-entry and per-storage blocks)
    int64_t* storage
    int64_t* dev_out
    int64_t* first
    int64_t* st_of_entry_bytes
    int64_t* tok
    int64_t* proto
    int64_t* refs
    int64_t* offset
    int64_t* start
    int64_t* end
    int64_t* tokens
    int64_t* st_bytes
    int64_t* st_creator
    # scratch: per token its remaining count and pool
    int64_t* left
    int64_t* pool
    # event program (record mode), else NULL
    int8_t* ev_kind
    int64_t* ev_tok
    Py_ssize_t n_events
    # results
    Py_ssize_t n_storages, n_pools, n_tokens
    int64_t relay_bytes, pinned_bytes
    Py_ssize_t bad


cdef inline bint _is_tex(const Walk* w, int64_t e) noexcept nogil:
    return w.scope_tex[w.scope[w.tok[e]]] != 0


cdef int _check_and_count(Walk* w) noexcept nogil:
    """Steps 1 and 2: validate, resolve aliases, count readers. Returns an error code (w.bad: where)."""
    cdef Py_ssize_t n, e, s, e0, e1, s0, s1
    cdef int64_t x, total = 0
    cdef int8_t k
    if w.row_ptr[0] != 0 or w.row_ptr[w.n_nodes] != w.n_entries:
        w.bad = 0
        return ERR_ROW_PTR
    if w.in_ptr[0] != 0 or w.in_ptr[w.n_nodes] != w.n_slots:
        w.bad = 0
        return ERR_INPUT_PTR
    for n in range(w.n_nodes):
        w.bad = n
        e0, e1, s0, s1 = w.row_ptr[n], w.row_ptr[n + 1], w.in_ptr[n], w.in_ptr[n + 1]
        if e1 < e0 or e1 > w.n_entries:
            return ERR_ROW_PTR
        if s1 < s0 or s1 > w.n_slots:
            return ERR_INPUT_PTR
        k = w.kind[n]
        if k != KIND_INPUT and k != KIND_OP and k != KIND_NOP:
            return ERR_KIND
        if k == KIND_INPUT and s1 > s0:
            return ERR_INPUT_WITH_INPUTS
        if k == KIND_NOP and (s1 - s0 != 1 or e1 - e0 != 1):
            return ERR_NOP_ARITY
        for s in range(s0, s1):
            x = w.in_entry[s]
            if x < 0 or x >= e0:
                w.bad = s
                return ERR_INPUT_ORDER
            x = w.tok[x]
            if w.end[x] < n:
                w.end[x] = n
        for e in range(e0, e1):
            if w.scope[e] < 0 or w.scope[e] >= w.n_scopes:
                w.bad = e
                return ERR_SCOPE
            if w.nbytes[e] < 0:
                w.bad = e
                return ERR_BYTES
            if w.nbytes[e] > INT64_MAX - total:
                w.bad = e
                return ERR_BYTES_TOTAL
            total += w.nbytes[e]
            w.tok[e] = e
            w.proto[e] = 0
            w.refs[e] = 0
            w.pool[e] = -1
            if k == KIND_INPUT:
                w.start[e] = -1
                w.end[e] = w.n_nodes
            else:
                w.start[e] = n
                w.end[e] = n
        if k == KIND_NOP:
            w.tok[e0] = w.tok[w.in_entry[s0]]
    for s in range(w.n_heads):
        if w.heads[s] < 0 or w.heads[s] >= w.n_entries:
            w.bad = s
            return ERR_HEAD
        w.end[w.tok[w.heads[s]]] = w.n_nodes
    for s in range(w.n_slots):
        x = w.in_entry[s]
        w.proto[x] += 1
        w.refs[w.tok[x]] += 1
    for s in range(w.n_heads):
        x = w.heads[s]
        w.proto[x] += 1
        w.refs[w.tok[x]] += 1
    return OK


cdef inline void _event(Walk* w, int8_t kind, int64_t tok) noexcept nogil:
    if w.ev_kind != NULL:
        w.ev_kind[w.n_events] = kind
        w.ev_tok[w.n_events] = tok
        w.n_events += 1


cdef inline int64_t _fresh(Walk* w, int64_t e) noexcept nogil:
    cdef int64_t st = w.n_storages
    w.n_storages += 1
    w.st_bytes[st] = w.nbytes[e]
    w.st_creator[st] = e
    return st


cdef inline void _release(Walk* w, vector[FreeList]* lists, int64_t t) noexcept nogil:
    cdef int64_t st = w.storage[t]
    _insert(&lists[0][w.pool[t]], w.st_bytes[st], st)


cdef inline void _decref(Walk* w, vector[FreeList]* lists, int64_t t) noexcept nogil:
    """One reader of flat token t has run."""
    w.left[t] -= 1
    _event(w, EV_DECREF, t)
    if w.left[t] == 0:
        _release(w, lists, t)


cdef void _assign_pools(Walk* w) noexcept nogil:
    """Dense (device, scope) pool id of each flat token (first seen, first numbered); the flat
    tokens in order. Input tokens get a pool too (the lower bound's pools), never a free one."""
    cdef cpp_map[pool_key_t, int64_t] ids
    cdef pool_key_t key, last
    cdef int64_t last_id = -1, n
    cdef Py_ssize_t e
    w.n_tokens = 0
    for n in range(w.n_nodes):
        if w.kind[n] == KIND_NOP:
            continue
        for e in range(w.row_ptr[n], w.row_ptr[n + 1]):
            if w.scope_tex[w.scope[e]]:
                continue
            w.tokens[w.n_tokens] = e
            w.n_tokens += 1
            key = pool_key_t(w.device[e], w.scope[e])
            if last_id < 0 or key != last:
                if ids.count(key):
                    last_id = ids[key]
                else:
                    last_id = ids.size()
                    ids[key] = last_id
                last = key
            w.pool[e] = last_id
    w.n_pools = ids.size()


cdef void _walk(Walk* w) noexcept nogil:
    """Step 3: Relay's visit of the nodes in order, then step 4."""
    cdef vector[FreeList] lists
    cdef Py_ssize_t n, e, s, e0, e1
    cdef int64_t t, st, c, high_limit
    cdef bint multi
    _assign_pools(w)
    lists.resize(w.n_pools)
    high_limit = INT64_MAX // w.match_range if w.match_range > 0 else INT64_MAX
    w.n_storages = 0
    w.pinned_bytes = 0
    for n in range(w.n_nodes):
        e0, e1 = w.row_ptr[n], w.row_ptr[n + 1]
        if w.kind[n] == KIND_INPUT:
            # Relay's Alloc with one extra reference: the count never reaches 0
            for e in range(e0, e1):
                if _is_tex(w, e):
                    continue
                w.refs[e] += 1
                w.left[e] = w.refs[e]
                w.storage[e] = _fresh(w, e)
                w.pinned_bytes += w.nbytes[e]
                _event(w, EV_REQUEST, e)
            continue
        if w.kind[n] == KIND_OP:
            for e in range(e0, e1):
                if _is_tex(w, e):
                    continue
                st = _request(&lists[w.pool[e]], w.nbytes[e], w.match_range, high_limit)
                if st < 0:
                    st = _fresh(w, e)
                elif w.nbytes[e] > w.st_bytes[st]:
                    w.st_bytes[st] = w.nbytes[e]
                w.storage[e] = st
                w.left[e] = w.refs[e]
                _event(w, EV_REQUEST, e)
            # 0-reader outputs are released after all the node's requests
            multi = e1 - e0 > 1
            for e in range(e0, e1):
                if w.refs[e] == 0 and not _is_tex(w, e):
                    if multi:  # the event program spells this release as one reader run now
                        w.refs[e] = 1
                        _event(w, EV_DECREF, e)
                    _release(w, &lists, e)
        # operator input slots and a __nop's input: one reader of the token has run
        for s in range(w.in_ptr[n], w.in_ptr[n + 1]):
            t = w.tok[w.in_entry[s]]
            if not _is_tex(w, t):
                _decref(w, &lists, t)
    w.relay_bytes = 0
    for st in range(w.n_storages):
        w.relay_bytes += w.st_bytes[st]
    for e in range(w.n_entries):
        w.offset[e] = 0
        if _is_tex(w, e):
            w.storage[e] = -1
            w.dev_out[e] = -1
            w.first[e] = 0
            w.st_of_entry_bytes[e] = 0
            continue
        st = w.storage[w.tok[e]]
        c = w.st_creator[st]
        w.storage[e] = st
        w.dev_out[e] = w.device[c]
        w.first[e] = w.nbytes[c]
        w.st_of_entry_bytes[e] = w.st_bytes[st]


cdef const void* _view(object a, int typenum, Py_ssize_t n, str name) except NULL:
    """The data of a 1-D C-contiguous array of ``typenum`` and length ``n`` (else GraphError)."""
    if not cnp.PyArray_Check(a):
        raise GraphError(f"graph array {name} is not a numpy array")
    cdef cnp.ndarray arr = <cnp.ndarray>a
    if cnp.PyArray_TYPE(arr) != typenum or cnp.PyArray_NDIM(arr) != 1 \
            or not cnp.PyArray_IS_C_CONTIGUOUS(arr) or cnp.PyArray_DIM(arr, 0) != n:
        raise GraphError(
            f"graph array {name} must be a C-contiguous 1-D {_TYPE_NAMES[typenum]} array of length {n}; "
            f"got {arr.dtype} of shape {(<object>arr).shape}"
        )
    # an empty array may have a NULL-like data pointer: never dereferenced (n == 0)
    if n == 0:
        return <const void*>&_EMPTY_GUARD
    return <const void*>cnp.PyArray_DATA(arr)



def plan_relay(kind, row_ptr, in_ptr, in_entry, heads, nbytes, device, scope, scope_tex,
               int64_t match_range, bint record=False):
    """Relay's GraphPlanMemory over a graph's flat arrays (the fields of a GraphModel).

    Parameters
    ----------
    kind : int8[n_nodes]
    row_ptr, in_ptr : int64[n_nodes + 1]
    in_entry : int64[n_slots]
    heads : int64[n_heads]
    nbytes, device, scope : int64[n_entries]
    scope_tex : uint8[n_scopes]
        1 for a texture scope (its entries are skipped).
    match_range : int
        ``>= 0`` (checked by the caller).
    record : bool
        Also return the event program.

    Returns
    -------
    tuple
        ``(code, bad, storage_id, device, first_bytes, storage_bytes, offset, token, start, end,
        st_bytes, st_creator, tokens, n_pools, relay_bytes, pinned_bytes, program)``.
        ``code`` is 0 or an ``ERROR_CODES`` value with ``bad`` the node / slot / entry / head
        at fault (then the rest is None). Per entry (int64[n_entries]): the flat storage id
        (creation order; -1 for a texture entry), the device of the storage's creating entry
        (-1 for a texture: the caller fills it), the creating entry's bytes (Relay's
        storage_sizes), the storage's final bytes, zeros (the offset of every entry in a
        Relay storage), the entry's token (itself, or the entry a ``__nop`` chain aliases),
        and the token's inclusive live interval in node steps (defining node to last reading
        node through aliases; heads to n_nodes; inputs, parameters and constants
        [-1, n_nodes]; meaningful for tokens only). Per flat storage: final bytes and
        creating entry. ``tokens``: the flat tokens in request order; ``n_pools``: the
        number of their (device, scope) pools. ``program`` (``record`` only, else None):
        ``(proto_refs, tok_refs, tok_pool, ev_kind, ev_tok)``, the per-entry Init counts,
        the event program's counts, the pool of each flat token (-1 for other entries) and
        the events.
    """
    cdef Walk w
    cdef Py_ssize_t n_nodes, n_entries
    if not cnp.PyArray_Check(kind) or not cnp.PyArray_Check(nbytes):
        raise GraphError("graph arrays node_kind and entry_bytes must be numpy arrays")
    n_nodes = cnp.PyArray_SIZE(<cnp.ndarray>kind)
    n_entries = cnp.PyArray_SIZE(<cnp.ndarray>nbytes)
    w.n_nodes = n_nodes
    w.n_entries = n_entries
    w.n_slots = cnp.PyArray_SIZE(<cnp.ndarray>in_entry) if cnp.PyArray_Check(in_entry) else 0
    w.n_heads = cnp.PyArray_SIZE(<cnp.ndarray>heads) if cnp.PyArray_Check(heads) else 0
    w.n_scopes = cnp.PyArray_SIZE(<cnp.ndarray>scope_tex) if cnp.PyArray_Check(scope_tex) else 0
    w.kind = <const int8_t*>_view(kind, cnp.NPY_INT8, n_nodes, "node_kind")
    w.row_ptr = <const int64_t*>_view(row_ptr, cnp.NPY_INT64, n_nodes + 1, "node_row_ptr")
    w.in_ptr = <const int64_t*>_view(in_ptr, cnp.NPY_INT64, n_nodes + 1, "input_ptr")
    w.in_entry = <const int64_t*>_view(in_entry, cnp.NPY_INT64, w.n_slots, "input_entry")
    w.heads = <const int64_t*>_view(heads, cnp.NPY_INT64, w.n_heads, "head_entry")
    w.nbytes = <const int64_t*>_view(nbytes, cnp.NPY_INT64, n_entries, "entry_bytes")
    w.device = <const int64_t*>_view(device, cnp.NPY_INT64, n_entries, "entry_device")
    w.scope = <const int64_t*>_view(scope, cnp.NPY_INT64, n_entries, "entry_scope")
    w.scope_tex = <const uint8_t*>_view(scope_tex, cnp.NPY_UINT8, w.n_scopes, "scope_tex")
    if match_range < 0:
        raise GraphError(f"match_range must be >= 0; got {match_range}")
    w.match_range = match_range

    cdef cnp.npy_intp dims[2]
    dims[0] = C_N_ROWS
    dims[1] = n_entries
    scratch = cnp.PyArray_EMPTY(2, dims, cnp.NPY_INT64, 0)
    cdef int64_t* sc = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>scratch)
    storage_id, dev_out, first, entry_st_bytes = _empty(n_entries), _empty(n_entries), _empty(n_entries), _empty(n_entries)
    offset, tok, start, end = _empty(n_entries), _empty(n_entries), _empty(n_entries), _empty(n_entries)
    w.storage = _data(storage_id)
    w.dev_out = _data(dev_out)
    w.first = _data(first)
    w.st_of_entry_bytes = _data(entry_st_bytes)
    w.offset = _data(offset)
    w.tok = _data(tok)
    w.start = _data(start)
    w.end = _data(end)
    w.proto = sc + C_ROW_PROTO * n_entries
    w.refs = sc + C_ROW_REFS * n_entries
    w.left = sc + C_ROW_LEFT * n_entries
    w.pool = sc + C_ROW_POOL * n_entries
    w.st_bytes = sc + C_ROW_ST_BYTES * n_entries
    w.st_creator = sc + C_ROW_ST_CREATOR * n_entries
    w.tokens = sc + C_ROW_TOKENS * n_entries
    w.ev_kind = NULL
    w.ev_tok = NULL
    w.n_events = 0
    if record:
        ev_kind = np.empty(2 * n_entries + w.n_slots, dtype=np.int8)
        ev_tok = np.empty(2 * n_entries + w.n_slots, dtype=np.int64)
        w.ev_kind = <int8_t*>cnp.PyArray_DATA(<cnp.ndarray>ev_kind)
        w.ev_tok = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>ev_tok)
    cdef int code
    with nogil:
        code = _check_and_count(&w)
        if code == OK:
            _walk(&w)
    if code != OK:
        return (code, w.bad) + (None,) * 15
    st_bytes = _copy(w.st_bytes, w.n_storages)
    st_creator = _copy(w.st_creator, w.n_storages)
    tokens = _copy(w.tokens, w.n_tokens)
    program = None
    if record:
        program = (scratch[C_ROW_PROTO], scratch[C_ROW_REFS], scratch[C_ROW_POOL], ev_kind[:w.n_events],
                   ev_tok[:w.n_events])
    return (code, 0, storage_id, dev_out, first, entry_st_bytes, offset, tok, start, end, st_bytes, st_creator,
            tokens, w.n_pools, w.relay_bytes, w.pinned_bytes, program)


cdef inline object _empty(Py_ssize_t n):
    """A new int64[n] array."""
    cdef cnp.npy_intp dim = n
    return cnp.PyArray_EMPTY(1, &dim, cnp.NPY_INT64, 0)


cdef inline int64_t* _data(object a) noexcept:
    return <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>a)


cdef object _copy(const int64_t* src, Py_ssize_t n):
    """A new int64[n] array holding src[:n]."""
    out = _empty(n)
    if n:
        memcpy(_data(out), src, n * sizeof(int64_t))
    return out
