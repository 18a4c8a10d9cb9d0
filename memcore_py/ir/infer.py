"""Type inference for the values the builder emits (TVM's ``FInferStructInfo``, the subset
memcore needs).

Design
------
:func:`infer_type` looks at one expression whose sub-expressions already have types and
returns its type. Calls are dispatched on the callee:

- an :class:`~memcore_py.ir.op.Op`: a rule from ``_OP_RULES`` (element-wise binary ops with
  numpy broadcasting over possibly symbolic dims, unary ops, matmul, reshape, split, concat,
  permute_dims, sum/mean, shape_of, the ``call_tir`` family, allocation and kill ops, ...);
  an op without a rule is an :class:`~memcore_py.errors.IRError` naming the op;
- a :class:`GlobalVar`: the called Relax function's return type, or the empty tuple
  ``R.Tuple()`` for a PrimFunc (what TVM gives a direct DPS call);
- an :class:`ExternFunc` (``R.call_packed``): ``ty_args[0]`` (several ty_args: their tuple),
  else ``R.Object``;
- a :class:`Var` of :class:`FuncType`: its ``ret``.

Symbolic dims are compared with :func:`~memcore_py.ir.prim.prove_equal`. Where TVM's
analyzer would simplify a new dim (``n + n`` -> ``n * 2`` in concat), this module builds the
plain tree instead (``n + n``); sizes that are constant fold to integers. Results were
checked against TVM 0.27's ``BlockBuilder.normalize`` for the cases in the tests.
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
from .prim import Add, BinaryOp, FloorDiv, IntImm, Mul, PrimExpr, PrimVar, Sub, free_prim_vars, prove_equal, simplify_const
from .types import FuncType, ObjectType, PrimType, ShapeType, TensorType, TupleType, Type

__all__ = ["infer_type", "join_types", "erase_to_well_defined", "VOID"]

#: The type of a call that returns nothing (kill ops, PrimFunc calls): ``R.Tuple()``.
VOID = TupleType([])


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
        return PrimType(value.value.dtype, value.value)
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
    from .structural import structural_equal

    if a is b or structural_equal(a, b, map_free_vars=False):
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


def _substitute(expr: PrimExpr, env):
    if isinstance(expr, PrimVar):
        return env.get(expr.name, expr)
    if isinstance(expr, BinaryOp):
        a, b = _substitute(expr.a, env), _substitute(expr.b, env)
        if a is expr.a and b is expr.b:
            return expr
        folded = simplify_const(type(expr)(a, b))
        return IntImm(folded) if folded is not None else type(expr)(a, b)
    return expr


def _substitute_type(ty: Type, env) -> Type:
    if isinstance(ty, TensorType) and ty.shape is not None:
        return TensorType(tuple(_substitute(d, env) for d in ty.shape), ty.dtype, vdevice=ty.vdevice)
    if isinstance(ty, ShapeType) and ty.values is not None:
        return ShapeType(tuple(_substitute(d, env) for d in ty.values))
    if isinstance(ty, TupleType):
        return TupleType([_substitute_type(f, env) for f in ty.fields])
    return ty


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
        ret = _substitute_type(ret, env)
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
    if isinstance(op, Op):
        rule = _OP_RULES.get(op.name)
        if rule is None:
            raise IRError(f"infer_type: no type rule for operator {op.name!r}")
        lo, hi = op.n_args
        n = len(call.args)
        if n < lo or (hi is not None and n > hi):
            want = f"{lo}" if lo == hi else (f"{lo} to {hi}" if hi is not None else f"at least {lo}")
            raise IRError(f"{op.name} takes {want} arguments; got {n}")
        arg_types = [_arg_ty(a, mod) for a in call.args]
        return rule(call, arg_types)
    if isinstance(op, GlobalVar):
        func = _lookup(mod, op)
        if isinstance(func, PrimFunc):
            return VOID
        if isinstance(func, Function):
            return _derive_call_ret(func, [_ty(a, mod) for a in call.args])
        if isinstance(op.ty, FuncType):
            return op.ty.ret
        raise IRError(f"call to GlobalVar {op.name!r}, which is not a function of the module")
    if isinstance(op, ExternFunc):
        return _packed_result(call)
    if isinstance(op, Var):
        ft = op.ty
        if isinstance(ft, FuncType):
            return ft.ret
        raise IRError(f"call to Var {op.name!r} of non-function type {ft!r}")
    raise IRError(f"a call's callee must be an Op, GlobalVar, ExternFunc or Var; got {type(op).__name__}")


def _packed_result(call):
    if not call.ty_args:
        return ObjectType()
    if len(call.ty_args) == 1:
        return call.ty_args[0]
    return TupleType(call.ty_args)


def _tensor(t, opname, i=0) -> TensorType:
    if not isinstance(t, TensorType):
        raise IRError(f"{opname} expects a tensor as argument {i}; got {t!r}")
    return t


def _int_attr(call, key, default=None):
    v = call.attrs.get(key, default)
    if isinstance(v, IntImm):
        return v.value
    if isinstance(v, PrimValue):
        return _int_attr_value(v.value)
    return v


def _int_attr_value(v):
    return v.value if isinstance(v, IntImm) else v


def _int_list(v):
    if v is None:
        return None
    if isinstance(v, (int, IntImm)):
        return [_int_attr_value(v)]
    return [_int_attr_value(x) for x in v]


def _norm_axis(axis, ndim, opname):
    if not -ndim <= axis < max(ndim, 1):
        raise IRError(f"{opname}: axis {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def _dims_equal(a, b) -> bool:
    return prove_equal(a, b)


def _static(d):
    return d.value if isinstance(d, IntImm) else simplify_const(d)


# -- element-wise -----------------------------------------------------------------------------
def _broadcast(opname, a: TensorType, b: TensorType):
    if a.ndim == -1 or b.ndim == -1:
        return None, -1
    if a.shape is None or b.shape is None:
        return None, max(a.ndim, b.ndim)
    out = []
    ra, rb = list(reversed(a.shape)), list(reversed(b.shape))
    for i in range(max(len(ra), len(rb))):
        x = ra[i] if i < len(ra) else None
        y = rb[i] if i < len(rb) else None
        if x is None:
            out.append(y)
            continue
        if y is None:
            out.append(x)
            continue
        sx, sy = _static(x), _static(y)
        if sx == 1:
            out.append(y)
        elif sy == 1:
            out.append(x)
        elif sx is not None and sy is not None:
            if sx != sy:
                raise IRError(
                    f"{opname}: shapes {_fmt_shape(a.shape)} and {_fmt_shape(b.shape)} cannot be broadcast "
                    f"(dim {sx} vs {sy})"
                )
            out.append(x)
        elif _dims_equal(x, y):
            out.append(x)
        else:
            return None, max(a.ndim, b.ndim)  # not provable: rank only (as TVM)
    return tuple(reversed(out)), len(out)


def _fmt_shape(shape):
    return "(" + ", ".join(repr(_static(d)) if _static(d) is not None else repr(d) for d in shape) + ")"


def _binary(result_dtype=None):
    def rule(call, ts):
        name = call.op.name
        a, b = _tensor(ts[0], name, 0), _tensor(ts[1], name, 1)
        if a.dtype and b.dtype and a.dtype != b.dtype:
            raise IRError(f"{name}: operands must have the same dtype; got {a.dtype} and {b.dtype}")
        shape, ndim = _broadcast(name, a, b)
        dtype = result_dtype or (a.dtype if a.dtype else b.dtype)
        vdevice = a.vdevice or b.vdevice
        return TensorType(shape, dtype, ndim, vdevice)

    return rule


def _unary(call, ts):
    return _tensor(ts[0], call.op.name)


def _astype(call, ts):
    t = _tensor(ts[0], call.op.name)
    dtype = call.attrs.get("dtype")
    if not isinstance(dtype, str) or not dtype:
        raise IRError(f"relax.astype needs a dtype attribute; got {dtype!r}")
    return TensorType(t.shape, dtype, t.ndim, t.vdevice)


# -- matmul -----------------------------------------------------------------------------------
def _matmul(call, ts):
    name = call.op.name
    a, b = _tensor(ts[0], name, 0), _tensor(ts[1], name, 1)
    out_dtype = call.attrs.get("out_dtype")
    if out_dtype in (None, "", "void"):
        if a.dtype and b.dtype and a.dtype != b.dtype:
            raise IRError(f"{name}: operands must have the same dtype; got {a.dtype} and {b.dtype}")
        out_dtype = a.dtype or b.dtype
    if a.shape is None or b.shape is None:
        if a.ndim == -1 or b.ndim == -1:
            return TensorType(None, out_dtype)
        nd = max(a.ndim, b.ndim) - (a.ndim == 1) - (b.ndim == 1)
        return TensorType(None, out_dtype, max(nd, 0))
    sa, sb = list(a.shape), list(b.shape)
    if not sa or not sb:
        raise IRError(f"{name}: operands must have rank >= 1; got {_fmt_shape(a.shape)} and {_fmt_shape(b.shape)}")
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    if a_vec:
        sa = [IntImm(1)] + sa
    if b_vec:
        sb = sb + [IntImm(1)]
    k1, k2 = sa[-1], sb[-2]
    s1, s2 = _static(k1), _static(k2)
    if s1 is not None and s2 is not None and s1 != s2:
        raise IRError(f"{name}: reduction dims differ: {_fmt_shape(a.shape)} @ {_fmt_shape(b.shape)}")
    batch_a = TensorType(tuple(sa[:-2]), out_dtype)
    batch_b = TensorType(tuple(sb[:-2]), out_dtype)
    batch, nd = _broadcast(name, batch_a, batch_b)
    tail = []
    if not a_vec:
        tail.append(sa[-2])
    if not b_vec:
        tail.append(sb[-1])
    if batch is None:
        return TensorType(None, out_dtype, nd + len(tail))
    return TensorType(tuple(batch) + tuple(tail), out_dtype, vdevice=a.vdevice)


# -- shape ops --------------------------------------------------------------------------------
def _shape_values(e: Expr, t: Type, opname: str):
    if isinstance(e, ShapeExpr):
        return e.values
    if isinstance(t, ShapeType) and t.values is not None:
        return t.values
    if isinstance(t, ShapeType):
        return None
    raise IRError(f"{opname} expects a shape (R.shape([...]) or a Shape value); got {t!r}")


def _product(dims):
    const = 1
    sym = None
    for d in dims:
        s = _static(d)
        if s is not None:
            const *= s
        else:
            sym = d if sym is None else Mul(sym, d)
    if sym is None:
        return IntImm(const)
    return sym if const == 1 else Mul(sym, IntImm(const))


def _reshape(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    values = _shape_values(call.args[1], ts[1], name)
    if values is None:
        return TensorType(None, t.dtype, ts[1].ndim, t.vdevice)
    if any(_static(v) == -1 for v in values):
        if sum(_static(v) == -1 for v in values) > 1:
            raise IRError(f"{name}: at most one -1 in the new shape; got {_fmt_shape(values)}")
        if t.shape is None:
            return TensorType(None, t.dtype, len(values), t.vdevice)
        known = [v for v in values if _static(v) != -1]
        total, part = _product(t.shape), _product(known)
        st, sp = _static(total), _static(part)
        if st is not None and sp is not None:
            if sp == 0 or st % sp:
                raise IRError(f"{name}: cannot reshape {_fmt_shape(t.shape)} to {_fmt_shape(values)}")
            missing = IntImm(st // sp)
        else:
            missing = FloorDiv(total, part)
        values = tuple(missing if _static(v) == -1 else v for v in values)
    elif t.shape is not None:
        st, sn = _static(_product(t.shape)), _static(_product(values))
        if st is not None and sn is not None and st != sn:
            raise IRError(
                f"{name}: cannot reshape {_fmt_shape(t.shape)} ({st} elements) to {_fmt_shape(values)} ({sn} elements)"
            )
    return TensorType(values, t.dtype, vdevice=t.vdevice)


def _split(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    ios = call.attrs.get("indices_or_sections")
    axis = _int_attr(call, "axis", 0)
    if ios is None:
        raise IRError(f"{name} needs an indices_or_sections attribute")
    if t.shape is None:
        raise IRError(f"{name} needs a tensor of known shape; got {t!r}")
    axis = _norm_axis(axis, t.ndim, name)
    dim = t.shape[axis]
    sdim = _static(dim)
    if isinstance(ios, (int, IntImm)):
        k = _int_attr_value(ios)
        if k <= 0:
            raise IRError(f"{name}: indices_or_sections must be positive; got {k}")
        if sdim is not None:
            part = -(-sdim // k)
            sizes = [IntImm(min(part, max(sdim - i * part, 0))) for i in range(k)]
        else:
            part = FloorDiv(Add(dim, IntImm(k - 1)), IntImm(k)) if k > 1 else dim
            sizes = [part] * (k - 1) + [Sub(dim, Mul(part, IntImm(k - 1))) if k > 1 else dim]
            if k == 2:
                sizes[-1] = Sub(dim, part)
    else:
        idx = _int_list(ios)
        bounds = [0] + idx
        sizes = []
        for i, lo in enumerate(bounds):
            if i + 1 < len(bounds):
                sizes.append(IntImm(bounds[i + 1] - lo))
            elif sdim is not None:
                sizes.append(IntImm(sdim - lo))
            else:
                sizes.append(Sub(dim, IntImm(lo)) if lo else dim)
    fields = []
    for s in sizes:
        shape = list(t.shape)
        shape[axis] = s
        fields.append(TensorType(tuple(shape), t.dtype, vdevice=t.vdevice))
    return TupleType(fields)


def _concat(call, ts):
    name = call.op.name
    tt = ts[0]
    if not isinstance(tt, TupleType):
        raise IRError(f"{name} expects a tuple of tensors; got {tt!r}")
    if not tt.fields:
        raise IRError(f"{name} needs at least one tensor")
    fields = [_tensor(f, name, i) for i, f in enumerate(tt.fields)]
    dtype = fields[0].dtype
    for f in fields:
        if f.dtype != dtype:
            raise IRError(f"{name}: all tensors must have the same dtype; got {dtype} and {f.dtype}")
    if any(f.shape is None for f in fields):
        return TensorType(None, dtype, fields[0].ndim)
    ndim = fields[0].ndim
    axis = _norm_axis(_int_attr(call, "axis", 0), ndim, name)
    total = None
    for f in fields:
        if f.ndim != ndim:
            raise IRError(f"{name}: all tensors must have the same rank; got {ndim} and {f.ndim}")
        d = f.shape[axis]
        if total is None:
            total = d
        else:
            st, sd = _static(total), _static(d)
            total = IntImm(st + sd) if st is not None and sd is not None else Add(total, d)
    shape = list(fields[0].shape)
    shape[axis] = total
    return TensorType(tuple(shape), dtype, vdevice=fields[0].vdevice)


def _permute_dims(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    axes = _int_list(call.attrs.get("axes"))
    if t.shape is None:
        return TensorType(None, t.dtype, t.ndim, t.vdevice)
    if axes is None:
        axes = list(range(t.ndim - 1, -1, -1))
    axes = [_norm_axis(a, t.ndim, name) for a in axes]
    if sorted(axes) != list(range(t.ndim)):
        raise IRError(f"{name}: axes must be a permutation of range({t.ndim}); got {axes}")
    return TensorType(tuple(t.shape[a] for a in axes), t.dtype, vdevice=t.vdevice)


def _reduce(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    axis = _int_list(call.attrs.get("axis"))
    keepdims = bool(call.attrs.get("keepdims", False))
    if t.shape is None:
        if keepdims or t.ndim == -1:
            return TensorType(None, t.dtype, t.ndim)
        return TensorType(None, t.dtype, 0 if axis is None else t.ndim - len(axis))
    axes = set(range(t.ndim)) if axis is None else {_norm_axis(a, t.ndim, name) for a in axis}
    shape = []
    for i, d in enumerate(t.shape):
        if i in axes:
            if keepdims:
                shape.append(IntImm(1))
        else:
            shape.append(d)
    return TensorType(tuple(shape), t.dtype, vdevice=t.vdevice)


def _expand_dims(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    axis = _int_list(call.attrs.get("axis"))
    if axis is None:
        raise IRError(f"{name} needs an axis attribute")
    if t.shape is None:
        return TensorType(None, t.dtype, t.ndim + len(axis) if t.ndim != -1 else -1)
    nd = t.ndim + len(axis)
    axes = sorted(_norm_axis(a, nd, name) for a in axis)
    rest = iter(t.shape)
    shape = [IntImm(1) if i in axes else next(rest) for i in range(nd)]
    return TensorType(tuple(shape), t.dtype, vdevice=t.vdevice)


def _squeeze(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    axis = _int_list(call.attrs.get("axis"))
    if t.shape is None:
        return TensorType(None, t.dtype, -1 if axis is None or t.ndim == -1 else t.ndim - len(axis))
    if axis is None:
        shape = [d for d in t.shape if _static(d) != 1]
    else:
        drop = {_norm_axis(a, t.ndim, name) for a in axis}
        for a in drop:
            s = _static(t.shape[a])
            if s is not None and s != 1:
                raise IRError(f"{name}: dim {a} has extent {s}, not 1")
        shape = [d for i, d in enumerate(t.shape) if i not in drop]
    return TensorType(tuple(shape), t.dtype, vdevice=t.vdevice)


def _flatten(call, ts):
    t = _tensor(ts[0], call.op.name)
    if t.shape is None:
        return TensorType(None, t.dtype, 1)
    if t.ndim == 0:
        return TensorType((IntImm(1),), t.dtype, vdevice=t.vdevice)
    return TensorType((_product(t.shape),), t.dtype, vdevice=t.vdevice)


def _batch_flatten(call, ts):
    t = _tensor(ts[0], call.op.name)
    if t.shape is None or t.ndim < 1:
        return TensorType(None, t.dtype, 2)
    return TensorType((t.shape[0], _product(t.shape[1:])), t.dtype, vdevice=t.vdevice)


def _shape_of(call, ts):
    t = _tensor(ts[0], call.op.name)
    return ShapeType(t.shape, t.ndim)


def _full_like_shape(call, ts):
    values = _shape_values(call.args[0], ts[0], call.op.name)
    dtype = call.attrs.get("dtype", "")
    if values is None:
        return TensorType(None, dtype, ts[0].ndim)
    return TensorType(values, dtype)


# -- lowering-level calls ------------------------------------------------------------------
def _first_ty_arg(call, ts):
    if not call.ty_args:
        raise IRError(f"{call.op.name} needs an output type (out_ty / ty_args)")
    return call.ty_args[0]


def _packed_op(call, ts):
    return _packed_result(call)


def _void(call, ts):
    return VOID


def _object(call, ts):
    return ObjectType()


def _dtype_arg(e: Expr, opname: str) -> str:
    if isinstance(e, DataTypeImm):
        return e.value
    if isinstance(e, StringImm):
        return e.value
    raise IRError(f"{opname} expects a dtype (R.dtype(...)); got {e!r}")


def _alloc_tensor_builtin(call, ts):
    name = call.op.name
    values = _shape_values(call.args[0], ts[0], name)
    dtype = _dtype_arg(call.args[1], name)
    if values is None:
        return TensorType(None, dtype, ts[0].ndim)
    return TensorType(values, dtype)


def _alloc_tensor_memory(call, ts):
    name = call.op.name
    values = _shape_values(call.args[2], ts[2], name)
    dtype = _dtype_arg(call.args[3], name)
    if values is None:
        return TensorType(None, dtype, ts[2].ndim)
    return TensorType(values, dtype)


def _memory_view(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    shape, ndim, dtype = t.shape, t.ndim, t.dtype
    if len(call.args) > 1 and isinstance(call.args[1], ShapeExpr):
        shape, ndim = call.args[1].values, len(call.args[1].values)
    if len(call.args) > 2 and isinstance(call.args[2], DataTypeImm):
        dtype = call.args[2].value
    return TensorType(shape, dtype, ndim, t.vdevice)


_OP_RULES = {}
for _n in ("add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum"):
    _OP_RULES[f"relax.{_n}"] = _binary()
for _n in ("equal", "less", "greater", "not_equal", "less_equal", "greater_equal"):
    _OP_RULES[f"relax.{_n}"] = _binary("bool")
for _n in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "negative", "abs", "sin", "cos", "erf",
           "round", "floor", "ceil", "nn.gelu", "nn.gelu_tanh", "nn.relu", "nn.silu", "nn.softmax",
           "memory.ensure_zero_offset"):
    _OP_RULES[f"relax.{_n}"] = _unary
_OP_RULES.update({
    "relax.astype": _astype,
    "relax.matmul": _matmul,
    "relax.reshape": _reshape,
    "relax.split": _split,
    "relax.concat": _concat,
    "relax.permute_dims": _permute_dims,
    "relax.sum": _reduce,
    "relax.mean": _reduce,
    "relax.expand_dims": _expand_dims,
    "relax.squeeze": _squeeze,
    "relax.flatten": _flatten,
    "relax.nn.batch_flatten": _batch_flatten,
    "relax.shape_of": _shape_of,
    "relax.zeros": _full_like_shape,
    "relax.ones": _full_like_shape,
    "relax.memory.view": _memory_view,
    "relax.call_tir": _first_ty_arg,
    "relax.call_tir_inplace": _first_ty_arg,
    "relax.call_tir_with_grad": _first_ty_arg,
    "relax.call_dps_packed": _first_ty_arg,
    "relax.call_pure_packed": _packed_op,
    "relax.call_inplace_packed": _packed_op,
    "relax.vm.call_tir_dyn": _void,
    "relax.builtin.alloc_tensor": _alloc_tensor_builtin,
    "relax.memory.alloc_storage": _object,
    "relax.memory.alloc_tensor": _alloc_tensor_memory,
    "relax.vm.alloc_storage": _object,
    "relax.vm.alloc_tensor": _alloc_tensor_memory,
    "relax.memory.kill_storage": _void,
    "relax.memory.kill_tensor": _void,
    "relax.vm.kill_object": _void,
    "relax.null_value": _object,
})
