# What KillAfterLastUse's compiled walks know of each variable (see _kill_walk.pyx), declared
# here so that the extraction on TVM objects (memcore_py/tvm/_kill_extract.pyx) keeps the same
# tables and the same kill order as the walk over memcore's IR.
from cpython.object cimport PyObject


cdef class VarTable:
    cdef PyObject** keys
    cdef Py_ssize_t* last
    cdef signed char* kind
    cdef char* killed
    cdef PyObject** repl
    cdef PyObject** known
    cdef Py_ssize_t n, cap
    cdef Py_ssize_t* table
    cdef size_t mask
    cdef int shift
    cdef Py_ssize_t* defs
    cdef Py_ssize_t n_defs

    cdef Py_ssize_t get(self, PyObject* key) except -1
    cdef int grow(self) except -1

    cdef inline size_t home(self, PyObject* key) noexcept:
        return ((<unsigned long long>key >> 4) * 0x9E3779B97F4A7C15ULL) >> self.shift

    cdef inline Py_ssize_t find(self, PyObject* key) noexcept:
        """The number of ``key``, or -1 when it was never seen."""
        cdef size_t i = self.home(key)
        cdef Py_ssize_t j
        while True:
            j = self.table[i]
            if j < 0 or self.keys[j] == key:
                return j
            i = (i + 1) & self.mask

    cdef inline void set_kind(self, Py_ssize_t j, signed char k) noexcept:
        if self.kind[j] < 0:
            self.defs[self.n_defs] = j
            self.n_defs += 1
        self.kind[j] = k

    cdef inline int use(self, object v, Py_ssize_t pos) except -1:
        self.last[self.get(<PyObject*>v)] = pos
        return 0

    # The re-binding rule (CanonicalizeBindings, as KillAfterLastUse runs it first), once for
    # both compiled walks: ``y = x`` is dropped and every later use of ``y`` reads ``x``, or
    # what ``x`` itself stands for; a use of a variable is a use of what it stands for.
    cdef inline int rebind(self, PyObject* y, PyObject* x) except -1:
        """``y = x`` is dropped: ``y`` stands for what ``x`` stands for."""
        cdef PyObject* r = self.repl[self.get(x)]
        self.repl[self.get(y)] = x if r == NULL else r
        return 0

    cdef inline PyObject* stands_for(self, PyObject* x) except NULL:
        """What the uses of ``x`` read: ``x`` itself unless a re-binding (or, over memcore's
        IR, a constant binding) replaced it."""
        cdef PyObject* r = self.repl[self.get(x)]
        return x if r == NULL else r


cdef object kill_name(Py_ssize_t k)
    # The name of a function's k-th kill variable: what a fresh NameTable's k-th fresh("_") is.


cdef Py_ssize_t kill_schedule(VarTable V, Py_ssize_t n, Py_ssize_t* order, Py_ssize_t* at) except -1
