"""Parse caches: fresh copies of cached values, templates, and keys of typed op calls.

Design
------
TVM's output repeats the same few line shapes, so the statement parser
(:mod:`memcore_py.ir.text.parse_stmts`) caches what it parsed: a value without variables is
copied (:func:`_clone`) at each later use, a value with variables is a template whose
variables are substituted (:func:`_substitute`), and the type of a schema op's call is kept
under :func:`_op_type_key` for one parse. Cached values are copied per use, never shared
(passes key nodes by identity); types, PrimExprs, attrs and arrays are immutable and
shared.
"""
from __future__ import annotations

from ..construct import new_call, new_tuple, new_tuple_get_item, shallow_copy
from ..expr import (Call, Constant, DataflowVar, DataTypeImm, ExternFunc, GlobalVar, PrimValue,
    ShapeExpr, StringImm, Tuple, TupleGetItem, Var)
from ..prim import IntImm
from .parse_values import _MatchCastPair


def _clone(e):
    """A fresh copy of a variable-free value. Cached values are never shared between
    bindings (passes key nodes by identity); types, PrimExprs, attrs and arrays are
    immutable and shared. Nodes were validated when first built, so copies are made
    unchecked (:mod:`memcore_py.ir.construct`)."""
    return _CLONE[type(e)](e)


def _clone_call(e):
    op = e.op
    if type(op) is ExternFunc:
        op = shallow_copy(op)
    return new_call(op, tuple([_CLONE[type(a)](a) for a in e.args]), e.attrs, e.ty_args, e.ty)


def _clone_tuple(e):
    return new_tuple(tuple([_clone(f) for f in e.fields]), e.ty)


def _clone_get_item(e):
    return new_tuple_get_item(_clone(e.tuple_value), e.index, e.ty)


#: Bound on cached value templates (a module with endless distinct lines stops caching).
_MAX_TEMPLATES = 50000


def _substitute(e, mapping):
    """A fresh copy of a parsed value with its Relax variables replaced (``mapping``: old
    var -> new var). Tuples and get-items are rebuilt through their constructors, so their
    types follow the new variables (and a get-item index is checked again)."""
    t = type(e)
    if t is Var or t is DataflowVar:
        return mapping.get(e, e)
    if t is Call:
        op = e.op
        top = type(op)
        if top is Var or top is DataflowVar:
            op = mapping.get(op, op)
        elif top is ExternFunc:
            op = shallow_copy(op)
        return new_call(op, tuple([_substitute(a, mapping) for a in e.args]), e.attrs, e.ty_args, e.ty)
    if t is Tuple:
        return Tuple([_substitute(f, mapping) for f in e.fields])
    if t is TupleGetItem:
        return TupleGetItem(_substitute(e.tuple_value, mapping), e.index)
    if t is _MatchCastPair:
        return _MatchCastPair(_substitute(e.value, mapping), e.ty)
    if t is GlobalVar:
        return e
    return _CLONE[t](e)


_CLONE = {
    Call: _clone_call,
    Tuple: _clone_tuple,
    ShapeExpr: shallow_copy,
    PrimValue: shallow_copy,
    StringImm: shallow_copy,
    DataTypeImm: shallow_copy,
    Constant: shallow_copy,
    ExternFunc: shallow_copy,
    GlobalVar: lambda e: e,
    TupleGetItem: _clone_get_item,
}


_MISSING = object()


def _arg_key(a):
    """A hashable key of a call argument that determines its part in the call's type: a
    variable by its (interned, per-function) type object, literal shapes, tuples and scalars
    by value; None when the argument cannot be keyed (nested calls, constants)."""
    t = type(a)
    if t is Var or t is DataflowVar:
        return ("v", id(a.ty)) if a.ty is not None else None
    if t is PrimValue:
        v = a.value
        return ("p", v.value, v.dtype) if type(v) is IntImm else None
    if t is ShapeExpr:
        vals = a.values
        return ("s",) + tuple(d.value for d in vals) if all(type(d) is IntImm for d in vals) else None
    if t is Tuple:
        keys = tuple(_arg_key(f) for f in a.fields)
        return None if None in keys else ("t",) + keys
    return None


def _op_type_key(call):
    """The key under which the type of a schema op's call is cached within one parse: the op,
    its arguments' keys and its attributes (None when something cannot be keyed). Calls with
    equal keys have equal types (the type rule reads nothing else)."""
    keys = tuple(_arg_key(a) for a in call.args)
    if None in keys:
        return None
    attrs = []
    for k, v in call.attrs.items():
        if type(v) not in (int, float, bool, str, tuple, type(None)):
            return None
        attrs.append((k, v))
    key = (call.op, keys, tuple(attrs))
    try:
        hash(key)
    except TypeError:  # an unhashable attribute value
        return None
    return key
