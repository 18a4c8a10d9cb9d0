"""ATen converters for shape manipulation, tensor creation, dtypes and tuple items (TVM
0.27's mapping).

Design
------
Views are value ops (``reshape``, ``broadcast_to``, ``permute_dims``, ``strided_slice``,
``take``, ``split``), identity reshapes and slices are dropped as TVM drops them, a reshape
keeps TVM's handling of literal zeros (``_torch_reshape_chain``), creation ops build
``full``/``zeros``/``arange`` with TVM's dtype rules, and ``copy_``, ``fill_``,
``masked_fill_`` and ``zero_`` rebind their destination (SSA rebinding) as TVM does.
"""
from __future__ import annotations

import math
import sys

from ..ir.expr import Expr
from ..ir.prim import IntImm, PrimExpr, prim_equal
from ..ir.types import TensorType, TupleType
from ._aten_common import add_folded, mul_folded, registrar, relax_dtype, same_dims, static_dim

__all__ = ["CONVERTERS"]

CONVERTERS: dict = {}
_register = registrar(CONVERTERS)


# ------------------------------------------------------------------------------------ manipulation
def _dims_arg(ctx, args):
    """``args[1]`` when it is a list (``view(x, [2, 3])``), else ``args[1:]``."""
    if isinstance(args[1], (list, tuple)):  # torch.Size is a tuple
        return list(args[1])
    return list(args[1:])


def _reshape_to(ctx, x, dims):
    """TVM's ``_emit_torch_reshape``: one reshape, except that a literal 0 over a non-empty
    input dimension is spelled so that it stays a real 0 (see TVM's ``_torch_reshape_chain``)."""
    for step in _reshape_chain(ctx, x, dims):
        x = ctx.op("reshape", x, step)
    return x


def _reshape_chain(ctx, x, dims):
    dims = list(dims)
    target = [d if type(d) is int else static_dim(d) for d in dims]
    if 0 not in target or -1 in target:
        return [dims]
    shape = list(ctx.shape_of(x))
    current = [static_dim(d) for d in shape]
    if 0 not in current:
        return [dims]
    steps = []
    while True:
        unusable = [i for i, t in enumerate(target) if t == 0 and not (i < len(current) and current[i] == 0)]
        if not unusable:
            return steps or [dims]
        rewritten = unusable[0]
        step, resulting = [], []
        for i, t in enumerate(target):
            if i == rewritten:
                step.append(-1)
                resulting.append(0)
            elif t != 0:
                step.append(dims[i])
                resulting.append(t)
            elif i < len(current) and current[i] == 0:
                step.append(0)
                resulting.append(0)
            else:
                step.append(shape[i] if i < len(shape) else 1)
                resulting.append(current[i] if i < len(current) else 1)
        steps.append(step)
        shape = [0 if i == rewritten else step[i] for i in range(len(step))]
        current = resulting




@_register("view.default", "reshape.default")
def _reshape(ctx, node):
    args = ctx.args(node)
    x = args[0]
    dims = _dims_arg(ctx, args)
    shape = x.ty.shape if isinstance(x.ty, TensorType) else None  # TVM: no identity test without a shape
    if shape is not None and same_dims(shape, dims):
        return x
    return _reshape_to(ctx, x, dims)


@_register("flatten.using_ints")
def _flatten(ctx, node):
    x = ctx.env[node.args[0]]
    start = node.args[1] if len(node.args) >= 2 else node.kwargs.get("start_dim", 0)
    end = node.args[2] if len(node.args) == 3 else node.kwargs.get("end_dim", -1)
    shape = ctx.shape_of(x)
    rank = len(shape)
    post = max(rank, 1)
    start = start + post if start < 0 else start
    end = end + post if end < 0 else end
    if not (0 <= start < post and 0 <= end < post and start <= end):
        raise ctx.error(f"flatten dims ({start}, {end}) are out of range for an input of rank {rank}")
    if rank == 0:
        return ctx.op("reshape", x, [1])
    flat = shape[start]
    for i in range(start + 1, end + 1):
        flat = mul_folded(flat, shape[i])
    return _reshape_to(ctx, x, list(shape[:start]) + [flat] + list(shape[end + 1:]))


@_register("permute.default")
def _permute(ctx, node):
    args = ctx.args(node)
    return ctx.op("permute_dims", args[0], axes=_dims_arg(ctx, args))


@_register("transpose.int")
def _transpose(ctx, node):
    args = ctx.args(node)
    axes = list(range(len(ctx.shape_of(args[0]))))
    axes[args[1]], axes[args[2]] = axes[args[2]], axes[args[1]]
    return ctx.op("permute_dims", args[0], axes=axes)


@_register("expand.default")
def _expand(ctx, node):
    args = ctx.args(node)
    x = args[0]
    sizes = args[1:] if len(args) > 2 else args[1]
    # TVM reads only the rank when the shape is unknown, and a -1 from the FX metadata
    in_shape = x.ty.shape if isinstance(x.ty, TensorType) else None
    meta = getattr(node.args[0], "meta", {}).get("val")
    rank = len(in_shape) if in_shape is not None else x.ty.ndim if isinstance(x.ty, TensorType) else -1
    if rank < 0:
        raise ctx.error(f"expected a tensor of known rank; got {x.ty!r}")
    offset = len(sizes) - rank
    out = []
    for i, s in enumerate(sizes):
        if isinstance(s, int) and s == -1:
            if i - offset < 0:
                raise ctx.error(f"cannot use -1 in expand for the new leading dim {i}")
            if in_shape is not None:
                out.append(in_shape[i - offset])
            elif meta is not None and type(meta.shape[i - offset]) is int:
                out.append(meta.shape[i - offset])
            else:
                raise ctx.error(f"cannot use -1 in expand for dim {i}: the input's shape is unknown")
        else:
            out.append(s)
    return ctx.op("broadcast_to", x, out)


@_register("expand_as.default")
def _expand_as(ctx, node):
    args = ctx.args(node)
    return ctx.op("broadcast_to", args[0], ctx.shape_of(args[1]))


@_register("unsqueeze.default")
def _unsqueeze(ctx, node):
    return ctx.op("expand_dims", ctx.env[node.args[0]], axis=node.args[1])


@_register("squeeze.default", "squeeze.dim", "squeeze.dims")
def _squeeze(ctx, node):
    x = ctx.env[node.args[0]]
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if dim is None:
        dim = node.kwargs.get("dims")
    if isinstance(dim, (list, tuple)) and len(dim) > 0:
        rank = len(ctx.shape_of(x))
        valid = [d for d in dim if (d if d >= 0 else rank + d) < rank]
        dim = valid or None
    return ctx.op("squeeze", x, axis=dim)


@_register("slice.Tensor")
def _slice(ctx, node):
    x = ctx.env[node.args[0]]
    dim = node.args[1] if len(node.args) > 1 else 0
    start = ctx.value(node.args[2]) if len(node.args) > 2 else None
    end = ctx.value(node.args[3]) if len(node.args) > 3 else None
    step = ctx.value(node.args[4]) if len(node.args) > 4 else 1
    start = 0 if start is None else start
    end = sys.maxsize if end is None else end
    if isinstance(start, int) and start == 0 and isinstance(step, int) and step == 1:
        if isinstance(end, int) and end >= sys.maxsize:
            return x
        if isinstance(end, PrimExpr):
            shape = ctx.shape_of(x)
            if prim_equal(end, shape[dim if dim >= 0 else len(shape) + dim]):
                return x
    return ctx.op("strided_slice", x, [dim], [start], [end], [step])


@_register("narrow.default")
def _narrow(ctx, node):
    x = ctx.env[node.args[0]]
    dim, start, length = node.args[1], node.args[2], node.args[3]
    return ctx.op("strided_slice", x, [dim], [start], [length])


@_register("select.int")
def _select(ctx, node):
    x = ctx.env[node.args[0]]
    return ctx.op("take", x, ctx.const(node.args[2], "int64"), axis=node.args[1])


@_register("cat.default", "concat.default")
def _cat(ctx, node):
    args = ctx.args(node)
    axis = args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    return ctx.op("concat", list(args[0]), axis=axis)


@_register("stack.default")
def _stack(ctx, node):
    args = ctx.args(node)
    axis = args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    return ctx.op("stack", list(args[0]), axis=axis)


@_register("split.Tensor", "split_with_sizes.default")
def _split(ctx, node):
    x = ctx.env[node.args[0]]
    size = node.args[1]
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    if isinstance(size, (list, tuple)):
        cuts = []
        for s in size[:-1]:
            cuts.append(s + (cuts[-1] if cuts else 0))
    else:
        n = static_dim(ctx.shape_of(x)[dim])
        if n is None:
            raise ctx.error("split by chunk size needs a static dimension")
        cuts = [size * i for i in range(1, (n + size - 1) // size)]
    return ctx.op("split", x, indices_or_sections=cuts, axis=dim)


@_register("chunk.default")
def _chunk(ctx, node):
    x = ctx.env[node.args[0]]
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    n = static_dim(ctx.shape_of(x)[dim])
    if n is None:
        raise ctx.error("chunk needs a static dimension")
    return ctx.op("split", x, indices_or_sections=min(node.args[1], n), axis=dim)


@_register("unbind.int")
def _unbind(ctx, node):
    x = ctx.env[node.args[0]]
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    n = static_dim(ctx.shape_of(x)[dim])
    if not isinstance(dim, int) or n is None:
        raise ctx.error("unbind needs an int dim of static extent")
    if n == 1:
        parts = [ctx.op("squeeze", x, axis=dim)]
    else:
        split = ctx.op("split", x, indices_or_sections=n, axis=dim)
        parts = [ctx.op("squeeze", ctx.item(split, i), axis=dim) for i in range(n)]
    return ctx.emit(ctx.tuple(parts))


@_register("repeat.default", "tile.default")
def _tile(ctx, node):
    args = ctx.args(node)
    return ctx.op("tile", args[0], repeats=_dims_arg(ctx, args))


@_register("index_select.default")
def _index_select(ctx, node):
    return ctx.op("take", ctx.env[node.args[0]], ctx.env[node.args[2]], axis=node.args[1])


@_register("take.default")
def _take(ctx, node):
    idx = ctx.op("astype", ctx.env[node.args[1]], dtype="int32")
    return ctx.op("take", ctx.env[node.args[0]], idx)


# ------------------------------------------------------------------------------------ creation
@_register("_to_copy.default", "lift_fresh_copy.default", "to.dtype", "to.dtype_layout")
def _to_copy(ctx, node):
    x = ctx.env[node.args[0]]
    if len(node.args) == 2:
        if isinstance(node.args[1], ctx.torch.dtype):
            return ctx.op("astype", x, dtype=relax_dtype(ctx, node.args[1]))
    elif "dtype" in node.kwargs:
        return ctx.op("astype", x, dtype=relax_dtype(ctx, node.kwargs["dtype"]))
    return x


@_register("type_as.default")
def _type_as(ctx, node):
    return ctx.op("astype", ctx.env[node.args[0]], dtype=ctx.dtype_of(ctx.env[node.args[1]]))


@_register("arange.default", "arange.start", "arange.start_step")
def _arange(ctx, node):
    torch = ctx.torch
    ses = [node.kwargs.get("start"), node.kwargs.get("end"), node.kwargs.get("step")]
    if len(node.args) == 1:
        ses[1] = node.args[0]
    elif len(node.args) >= 2:
        ses[:len(node.args)] = list(node.args[:3])
    ses[0] = 0 if ses[0] is None else ses[0]
    ses[2] = 1 if ses[2] is None else ses[2]
    if "dtype" in node.kwargs:
        dtype = relax_dtype(ctx, node.kwargs["dtype"])
    elif any(isinstance(v, float) for v in ses):
        dtype = relax_dtype(ctx, torch.get_default_dtype())
    else:
        dtype = "int64"
    start, end, step = (ctx.value(v) for v in ses)
    return ctx.op("arange", start, end, step, dtype=dtype)


def _fill_value(ctx, value, dtype):
    """TVM's ``_convert_scalar_fill_value``: a Python scalar as a rank-0 constant."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, PrimExpr):
        raise ctx.error("a symbolic fill value is not supported by memcore's importer")
    return ctx.const(value, dtype)


@_register("full.default")
def _full(ctx, node):
    args = ctx.args(node)
    size = args[0] if isinstance(args[0], (list, tuple)) else (args[0],)
    torch_dtype = node.kwargs.get("dtype")
    if torch_dtype is None:
        meta = node.meta.get("val", node.meta.get("tensor_meta"))
        torch_dtype = getattr(meta, "dtype", None)
    if torch_dtype is None:
        if isinstance(args[1], bool):
            torch_dtype = "bool"
        elif isinstance(args[1], int):
            torch_dtype = "int64"
        else:
            torch_dtype = ctx.torch.get_default_dtype()
    dtype = relax_dtype(ctx, torch_dtype)
    return ctx.op("full", list(size), _fill_value(ctx, args[1], dtype), dtype=dtype)


@_register("full_like.default")
def _full_like(ctx, node):
    args = ctx.args(node)
    x, value = args[0], args[1]
    x_dtype = ctx.dtype_of(x)
    torch_dtype = node.kwargs.get("dtype")
    dtype = x_dtype if torch_dtype is None else relax_dtype(ctx, torch_dtype)
    fill_dtype = dtype if dtype != x_dtype else None
    if fill_dtype is None and isinstance(value, (int, float)) and (math.isinf(value) or math.isnan(value)):
        if "float" not in x_dtype:
            fill_dtype = dtype = "float32"
    return ctx.op("full_like", x, _fill_value(ctx, value, dtype), dtype=fill_dtype)


@_register("fill.Scalar", "fill_.Scalar")
def _fill(ctx, node):
    args = ctx.args(node)
    x = args[0]
    dtype = ctx.dtype_of(x)
    out = ctx.op("full", ctx.shape_of(x), _fill_value(ctx, args[1], dtype), dtype=dtype)
    if node.target.__name__ == "fill_.Scalar":
        ctx.env[node.args[0]] = out
    return out


@_register("masked_fill.Scalar", "masked_fill_.Scalar")
def _masked_fill(ctx, node):
    args = ctx.args(node)
    x, mask, value = args[:3]
    x_dtype = ctx.dtype_of(x)
    fill_dtype = None
    if isinstance(value, (int, float)) and (math.isinf(value) or math.isnan(value)) and "float" not in x_dtype:
        fill_dtype = "float32"
    values = ctx.op("full_like", x, _fill_value(ctx, value, fill_dtype or x_dtype), dtype=fill_dtype)
    if fill_dtype is not None:
        x = ctx.op("astype", x, dtype=fill_dtype)
    out = ctx.op("where", mask, values, x)
    if node.target.__name__ == "masked_fill_.Scalar":
        ctx.env[node.args[0]] = out
    return out


@_register("copy_.default", "copy.default")
def _copy(ctx, node):
    dest, src = ctx.env[node.args[0]], ctx.env[node.args[1]]
    if ctx.dtype_of(src) != ctx.dtype_of(dest):
        src = ctx.op("astype", src, dtype=ctx.dtype_of(dest))
    # TVM compares the two shape objects by identity (``dest_shape != src_shape`` on Relax
    # ShapeExprs), so it broadcasts unless both values carry the very same shape object
    if ctx.shape_of(dest) is not ctx.shape_of(src):
        src = ctx.op("broadcast_to", src, ctx.shape_of(dest))
    ctx.env[node.args[0]] = src
    return src


def _creation_dtype(ctx, node):
    return relax_dtype(ctx, node.kwargs.get("dtype", ctx.torch.get_default_dtype()))


@_register("zeros.default", "empty.default", "empty.memory_format", "empty_permuted.default")
def _zeros(ctx, node):
    args = ctx.args(node)
    size = args[0] if isinstance(args[0], (list, tuple)) else (args[0],)
    return ctx.op("zeros", list(size), dtype=_creation_dtype(ctx, node))


@_register("ones.default")
def _ones(ctx, node):
    args = ctx.args(node)
    size = args[0] if isinstance(args[0], (list, tuple)) else (args[0],)
    dtype = _creation_dtype(ctx, node)
    return ctx.op("full", list(size), ctx.const(1, dtype), dtype=dtype)


@_register("zeros_like.default", "empty_like.default")
def _zeros_like(ctx, node):
    return ctx.op("zeros_like", ctx.env[node.args[0]])


@_register("ones_like.default")
def _ones_like(ctx, node):
    return ctx.op("ones_like", ctx.env[node.args[0]])


@_register("zero_.default")
def _zero_(ctx, node):
    out = ctx.op("zeros_like", ctx.env[node.args[0]])
    ctx.env[node.args[0]] = out
    return out


@_register("new_zeros.default", "new_ones.default")
def _new_filled(ctx, node):
    args = ctx.args(node)
    x = args[0]
    size = args[1] if isinstance(args[1], (list, tuple)) else args[1:]
    dtype = ctx.dtype_of(x)
    fill = 0 if node.target.__name__ == "new_zeros.default" else 1
    return ctx.op("full", list(size), ctx.const(fill, dtype), dtype=dtype)


@_register("randn.default", "randn_like.default")
def _randn(ctx, node):
    """TVM's ``_randn`` / ``_randn_like``: a constant drawn from numpy's global generator
    (``np.random.randn``) when the program is imported, static shapes only."""
    import numpy as np

    args = ctx.args(node)
    if node.target.__name__ == "randn.default":
        size = args[0] if isinstance(args[0], (list, tuple)) else (args[0],)
        dtype = relax_dtype(ctx, node.kwargs.get("dtype", ctx.torch.get_default_dtype()))
    else:
        x = args[0]
        size = ctx.shape_of(x)
        dtype = relax_dtype(ctx, node.kwargs["dtype"]) if node.kwargs.get("dtype") else ctx.dtype_of(x)
    dims = [static_dim(d) for d in size]
    if any(d is None for d in dims):
        raise ctx.error(f"randn of a symbolic shape {list(size)} is not supported (as in TVM)")
    return ctx.emit(ctx.const(np.random.randn(*dims).astype(dtype), dtype))


@_register("scalar_tensor.default")
def _scalar_tensor(ctx, node):
    return ctx.emit(ctx.const(ctx.value(node.args[0]), _creation_dtype(ctx, node)))


# ------------------------------------------------------------------------------------ other
@_register("getitem")
def _getitem(ctx, node):
    x = ctx.env[node.args[0]]
    index = node.args[1]
    if isinstance(x, (list, tuple)):
        return x[index]
    if isinstance(x, Expr) and isinstance(x.ty, TupleType):
        if not isinstance(index, int):
            raise ctx.error(f"a tuple index must be an int; got {index!r}")
        return ctx.emit(ctx.item(x, index))
    if isinstance(x, Expr) and isinstance(x.ty, TensorType) and isinstance(index, int):
        return x
    raise ctx.error(f"indexing {x!r} with {index!r} is not supported by memcore's importer")


@_register("sym_size.int")
def _sym_size(ctx, node):
    x = ctx.env[node.args[0]]
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    d = ctx.shape_of(x)[dim]
    if type(d) is IntImm:
        return ctx.emit(ctx.const(d.value, "int32"))
    return d


# ------------------------------------------------------------------------------------ indexing
def _squeezable(idx) -> bool:
    """TVM's ``is_squeezable``: rank 1, or rank 2 with some static unit dim."""
    ty = idx.ty
    if ty.ndim == 1:
        return True
    if ty.ndim == 2:
        return any(static_dim(d) == 1 for d in ty.shape)
    return False


@_register("index.Tensor")
def _index_tensor(ctx, node):
    """TVM's ``_index_tensor``: one index -> ``take`` on its axis; no ``None`` -> one
    ``index_tensor``; every index squeezable to 1-D -> ``take`` per axis, last axis first;
    otherwise ``None`` entries become ``arange`` reshaped for broadcasting, then
    ``index_tensor``."""
    args = ctx.args(node)
    data, indices = args[0], args[1]
    given = [(i, idx) for i, idx in enumerate(indices) if idx is not None]
    if len(given) == 1:
        axis, idx = given[0]
        return ctx.op("take", data, idx, axis=axis)
    if len(given) == len(indices):
        return ctx.op("index_tensor", data, ctx.tuple([idx for _, idx in given]))
    if all(_squeezable(idx) for _, idx in given):
        result = data
        for axis, idx in reversed(given):
            if idx.ty.ndim > 1:
                idx = ctx.op("squeeze", idx)
            result = ctx.op("take", result, idx, axis=axis)
        return result
    max_ndim = max((idx.ty.ndim for _, idx in given), default=1)
    shape = ctx.shape_of(data)
    processed = []
    for i, idx in enumerate(indices):
        if idx is None:
            r = ctx.op("arange", 0, shape[i], 1, dtype="int64")
            processed.append(ctx.op("reshape", r, [shape[i]] + [1] * (max_ndim - 1)))
        else:
            processed.append(idx)
    return ctx.op("index_tensor", data, ctx.tuple(processed))


# ------------------------------------------------------------------------------------ more manipulation
@_register("broadcast_to.default")
def _broadcast_to(ctx, node):
    args = ctx.args(node)
    return ctx.op("broadcast_to", args[0], args[1] if len(args) > 1 else args[0])


@_register("reshape_as.default")
def _reshape_as(ctx, node):
    """TVM's ``_reshape_as``: a reshape to the other tensor's shape (no identity test)."""
    args = ctx.args(node)
    return _reshape_to(ctx, args[0], list(ctx.shape_of(args[1])))


@_register("unflatten.int")
def _unflatten(ctx, node):
    x = ctx.env[node.args[0]]
    dim, sizes = node.args[1], list(node.args[2])
    shape = list(ctx.shape_of(x))
    dim = dim + len(shape) if dim < 0 else dim
    return _reshape_to(ctx, x, shape[:dim] + sizes + shape[dim + 1:])


@_register("as_strided.default")
def _as_strided(ctx, node):
    """TVM's ``_as_strided``: a reshape to ``size`` when the strides are contiguous and the
    storage offset 0; anything else refused (TVM asserts)."""
    args = ctx.args(node)
    x, size, stride = args[0], list(args[1]), list(args[2])
    offset = args[3] if len(args) > 3 else node.kwargs.get("storage_offset", 0)
    if offset != 0:
        raise ctx.error("as_strided with a non-zero storage_offset is not supported (as in TVM)")
    sizes, strides = [static_dim(d) for d in size], [static_dim(s) for s in stride]
    if None not in sizes and None not in strides:
        running = 1
        for d, st in reversed(list(zip(sizes, strides))):
            if d != 1 and st != running:
                raise ctx.error(f"as_strided with non-contiguous strides {stride} for size {size} is not supported")
            running *= d
    return _reshape_to(ctx, x, size)


@_register("roll.default")
def _roll(ctx, node):
    """TVM's ``_roll``: per (shift, dim), two ``strided_slice``s concatenated in swapped order
    (a shift of 0 modulo the extent is dropped); no dims: flatten, roll, reshape back."""
    args = ctx.args(node)
    x = args[0]
    shifts = args[1] if len(node.args) > 1 else node.kwargs.get("shifts", None)
    dims = args[2] if len(node.args) > 2 else node.kwargs.get("dims", None)
    shape = ctx.shape_of(x)

    def as_int(v):
        s = static_dim(v)
        if s is None:
            raise ctx.error(f"roll needs static shifts and extents (as TVM); got {v!r}")
        return s

    def roll_one(t, shift, dim):
        n = as_int(ctx.shape_of(t)[dim])
        shift = as_int(shift) % n
        if shift == 0:
            return t
        cut = n - shift
        part1 = ctx.op("strided_slice", t, [dim], [0], [cut], [1])
        part2 = ctx.op("strided_slice", t, [dim], [cut], [n], [1])
        return ctx.op("concat", [part2, part1], axis=dim)

    if not dims:
        flat = ctx.op("reshape", x, [-1])
        rolled = roll_one(flat, shifts[0] if isinstance(shifts, (list, tuple)) else shifts, 0)
        return ctx.op("reshape", rolled, list(shape))
    shifts = list(shifts) if isinstance(shifts, (list, tuple)) else [shifts]
    dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
    if len(shifts) != len(dims):
        raise ctx.error("roll's shifts and dims must have the same length")
    out = x
    for shift, dim in zip(shifts, dims):
        out = roll_one(out, shift, as_int(dim) + (len(shape) if as_int(dim) < 0 else 0))
    return out


def _diagonal_subscripts(ndim, dim1, dim2):
    """TVM's ``_diagonal_einsum_subscripts``: other axes ``a``, ``b``, ..., the diagonal ``z``."""
    letters = iter(c for c in "abcdefghijklmnopqrstuvwxy")
    labels = ["z" if i in (dim1, dim2) else next(letters) for i in range(ndim)]
    lead = "".join(labels[i] for i in range(ndim) if i not in (dim1, dim2))
    return f"{''.join(labels)}->{lead}z"


@_register("diagonal.default")
def _diagonal(ctx, node):
    """TVM's ``_diagonal`` fast path: offset 0 over equal extents is one ``einsum``
    (``"zz->z"``). TVM's general path ends in ``einsum("...zz->...z")``, whose result
    memcore's einsum type rule cannot shape (no ellipsis support), so it is refused."""
    args = ctx.args(node)
    x = args[0]
    offset = int(args[1] if len(args) > 1 else node.kwargs.get("offset", 0))
    dim1 = args[2] if len(args) > 2 else node.kwargs.get("dim1", 0)
    dim2 = args[3] if len(args) > 3 else node.kwargs.get("dim2", 1)
    shape = ctx.shape_of(x)
    ndim = len(shape)
    dim1, dim2 = dim1 + ndim if dim1 < 0 else dim1, dim2 + ndim if dim2 < 0 else dim2
    if dim1 == dim2:
        raise ctx.error(f"diagonal needs dim1 != dim2; got {dim1} == {dim2}")
    n, m = shape[dim1], shape[dim2]
    sn, sm = static_dim(n), static_dim(m)
    equal = sn == sm if sn is not None or sm is not None else prim_equal(n, m)
    if offset != 0 or ndim - 2 > 25 or not equal:
        raise ctx.error("diagonal with an offset or unequal extents is not supported by memcore's importer "
                        "(TVM's einsum('...zz->...z') path)")
    return ctx.op("einsum", [x], subscripts=_diagonal_subscripts(ndim, dim1, dim2))


@_register("meshgrid.default", "meshgrid.indexing")
def _meshgrid(ctx, node):
    """TVM's ``_meshgrid``: a single input returned as the list; rank-0 inputs reshaped to
    (1,) (unemitted, bound by the meshgrid's emit)."""
    args = ctx.args(node)
    indexing = args[1] if len(node.args) > 1 else node.kwargs.get("indexing", "ij")
    tensors = list(args[0])
    if len(tensors) == 1:
        return tensors
    inputs = []
    for i, t in enumerate(tensors):
        if t.ty.ndim == 1:
            inputs.append(t)
        elif t.ty.ndim == 0:
            inputs.append(ctx.call("reshape", t, (1,)))
        else:
            raise ctx.error(f"meshgrid input {i} must be 0-D or 1-D; got rank {t.ty.ndim}")
    return ctx.op("meshgrid", inputs, indexing=indexing)


@_register("slice_scatter.default")
def _slice_scatter(ctx, node):
    """TVM's ``_slice_scatter``: bounds normalised as torch's (``>= 2**63 - 1`` and past the
    end -> the extent, negative -> from the end)."""
    args = ctx.args(node)
    x, src = args[0], args[1]
    shape = ctx.shape_of(x)
    dim = args[2] if len(args) > 2 else node.kwargs.get("dim", 0)
    start = args[3] if len(args) > 3 else node.kwargs.get("start", 0)
    end = args[4] if len(args) > 4 else node.kwargs.get("end", shape[dim])
    step = args[5] if len(args) > 5 else node.kwargs.get("step", 1)
    axis = dim if dim >= 0 else dim + len(shape)
    extent = shape[axis]

    def bound(v):
        s = v if isinstance(v, int) and not isinstance(v, bool) else static_dim(v)
        if s is None:
            return v
        if s >= sys.maxsize:
            return extent
        if s < 0:
            return add_folded(extent, s)
        if static_dim(extent) is not None and s > static_dim(extent):
            return extent
        return v

    return ctx.op("slice_scatter", x, src, bound(start), bound(end), step, axis=dim)


# ------------------------------------------------------------------------------------ more creation
@_register("eye.default", "eye.m")
def _eye(ctx, node):
    args = ctx.args(node)
    n = args[0]
    m = args[1] if len(args) > 1 else n
    if "dtype" not in node.kwargs:
        raise ctx.error("eye without a dtype keyword is not supported (TVM's converter reads kwargs['dtype'])")
    return ctx.op("eye", n, m, dtype=relax_dtype(ctx, node.kwargs["dtype"]))


@_register("linspace.default")
def _linspace(ctx, node):
    """TVM's ``_linspace``: an ``arange`` from start to ``stop + step / 2`` by
    ``(stop - start) / (steps - 1)`` (steps = 1: one element)."""
    args = ctx.args(node)
    start, stop, steps = args[0], args[1], args[2]
    if steps != 1:
        step = (stop - start) / (steps - 1)
        stop = stop + step / 2
    else:
        step = steps
        stop = start + step
    torch_dtype = args[3] if len(args) > 3 and args[3] is not None else node.kwargs.get("dtype")
    dtype = relax_dtype(ctx, torch_dtype if torch_dtype is not None else ctx.torch.get_default_dtype())
    return ctx.op("arange", start, stop, step, dtype=dtype)


@_register("hamming_window.default", "hamming_window.periodic", "hamming_window.periodic_alpha",
           "hamming_window.periodic_alpha_beta")
def _hamming_window(ctx, node):
    args = ctx.args(node)
    get = lambda i, d: args[i] if len(args) > i else d  # noqa: E731
    dtype = relax_dtype(ctx, node.kwargs.get("dtype", "float"))
    return ctx.op("hamming_window", args[0], get(1, True), get(2, 0.54), get(3, 0.46), dtype=dtype)
