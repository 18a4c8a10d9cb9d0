# See memcore_py/ir/construct.py for the rules of unchecked node construction.
#
# The compiled counterpart of memcore_py.ir.construct: IR nodes are immutable __slots__
# objects, and compiled helpers of the Python layer (memcore_py/analysis/_storage_walk.pyx,
# memcore_py/transform/_alloc_rewrite.pyx) read and write their slots at the offsets of the
# classes' member descriptors -- what the descriptors themselves do, without the attribute
# lookup machinery. Nodes are allocated uninitialised (PyType_GenericAlloc) and every slot is
# set before the node is visible, exactly as construct.new_* does with object.__new__.
# Only this file knows how; a helper looks its offsets up once, at import, with slot_offset.
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        Py_ssize_t offset          # byte offset of the slot in the instance
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    PyTypeObject PyMemberDescr_Type
    PyObject* PyType_GenericAlloc(PyTypeObject*, Py_ssize_t) except NULL
    PyObject* PyDict_GetItem(object, object)


cdef inline Py_ssize_t slot_offset(descr) except -1:
    """Byte offset of a ``__slots__`` member descriptor (``Call.args``); TypeError otherwise."""
    if type(descr) is not <object>&PyMemberDescr_Type:
        raise TypeError(f"expected a __slots__ member descriptor; got {descr!r}")
    return (<PyMemberDescrObject*><PyObject*>descr).d_member.offset


cdef inline PyObject* get_slot(object o, Py_ssize_t off) noexcept:
    """Borrowed reference to a slot (NULL when unset)."""
    return (<PyObject**>((<char*><PyObject*>o) + off))[0]


cdef inline void put_slot(PyObject* o, Py_ssize_t off, object v) noexcept:
    """Set a slot of a freshly allocated node (its previous value is NULL)."""
    Py_INCREF(v)
    (<PyObject**>((<char*>o) + off))[0] = <PyObject*>v


cdef inline PyObject* alloc_node(PyTypeObject* cls) except NULL:
    """A new, uninitialised node of ``cls`` (new reference; set every slot with put_slot)."""
    return PyType_GenericAlloc(cls, 0)
