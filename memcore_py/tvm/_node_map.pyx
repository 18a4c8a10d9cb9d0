"""The node map of the TVM-native passes: memcore node -> address of the TVM object it was
read from or written as (:mod:`memcore_py.tvm.passes`); and its reverse for the reader's memo
tables, TVM object address -> memcore node (:class:`AddrMap`).

Design
------
A native pass looks up or records every binding, variable and call it converts, 4-6 times per
binding between the read and the two write-backs of a pass chain. As a ``dict`` each entry
cost a Python ``int`` for the address and a hash-table entry of 24 bytes plus its index,
and at 30k bindings those lookups, their cache misses and freeing the entries were about a
third of a native pass. This map keeps the common entries in one C array of entries {key,
address, TVM type index}:

- keys are memcore nodes hashed by identity (``type(key).__hash__`` is ``object.__hash__``,
  so a ``dict`` would compare them by identity too: the two maps agree on every lookup);
- addresses are non-zero ``size_t``; the type index, when the writer or reader knew it,
  saves the write-back a read of the TVM object's header (0: not known);
- open addressing with linear probing on the address bits of the key (see ``slot_of``), at
  most half full; a second array keeps the keys in insertion order, the order they are
  released in (nodes built one after another sit side by side in memory);
- each key holds a reference (an address never outlives its node's entry, and a freed
  node's memory cannot be reused by another node that would then find its entry).

Every other entry (a key hashed by value, such as a ``(kind, name)`` tuple, or a value that
is not an address) goes to an ordinary ``dict`` beside the arrays, so the map behaves as a
``dict`` for whatever is stored. Entries are never removed (a native pass only adds to its
map).

Keys and the dict's values are untracked by the cyclic garbage collector when stored: they
are immutable, acyclic IR nodes (and dicts of TVM objects private to the map), freed by
reference counting; tracked, the ~10k nodes of a BERT-sized module made the collector's next
young-generation pass cost about a fifth of a native pass.

:class:`AddrMap` is the same table the other way round, for the reader's memo tables keyed
by the address of a TVM object (variables, types, callees): a ``dict`` would need a Python
``int`` for every lookup. Its values hold references; its keys are addresses of objects the
reader's source module keeps alive.
"""
from libc.stdint cimport uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void*)
    bint PyObject_IS_GC(object)

cdef Py_ssize_t INITIAL_CAPACITY = 64


cdef inline Py_ssize_t slot_of(const void* key, int shift) noexcept nogil:
    # Locality first: within a 64 KB page the place is the address itself without its
    # alignment bits, so nodes allocated one after another get neighbouring places and a
    # walk over a block's bindings (in the order they were read or built) reads the table
    # almost sequentially instead of missing the cache at every lookup; the page number is
    # hashed (Fibonacci) into the higher bits, so pages spread evenly over the table whatever
    # the size and layout of the heap.
    cdef uint64_t p = <uint64_t><size_t>key
    cdef uint64_t page = ((p >> 16) * <uint64_t>0x9E3779B97F4A7C15) >> 20
    return <Py_ssize_t>(((p >> 4) ^ (page << 12)) & ((<uint64_t>1 << (64 - shift)) - 1))


cdef inline void untrack(object o) noexcept:
    if PyObject_IS_GC(o):
        PyObject_GC_UnTrack(<void*>o)


cdef class NodeMap:
    """A ``dict``-like map of memcore nodes to TVM object addresses (module docstring).

    Supports ``m[key]``, ``m.get(key, default)``, ``m[key] = value``, ``key in m``,
    ``len(m)``, ``m.keys()``, ``m.values()`` and ``m.items()``.
    """

    def __cinit__(self):
        self.cap = INITIAL_CAPACITY
        self.shift = 64 - 6
        self.used = 0
        self.table = <Entry*>calloc(self.cap, sizeof(Entry))
        self.order = <PyObject**>malloc((self.cap // 2) * sizeof(PyObject*))
        self.extra = {}
        if self.table == NULL or self.order == NULL:
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.order != NULL:
            # in insertion order: nodes read or built one after another sit side by side in
            # memory, and freeing them in that order costs about half as much as in table order
            for i in range(self.used):
                Py_DECREF(<object>self.order[i])
        free(self.table)
        free(self.order)

    cdef Entry* find(self, object key) noexcept:
        """The entry of ``key`` in the table; NULL when it is not there."""
        cdef PyObject* k = <PyObject*>key
        cdef Py_ssize_t mask = self.cap - 1
        cdef Py_ssize_t i = slot_of(k, self.shift)
        cdef Entry* e
        while True:
            e = &self.table[i]
            if e.key == k:
                return e
            if e.key == NULL:
                return NULL
            i = (i + 1) & mask

    cdef size_t get_addr(self, object key) noexcept:
        """The address stored for ``key`` in the table; 0 when it is not there."""
        cdef Entry* e = self.find(key)
        return e.address if e != NULL else 0

    cdef int put_addr(self, object key, size_t address, int type_index=0) except -1:
        """Store ``key -> address`` (``key`` hashed by identity, ``address`` non-zero);
        ``type_index``: the TVM object's type index when the caller knows it, else 0."""
        cdef PyObject* k = <PyObject*>key
        cdef Py_ssize_t mask, i
        cdef Entry* e
        if 2 * (self.used + 1) > self.cap:
            self.grow()
        mask = self.cap - 1
        i = slot_of(k, self.shift)
        while True:
            e = &self.table[i]
            if e.key == k:
                e.address = address
                e.type_index = type_index
                return 0
            if e.key == NULL:
                break
            i = (i + 1) & mask
        Py_INCREF(key)
        untrack(key)
        e.key = k
        e.address = address
        e.type_index = type_index
        self.order[self.used] = k
        self.used += 1
        return 0

    cdef int grow(self) except -1:
        cdef Py_ssize_t old_cap = self.cap, cap = 2 * self.cap, i, j, mask = cap - 1
        cdef Entry* old = self.table
        cdef Entry* table = <Entry*>calloc(cap, sizeof(Entry))
        cdef PyObject** order = <PyObject**>realloc(self.order, (cap // 2) * sizeof(PyObject*))
        if order != NULL:
            self.order = order
        if table == NULL or order == NULL:
            free(table)
            raise MemoryError()
        self.shift -= 1
        for i in range(old_cap):
            if old[i].key != NULL:
                j = slot_of(old[i].key, self.shift)
                while table[j].key != NULL:
                    j = (j + 1) & mask
                table[j] = old[i]
        self.table = table
        self.cap = cap
        free(old)
        return 0

    def __setitem__(self, key, value):
        if type(value) is int and 0 < value < (1 << 64) and identity_hashed(key):
            if key in self.extra:  # one place per key
                del self.extra[key]
            self.put_addr(key, <size_t>value)
            return
        if identity_hashed(key) and self.get_addr(key):
            raise TypeError(f"NodeMap: {type(key).__name__} already maps to an address; "
                            f"cannot store a {type(value).__name__}")
        untrack(key)
        untrack(value)
        self.extra[key] = value

    def get(self, key, default=None):
        cdef size_t a = self.get_addr(key) if identity_hashed(key) else 0
        if a:
            return a
        return self.extra.get(key, default)

    def __getitem__(self, key):
        cdef size_t a = self.get_addr(key) if identity_hashed(key) else 0
        if a:
            return a
        return self.extra[key]

    def __contains__(self, key):
        return (identity_hashed(key) and self.get_addr(key) != 0) or key in self.extra

    def __len__(self):
        return self.used + len(self.extra)

    def keys(self):
        """Every key (a list)."""
        return [k for k, _ in self.items()]

    def values(self):
        """Every value (a list)."""
        return [v for _, v in self.items()]

    def items(self):
        """Every ``(key, value)`` pair (a list; the arrays' entries in insertion order, then
        the others)."""
        cdef Py_ssize_t i
        out = [(<object>self.order[i], self.get_addr(<object>self.order[i])) for i in range(self.used)]
        out.extend(self.extra.items())
        return out


cdef inline size_t as_address(object a) except? 0:
    """``a`` as an address; 0 when it is not a positive int that fits in 64 bits."""
    return <size_t>a if type(a) is int and 0 < a < (1 << 64) else 0


cdef class AddrMap:
    """A ``dict``-like map of TVM object addresses (non-zero ints) to Python objects (module
    docstring): ``m[address]``, ``m.get(address, default)``, ``m[address] = value``,
    ``address in m``, ``len(m)``, ``m.items()``, ``m.values()``; ``AddrMap(mapping)`` copies
    a mapping's entries."""

    def __cinit__(self, mapping=None):
        self.cap = INITIAL_CAPACITY
        self.shift = 64 - 6
        self.used = 0
        self.karr = <size_t*>calloc(self.cap, sizeof(size_t))
        self.varr = <PyObject**>calloc(self.cap, sizeof(PyObject*))
        if self.karr == NULL or self.varr == NULL:
            raise MemoryError()
        if mapping is not None:
            for k, v in mapping.items():
                self[k] = v

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.karr != NULL and self.varr != NULL:
            for i in range(self.cap):
                if self.karr[i] != 0:
                    Py_DECREF(<object>self.varr[i])
        free(self.karr)
        free(self.varr)

    cdef PyObject* get_obj(self, size_t address) noexcept:
        """The object stored for ``address`` (borrowed); NULL when there is none."""
        cdef Py_ssize_t mask = self.cap - 1
        cdef Py_ssize_t i = slot_of(<void*>address, self.shift)
        cdef size_t at
        while True:
            at = self.karr[i]
            if at == address:
                return self.varr[i]
            if at == 0:
                return NULL
            i = (i + 1) & mask

    cdef int put_obj(self, size_t address, object value) except -1:
        """Store ``address -> value`` (``address`` non-zero)."""
        cdef Py_ssize_t mask, i
        cdef PyObject* old
        if address == 0:
            raise KeyError("AddrMap keys are non-zero addresses")
        if 2 * (self.used + 1) > self.cap:
            self.grow()
        mask = self.cap - 1
        i = slot_of(<void*>address, self.shift)
        while self.karr[i] != 0:
            if self.karr[i] == address:
                old = self.varr[i]
                Py_INCREF(value)
                self.varr[i] = <PyObject*>value
                Py_DECREF(<object>old)
                return 0
            i = (i + 1) & mask
        Py_INCREF(value)
        self.karr[i] = address
        self.varr[i] = <PyObject*>value
        self.used += 1
        return 0

    cdef int grow(self) except -1:
        cdef Py_ssize_t old_cap = self.cap, cap = 2 * self.cap, i, j, mask = cap - 1
        cdef size_t* old_keys = self.karr
        cdef PyObject** old_vals = self.varr
        cdef size_t* keys = <size_t*>calloc(cap, sizeof(size_t))
        cdef PyObject** vals = <PyObject**>calloc(cap, sizeof(PyObject*))
        if keys == NULL or vals == NULL:
            free(keys)
            free(vals)
            raise MemoryError()
        self.shift -= 1
        for i in range(old_cap):
            if old_keys[i] != 0:
                j = slot_of(<void*>old_keys[i], self.shift)
                while keys[j] != 0:
                    j = (j + 1) & mask
                keys[j] = old_keys[i]
                vals[j] = old_vals[i]
        self.karr = keys
        self.varr = vals
        self.cap = cap
        free(old_keys)
        free(old_vals)
        return 0

    def __setitem__(self, address, value):
        cdef size_t a = as_address(address)
        if a == 0:
            raise KeyError(f"AddrMap keys are object addresses (positive ints); got {address!r}")
        self.put_obj(a, value)

    def get(self, address, default=None):
        cdef size_t a = as_address(address)
        cdef PyObject* r = self.get_obj(a) if a else NULL
        return <object>r if r != NULL else default

    def __getitem__(self, address):
        cdef size_t a = as_address(address)
        cdef PyObject* r = self.get_obj(a) if a else NULL
        if r == NULL:
            raise KeyError(address)
        return <object>r

    def __contains__(self, address):
        cdef size_t a = as_address(address)
        return a != 0 and self.get_obj(a) != NULL

    def __len__(self):
        return self.used

    def values(self):
        """Every value (a list)."""
        return [v for _, v in self.items()]

    def items(self):
        """Every ``(address, value)`` pair (a list)."""
        cdef Py_ssize_t i
        return [(self.karr[i], <object>self.varr[i]) for i in range(self.cap) if self.karr[i] != 0]
