"""Unchecked node construction: the one fast way to build IR nodes from known-valid parts.

The public constructors (``Call(op, args, ...)``, ``VarBinding(var, value)``, ...) validate
every field, which is right for user code and wrong for the hot loops of the parser and
the passes: they build 10^5..10^6 nodes per call from parts that are valid by construction
(an argument tuple taken from an existing call, a var of a type read from the input). This
module is the single place where nodes are made without validation. Rules:

- the caller guarantees the fields are what the checked constructor would store (tuples
  where it stores tuples, a dict for ``attrs``, a :class:`~memcore_py.ir.types.Type` or
  None for ``ty``); tests/memcore_py/ir/test_construct.py checks that every function here
  builds a node equal field by field to the checked constructor's, so a change of the data
  model is caught;
- no code outside ``memcore_py.ir`` sets node slots itself (no ``object.__setattr__``, no
  slot descriptors, no ``IRModule`` private attributes): it calls these functions;
- compiled helpers reach the same slots through ``memcore_py/ir/_slots.pxd``.
"""
from __future__ import annotations

from .expr import (
    BindingBlock,
    Call,
    Function,
    If,
    MatchCast,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .infer import rebuilt_ret_ty
from .module import IRModule
from .types import ShapeType, TensorType

__all__ = [
    "EMPTY_ATTRS",
    "new_var",
    "new_call",
    "new_binding",
    "new_match_cast",
    "new_block",
    "new_seq",
    "new_if",
    "new_tuple",
    "new_tuple_get_item",
    "new_shape_expr",
    "new_shape_type",
    "new_tensor_type",
    "new_function",
    "function_with_body",
    "shallow_copy",
    "module_with_functions",
]

_new = object.__new__
_set = object.__setattr__

#: The shared empty ``attrs`` dict of calls without attributes (never mutated).
EMPTY_ATTRS = Call(None).attrs


def new_var(cls, name: str, ty):
    """``cls(name, ty)`` for ``cls`` :class:`Var` or :class:`DataflowVar`."""
    v = _new(cls)
    _SET_VAR_NAME(v, name)
    _SET_VAR_TY(v, ty)
    return v


def new_call(op, args: tuple, attrs=None, ty_args: tuple = (), ty=None):
    """``Call(op, args, attrs, ty_args, ty)``; ``args`` and ``ty_args`` are tuples."""
    c = _new(Call)
    _set(c, "op", op)
    _set(c, "args", args)
    _set(c, "attrs", attrs if attrs else EMPTY_ATTRS)
    _set(c, "ty_args", ty_args)
    _set(c, "ty", ty)
    return c


def new_binding(var, value):
    """``VarBinding(var, value)``."""
    b = _new(VarBinding)
    _SET_BINDING_VAR(b, var)
    _SET_BINDING_VALUE(b, value)
    return b


def new_match_cast(var, value, ty):
    """``MatchCast(var, value, ty)``."""
    b = _new(MatchCast)
    _set(b, "var", var)
    _set(b, "value", value)
    _set(b, "ty", ty)
    return b


#: Slot setters of the nodes the rewriting passes and the builder make most (a member
#: descriptor's ``__set__`` skips the attribute lookup of ``object.__setattr__``).
_SET_VAR_NAME = Var.name.__set__
_SET_VAR_TY = Var.ty.__set__
_SET_BINDING_VAR = VarBinding.var.__set__
_SET_BINDING_VALUE = VarBinding.value.__set__
_SET_BINDINGS = BindingBlock.bindings.__set__
_SET_BLOCKS = SeqExpr.blocks.__set__
_SET_BODY = SeqExpr.body.__set__
_SET_TY = SeqExpr.ty.__set__


def new_block(cls, bindings):
    """``cls(bindings)`` for ``cls`` :class:`BindingBlock` or :class:`DataflowBlock`."""
    blk = _new(cls)
    _SET_BINDINGS(blk, tuple(bindings))
    return blk


def new_seq(blocks, body, ty=None):
    """``SeqExpr(blocks, body, ty)``; the type defaults to the body's."""
    s = _new(SeqExpr)
    _SET_BLOCKS(s, tuple(blocks))
    _SET_BODY(s, body)
    _SET_TY(s, ty if ty is not None else body.ty)
    return s


def new_if(cond, true_branch, false_branch, ty=None):
    """``If(cond, true_branch, false_branch, ty)``; the type defaults to the true branch's."""
    e = _new(If)
    _set(e, "cond", cond)
    _set(e, "true_branch", true_branch)
    _set(e, "false_branch", false_branch)
    _set(e, "ty", ty if ty is not None else true_branch.ty)
    return e


def new_tuple(fields: tuple, ty):
    """``Tuple(fields, ty)`` with its type given."""
    t = _new(Tuple)
    _set(t, "fields", fields)
    _set(t, "ty", ty)
    return t


def new_tuple_get_item(tuple_value, index: int, ty):
    """``TupleGetItem(tuple_value, index, ty)`` with its type given (no range check)."""
    g = _new(TupleGetItem)
    _set(g, "tuple_value", tuple_value)
    _set(g, "index", index)
    _set(g, "ty", ty)
    return g


def new_shape_type(values: tuple):
    """``ShapeType(values)`` for a tuple of PrimExprs."""
    st = _new(ShapeType)
    _set(st, "values", values)
    _set(st, "ndim", len(values))
    return st


def new_tensor_type(shape: tuple, dtype: str):
    """``TensorType(shape, dtype)`` for a tuple of PrimExprs and a valid dtype (read from a
    checked node), without a vdevice."""
    t = _new(TensorType)
    _set(t, "shape", shape)
    _set(t, "dtype", dtype)
    _set(t, "ndim", len(shape))
    _set(t, "vdevice", None)
    return t


def new_shape_expr(values: tuple, ty=None):
    """``ShapeExpr(values)`` for a tuple of PrimExprs (``ty``: its ShapeType, if at hand)."""
    s = _new(ShapeExpr)
    _set(s, "values", values)
    _set(s, "ty", ty if ty is not None else new_shape_type(values))
    return s


def new_function(params: tuple, body, ret_ty, attrs, is_pure: bool, ty, share_attrs: bool = False):
    """``Function(params, body, ret_ty, attrs, is_pure)`` with its (known) function type.
    ``share_attrs``: ``attrs`` is another Function's dict, used as it is (attrs dicts are never
    changed in place; sharing lets the TVM bridge write back the DictAttrs it read)."""
    f = _new(Function)
    _set(f, "params", params)
    _set(f, "body", body)
    _set(f, "ret_ty", ret_ty)
    _set(f, "attrs", attrs if share_attrs else dict(attrs) if attrs else {})
    _set(f, "is_pure", bool(is_pure))
    _set(f, "ty", ty)
    return f


def function_with_body(func: Function, body, attrs=None) -> Function:
    """``func`` with a new body (and ``attrs``, default the old ones). The parameters are
    reused unchecked; the declared return type is kept or replaced as TVM's mutator does
    (:func:`~memcore_py.ir.infer.rebuilt_ret_ty`); when both the body's type and the return
    type are the old ones the function type is reused too, else it is computed by the
    checked constructor."""
    attrs = func.attrs if attrs is None else attrs
    ret_ty = rebuilt_ret_ty(func.ret_ty, func.params, body.ty)
    if body.ty is not func.body.ty or ret_ty is not func.ret_ty:
        return Function(func.params, body, ret_ty, attrs, func.is_pure)
    return new_function(func.params, body, func.ret_ty, attrs, func.is_pure, func.ty, attrs is func.attrs)


def shallow_copy(node):
    """A distinct node of the same class with the same (immutable, validated) fields."""
    cls = type(node)
    n = _new(cls)
    for name in _slot_names(cls):
        _set(n, name, getattr(node, name))
    return n


_SLOT_NAMES: dict = {}


def _slot_names(cls) -> tuple:
    names = _SLOT_NAMES.get(cls)
    if names is None:
        out = []
        for k in reversed(cls.__mro__):
            for name in getattr(k, "__slots__", ()):
                if name not in out:
                    out.append(name)
        names = _SLOT_NAMES[cls] = tuple(out)
    return names


def new_module(functions: dict, attrs: dict, global_infos: dict) -> IRModule:
    """``IRModule(functions, attrs, global_infos)`` for a ``functions`` dict of GlobalVar ->
    valid function with distinct names (not checked), taking the three dicts as they are."""
    new = _new(IRModule)
    new.functions = functions
    new.attrs = attrs
    new.global_infos = global_infos
    new._by_name = {gv.name: gv for gv in functions}
    return new


def module_with_functions(mod: IRModule, updates: dict) -> IRModule:
    """``mod.with_functions(updates)`` for ``updates`` that only *replace* functions of
    ``mod`` (same GlobalVars, so the same names) by valid functions: the other functions
    are not validated again."""
    new = _new(IRModule)
    funcs = dict(mod.functions)
    funcs.update(updates)
    new.functions = funcs
    new.attrs = dict(mod.attrs)
    new.global_infos = dict(mod.global_infos)
    new._by_name = dict(mod._by_name)
    return new
