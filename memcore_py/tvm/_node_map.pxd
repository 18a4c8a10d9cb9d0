# The node map of the TVM-native passes (memcore node -> address of a TVM object); see
# _node_map.pyx. Declared here so that the compiled reader and writer call its C methods
# directly (no dict, no Python int per entry).
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE

cdef extern from "Python.h":
    PyTypeObject PyBaseObject_Type


ctypedef struct Entry:
    PyObject* key            # NULL: an empty place
    size_t address           # never 0
    int type_index           # the TVM object's type index; 0 when not known (read it there)


cdef class NodeMap:
    cdef Entry* table        # open addressing, linear probing
    cdef PyObject** order    # the keys in insertion order (cap / 2 places)
    cdef Py_ssize_t cap      # a power of two
    cdef Py_ssize_t used     # entries in the table
    cdef int shift           # 64 - log2(cap) (slot_of masks with it)
    cdef dict extra          # entries that are not (identity-hashed key -> address)

    cdef Entry* find(self, object key) noexcept
    cdef size_t get_addr(self, object key) noexcept
    cdef int put_addr(self, object key, size_t address, int type_index=*) except -1
    cdef int grow(self) except -1


cdef inline bint identity_hashed(object key) noexcept:
    """Whether ``key``'s type hashes by identity (``object.__hash__``): a dict would compare
    it by identity too, so it may live in a NodeMap's arrays."""
    return Py_TYPE(key).tp_hash == PyBaseObject_Type.tp_hash


cdef inline int map_put(object m, object key, size_t address, int type_index=0) except -1:
    """``m[key] = address`` (``m`` a NodeMap or a dict); ``type_index``: the TVM object's,
    when known (0: not known)."""
    if type(m) is NodeMap and identity_hashed(key):
        return (<NodeMap>m).put_addr(key, address, type_index)
    m[key] = address
    return 0


cdef class AddrMap:
    cdef size_t* karr        # open addressing, linear probing; 0 = empty slot
    cdef PyObject** varr     # the object stored with karr[i] (a reference held)
    cdef Py_ssize_t cap
    cdef Py_ssize_t used
    cdef int shift

    cdef PyObject* get_obj(self, size_t address) noexcept
    cdef int put_obj(self, size_t address, object value) except -1
    cdef int grow(self) except -1


cdef inline size_t map_get_typed(object m, object key, int* type_index) except? 0:
    """:func:`map_get`, also giving the type index stored with the address (0 when not
    known, or when ``m`` is a dict)."""
    cdef Entry* e
    if type(m) is NodeMap and identity_hashed(key):
        e = (<NodeMap>m).find(key)
        if e == NULL:
            return 0
        type_index[0] = e.type_index
        return e.address
    type_index[0] = 0
    v = m.get(key)
    return <size_t>v if v is not None else 0


cdef inline size_t map_get(object m, object key) except? 0:
    """The address ``m`` (a NodeMap or a dict) holds for ``key``; 0 when none."""
    cdef int type_index
    return map_get_typed(m, key, &type_index)
