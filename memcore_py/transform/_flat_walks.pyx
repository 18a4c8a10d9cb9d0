"""Compiled binding loops over flat functions for AttachAttrLayoutFreeBuffers, and the flatness
test (built by ``setup.py``; no fallback).

Design
------
AttachAttrLayoutFreeBuffers rewrites a *flat* function (no binding opens a scope or nests a call inside its
top-level call, tuple or get-item: normal form) with one loop over its bindings; in CPython
those loops were most of the pass's time on real models. The loops, with the rules
unchanged, live here:

- :func:`is_flat` — the flatness test (:func:`memcore_py.transform.dead_code_elimination.is_flat`),
  the walk of the rule in ``memcore_py/analysis/_flat_rule.pxd`` over memcore's nodes.
- :func:`layout_free_positions` — AttachAttrLayoutFreeBuffers' positions rule (every path's).
- :func:`call_tir_arguments` — the arguments of the call it rewrites (every path's).
- :func:`attach_bindings` — AttachAttrLayoutFreeBuffers' rewrite of one block: a
  ``R.call_tir(gv, (args...))`` whose (callee, layout-free positions) already has its
  attributed copy is re-pointed here; anything else (a first copy to make, a MatchCast,
  malformed input to report) goes to the Python callback ``slow(binding)``, which returns
  the binding to use.

Nodes are read through ``memcore_py/ir/_slots.pxd`` and built by ``memcore_py/ir/_nodes.pyx``
(as ``construct.new_call`` / ``new_binding`` build them).
"""
from memcore_py.analysis._flat_rule cimport (FLAT_CALL, FLAT_GET_ITEM, FLAT_LEAF, FLAT_SCOPE, FLAT_TUPLE, HOLD_BINDING,
                                             HOLD_RESULT, STEP_FLAT, flat_step)
from memcore_py.ir._nodes cimport binding_node, call_node
from memcore_py.ir._slots cimport get_slot, slot_offset

from memcore_py.ir.expr import (Call, Constant, DataflowVar, DataTypeImm, ExternFunc, Function, GlobalVar, If,
                                PrimValue, SeqExpr, ShapeExpr, StringImm, Tuple, TupleGetItem, Var, VarBinding)

cdef Py_ssize_t O_VAR = slot_offset(VarBinding.var)
cdef Py_ssize_t O_VALUE = slot_offset(VarBinding.value)
cdef Py_ssize_t O_TY = slot_offset(Call.ty)
cdef Py_ssize_t O_OP = slot_offset(Call.op)
cdef Py_ssize_t O_ARGS = slot_offset(Call.args)
cdef Py_ssize_t O_ATTRS = slot_offset(Call.attrs)
cdef Py_ssize_t O_TY_ARGS = slot_offset(Call.ty_args)
cdef Py_ssize_t O_FIELDS = slot_offset(Tuple.fields)
cdef Py_ssize_t O_GV_NAME = slot_offset(GlobalVar.name)

# ---------------------------------------------------------------------------- flatness
cdef int node_class(v):
    """The class of the memcore node ``v`` for the flatness rule (``_flat_rule.pxd``)."""
    cls = type(v)
    if cls is Call:
        return FLAT_CALL
    if cls is Tuple:
        return FLAT_TUPLE
    if cls is TupleGetItem:
        return FLAT_GET_ITEM
    if cls is If or cls is SeqExpr or cls is Function:
        return FLAT_SCOPE
    return FLAT_LEAF


cdef bint flat_node(v, int holder) except -1:
    """Whether the node ``v`` held as ``holder`` is flat: :func:`flat_step` asked of it and, as
    it says, of its children (a call's arguments, a tuple's fields, a get-item's tuple)."""
    cdef int step = flat_step(holder, node_class(v))
    if step <= 0:
        return step == STEP_FLAT
    cls = type(v)
    if cls is Call:
        children = <tuple>get_slot(v, O_ARGS)
    elif cls is Tuple:
        children = <tuple>get_slot(v, O_FIELDS)
    else:
        children = (v.tuple_value,)
    for c in children:
        if not flat_node(c, step):
            return False
    return True


cdef bint flat_bindings(tuple bindings) except -1:
    """Whether every binding value of ``bindings`` is flat (``_flat_rule.pxd``)."""
    for b in bindings:
        if not flat_node(<object>get_slot(b, O_VALUE), HOLD_BINDING):
            return False
    return True


def is_flat_block(blk) -> bool:
    """Whether no binding value of the block ``blk`` opens a scope or holds a call inside its
    top-level call, tuple or get-item (:func:`is_flat`'s rule for one block)."""
    return flat_bindings(<tuple>blk.bindings)


def is_flat(func) -> bool:
    """Whether ``func`` is flat (``memcore_py/analysis/_flat_rule.pxd``): no binding value and
    not the result opens a scope (If, SeqExpr, nested function) or holds a call inside its
    top-level call, tuple or get-item, and the result is not a call."""
    for blk in func.body.blocks:
        if not flat_bindings(<tuple>blk.bindings):
            return False
    return flat_node(func.body.body, HOLD_RESULT)


# ---------------------------------------------------------------------------- attach
cpdef tuple layout_free_positions(fields, layout_free, is_constant=None):
    """AttachAttrLayoutFreeBuffers' rule for a ``call_tir``'s argument tuple: the positions of
    ``fields`` whose object is in ``layout_free`` (a weight parameter) or is a tensor constant
    (memcore's :class:`~memcore_py.ir.Constant`, or ``is_constant(field)`` for another object
    model). The one statement of the rule: the pure pass, its flat walk here and the pass on
    TVM's objects call it."""
    cdef list out = []
    cdef Py_ssize_t i = 0
    for f in fields:
        if f in layout_free or (type(f) is Constant if is_constant is None else is_constant(f)):
            out.append(i)
        i += 1
    return tuple(out)


cpdef tuple call_tir_arguments(copy, args, bint keep_tir_vars):
    """The arguments of an ``R.call_tir`` AttachAttrLayoutFreeBuffers rewrites, every path's
    (``args``: its arguments, a sequence of either object model): the attributed copy ``copy``
    as the callee, the argument tuple, and the ``tir_vars`` argument unless ``keep_tir_vars``
    is False (TVM drops it: DIFFERENCES.md)."""
    if keep_tir_vars:
        return (copy, args[1]) + tuple(args[2:])
    return (copy, args[1])


def attach_bindings(tuple bindings, call_tir, set layout_free, dict copies, bint keep_tir_vars, slow):
    """AttachAttrLayoutFreeBuffers' rewrite of one flat block (module docstring).

    Returns
    -------
    list or None
        The new bindings, or None when no binding is a ``R.call_tir``.
    """
    cdef list out = None
    cdef Py_ssize_t i, n = len(bindings)
    cdef tuple args
    for i in range(n):
        b = bindings[i]
        v = <object>get_slot(b, O_VALUE)
        if type(v) is not Call or <object>get_slot(v, O_OP) is not call_tir:
            continue
        if out is None:
            out = list(bindings)
        args = <tuple>get_slot(v, O_ARGS)
        new_gv = None
        if type(b) is VarBinding and len(args) >= 2 and type(args[0]) is GlobalVar and type(args[1]) is Tuple:
            new_gv = copies.get((<object>get_slot(args[0], O_GV_NAME),
                                 layout_free_positions(<tuple>get_slot(args[1], O_FIELDS), layout_free)))
        if new_gv is None:
            out[i] = slow(b)
            continue
        out[i] = binding_node(<object>get_slot(b, O_VAR),
                              call_node(call_tir, call_tir_arguments(new_gv, args, keep_tir_vars), <object>get_slot(v, O_ATTRS),
                                        <tuple>get_slot(v, O_TY_ARGS), <object>get_slot(v, O_TY)))
    return out
