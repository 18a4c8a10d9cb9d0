"""Compiled builders of IR nodes: ``Call``, ``VarBinding``, ``Var`` / ``DataflowVar``,
``ShapeExpr``, ``Tuple`` and ``PrimValue``, and of the types ``ShapeType``, ``TupleType`` and
``PrimType``, made as :mod:`memcore_py.ir.construct` makes them (every slot set before the
node is visible, no checks), for the compiled helpers that build many of them
(``memcore_py/tvm/_ffi_reader.pyx``, ``memcore_py/transform/_flat_walks.pyx``,
``memcore_py/transform/_kill_writer.pyx``, ``memcore_py/ir/_block_emit.pyx``,
``memcore_py/frontend/_aten_calls.pyx``).

Design
------
The slots are written at the offsets of the classes' member descriptors (``_slots.pxd``),
looked up once here. Every node is returned untracked by the cyclic garbage collector, as is
the argument tuple of a call: IR nodes are immutable and reference only nodes built before
them, so they can never be part of a reference cycle and reference counting frees them
(tracked, the nodes of a large module made the collector's next young-generation pass cost
a fifth of a pass). The callers own the meaning: these functions take values as they are.
"""
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_DECREF

from memcore_py.ir._slots cimport alloc_node, put_slot, slot_offset

from memcore_py.ir.expr import Call, DataflowVar, PrimValue, ShapeExpr, Tuple, Var, VarBinding
from memcore_py.ir.types import PrimType, ShapeType, TupleType

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void*)

cdef extern from "structmember.h":  # PyMemberDef, read by _slots.slot_offset
    pass

cdef Py_ssize_t S_OP = slot_offset(Call.op)
cdef Py_ssize_t S_ARGS = slot_offset(Call.args)
cdef Py_ssize_t S_ATTRS = slot_offset(Call.attrs)
cdef Py_ssize_t S_TY_ARGS = slot_offset(Call.ty_args)
cdef Py_ssize_t S_TY = slot_offset(Call.ty)
cdef Py_ssize_t S_VAR = slot_offset(VarBinding.var)
cdef Py_ssize_t S_VALUE = slot_offset(VarBinding.value)
cdef Py_ssize_t S_NAME = slot_offset(Var.name)
cdef Py_ssize_t S_VALUES = slot_offset(ShapeExpr.values)
cdef Py_ssize_t S_FIELDS = slot_offset(Tuple.fields)
cdef Py_ssize_t S_PRIM_VALUE = slot_offset(PrimValue.value)
cdef Py_ssize_t S_SHAPE_TYPE_VALUES = slot_offset(ShapeType.values)
cdef Py_ssize_t S_SHAPE_TYPE_NDIM = slot_offset(ShapeType.ndim)
cdef Py_ssize_t S_TUPLE_TYPE_FIELDS = slot_offset(TupleType.fields)
cdef Py_ssize_t S_PRIM_TYPE_DTYPE = slot_offset(PrimType.dtype)
cdef Py_ssize_t S_PRIM_TYPE_VALUE = slot_offset(PrimType.value)
if (slot_offset(Var.ty) != S_TY or slot_offset(ShapeExpr.ty) != S_TY or slot_offset(Tuple.ty) != S_TY
        or slot_offset(PrimValue.ty) != S_TY or slot_offset(DataflowVar.name) != S_NAME):
    raise ImportError("memcore_py.ir._nodes: unexpected slot layout of the IR nodes")
cdef PyTypeObject* T_CALL = <PyTypeObject*>Call
cdef PyTypeObject* T_BINDING = <PyTypeObject*>VarBinding
cdef PyTypeObject* T_VAR = <PyTypeObject*>Var
cdef PyTypeObject* T_DFVAR = <PyTypeObject*>DataflowVar
cdef PyTypeObject* T_SHAPE_EXPR = <PyTypeObject*>ShapeExpr
cdef PyTypeObject* T_TUPLE = <PyTypeObject*>Tuple
cdef PyTypeObject* T_PRIM_VALUE = <PyTypeObject*>PrimValue
cdef PyTypeObject* T_SHAPE_TYPE = <PyTypeObject*>ShapeType
cdef PyTypeObject* T_TUPLE_TYPE = <PyTypeObject*>TupleType
cdef PyTypeObject* T_PRIM_TYPE = <PyTypeObject*>PrimType


cdef inline object finish(PyObject* node):
    """The new node as an object (the allocation's reference handed over), untracked."""
    PyObject_GC_UnTrack(node)
    out = <object>node
    Py_DECREF(out)
    return out


cdef object call_node(op, tuple args, attrs, tuple ty_args, ty):
    """``Call(op, args, attrs, ty_args, ty)``; ``args`` is untracked too."""
    PyObject_GC_UnTrack(<PyObject*>args)
    cdef PyObject* c = alloc_node(T_CALL)
    put_slot(c, S_OP, op)
    put_slot(c, S_ARGS, args)
    put_slot(c, S_ATTRS, attrs)
    put_slot(c, S_TY_ARGS, ty_args)
    put_slot(c, S_TY, ty)
    return finish(c)


cdef object binding_node(var, value):
    """``VarBinding(var, value)``."""
    cdef PyObject* b = alloc_node(T_BINDING)
    put_slot(b, S_VAR, var)
    put_slot(b, S_VALUE, value)
    return finish(b)


cdef object var_node(bint dataflow, name, ty):
    """``DataflowVar(name, ty)`` when ``dataflow``, else ``Var(name, ty)``."""
    cdef PyObject* v = alloc_node(T_DFVAR if dataflow else T_VAR)
    put_slot(v, S_NAME, name)
    put_slot(v, S_TY, ty)
    return finish(v)


cdef object shape_expr_node(tuple values, ty):
    """``ShapeExpr(values)`` of type ``ty``."""
    cdef PyObject* e = alloc_node(T_SHAPE_EXPR)
    put_slot(e, S_VALUES, values)
    put_slot(e, S_TY, ty)
    return finish(e)


cdef object tuple_node(tuple fields, ty):
    """``Tuple(fields, ty)``; ``fields`` is untracked too."""
    PyObject_GC_UnTrack(<PyObject*>fields)
    cdef PyObject* t = alloc_node(T_TUPLE)
    put_slot(t, S_FIELDS, fields)
    put_slot(t, S_TY, ty)
    return finish(t)


cdef object prim_value_node(value, ty):
    """``PrimValue(value)`` of type ``ty`` (its ``PrimType`` of ``value``'s dtype)."""
    cdef PyObject* p = alloc_node(T_PRIM_VALUE)
    put_slot(p, S_PRIM_VALUE, value)
    put_slot(p, S_TY, ty)
    return finish(p)


cdef object shape_type_node(tuple values):
    """``ShapeType(values)`` for a tuple of PrimExprs."""
    cdef PyObject* st = alloc_node(T_SHAPE_TYPE)
    put_slot(st, S_SHAPE_TYPE_VALUES, values)
    put_slot(st, S_SHAPE_TYPE_NDIM, len(values))
    return finish(st)


cdef object tuple_type_node(tuple fields):
    """``TupleType(fields)`` for a tuple of Types; ``fields`` is untracked too."""
    PyObject_GC_UnTrack(<PyObject*>fields)
    cdef PyObject* tt = alloc_node(T_TUPLE_TYPE)
    put_slot(tt, S_TUPLE_TYPE_FIELDS, fields)
    return finish(tt)


cdef object prim_type_node(str dtype):
    """``PrimType(dtype)`` (no value)."""
    cdef PyObject* pt = alloc_node(T_PRIM_TYPE)
    put_slot(pt, S_PRIM_TYPE_DTYPE, dtype)
    put_slot(pt, S_PRIM_TYPE_VALUE, None)
    return finish(pt)
