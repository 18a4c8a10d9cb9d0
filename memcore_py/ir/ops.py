"""The op table: every operator memcore knows, registered once with all its properties.

Each op has one :func:`~memcore_py.ir.op.register_op` call below, with its purity, storage
aliasing, in-place capability, legalized name, argument counts, TVMScript attributes and its
type rule (the properties are described in :mod:`memcore_py.ir.op`). The type rules are
defined here too, above the registrations: adding an op touches this module only.

A type rule is ``rule(call, arg_types) -> Type``: ``call`` is the :class:`Call`, whose
argument count :func:`~memcore_py.ir.infer.infer_type` has checked against ``n_args``,
and ``arg_types`` the types of its arguments. It raises :class:`IRError` naming the op for
ill-typed calls. Where TVM's analyzer would simplify a new dim (``n + n`` -> ``n * 2`` in
concat), the rules build the plain tree instead (``n + n``); sizes that are constant fold
to integers. Results were checked against TVM 0.27's ``BlockBuilder.normalize`` for the
cases in the tests.

This module is imported by ``memcore_py.ir``, so the ops exist once the package is imported.
"""
from __future__ import annotations

from ..errors import IRError
from .expr import DataTypeImm, Expr, PrimValue, ShapeExpr, StringImm
from .infer import packed_call_type
from .op import get_op, list_ops, register_op
from .prim import Add, FloorDiv, IntImm, Mul, Sub, prove_equal, simplify_const
from .types import VOID, ObjectType, ShapeType, TensorType, TupleType, Type

__all__ = ["SHARES_STORAGE_OPS", "VIEW_MEMORY_OPS", "builtin_alloc_own_type"]


# ---------------------------------------------------------------------------- type rules
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
    return packed_call_type(call)


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


def _alloc_tensor(shape_index: int, dtype_index: int):
    """The rule of an allocation of a tensor of shape ``args[shape_index]`` and dtype
    ``args[dtype_index]``."""

    def rule(call, ts):
        name = call.op.name
        values = _shape_values(call.args[shape_index], ts[shape_index], name)
        dtype = _dtype_arg(call.args[dtype_index], name)
        if values is None:
            return TensorType(None, dtype, ts[shape_index].ndim)
        return TensorType(values, dtype)

    return rule


def builtin_alloc_own_type(shape, dtype) -> TensorType:
    """The tensor type ``R.builtin.alloc_tensor(shape, dtype, ...)`` has by its arguments
    alone (what the parser gives it without ``ty_args`` or an annotation, and what the
    printer compares ``ty_args`` with to decide whether they must be written)."""
    dt = dtype.value if isinstance(dtype, (DataTypeImm, StringImm)) else ""
    if isinstance(shape, ShapeExpr):
        return TensorType(shape.values, dt)
    sty = getattr(shape, "ty", None)
    if isinstance(sty, ShapeType):
        return TensorType(sty.values, dt, sty.ndim)
    return TensorType(None, dt)


def _memory_view(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    shape, ndim, dtype = t.shape, t.ndim, t.dtype
    if len(call.args) > 1 and isinstance(call.args[1], ShapeExpr):
        shape, ndim = call.args[1].values, len(call.args[1].values)
    if len(call.args) > 2 and isinstance(call.args[2], DataTypeImm):
        dtype = call.args[2].value
    return TensorType(shape, dtype, ndim, t.vdevice)


# ---------------------------------------------------------------------------- registrations
# --- element-wise arithmetic (in-place capable ones per spec §3.2) ---------------------------
for _n in ("add", "subtract", "multiply", "divide"):
    register_op(f"relax.{_n}", type_rule=_binary(), inplace=True, legalize=_n, n_args=(2, 2))
for _n in ("floor_divide", "power", "maximum", "minimum"):
    register_op(f"relax.{_n}", type_rule=_binary(), legalize=_n, n_args=(2, 2))
for _n in ("equal", "less", "greater", "not_equal", "less_equal", "greater_equal"):
    register_op(f"relax.{_n}", type_rule=_binary("bool"), legalize=_n, n_args=(2, 2))
for _n in ("nn.relu", "nn.silu"):
    register_op(f"relax.{_n}", type_rule=_unary, inplace=True, legalize=_n.split(".")[-1], n_args=(1, 1))
for _n in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "negative", "abs", "sin", "cos",
           "erf", "round", "floor", "ceil", "nn.gelu", "nn.gelu_tanh"):
    register_op(f"relax.{_n}", type_rule=_unary, legalize=_n.split(".")[-1], n_args=(1, 1))

# --- views: the result shares (shares_storage) or may share (view_memory) args[0]'s storage ---
register_op("relax.reshape", type_rule=_reshape, shares_storage=True, view_memory=True, n_args=(2, 2))
register_op("relax.memory.view", type_rule=_memory_view, shares_storage=True, view_memory=True, n_args=(1, 4))
register_op("relax.memory.ensure_zero_offset", type_rule=_unary, shares_storage=True, view_memory=True,
            n_args=(1, 1))
register_op("relax.expand_dims", type_rule=_expand_dims, view_memory=True, attr_names=("axis",), n_args=(1, 1))
register_op("relax.squeeze", type_rule=_squeeze, view_memory=True, attr_names=("axis",), n_args=(1, 1))
register_op("relax.permute_dims", type_rule=_permute_dims, view_memory=True, attr_names=("axes",), n_args=(1, 1))
register_op("relax.flatten", type_rule=_flatten, view_memory=True, n_args=(1, 1))
register_op("relax.nn.batch_flatten", type_rule=_batch_flatten, view_memory=True, n_args=(1, 1))

# --- other tensor ops --------------------------------------------------------------------------
register_op("relax.matmul", type_rule=_matmul, attr_names=("out_dtype",), n_args=(2, 2))
register_op("relax.split", type_rule=_split, attr_names=("indices_or_sections", "axis"), n_args=(1, 1))
register_op("relax.concat", type_rule=_concat, attr_names=("axis",), n_args=(1, 1))
register_op("relax.sum", type_rule=_reduce, attr_names=("axis", "keepdims"), n_args=(1, 1))
register_op("relax.mean", type_rule=_reduce, attr_names=("axis", "keepdims"), n_args=(1, 1))
register_op("relax.astype", type_rule=_astype, attr_names=("dtype",), n_args=(1, 1))
register_op("relax.nn.softmax", type_rule=_unary, attr_names=("axis",), n_args=(1, 1))
register_op("relax.shape_of", type_rule=_shape_of, n_args=(1, 1))
register_op("relax.zeros", type_rule=_full_like_shape, attr_names=("dtype",), n_args=(1, 1))
register_op("relax.ones", type_rule=_full_like_shape, attr_names=("dtype",), n_args=(1, 1))

# --- calls into lower-level functions ------------------------------------------------------------
register_op("relax.call_tir", type_rule=_first_ty_arg, calls_prim_func=True, n_args=(2, 3))
register_op("relax.call_tir_inplace", type_rule=_first_ty_arg, calls_prim_func=True,
            attr_names=("inplace_indices",), n_args=(2, 3))
register_op("relax.call_tir_with_grad", type_rule=_first_ty_arg, calls_prim_func=True,
            attr_names=("te_grad_name", "te_grad_kwargs"), n_args=(2, 3))
register_op("relax.call_dps_packed", type_rule=_first_ty_arg, n_args=(2, 2))
register_op("relax.call_pure_packed", type_rule=_packed_op, n_args=(1, None))
register_op("relax.call_inplace_packed", type_rule=_packed_op, attr_names=("inplace_indices",), n_args=(1, None))
register_op("relax.vm.call_tir_dyn", type_rule=_void, pure=False, n_args=(2, 2))

# --- memory. Purity is TVM 0.27's ``FPurity``: allocations are pure (so they may sit in
# dataflow blocks and DeadCodeElimination drops unused ones); only kills are impure. ---------
register_op("relax.builtin.alloc_tensor", type_rule=_alloc_tensor(0, 1), n_args=(3, 4))
register_op("relax.memory.alloc_storage", type_rule=_object, n_args=(4, 4))
register_op("relax.memory.alloc_tensor", type_rule=_alloc_tensor(2, 3), n_args=(4, 5))
register_op("relax.memory.kill_storage", type_rule=_void, pure=False, n_args=(1, 1))
register_op("relax.memory.kill_tensor", type_rule=_void, pure=False, n_args=(1, 1))
register_op("relax.vm.alloc_storage", type_rule=_object, n_args=(3, 4))
register_op("relax.vm.alloc_tensor", type_rule=_alloc_tensor(2, 3), n_args=(4, 5))
register_op("relax.vm.kill_object", type_rule=_void, pure=False, n_args=(1, 1))
register_op("relax.null_value", type_rule=_object, n_args=(0, 0))


# ---------------------------------------------------------------------------- derived sets
# For ``op in SET`` tests in hot loops. They hold the ops registered above; an op registered
# later (a test's) has its properties, and ``memcore_py.ir.op.shares_storage(callee)`` reads
# them (and also covers the packed ``vm.builtin.reshape``), but it is not in these sets.
_OPS = [get_op(_n) for _n in list_ops()]
#: Ops whose result is ``args[0]``'s storage (TVM ``IsInplaceMemoryOp``,
#: static_plan_block_memory.cc): reshape, memory.view, memory.ensure_zero_offset.
SHARES_STORAGE_OPS = frozenset(op for op in _OPS if op.shares_storage)
#: Ops whose result may share ``args[0]``'s storage (TVM ``IsViewMemoryOp``,
#: dataflow_inplace.cc); a superset of :data:`SHARES_STORAGE_OPS`.
VIEW_MEMORY_OPS = frozenset(op for op in _OPS if op.view_memory)
del _OPS, _n
