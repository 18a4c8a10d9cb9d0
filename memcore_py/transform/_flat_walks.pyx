"""Compiled binding loops over flat functions for AttachAttrLayoutFreeBuffers, and the flatness
test (built by ``setup.py``; no fallback).

Design
------
AttachAttrLayoutFreeBuffers rewrites a *flat* function (no binding opens a scope or nests a call inside its
top-level call, tuple or get-item: normal form) with one loop over its bindings; in CPython
those loops were most of the pass's time on real models. The loops, with the rules
unchanged, live here:

- :func:`is_flat` — the flatness test (:func:`memcore_py.transform.dead_code_elimination.is_flat`).
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

#: Expressions that open a scope or nest a call (not allowed inside a flat binding value).
cdef frozenset NESTING = frozenset((Call, If, Function, SeqExpr))
#: Expressions that hold no GlobalVar and no variable use.
cdef frozenset LEAVES = frozenset((Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc))


# ---------------------------------------------------------------------------- flatness
cdef bint flat_bindings(tuple bindings) except -1:
    """Whether no binding value of ``bindings`` opens a scope (If, SeqExpr, nested function) or
    holds a call inside its top-level call, tuple or get-item."""
    cdef tuple args
    for b in bindings:
        v = <object>get_slot(b, O_VALUE)
        cls = type(v)
        if cls is Call:
            args = <tuple>get_slot(v, O_ARGS)
            for a in args:
                ca = type(a)
                if ca is Tuple:
                    for f in <tuple>get_slot(a, O_FIELDS):
                        tf = type(f)
                        if tf in NESTING or tf is Tuple:
                            return False
                elif ca in NESTING:
                    return False
        elif cls is Tuple:
            for f in <tuple>get_slot(v, O_FIELDS):
                if type(f) in NESTING:
                    return False
        elif cls in NESTING or (cls is TupleGetItem and type(v.tuple_value) in NESTING):
            return False
    return True


def is_flat_block(blk) -> bool:
    """Whether no binding value of the block ``blk`` opens a scope or holds a call inside its
    top-level call, tuple or get-item (:func:`is_flat`'s rule for one block)."""
    return flat_bindings(<tuple>blk.bindings)


def is_flat(func) -> bool:
    """Whether no binding value of ``func`` opens a scope (If, SeqExpr, nested function) or
    holds a call inside its top-level call, tuple or get-item."""
    for blk in func.body.blocks:
        if not flat_bindings(<tuple>blk.bindings):
            return False
    result = func.body.body
    if type(result) is Tuple:
        for f in <tuple>get_slot(result, O_FIELDS):
            if type(f) in NESTING:
                return False
        return True
    return type(result) not in NESTING


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
