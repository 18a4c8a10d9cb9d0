"""ONNX converters for shape, indexing and creation ops (TVM 0.27's ONNX mapping).

Design
------
Shape operands (``Reshape``'s shape, ``Unsqueeze``/``Squeeze`` axes, ``Split`` sizes,
``Slice`` bounds, ``Expand``'s shape, ``Range``'s bounds) must be known at import time:
constants, or shape values computed at import time (``Shape`` gives a ``ShapeExpr`` of the
input's, possibly symbolic, shape; ``Gather`` of a shape at a constant index a
``PrimValue``; ``Concat``/``Unsqueeze``/``Squeeze`` of those stay shape values); a computed
operand is a :class:`~memcore_py.errors.FrontendError` naming the node. Ops on constants are
folded (TVM folds them with numpy). ``Gather`` normalizes negative indices at run time
(``where(less(i, 0), add(i, extent), i)`` with the extent read by ``shape_of``), as TVM
does. An ``Expand`` shape given as an initializer is read here (TVM reads it at run time and
loses the static shape); ``Range``, ``Trilu`` and ``Expand``/``Reshape`` on symbolic shapes,
which TVM 0.27 cannot import, are converted by their type rules.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import PrimValue, ShapeExpr
from ..ir.prim import IntImm, PrimExpr
from ._aten_common import registrar, static_dim
from ._onnx_context import is_constant as _is_const

__all__ = ["CONVERTERS"]

CONVERTERS: dict = {}
_register = registrar(CONVERTERS)


# ------------------------------------------------------------------------------------ shapes
@_register("Constant")
def _constant(ctx):
    from onnx import numpy_helper

    for a in ctx.node.attribute:
        if a.name == "value":
            arr = numpy_helper.to_array(a.t)
        elif a.name in ("value_float", "value_int"):
            arr = np.asarray(a.f if a.name == "value_float" else a.i,
                             dtype="float32" if a.name == "value_float" else "int64")
        elif a.name in ("value_floats", "value_ints"):
            arr = np.asarray(list(a.floats) if a.name == "value_floats" else list(a.ints),
                             dtype="float32" if a.name == "value_floats" else "int64")
        else:
            continue
        ctx.arrays[ctx.node.output[0]] = arr
        return ctx.const(arr, str(arr.dtype))
    raise ctx.error("a Constant needs a tensor, float(s) or int(s) value (sparse and string values are "
                    "not supported)")


@_register("Shape")
def _shape(ctx):
    x = ctx.raw(0)
    if isinstance(x, ShapeExpr):
        return ShapeExpr([len(x.values)])
    dims = list(ctx.shape_of(x))
    start, end = ctx.attr("start", 0), ctx.attr("end")
    return ShapeExpr(dims[start:end])


def _target_shape(ctx, i: int) -> list:
    """Input ``i`` as a list of dims; an error when it is computed at run time."""
    target = ctx.shape_like(i)
    if target is None:
        raise ctx.error(f"the target shape (input {i}) must be a constant or a shape known at import time")
    return target


@_register("Reshape")
def _reshape(ctx):
    data = ctx.raw(0)
    target = _target_shape(ctx, 1)
    if isinstance(data, ShapeExpr):
        if target == [-1]:
            return data
        data = ctx.call("shape_to_tensor", data)
    elif _is_const(data) and all(isinstance(d, int) for d in target):
        arr = np.asarray(data.data)
        dims = target if ctx.attr("allowzero", 0) else [arr.shape[i] if d == 0 else d for i, d in enumerate(target)]
        return ctx.const(arr.reshape(dims), str(arr.dtype))
    else:
        data = ctx.operand(0)
    if not ctx.attr("allowzero", 0) and any(static_dim(d) == 0 for d in target):
        shape = ctx.shape_of(data)
        target = [shape[i] if static_dim(d) == 0 else d for i, d in enumerate(target)]
    elif any(static_dim(d) == 0 for d in target):
        raise ctx.error("allowzero=1 with a zero dimension (an empty tensor) is not supported")
    return ctx.call("reshape", data, target)


@_register("Flatten")
def _flatten(ctx):
    x = ctx.tensor_operand(0)
    shape = list(ctx.shape_of(x))
    axis = ctx.attr("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis <= len(shape):
        raise ctx.error(f"axis {ctx.attr('axis', 1)} is out of range for rank {len(shape)}")
    if axis == 0:
        return ctx.call("reshape", x, [1, -1])
    lead = 1
    for d in shape[:axis]:
        lead = lead * d if static_dim(d) is None or static_dim(lead) is None else \
            IntImm(static_dim(lead) * static_dim(d))
    return ctx.call("reshape", x, [lead, -1])


@_register("Transpose")
def _transpose(ctx):
    x = ctx.raw(0)
    perm = ctx.attr("perm")
    if _is_const(x):
        out = np.transpose(np.asarray(x.data), perm)
        return ctx.const(out, str(out.dtype))
    x = ctx.tensor_operand(0)
    if ctx.rank(x) == 0:
        return x
    return ctx.call("permute_dims", x, axes=perm)


@_register("Concat")
def _concat(ctx):
    axis = ctx.attr("axis", 0)
    n = len(ctx.node.input)
    shapes = [ctx.shape_like(i) for i in range(n)]
    int64 = [isinstance(ctx.raw(i), ShapeExpr) or getattr(ctx.known_array(i), "dtype", None) == np.int64
             for i in range(n)]
    if all(s is not None for s in shapes) and all(int64):
        return ShapeExpr([d for s in shapes for d in s])
    raw = [ctx.raw(i) for i in range(n)]
    if all(_is_const(v) for v in raw):
        out = np.concatenate([np.asarray(v.data) for v in raw], axis=axis)
        return ctx.const(out, raw[0].ty.dtype)
    return ctx.call("concat", [ctx.tensor_operand(i) for i in range(n)], axis=axis)


@_register("Gather")
def _gather(ctx):
    data, indices = ctx.raw(0), ctx.raw(1)
    axis = ctx.attr("axis", 0)
    if _is_const(data) and _is_const(indices):
        out = np.take(np.asarray(data.data), np.asarray(indices.data), axis=axis)
        return ctx.const(out, str(out.dtype))
    if isinstance(data, ShapeExpr):
        index = ctx.known_array(1)
        if index is not None and index.ndim == 0:
            return PrimValue(data.values[int(index)])
        data = ctx.call("shape_to_tensor", data)
    else:
        data = ctx.tensor_operand(0)
    indices = ctx.call("shape_to_tensor", indices) if isinstance(indices, ShapeExpr) else ctx.tensor_operand(1)
    dtype = ctx.dtype_of(indices)
    # the extent of data's axis, read at run time, as TVM's importer reads it (same bindings, same order)
    shape = ctx.emit(ctx.call("shape_to_tensor", ctx.call("shape_of", data)))
    extent = ctx.call("take", shape, ctx.const(axis, "int64"), axis=0, mode="wrap")
    if dtype != "int64":
        extent = ctx.call("astype", ctx.emit(extent), dtype=dtype)
    if not dtype.startswith("uint"):
        indices = ctx.emit(ctx.call("where", ctx.call("less", indices, ctx.const(0, dtype)),
                                    ctx.call("add", indices, extent), indices))
    return ctx.call("take", data, indices, axis=axis)


@_register("Split")
def _split(ctx):
    x = ctx.tensor_operand(0)
    sizes = ctx.attr("split")
    if sizes is None and ctx.has_input(1):
        sizes = ctx.constant_ints(1, "the split sizes")
    if sizes is not None and len(sizes) > 1:
        indices = [int(v) for v in np.cumsum(sizes[:-1])]
    else:
        indices = len(ctx.node.output)
    out = ctx.emit(ctx.call("split", x, indices_or_sections=indices, axis=ctx.attr("axis", 0)))
    return [ctx.emit(ctx.item(out, i)) for i in range(len(out.ty.fields))]


def _constant_axes(ctx, what: str):
    axes = ctx.attr("axes")
    if axes is None and ctx.has_input(1):
        axes = ctx.constant_ints(1, what)
    return None if axes is None else [int(a) for a in axes]


def _normalized(ctx, axes, rank: int):
    out = []
    for a in axes:
        n = a + rank if a < 0 else a
        if not 0 <= n < rank:
            raise ctx.error(f"axis {a} is out of range for rank {rank}")
        out.append(n)
    return out


@_register("Unsqueeze")
def _unsqueeze(ctx):
    data = ctx.raw(0)
    axes = _constant_axes(ctx, "the axes")
    if axes is None:
        raise ctx.error("Unsqueeze needs its axes")
    if isinstance(data, PrimValue):
        if _normalized(ctx, axes, 1) != [0]:
            raise ctx.error("a scalar shape value can only be unsqueezed at axis 0")
        return ShapeExpr([data.value])
    if _is_const(data):
        arr = np.asarray(data.data)
        out = np.expand_dims(arr, tuple(sorted(_normalized(ctx, axes, arr.ndim + len(axes)))))
        return ctx.const(out, data.ty.dtype)
    out = ctx.tensor_operand(0)
    for axis in sorted(_normalized(ctx, axes, ctx.rank(out) + len(axes))):
        out = ctx.call("expand_dims", out, axis=axis)
    return out


@_register("Squeeze")
def _squeeze(ctx):
    data = ctx.raw(0)
    axes = _constant_axes(ctx, "the axes")
    if _is_const(data):
        arr = np.asarray(data.data)
        return ctx.const(np.squeeze(arr, None if axes is None else tuple(axes)), data.ty.dtype)
    if isinstance(data, ShapeExpr):
        if len(data.values) == 1 and (axes is None or _normalized(ctx, axes, 1) == [0]):
            return PrimValue(data.values[0])
        raise ctx.error("only the sole axis of a one-element shape value can be squeezed")
    x = ctx.tensor_operand(0)
    if axes is None:
        return ctx.call("squeeze", x)
    return ctx.call("squeeze", x, axis=_normalized(ctx, axes, ctx.rank(x)))


@_register("Expand")
def _expand(ctx):
    x = ctx.tensor_operand(0)
    target = _target_shape(ctx, 1)
    shape = list(ctx.shape_of(x))
    rank = max(len(shape), len(target))
    shape = [IntImm(1)] * (rank - len(shape)) + shape
    target = [1] * (rank - len(target)) + list(target)
    out = []
    for have, want in zip(shape, target):
        w = static_dim(want)
        if w == -1 or w == 1:
            out.append(have)
        elif static_dim(have) == 1 or static_dim(have) == w or w is None:
            out.append(want if isinstance(want, PrimExpr) else IntImm(w))
        else:
            raise ctx.error(f"cannot broadcast dimension {have} to {want}")
    if len(out) == ctx.rank(x) and all(static_dim(a) == static_dim(b) if static_dim(a) is not None else a is b
                                       for a, b in zip(out, ctx.shape_of(x))):
        return x
    return ctx.call("broadcast_to", x, out)


@_register("Slice")
def _slice(ctx):
    x = ctx.tensor_operand(0)
    starts, ends = ctx.shape_like(1), ctx.shape_like(2)
    if starts is None or ends is None:
        raise ctx.error("the starts and ends must be constants or shapes known at import time")
    rank = ctx.rank(x)
    axes = ctx.constant_ints(3, "the axes") if ctx.has_input(3) else list(range(len(starts)))
    steps = ctx.constant_ints(4, "the steps") if ctx.has_input(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error("starts, ends, axes and steps must have the same length")
    if any(s == 0 for s in steps):
        raise ctx.error("a slice step must not be zero")
    inbound = not all(static_dim(v) is not None for v in (*starts, *ends, *steps))
    return ctx.call("strided_slice", x, _normalized(ctx, axes, rank), [_prim(v) for v in starts],
                    [_prim(v) for v in ends], [_prim(v) for v in steps], assume_inbound=inbound)


def _prim(v):
    return v if isinstance(v, PrimExpr) else IntImm(int(v))


@_register("Range")
def _range(ctx):
    values = [ctx.prim_like(i) for i in range(3)]
    if any(v is None for v in values):
        raise ctx.error("start, limit and delta must be scalars known at import time")
    if (static_dim(values[2]) if isinstance(values[2], PrimExpr) else values[2]) == 0:
        raise ctx.error("delta must not be zero")
    dtype = ctx.dtype_of(ctx.raw(0)) if ctx.is_tensor(ctx.raw(0)) else "int64"
    if all(not isinstance(v, PrimExpr) for v in values):
        start, limit, delta = values
        out = np.arange(start, limit, delta, dtype=dtype)
        return ctx.const(out, dtype)
    return ctx.call("arange", *(v if isinstance(v, PrimExpr) else int(v) for v in values), dtype=dtype)


@_register("Trilu")
def _trilu(ctx):
    x = ctx.tensor_operand(0)
    k = ctx.prim_like(1) if ctx.has_input(1) else 0
    if k is None or isinstance(k, PrimExpr):
        raise ctx.error("the diagonal offset k must be a constant")
    return ctx.call("triu" if ctx.attr("upper", 1) else "tril", x, int(k))


@_register("ConstantOfShape")
def _constant_of_shape(ctx):
    from onnx import numpy_helper

    target = _target_shape(ctx, 0)
    value = np.zeros(1, dtype="float32")
    for a in ctx.node.attribute:
        if a.name == "value":
            value = numpy_helper.to_array(a.t)
    dtype = str(value.dtype)
    fill = ctx.const(value.reshape(()), dtype)
    return ctx.call("full", target, fill, dtype=dtype)
