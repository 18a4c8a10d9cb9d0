"""Type rules of the high-level tensor ops (TVM ``FInferStructInfo`` of relax's manipulate,
index, create, search, statistical and scan ops) that :mod:`memcore_py.ir.ops` registers.

Each rule is ``rule(call, arg_types) -> Type`` like the rules in ``ops`` and reads attributes
through ``call.op.attr(call, name)`` (so a call built without attributes gets the schema
defaults). New dims are folded when constant and otherwise built as plain trees
(``n * 2`` where TVM may print ``n + n``); they were compared with TVM 0.27's struct info by
provable equality. A rule raises :class:`IRError` naming the op for ill-typed calls, and
gives the rank only (or nothing) where the shape is not known, as TVM does.
"""
from __future__ import annotations

import math
import re

from ..errors import IRError
from .expr import PrimValue, Tuple
from .op_rules_common import (
    broadcast,
    dim_ceildiv,
    dim_mul,
    dim_sub,
    norm_axis,
    product,
    shape_values,
    static,
    tensor_arg,
)
from .op_rules_slice import slice_extent
from .prim import FloatImm, IntImm
from .types import PrimType, ShapeType, TensorType, TupleType, tensor_type_of

__all__ = [
    "same_as_arg0", "unary_dtype", "binary_like", "where", "broadcast_to", "strided_slice", "take", "stack",
    "repeat", "tile", "flip_like", "one_hot", "einsum", "outer", "meshgrid", "full", "full_like", "init_like",
    "arange", "eye", "hamming_window", "tri", "gather_elements", "gather_nd", "index_tensor", "scatter_like",
    "reduce_index", "median", "scan", "topk", "argsort", "nonzero", "bucketize", "shape_to_tensor",
    "tensor_to_shape", "collapse_sum_like", "dropout", "clip",
]


def _attr(call, key):
    return call.op.attr(call, key)


def _like(t: TensorType, shape=None, dtype=None, ndim=None) -> TensorType:
    if shape is None:
        return TensorType(None, dtype if dtype is not None else t.dtype, t.ndim if ndim is None else ndim, t.vdevice)
    return TensorType(tuple(shape), dtype if dtype is not None else t.dtype, vdevice=t.vdevice)


def _prim_arg(e, ty, opname, what):
    """The PrimExpr of a PrimValue argument (or of its Prim type); None for a Prim-typed
    argument whose value is unknown (a var: TVM 0.27's type of ``n = R.prim_value(3)`` holds
    no value and its rules use the var ``n`` itself as a dim, which memcore's dims cannot
    name, so the result's shape is unknown)."""
    if isinstance(e, PrimValue):
        return e.value
    if isinstance(ty, PrimType):
        return ty.value
    raise IRError(f"{opname} expects a PrimValue as its {what} argument; got {ty!r}")


# ---------------------------------------------------------------------------- element-wise
def same_as_arg0(call, ts):
    """The type of argument 0 (tril/triu, flip, sort, scatter ops, norms, ...)."""
    return tensor_arg(ts[0], call.op.name)


clip = same_as_arg0
flip_like = same_as_arg0
tri = same_as_arg0


def unary_dtype(dtype):
    """A unary rule whose result has ``dtype`` (``isnan`` -> bool)."""

    def rule(call, ts):
        t = tensor_arg(ts[0], call.op.name)
        return _like(t, t.shape, dtype)

    return rule


def binary_like(call, ts):
    """Broadcast of two tensors whose dtypes need not agree (result: the first's dtype)."""
    name = call.op.name
    a, b = tensor_arg(ts[0], name, 0), tensor_arg(ts[1], name, 1)
    shape, ndim = broadcast(name, a, b)
    if shape is None:
        return TensorType(None, a.dtype or b.dtype, ndim, a.vdevice or b.vdevice)
    return tensor_type_of(shape, a.dtype or b.dtype, a.vdevice or b.vdevice)  # the operands' dims and dtypes


def where(call, ts):
    name = call.op.name
    c, a, b = (tensor_arg(ts[i], name, i) for i in range(3))
    if a.dtype and b.dtype and a.dtype != b.dtype:
        raise IRError(f"{name}: the two branches must have the same dtype; got {a.dtype} and {b.dtype}")
    shape, ndim = broadcast(name, a, b)
    # the operands' dims and dtypes
    ab = TensorType(None, a.dtype or b.dtype, ndim) if shape is None else tensor_type_of(shape, a.dtype or b.dtype)
    shape, ndim = broadcast(name, c, ab)
    if shape is None:
        return TensorType(None, a.dtype or b.dtype, ndim, a.vdevice or b.vdevice)
    return tensor_type_of(shape, a.dtype or b.dtype, a.vdevice or b.vdevice)


def dropout(call, ts):
    t = tensor_arg(ts[0], call.op.name)
    return TupleType([t, t])


# ---------------------------------------------------------------------------- manipulation
def broadcast_to(call, ts):
    name = call.op.name
    t = tensor_arg(ts[0], name)
    values = shape_values(call.args[1], ts[1], name)
    if values is None:
        return TensorType(None, t.dtype, ts[1].ndim, t.vdevice)
    if t.shape is not None:
        if len(t.shape) > len(values):
            raise IRError(f"{name}: cannot broadcast a rank-{len(t.shape)} tensor to rank {len(values)}")
        for d, v in zip(reversed(t.shape), reversed(values)):
            sd, sv = static(d), static(v)
            if sd is not None and sv is not None and sd != 1 and sd != sv:
                raise IRError(f"{name}: dim {sd} cannot be broadcast to {sv}")
    # a shape's values are PrimExprs (ShapeExpr and ShapeType keep them so), the dtype the input's
    return tensor_type_of(tuple(values), t.dtype, t.vdevice)


def _int_values(e, opname, what):
    if not isinstance(e, Tuple):
        raise IRError(f"{opname} expects a tuple of integers as {what}; got {e!r}")
    out = []
    for f in e.fields:
        if not isinstance(f, PrimValue):
            raise IRError(f"{opname} expects integers in {what}; got {f!r}")
        out.append(f.value)
    return out


def strided_slice(call, ts):
    name = call.op.name
    t = tensor_arg(ts[0], name)
    axes = _int_values(call.args[1], name, "axes")
    begin = _int_values(call.args[2], name, "begin")
    end = _int_values(call.args[3], name, "end")
    strides = _int_values(call.args[4], name, "strides") if len(call.args) > 4 else [IntImm(1)] * len(axes)
    if not len(axes) == len(begin) == len(end) == len(strides):
        raise IRError(f"{name}: axes, begin, end and strides must have the same length; got "
                      f"{len(axes)}, {len(begin)}, {len(end)}, {len(strides)}")
    if t.shape is None:
        return _like(t)
    shape = list(t.shape)
    inbound = bool(_attr(call, "assume_inbound"))
    for a, b, e, s in zip(axes, begin, end, strides):
        sa = static(a)
        if sa is None:
            return _like(t, None, ndim=t.ndim)
        i = norm_axis(sa, t.ndim, name)
        ss = static(s)
        if ss == 0:
            raise IRError(f"{name}: a stride must not be 0")
        ext = None if ss is None else slice_extent(t.shape[i], b, e, ss, inbound)
        if ext is None:
            return _like(t, None, ndim=t.ndim)
        shape[i] = ext
    return _like(t, shape)


def take(call, ts):
    name = call.op.name
    t = tensor_arg(ts[0], name, 0)
    idx = tensor_arg(ts[1], name, 1)
    axis = _attr(call, "axis")
    if axis is None:
        if t.ndim != 1:
            raise IRError(f"{name} without an axis needs a 1-D tensor; got rank {t.ndim}")
        axis = 0
    if t.shape is None or idx.shape is None:
        if t.ndim == -1 or idx.ndim == -1:
            return TensorType(None, t.dtype, -1, t.vdevice)
        return TensorType(None, t.dtype, t.ndim - 1 + idx.ndim, t.vdevice)
    i = norm_axis(axis, t.ndim, name)
    return _like(t, list(t.shape[:i]) + list(idx.shape) + list(t.shape[i + 1:]))


def stack(call, ts):
    name = call.op.name
    tt = ts[0]
    if not isinstance(tt, TupleType) or not tt.fields:
        raise IRError(f"{name} expects a non-empty tuple of tensors; got {tt!r}")
    fields = [tensor_arg(f, name, i) for i, f in enumerate(tt.fields)]
    first = fields[0]
    axis = _attr(call, "axis")
    axis = 0 if axis is None else axis
    if first.shape is None:
        return TensorType(None, first.dtype, first.ndim + 1 if first.ndim != -1 else -1, first.vdevice)
    i = norm_axis(axis, first.ndim + 1, name)
    shape = list(first.shape)
    shape.insert(i, IntImm(len(fields)))
    return _like(first, shape)


def repeat(call, ts):
    name = call.op.name
    t = tensor_arg(ts[0], name)
    reps = _attr(call, "repeats")
    axis = _attr(call, "axis")
    if t.shape is None:
        return TensorType(None, t.dtype, 1 if axis is None else t.ndim, t.vdevice)
    if axis is None:
        return _like(t, [dim_mul(product(t.shape), IntImm(reps))])
    i = norm_axis(axis, t.ndim, name)
    shape = list(t.shape)
    shape[i] = dim_mul(shape[i], IntImm(reps))
    return _like(t, shape)


def tile(call, ts):
    name = call.op.name
    t = tensor_arg(ts[0], name)
    reps = list(_attr(call, "repeats"))
    if t.shape is None:
        return TensorType(None, t.dtype, max(t.ndim, len(reps)) if t.ndim != -1 else -1, t.vdevice)
    shape = list(t.shape)
    n = max(len(shape), len(reps))
    shape = [IntImm(1)] * (n - len(shape)) + shape
    reps = [1] * (n - len(reps)) + reps
    return _like(t, [dim_mul(d, IntImm(r)) for d, r in zip(shape, reps)])


def one_hot(call, ts):
    name = call.op.name
    idx = tensor_arg(ts[0], name)
    _prim_arg(call.args[1], ts[1], name, "on_value")
    dtype = ts[1].dtype
    depth = _attr(call, "depth")
    axis = _attr(call, "axis")
    if idx.shape is None:
        return TensorType(None, dtype, idx.ndim + 1 if idx.ndim != -1 else -1, idx.vdevice)
    shape = list(idx.shape)
    i = len(shape) if axis == -1 else norm_axis(axis, len(shape) + 1, name)
    shape.insert(i, IntImm(depth))
    return TensorType(tuple(shape), dtype, vdevice=idx.vdevice)


_EINSUM_TERM = re.compile(r"^[A-Za-z]*(\.\.\.)?[A-Za-z]*$")


def einsum(call, ts):
    name = call.op.name
    tt = ts[0]
    if not isinstance(tt, TupleType) or not tt.fields:
        raise IRError(f"{name} expects a non-empty tuple of tensors; got {tt!r}")
    fields = [tensor_arg(f, name, i) for i, f in enumerate(tt.fields)]
    sub = _attr(call, "subscripts").replace(" ", "")
    lhs, arrow, rhs = sub.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(fields) or "." in sub:
        if "." in sub:
            return TensorType(None, fields[0].dtype, -1)
        raise IRError(f"{name}: subscripts {sub!r} name {len(terms)} operands; got {len(fields)}")
    dims = {}
    for term, f in zip(terms, fields):
        if f.shape is None:
            return TensorType(None, fields[0].dtype, len(rhs) if arrow else -1)
        if len(term) != len(f.shape):
            raise IRError(f"{name}: subscript {term!r} does not match a rank-{len(f.shape)} operand")
        for c, d in zip(term, f.shape):
            if c not in dims or static(dims[c]) == 1:
                dims[c] = d
    if not arrow:
        counts = {}
        for c in lhs.replace(",", ""):
            counts[c] = counts.get(c, 0) + 1
        rhs = "".join(sorted(c for c, n in counts.items() if n == 1))
    for c in rhs:
        if c not in dims:
            raise IRError(f"{name}: output subscript {c!r} is not an input subscript")
    return TensorType(tuple(dims[c] for c in rhs), fields[0].dtype, vdevice=fields[0].vdevice)


def outer(call, ts):
    name = call.op.name
    a, b = tensor_arg(ts[0], name, 0), tensor_arg(ts[1], name, 1)
    if a.ndim != 1 or b.ndim != 1:
        raise IRError(f"{name} expects two 1-D tensors; got ranks {a.ndim} and {b.ndim}")
    if a.shape is None or b.shape is None:
        return TensorType(None, a.dtype, 2, a.vdevice)
    return _like(a, [a.shape[0], b.shape[0]])


def meshgrid(call, ts):
    name = call.op.name
    tt = ts[0]
    if not isinstance(tt, TupleType) or not tt.fields:
        raise IRError(f"{name} expects a non-empty tuple of tensors; got {tt!r}")
    fields = [tensor_arg(f, name, i) for i, f in enumerate(tt.fields)]
    if any(f.shape is None for f in fields):
        return TupleType([TensorType(None, f.dtype, len(fields)) for f in fields])
    sizes = [f.shape[0] if f.shape else IntImm(1) for f in fields]
    if _attr(call, "indexing") == "xy" and len(sizes) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    return TupleType([TensorType(tuple(sizes), f.dtype, vdevice=f.vdevice) for f in fields])


def collapse_sum_like(call, ts):
    return tensor_arg(ts[1], call.op.name, 1)


# ---------------------------------------------------------------------------- creation
def full(call, ts):
    name = call.op.name
    values = shape_values(call.args[0], ts[0], name)
    fill = tensor_arg(ts[1], name, 1)
    dtype = _attr(call, "dtype") or fill.dtype
    if values is None:
        return TensorType(None, dtype, ts[0].ndim)
    return TensorType(tuple(values), dtype)


def full_like(call, ts):
    t = tensor_arg(ts[0], call.op.name)
    return _like(t, t.shape, _attr(call, "dtype") or t.dtype)


init_like = full_like


def arange(call, ts):
    name = call.op.name
    start, end, step = (_prim_arg(call.args[i], ts[i], name, w) for i, w in enumerate(("start", "end", "step")))
    dtype = _attr(call, "dtype") or "int64"
    if start is None or end is None or step is None:
        return TensorType(None, dtype, 1)
    vs = [e.value if type(e) in (IntImm, FloatImm) else None for e in (start, end, step)]
    if all(v is not None for v in vs):
        a, b, s = vs
        if s == 0:
            raise IRError(f"{name}: step must not be 0")
        return TensorType((IntImm(max(math.ceil((b - a) / s), 0)),), dtype)
    if all(type(e) is not FloatImm for e in (start, end, step)) and static(step) is not None:
        return TensorType((dim_ceildiv(dim_sub(end, start), step),), dtype)
    return TensorType(None, dtype, 1)


def eye(call, ts):
    name = call.op.name
    n = _prim_arg(call.args[0], ts[0], name, "n")
    m = _prim_arg(call.args[1], ts[1], name, "m")
    dtype = _attr(call, "dtype") or "float32"
    return TensorType(None, dtype, 2) if n is None or m is None else TensorType((n, m), dtype)


def hamming_window(call, ts):
    n = _prim_arg(call.args[0], ts[0], call.op.name, "window_size")
    dtype = _attr(call, "dtype") or "float32"
    return TensorType(None, dtype, 1) if n is None else TensorType((n,), dtype)


# ---------------------------------------------------------------------------- indexing
def gather_elements(call, ts):
    name = call.op.name
    t, idx = tensor_arg(ts[0], name, 0), tensor_arg(ts[1], name, 1)
    return TensorType(idx.shape, t.dtype, idx.ndim, t.vdevice)


def gather_nd(call, ts):
    name = call.op.name
    t, idx = tensor_arg(ts[0], name, 0), tensor_arg(ts[1], name, 1)
    batch = _attr(call, "batch_dims")
    if t.shape is None or idx.shape is None or static(idx.shape[-1]) is None:
        return TensorType(None, t.dtype, -1, t.vdevice)
    k = static(idx.shape[-1])
    return _like(t, list(idx.shape[:-1]) + list(t.shape[batch + k:]))


def index_tensor(call, ts):
    name = call.op.name
    t = tensor_arg(ts[0], name, 0)
    it = ts[1]
    if not isinstance(it, TupleType):
        raise IRError(f"{name} expects a tuple of index tensors; got {it!r}")
    idx = [tensor_arg(f, name, 1) for f in it.fields]
    if t.shape is None or any(i.shape is None for i in idx):
        return TensorType(None, t.dtype, -1, t.vdevice)
    if len(idx) > t.ndim:
        raise IRError(f"{name}: {len(idx)} index tensors for a rank-{t.ndim} tensor")
    b = idx[0]
    for other in idx[1:]:
        shape, ndim = broadcast(name, b, other)
        b = TensorType(shape, b.dtype, ndim)
    if b.shape is None:
        return TensorType(None, t.dtype, -1, t.vdevice)
    return _like(t, list(b.shape) + list(t.shape[len(idx):]))


scatter_like = same_as_arg0


def reduce_index(call, ts):
    """argmax / argmin: an int64 tensor without (or with size-1) ``axis``."""
    name = call.op.name
    t = tensor_arg(ts[0], name)
    axis = _attr(call, "axis")
    keep = bool(_attr(call, "keepdims"))
    if t.shape is None:
        return TensorType(
            None, "int64", -1 if t.ndim == -1 else (t.ndim if keep else (0 if axis is None else t.ndim - 1))
        )
    if axis is None:
        return TensorType(tuple(IntImm(1) for _ in t.shape) if keep else (), "int64", vdevice=t.vdevice)
    i = norm_axis(axis, t.ndim, name)
    shape = [IntImm(1) if j == i else d for j, d in enumerate(t.shape) if keep or j != i]
    return TensorType(tuple(shape), "int64", vdevice=t.vdevice)


def median(call, ts):
    """median: (values, int64 indices) reduced over ``axis`` (a single axis or all)."""
    name = call.op.name
    t = tensor_arg(ts[0], name)
    axis = _attr(call, "axis")
    keep = bool(_attr(call, "keepdims"))
    if t.shape is None:
        return TensorType(None, t.dtype, -1)
    axes = set(range(t.ndim)) if axis is None else {norm_axis(a, t.ndim, name) for a in axis}
    shape = tuple(IntImm(1) if j in axes else d for j, d in enumerate(t.shape) if keep or j not in axes)
    values = TensorType(shape, t.dtype, vdevice=t.vdevice)
    if axis is None:
        return values
    return TupleType([values, TensorType(shape, "int64", vdevice=t.vdevice)])


def scan(call, ts):
    """cumsum / cumprod: the same shape, flattened when ``axis`` is None; ``dtype`` if set."""
    t = tensor_arg(ts[0], call.op.name)
    dtype = _attr(call, "dtype") or t.dtype
    if _attr(call, "axis") is None:
        if t.shape is None:
            return TensorType(None, dtype, 1, t.vdevice)
        return TensorType((product(t.shape),), dtype, vdevice=t.vdevice)
    return _like(t, t.shape, dtype)


def topk(call, ts):
    name = call.op.name
    t = tensor_arg(ts[0], name)
    k = _attr(call, "k")
    axis = _attr(call, "axis")
    dtype = _attr(call, "dtype") or "int32"
    ret = _attr(call, "ret_type")
    if t.shape is None:
        values, indices = _like(t), TensorType(None, dtype, t.ndim, t.vdevice)
    else:
        i = norm_axis(axis, t.ndim, name)
        shape = list(t.shape)
        if k >= 1:
            shape[i] = IntImm(k)
        values, indices = _like(t, shape), TensorType(tuple(shape), dtype, vdevice=t.vdevice)
    if ret == "both":
        return TupleType([values, indices])
    if ret == "values":
        return values
    if ret == "indices":
        return indices
    raise IRError(f"{name}: ret_type must be 'both', 'values' or 'indices'; got {ret!r}")


def argsort(call, ts):
    t = tensor_arg(ts[0], call.op.name)
    return _like(t, t.shape, _attr(call, "dtype") or "int32")


def nonzero(call, ts):
    t = tensor_arg(ts[0], call.op.name)
    return TensorType(None, "int64", 2, t.vdevice)


def bucketize(call, ts):
    t = tensor_arg(ts[0], call.op.name)
    return _like(t, t.shape, "int32" if _attr(call, "out_int32") else "int64")


def shape_to_tensor(call, ts):
    st = ts[0]
    if not isinstance(st, ShapeType):
        raise IRError(f"{call.op.name} expects a shape; got {st!r}")
    if st.ndim == -1:
        return TensorType(None, "int64", 1)
    return TensorType((IntImm(st.ndim),), "int64")


def tensor_to_shape(call, ts):
    t = tensor_arg(ts[0], call.op.name)
    if t.shape is not None and len(t.shape) == 1 and static(t.shape[0]) is not None:
        return ShapeType(None, static(t.shape[0]))
    return ShapeType(None, -1)
