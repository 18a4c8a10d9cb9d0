"""Type inference for the values the builder emits (TVM's ``FInferStructInfo``, the subset
memcore needs).

Design
------
:func:`infer_type` looks at one expression whose sub-expressions already have types and
returns its type. Calls are dispatched on the callee:

- an :class:`~memcore_py.ir.op.Op`: its ``type_rule``, declared with the op in
  :mod:`memcore_py.ir.ops` (element-wise binary ops with numpy broadcasting over possibly
  symbolic dims, unary ops, matmul, reshape, split, concat, permute_dims, sum/mean,
  shape_of, the ``call_tir`` family, allocation and kill ops, ...), after the argument count
  is checked against the op's ``n_args``; an op without a rule is an
  :class:`~memcore_py.errors.IRError` naming the op;
- a :class:`GlobalVar`: the called Relax function's return type, or the empty tuple
  ``R.Tuple()`` for a PrimFunc (what TVM gives a direct DPS call);
- an :class:`ExternFunc` (``R.call_packed``): ``ty_args[0]`` (several ty_args: their tuple),
  else ``R.Object`` (:func:`packed_call_type`);
- a :class:`Var` of :class:`FuncType`: its ``ret``.

Symbolic dims are compared with :func:`~memcore_py.ir.prim.prove_equal`.
"""
from __future__ import annotations

from ..errors import IRError
from .expr import (
    BaseFunc,
    Call,
    Constant,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    PrimFunc,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from .op import Op
from .prim import PrimVar, free_prim_vars, prove_equal
from .types import (
    VOID,
    FuncType,
    ObjectType,
    PrimType,
    ShapeType,
    TensorType,
    TupleType,
    Type,
    erase_prim_values,
    is_base_of,
    substitute_type,
    type_contradiction,
    type_equal,
)

# VOID (``R.Tuple()``) lives in memcore_py.ir.types; re-exported here for older importers.
__all__ = ["infer_type", "join_types", "erase_to_well_defined", "packed_call_type", "VOID"]


def infer_type(value: Expr, mod=None) -> Type:
    """The type of ``value``.

    Parameters
    ----------
    value : Expr
        Its sub-expressions (call arguments, tuple fields) must already have types.
    mod : IRModule or BlockBuilder, optional
        Where GlobalVar callees are looked up (anything with ``lookup_function(gv)``, or an
        IRModule).

    Returns
    -------
    Type

    Raises
    ------
    IRError
        Unknown op, wrong argument count or kinds, incompatible shapes or dtypes; the
        message names the op.
    """
    cls = type(value)
    if cls is Call:
        return _infer_call(value, mod)
    if cls in (Var, DataflowVar):
        if value.ty is None:
            raise IRError(f"Var {value.name!r} has no type")
        return value.ty
    if cls is Tuple:
        return TupleType([_ty(f, mod) for f in value.fields])
    if cls is TupleGetItem:
        tt = _ty(value.tuple_value, mod)
        if not isinstance(tt, TupleType):
            raise IRError(f"TupleGetItem needs a tuple; got a value of type {tt!r}")
        if value.index >= len(tt.fields):
            raise IRError(f"tuple index {value.index} is out of range for a tuple of {len(tt.fields)} fields")
        return tt.fields[value.index]
    if cls is If:
        return join_types(_ty(value.true_branch, mod), _ty(value.false_branch, mod))
    if cls is SeqExpr:
        return _ty(value.body, mod)
    if cls is ShapeExpr:
        return ShapeType(value.values)
    if cls is PrimValue:
        return PrimType(value.value.dtype)  # no value: TVM 0.27's PrimType holds none
    if cls in (StringImm, DataTypeImm, ExternFunc):
        return ObjectType()
    if cls is Constant:
        return value.ty
    if cls is GlobalVar:
        func = _lookup(mod, value)
        if func is None:
            if value.ty is not None:
                return value.ty
            raise IRError(f"GlobalVar {value.name!r} is not a function of the module")
        return func.ty
    if isinstance(value, BaseFunc):
        return value.ty
    if value.ty is not None:
        return value.ty
    raise IRError(f"cannot infer the type of {type(value).__name__} {value!r}")


def _ty(e, mod):
    return e.ty if e.ty is not None else infer_type(e, mod)


def _arg_ty(e, mod):
    # A callee passed as an argument (call_tir's GlobalVar) needs no type of its own here.
    if type(e) is GlobalVar and e.ty is None and _lookup(mod, e) is None:
        return ObjectType()
    return _ty(e, mod)


def _lookup(mod, gv: GlobalVar):
    if mod is None:
        return None
    if hasattr(mod, "lookup_function"):
        return mod.lookup_function(gv)
    return mod[gv.name] if gv.name in mod else None


def join_types(a: Type, b: Type) -> Type:
    """The most precise type both ``a`` and ``b`` belong to (TVM ``StructInfoLCA``): equal
    types stay; tensors keep what they agree on (dtype, ndim, shape); tuples of equal arity
    join field-wise; otherwise ``R.Object``."""
    if type_equal(a, b):
        return a
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        dtype = a.dtype if a.dtype == b.dtype else ""
        ndim = a.ndim if a.ndim == b.ndim else -1
        shape = None
        if ndim != -1 and a.shape is not None and b.shape is not None:
            if all(prove_equal(x, y) for x, y in zip(a.shape, b.shape)):
                shape = a.shape
        vdevice = a.vdevice if a.vdevice == b.vdevice else None
        return TensorType(shape, dtype, ndim, vdevice)
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.fields) == len(b.fields):
        return TupleType([join_types(x, y) for x, y in zip(a.fields, b.fields)])
    if isinstance(a, ShapeType) and isinstance(b, ShapeType):
        return ShapeType(None, a.ndim if a.ndim == b.ndim else -1)
    if isinstance(a, PrimType) and isinstance(b, PrimType) and a.dtype == b.dtype:
        return PrimType(a.dtype)
    return ObjectType()


def erase_to_well_defined(ty: Type, defined) -> Type:
    """``ty`` with every part that mentions a symbolic var outside ``defined`` (a set of
    names) forgotten: such a tensor keeps dtype and rank only, such a shape its rank (TVM
    ``EraseToWellDefined``, used for function return types)."""
    if isinstance(ty, TensorType):
        if ty.shape is not None and any(n not in defined for d in ty.shape for n in free_prim_vars(d)):
            return TensorType(None, ty.dtype, ty.ndim, ty.vdevice)
        return ty
    if isinstance(ty, ShapeType):
        if ty.values is not None and any(n not in defined for d in ty.values for n in free_prim_vars(d)):
            return ShapeType(None, ty.ndim)
        return ty
    if isinstance(ty, PrimType):
        if ty.value is not None and any(n not in defined for n in free_prim_vars(ty.value)):
            return PrimType(ty.dtype)
        return ty
    if isinstance(ty, TupleType):
        fields = [erase_to_well_defined(f, defined) for f in ty.fields]
        if all(a is b for a, b in zip(fields, ty.fields)):
            return ty
        return TupleType(fields)
    return ty


def signature_prim_names(params) -> set:
    """The names of the symbolic variables the types of ``params`` mention (what a function's
    signature defines, for :func:`erase_to_well_defined` of its return type)."""
    names = set()
    stack = [p.ty for p in params]
    while stack:
        t = stack.pop()
        if isinstance(t, TensorType) and t.shape is not None:
            for d in t.shape:
                names.update(free_prim_vars(d))
        elif isinstance(t, ShapeType) and t.values is not None:
            for d in t.values:
                names.update(free_prim_vars(d))
        elif isinstance(t, TupleType):
            stack.extend(t.fields)
    return names


def rebuilt_ret_ty(ret_ty, params, body_ty):
    """The declared return type of a function a pass rebuilt with parameters ``params`` and a
    body of type ``body_ty`` that was declared ``ret_ty`` (TVM's ``ExprMutator`` on a changed
    function): ``ret_ty`` when ``body_ty`` is a base of it (the same type, or the declaration
    more specific), else the body's type with the symbolic variables ``params`` do not define
    erased (``Function``'s constructor without a return type) and without the values of its
    prim types (a ``PrimType`` given a value by its builder; TVM's holds none, so the return
    type TVM derives for ``return (0,)`` is ``R.Tuple(T.int64)`` whatever the value).
    None stays None."""
    if ret_ty is None or body_ty is None or ret_ty is body_ty or is_base_of(body_ty, ret_ty):
        return ret_ty
    return erase_prim_values(erase_to_well_defined(body_ty, signature_prim_names(params)))


def _check_call_args(name: str, func: Function, arg_types) -> None:
    """TVM's normalizer refuses a call of a Relax function whose arity differs or whose
    argument can never have its parameter's type (``StructInfoBaseCheck == kFailL0``,
    :func:`~memcore_py.ir.types.type_contradiction`): "Argument 0 type mismatch"."""
    if len(arg_types) != len(func.params):
        raise IRError(f"call to {name!r}: it takes {len(func.params)} arguments; got {len(arg_types)}")
    for i, (p, at) in enumerate(zip(func.params, arg_types)):
        why = type_contradiction(p.ty, at)
        if why is not None:
            raise IRError(f"call to {name!r}: argument {i} type mismatch: parameter {p.name!r} expects "
                          f"{p.ty!r}, given {at!r} ({why})")


def _derive_call_ret(func: Function, arg_types) -> Type:
    """Return type of a call to ``func``: symbolic vars bound by its params' bare dims are
    replaced by the arguments' dims; what stays unknown is erased (TVM
    ``DeriveCallRetStructInfo``)."""
    ret = func.ty.ret if func.ty.ret is not None else ObjectType()
    env = {}
    for p, at in zip(func.params, arg_types):
        pt = p.ty
        if isinstance(pt, TensorType) and isinstance(at, TensorType) and pt.shape is not None and at.shape is not None \
                and len(pt.shape) == len(at.shape):
            for d, a in zip(pt.shape, at.shape):
                if isinstance(d, PrimVar):
                    env.setdefault(d.name, a)
    if env:
        ret = substitute_type(ret, env)
    defined = set()
    for at in arg_types:
        for d in _type_dims(at):
            defined.update(free_prim_vars(d))
    return erase_to_well_defined(ret, defined)


def _type_dims(ty):
    if isinstance(ty, TensorType) and ty.shape is not None:
        return list(ty.shape)
    if isinstance(ty, ShapeType) and ty.values is not None:
        return list(ty.values)
    if isinstance(ty, TupleType):
        return [d for f in ty.fields for d in _type_dims(f)]
    return []


# ---------------------------------------------------------------------------- calls
def _infer_call(call: Call, mod) -> Type:
    op = call.op
    if type(op) is Op:
        rule = op.type_rule
        if rule is None:
            raise IRError(f"infer_type: no type rule for operator {op.name!r}")
        problem = op.n_args_error(len(call.args))
        if problem is not None:
            raise IRError(problem)
        arg_types = [a.ty if a.ty is not None else _arg_ty(a, mod) for a in call.args]  # _arg_ty of a typed one
        try:
            return rule(call, arg_types)
        except IRError:
            raise
        except (IndexError, KeyError, TypeError, ValueError, AttributeError) as e:
            # a rule met arguments of the wrong kind or rank that it does not check by name
            raise IRError(f"{op.name}: the arguments do not fit the op ({type(e).__name__}: {e}); argument types "
                          f"{arg_types!r}") from e
    if isinstance(op, GlobalVar):
        func = _lookup(mod, op)
        if isinstance(func, PrimFunc):
            return VOID
        if isinstance(func, Function):
            arg_types = [_ty(a, mod) for a in call.args]
            _check_call_args(op.name, func, arg_types)
            return _derive_call_ret(func, arg_types)
        if isinstance(op.ty, FuncType):
            return op.ty.ret
        raise IRError(f"call to GlobalVar {op.name!r}, which is not a function of the module")
    if isinstance(op, ExternFunc):
        return packed_call_type(call)
    if isinstance(op, Var):
        ft = op.ty
        if isinstance(ft, FuncType):
            return ft.ret
        raise IRError(f"call to Var {op.name!r} of non-function type {ft!r}")
    raise IRError(f"a call's callee must be an Op, GlobalVar, ExternFunc or Var; got {type(op).__name__}")


def packed_call_type(call: Call) -> Type:
    """The result type of a packed call (``R.call_packed``, ``R.call_pure_packed``):
    ``ty_args[0]``, the tuple of several ``ty_args``, else ``R.Object``."""
    if not call.ty_args:
        return ObjectType()
    if len(call.ty_args) == 1:
        return call.ty_args[0]
    return TupleType(call.ty_args)
