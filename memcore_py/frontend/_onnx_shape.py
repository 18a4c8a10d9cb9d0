"""ONNX converters for shape, indexing and creation ops (TVM 0.27's ONNX mapping).

Design
------
Shape operands (``Reshape``'s shape, ``Unsqueeze``/``Squeeze`` axes, ``Split`` sizes,
``Slice`` bounds, ``Expand``'s shape, ``Range``'s bounds) must be known at import time:
constants, or shape values computed at import time (``Shape`` gives a ``ShapeExpr`` of the
input's, possibly symbolic, shape; ``Gather`` of a shape at a constant index a
``PrimValue``; ``Concat``/``Unsqueeze``/``Squeeze`` of those stay shape values; ``Slice`` of
a shape takes TVM's one start, end and step, an int64 constant when the dims taken are
static; ``ConstantOfShape`` of a static 1-D shape is a constant, of any other shape
``broadcast_to`` of the fill value, as TVM writes them); a computed
operand is a :class:`~memcore_py.errors.FrontendError` naming the node. Ops on constants are
folded (TVM folds them with numpy). ``Gather`` normalizes negative indices at run time
(``where(less(i, 0), add(i, extent), i)`` with the extent read by ``shape_of``), as TVM
does, the indices, when a previous node computed them, bound after the extents' bindings
(where TVM's normalizer binds them). An ``Expand`` shape given as an initializer is read
here (TVM reads it at run time and loses the static shape); ``Range``, ``Trilu`` and
``Expand``/``Reshape`` on symbolic shapes, which TVM 0.27 cannot import, are converted by
their type rules. ``GatherND``,
``GatherElements``, ``ScatterND`` and ``OneHot`` normalize negative indices at run time the
same way; ``ScatterElements`` does not (TVM does not). ``Resize``/``Upsample`` need constant
scales or sizes (4-D only), ``NonZero``/``Compress`` cast the data-dependent count to a fresh
symbolic dim (``match_cast``), as TVM does, and so does ``Unique`` (``unique_numbers``,
``inverse_numbers``). ``Size`` and ``EyeLike`` are ``R.size`` and ``R.eye_like``,
``MaxRoiPool`` is ``R.vision.roi_pool`` and ``NonMaxSuppression`` the selected indices of
``R.vision.all_class_non_max_suppression`` (its limits constants). A sequence is a Relax
tuple and a non-empty optional its value, as in TVM (``Sequence*``, ``SplitToSequence``,
``ConcatFromSequence``, ``Optional*``; positions constants).

Where TVM's converter writes a TOPI kernel (``bb.emit_te``: ``Tile``, ``Pad`` in ``constant``
and ``edge`` mode, ``Einsum``), the converter writes the TIR text TVM prints for that kernel
(:func:`_injective_text`, and the einsum text) and binds its ``R.call_tir``
(:meth:`~._onnx_context.OnnxContext.call_te`). The text is the kernel after TVM's
expression folding (``i - 0`` is ``i``, ``i - (-1)`` is ``i + 1``, an edge clamp of a
unit axis is ``0``), for static, non-empty shapes; other cases (symbolic shapes, computed
repeats or pads, ``reflect``/``wrap`` padding, einsum ellipses) are refused.
"""
from __future__ import annotations

import numpy as np

from ..ir.builder import is_leaf
from ..ir.expr import PrimValue, ShapeExpr, Tuple, Var
from ..ir.prim import IntImm, PrimExpr, PrimVar
from ..ir.types import TensorType
from ._aten_common import registrar, static_dim
from ._onnx_context import is_constant as _is_const
from ._onnx_context import onnx_dtype

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
        # bound here: TVM's one ``shape_to_tensor`` object is bound once, by its first use
        # (the ``shape_of`` below), and that variable is the ``take``'s data too
        data = ctx.emit(ctx.call("shape_to_tensor", data))
    else:
        data = ctx.tensor_operand(0)
    if isinstance(indices, ShapeExpr):
        indices = ctx.call("shape_to_tensor", indices)
        bind = lambda: indices  # noqa: E731 - unbound, as TVM leaves it
    else:
        indices, bind = _late_indices(ctx, 1)
    dtype = ctx.dtype_of(indices)
    # the extent of data's axis, read at run time, as TVM's importer reads it (same bindings, same order)
    shape = ctx.emit(ctx.call("shape_to_tensor", ctx.call("shape_of", data)))
    extent = ctx.call("take", shape, ctx.const(axis, "int64"), axis=0, mode="wrap")
    if dtype != "int64":
        extent = ctx.call("astype", ctx.emit(extent), dtype=dtype)
    indices = bind()
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
    _normalized(ctx, axes, ctx.rank(x))  # checked; TVM writes the axes as given (a negative one too)
    return ctx.call("squeeze", x, axis=list(axes))


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
    starts, ends = ctx.shape_like(1), ctx.shape_like(2)
    if starts is None or ends is None:
        raise ctx.error("the starts and ends must be constants or shapes known at import time")
    if isinstance(ctx.raw(0), ShapeExpr):
        return _slice_shape(ctx, ctx.raw(0), starts, ends)
    x = ctx.tensor_operand(0)
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


def _slice_shape(ctx, shape, starts, ends):
    """``Slice`` of a shape known at import time, as TVM slices it: one start, end and step
    (the axes are not read), Python's slice of the dims; an int64 constant when every dim
    taken is static, else a ``ShapeExpr``."""
    steps = ctx.constant_ints(4, "the steps") if ctx.has_input(4) else [1]
    if not len(starts) == len(ends) == len(steps) == 1:
        raise ctx.error(f"a slice of a shape takes one start, end and step; got {len(starts)}, {len(ends)} and "
                        f"{len(steps)}")
    bounds = [static_dim(v) if isinstance(v, PrimExpr) else int(v) for v in (starts[0], ends[0])]
    if None in bounds:
        raise ctx.error("the start and end of a slice of a shape must be static")
    if steps[0] == 0:
        raise ctx.error("a slice step must not be zero")
    values = list(shape.values)[bounds[0]:bounds[1]:steps[0]]
    if all(type(v) is IntImm for v in values):
        return ctx.const(np.asarray([v.value for v in values], dtype="int64"), "int64")
    return ShapeExpr(values)


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
    value = None
    for a in ctx.node.attribute:
        if a.name == "value":
            value = numpy_helper.to_array(a.t)
    dtype = "float32" if value is None else str(value.dtype)
    fill = 0 if value is None else value  # TVM: the attribute's tensor as it is (shape (1,))
    dims = [static_dim(d) for d in target]
    if len(dims) == 1 and dims[0] is not None:  # TVM folds a static 1-D result
        return ctx.const(np.full(dims, fill, dtype), dtype)
    return ctx.call("broadcast_to", ctx.const(fill, dtype), target)


@_register("Size")
def _size(ctx):
    """``R.size``: the element count as a rank-0 int64 tensor, computed at run time as TVM does
    (also for a static shape)."""
    return ctx.call("size", ctx.tensor_operand(0))


@_register("EyeLike")
def _eye_like(ctx):
    """``R.eye_like(x, k, dtype)`` in the input's dtype (a ``dtype`` attribute naming another
    dtype is refused, as TVM 0.27 refuses it)."""
    x = ctx.tensor_operand(0)
    dtype = ctx.dtype_of(x)
    if ctx.attr("dtype") is not None:
        wanted = onnx_dtype(ctx.attr("dtype"), f"node {ctx.node.name!r}: dtype")
        if wanted != dtype:
            raise ctx.error(f"a dtype attribute ({wanted}) other than the input's ({dtype}) is not supported "
                            "(TVM 0.27 refuses it)")
    return ctx.call("eye_like", x, int(ctx.attr("k", 0)), dtype=dtype)


# ------------------------------------------------------------------------------------ TOPI kernels
def _tir_int(v: int) -> str:
    return f"T.int64({v})"


def _tir_shape(dims) -> str:
    return "(" + ", ".join(_tir_int(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _minus(v: str, k: int) -> str:
    """``v - k`` as TIR folds and prints it (``v`` for 0, ``v + 1`` for -1)."""
    return v if k == 0 else f"{v} - {_tir_int(k)}" if k > 0 else f"{v} + {_tir_int(-k)}"


def _injective_text(func_name, src, out, loop_prefix, index_of, value_of=None) -> str:
    """The TVMScript TVM prints for a one-block TOPI ``te.compute`` reading one element of one
    buffer: ``src``/``out`` are ``(name, dims, dtype)``, ``index_of(block_vars)`` gives the
    load's index texts, ``value_of(load, block_vars)`` the stored value (the load itself by
    default); the read region is the load."""
    out_name, out_dims, _ = out
    loops = [f"{loop_prefix}{k}" for k in range(len(out_dims))]
    block_vars = [f"v_{loop}" for loop in loops]
    load = f"{src[0]}[{', '.join(index_of(block_vars))}]"
    if len(loops) == 1:
        loop_line = f"for {loops[0]} in range({_tir_int(out_dims[0])}):"
        bind_line = f"{block_vars[0]} = T.axis.spatial({_tir_int(out_dims[0])}, {loops[0]})"
    else:
        loop_line = f"for {', '.join(loops)} in T.grid({', '.join(_tir_int(d) for d in out_dims)}):"
        bind_line = f"{', '.join(block_vars)} = T.axis.remap(\"{'S' * len(loops)}\", [{', '.join(loops)}])"
    store = f"{out_name}[{', '.join(block_vars)}]"
    lines = [
        "@T.prim_func(private=True, s_tir=True)",
        f"def {func_name}({src[0]}: T.Buffer({_tir_shape(src[1])}, \"{src[2]}\"), "
        f"{out_name}: T.Buffer({_tir_shape(out_dims)}, \"{out[2]}\")):",
        "    T.func_attr({\"tirx.noalias\": True})",
        f"    {loop_line}",
        f"        with T.sblock(\"{out_name}\"):",
        f"            {bind_line}",
        f"            T.reads({load})",
        f"            T.writes({store})",
        f"            {store} = {value_of(load, block_vars) if value_of else load}",
    ]
    return "\n".join(lines) + "\n"


@_register("Tile")
def _tile(ctx):
    """TVM's ``topi.tile`` kernel for constant repeats (``out[i] = x[i % dim]`` over the shapes
    aligned to the right), as a PrimFunc text and ``R.call_tir``; a static, non-empty shape.
    Computed repeats (TVM's ``dyn_tile`` behind a ``match_cast``) are not supported."""
    x = ctx.tensor_operand(0)
    reps = ctx.constant_ints(1, "the repeats")
    if reps is None:
        raise ctx.error("Tile needs its repeats")
    dims = [static_dim(d) for d in ctx.shape_of(x)]
    rank = max(len(dims), len(reps))
    aligned = [1] * (rank - len(dims)) + dims if None not in dims else dims
    out_dims = [d * r for d, r in zip(aligned, [1] * (rank - len(reps)) + reps)] if None not in dims else []
    if None in dims or not reps or min(reps) < 1:
        raise ctx.error(f"a static input shape and repeats >= 1 are needed (TVM writes a TOPI kernel); got shape "
                        f"{list(ctx.shape_of(x))}, repeats {reps}")
    dtype = ctx.dtype_of(x)
    lead = rank - len(dims)

    def text_of(name):
        return _injective_text(name, (x.name, dims, dtype), ("T_tile", out_dims, dtype), "ax", lambda vs: [
            _tir_int(0) if d == 1 else f"{vs[lead + i]} % {_tir_int(d)}" for i, d in enumerate(dims)])

    return ctx.call_te(("tile", dtype, tuple(dims), tuple(out_dims)), "tile", text_of, [x], "T_tile", out_dims)


def _einsum_terms(ctx, equation: str, ranks: list):
    """``(inputs, output)`` letter strings of an einsum equation; the implicit output is the
    letters used once, sorted (numpy's and TVM's rule). Ellipses are not supported."""
    if "." in equation:
        raise ctx.error(f"equation {equation!r}: an ellipsis is not supported")
    lhs, arrow, out = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    letters = "".join(terms)
    if not all(c.isalpha() and c.isascii() for c in letters + out):
        raise ctx.error(f"equation {equation!r}: subscripts must be letters")
    if len(terms) != len(ranks) or any(len(t) != r for t, r in zip(terms, ranks)):
        raise ctx.error(f"equation {equation!r} does not match the {len(ranks)} operand(s) of ranks {ranks}")
    if not arrow:
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(out)) != len(out) or not set(out) <= set(letters):
        raise ctx.error(f"equation {equation!r}: each output subscript must appear once and in an input")
    return terms, out


@_register("Einsum")
def _einsum(ctx):
    """TVM's ``topi.einsum`` kernel as a PrimFunc text and ``R.call_tir``: spatial loops
    ``ax0, ...`` over the output subscripts, then one reduction loop per summed subscript in
    letter order, the sum (from a zero ``T.init``) of the product of the operands' loads;
    static, non-empty shapes, distinct operands, no ellipsis."""
    from ..transform.legalize_elementwise import scalar_text

    xs = [ctx.tensor_operand(i) for i in range(len(ctx.node.input))]
    shapes = [[static_dim(d) for d in ctx.shape_of(x)] for x in xs]
    terms, out = _einsum_terms(ctx, ctx.attr("equation", ""), [len(s) for s in shapes])
    if any(None in s or 0 in s for s in shapes) or len({id(x) for x in xs}) != len(xs):
        raise ctx.error("distinct operands of static, non-empty shapes are needed (TVM writes a TOPI kernel); got "
                        f"{[list(ctx.shape_of(x)) for x in xs]}")
    if not all(isinstance(x, Var) for x in xs):
        raise ctx.error("the operands must be computed tensors or graph inputs (TVM's TOPI kernel reads variables)")
    extent: dict = {}
    for term, dims in zip(terms, shapes):
        for c, d in zip(term, dims):
            if extent.setdefault(c, d) != d:
                raise ctx.error(f"subscript {c!r} has extents {extent[c]} and {d}")
    dtype = ctx.dtype_of(xs[0])
    if any(ctx.dtype_of(x) != dtype for x in xs):
        raise ctx.error(f"the operands must have one dtype; got {[ctx.dtype_of(x) for x in xs]}")
    summed = sorted(set("".join(terms)) - set(out))
    out_dims = [extent[c] for c in out]
    taken = {x.name for x in xs} | {"T", "T_einsum"}
    loops = [f"ax{k}" for k in range(len(out))] + [c if c not in taken else f"{c}_1" for c in summed]
    block_vars = [f"v_ax{k}" for k in range(len(out))] + [f"v_{c}" for c in summed]
    if len(set(loops + block_vars) | taken) != len(loops) + len(block_vars) + len(taken):
        raise ctx.error("an operand's name clashes with a loop name of TVM's kernel")
    var_of = dict(zip(list(out) + summed, block_vars))
    loads = [f"{x.name}[{', '.join(var_of[c] for c in term)}]" for x, term in zip(xs, terms)]
    store = f"T_einsum[{', '.join(block_vars[:len(out)]) or '()'}]"
    kinds = "S" * len(out) + "R" * len(summed)
    extents = [_tir_int(extent[c]) for c in list(out) + summed]

    def text_of(name):
        params = [f"{x.name}: T.Buffer({_tir_shape(dims)}, \"{dtype}\")" for x, dims in zip(xs, shapes)]
        params.append(f"T_einsum: T.Buffer({_tir_shape(out_dims)}, \"{dtype}\")")
        if len(loops) == 1:
            head = [f"    for {loops[0]} in range({extents[0]}):",
                    f"            {block_vars[0]} = T.axis.{'spatial' if kinds == 'S' else 'reduce'}({extents[0]}, "
                    f"{loops[0]})"]
        else:
            head = [f"    for {', '.join(loops)} in T.grid({', '.join(extents)}):",
                    f"            {', '.join(block_vars)} = T.axis.remap(\"{kinds}\", [{', '.join(loops)}])"]
        product = " * ".join(loads)
        body = [f"            T.reads({', '.join(loads)})", f"            T.writes({store})"]
        if summed:
            body += ["            with T.init():", f"                {store} = {scalar_text(0, dtype)}",
                     f"            {store} = {store} + {product}"]
        else:
            body.append(f"            {store} = {product}")
        lines = ["@T.prim_func(private=True, s_tir=True)", f"def {name}({', '.join(params)}):",
                 "    T.func_attr({\"tirx.noalias\": True})", head[0], "        with T.sblock(\"T_einsum\"):", head[1],
                 *body]
        return "\n".join(lines) + "\n"

    key = ("einsum", dtype, tuple(terms), out, tuple(tuple(s) for s in shapes))
    return ctx.call_te(key, "einsum", text_of, xs, "T_einsum", out_dims)


_PAD_MODES = {"constant": ("pad", "PadInput"), "edge": ("replicate_pad", "ReplicatePadInput")}


def _pads(ctx, rank: int):
    """TVM's pads of a ``Pad`` node: ``(before, after, value)`` over all axes, from the
    attributes (opset < 11) or the constant inputs (``axes`` from opset 18)."""
    if ctx.opset < 11:
        pads, value = ctx.attr("pads"), ctx.attr("value", 0.0)
    else:
        pads = ctx.constant_ints(1, "the pads")
        value = ctx.constant_array(2, "the constant value")
        value = 0.0 if value is None else np.asarray(value).reshape(-1)[0].item()
    if pads is None or len(pads) % 2:
        raise ctx.error(f"the pads must be an even number of values; got {pads}")
    before, after = list(pads[:len(pads) // 2]), list(pads[len(pads) // 2:])
    axes = ctx.constant_ints(3, "the axes") if ctx.opset >= 11 else None
    if axes is not None:
        if len(axes) != len(before):
            raise ctx.error(f"{len(pads)} pads for {len(axes)} axes (2 per axis are needed)")
        full_before, full_after = [0] * rank, [0] * rank
        for axis, b, a in zip(_normalized(ctx, axes, rank), before, after):
            full_before[axis], full_after[axis] = b, a
        before, after = full_before, full_after
    if len(before) != rank:
        raise ctx.error(f"{len(pads)} pads for an input of rank {rank}")
    return before, after, value


@_register("Pad")
def _pad(ctx):
    """TVM's ``topi.nn.pad`` (``constant``) and ``topi.nn.replicate_pad`` (``edge``) kernels for
    constant pads, as a PrimFunc text and ``R.call_tir``; a static, non-empty shape.
    ``reflect`` (TVM's ``mirror_pad``, whose indices TVM's simplifier rewrites) and ``wrap``
    are not supported."""
    from ..transform.legalize_elementwise import scalar_text

    x = ctx.tensor_operand(0)
    mode = ctx.attr("mode", "constant")
    if mode not in _PAD_MODES:
        raise ctx.error(f"mode={mode!r} is not supported (constant and edge are; TVM writes reflect and wrap with "
                        "kernels memcore does not reproduce)")
    dims = [static_dim(d) for d in ctx.shape_of(x)]
    before, after, value = _pads(ctx, len(dims))
    if None in dims:
        raise ctx.error(f"a static input shape is needed (TVM writes a TOPI kernel); got {list(ctx.shape_of(x))}")
    out_dims = [d + b + a for d, b, a in zip(dims, before, after)]
    dtype = ctx.dtype_of(x)
    func_name, out_name = _PAD_MODES[mode]
    if mode == "constant":
        try:
            fill = scalar_text(value, dtype)
        except NotImplementedError as exc:
            raise ctx.error(f"the pad value {value} is not supported: {exc}") from None

        def index_of(vs):
            return [_minus(v, b) for v, b in zip(vs, before)]

        def value_of(load, vs):
            cond = [f"{_tir_int(b)} <= {v} and {v} < {_tir_int(d + b)}"
                    for v, d, b, a in zip(vs, dims, before, after) if b or a]
            return f"T.if_then_else({' and '.join(cond)}, {load}, {fill})" if cond else load
        key = (mode, dtype, tuple(dims), tuple(before), tuple(after), fill)
    else:
        def index_of(vs):
            return [_tir_int(0) if d == 1 else f"T.max({_tir_int(0)}, T.min({_tir_int(d - 1)}, {_minus(v, b)}))"
                    for v, d, b in zip(vs, dims, before)]  # max(0, min(0, i)) folds to 0
        value_of = None
        key = (mode, dtype, tuple(dims), tuple(before), tuple(after))

    def text_of(name):
        return _injective_text(name, (x.name, dims, dtype), (out_name, out_dims, dtype), "i", index_of, value_of)

    return ctx.call_te(key, func_name, text_of, [x], out_name, out_dims)


# ------------------------------------------------------------------------------------ gather / scatter
def _normalize_negative(ctx, indices, extent):
    """TVM's run-time ``where(less(i, 0), add(i, extent), i)`` (unsigned indices unchanged);
    ``extent`` has the indices' dtype."""
    dtype = ctx.dtype_of(indices)
    if dtype.startswith("uint"):
        return indices
    return ctx.emit(ctx.call("where", ctx.call("less", indices, ctx.const(0, dtype)),
                             ctx.call("add", indices, extent), indices))


def _shape_tensor(ctx, data):
    """``shape_to_tensor(shape_of(data))``, bound (TVM reads the extents at run time)."""
    return ctx.emit(ctx.call("shape_to_tensor", ctx.call("shape_of", data)))


def _coord_extents(ctx, data, indices, start: int):
    """TVM's ``_coord_axis_extents``: ``data.shape[start : start + indices.shape[-1]]`` as a
    tensor of the indices' dtype."""
    coord_len = static_dim(ctx.shape_of(indices)[-1])
    if coord_len is None:
        raise ctx.error("the last dimension of the indices must be static")
    extent = ctx.call("strided_slice", _shape_tensor(ctx, data), [0], [start], [start + coord_len])
    dtype = ctx.dtype_of(indices)
    if dtype != "int64":
        extent = ctx.call("astype", ctx.emit(extent), dtype=dtype)
    return extent


def _axis_extent(ctx, data, axis: int, dtype: str):
    """TVM's ``_axis_extent``: ``data.shape[axis]`` read at run time, in ``dtype``."""
    extent = ctx.call("take", _shape_tensor(ctx, data), ctx.const(axis, "int64"), axis=0, mode="wrap")
    if dtype != "int64":
        extent = ctx.call("astype", ctx.emit(extent), dtype=dtype)
    return extent


def _late_indices(ctx, i: int):
    """Input ``i`` (indices) for :func:`_normalize_negative`, bound where TVM binds it: a
    computed value still unbound (TVM keeps an op's result unbound until an operand reads it)
    is bound by the operand read after the extents' bindings; a tensor already bound is
    itself; a shape is :meth:`~._onnx_context.OnnxContext.tensor_operand`'s tensor."""
    value = ctx.raw(i)
    if ctx.is_tensor(value) and not is_leaf(value):
        return value, lambda: ctx.tensor_operand(i)
    indices = ctx.tensor_operand(i)
    return indices, lambda: indices


@_register("GatherND")
def _gather_nd(ctx):
    data = ctx.tensor_operand(0)
    indices, bind = _late_indices(ctx, 1)
    batch_dims = int(ctx.attr("batch_dims", 0))
    extents = _coord_extents(ctx, data, indices, batch_dims)
    indices = _normalize_negative(ctx, bind(), extents)
    return ctx.call("gather_nd", data, indices, batch_dims=batch_dims)


@_register("GatherElements")
def _gather_elements(ctx):
    data = ctx.tensor_operand(0)
    indices, bind = _late_indices(ctx, 1)
    axis = int(ctx.attr("axis", 0))
    extent = _axis_extent(ctx, data, axis, ctx.dtype_of(indices))
    indices = _normalize_negative(ctx, bind(), extent)
    return ctx.call("gather_elements", data, indices, axis=axis)


def _reduction(ctx) -> str:
    """TVM's ``_get_onnx_reduction``: ``none`` is ``update``; opset 16 adds ``add``/``mul``,
    opset 18 ``min``/``max``."""
    reduction = ctx.attr("reduction") or "update"
    reduction = "update" if reduction == "none" else reduction
    valid = ["update"] + (["add", "mul"] if ctx.opset >= 16 else []) + (["min", "max"] if ctx.opset >= 18 else [])
    if reduction not in valid:
        raise ctx.error(f"reduction={reduction!r} is not supported at opset {ctx.opset} ({', '.join(valid)} are)")
    return reduction


@_register("ScatterND")
def _scatter_nd(ctx):
    data, indices, updates = ctx.tensor_operand(0), ctx.tensor_operand(1), ctx.tensor_operand(2)
    reduction = _reduction(ctx)
    indices = _normalize_negative(ctx, indices, _coord_extents(ctx, data, indices, 0))
    return ctx.call("scatter_nd", data, indices, updates, reduction=reduction)


@_register("ScatterElements")
def _scatter_elements(ctx):
    """``R.scatter_elements`` with the indices as given (TVM does not normalize them here)."""
    data, indices, updates = ctx.tensor_operand(0), ctx.tensor_operand(1), ctx.tensor_operand(2)
    return ctx.call("scatter_elements", data, indices, updates, axis=int(ctx.attr("axis", 0)),
                    reduction=_reduction(ctx))


@_register("TopK")
def _topk(ctx):
    """``R.topk`` (values and int64 indices; ``k`` a constant, ``sorted=1``)."""
    x = ctx.tensor_operand(0)
    if ctx.opset >= 10:
        k = ctx.constant_ints(1, "k")
        if k is None or len(k) != 1:
            raise ctx.error("TopK needs one constant k")
        k = k[0]
    else:
        k = int(ctx.attr("k", 1))
    if ctx.opset >= 11 and ctx.attr("sorted", 1) != 1:
        raise ctx.error("sorted=0 is not supported (TVM's TopK is sorted)")
    largest = bool(ctx.attr("largest", 1)) if ctx.opset >= 11 else True
    out = ctx.emit(ctx.call("topk", x, k=k, axis=int(ctx.attr("axis", -1)), ret_type="both", largest=largest,
                            dtype="int64"))
    return [ctx.emit(ctx.item(out, i)) for i in range(2)]


@_register("CumSum")
def _cumsum(ctx):
    """``R.cumsum`` along a constant axis (``reverse=1``, which TVM writes with TE ``flip``
    kernels, is not supported)."""
    x = ctx.tensor_operand(0)
    axis = ctx.constant_array(1, "the axis")
    if axis is None or np.asarray(axis).size != 1 or np.asarray(axis).ndim > 1:
        raise ctx.error("the axis must be a constant scalar or one-element vector")
    if ctx.attr("reverse", 0):
        raise ctx.error("reverse=1 is not supported (TVM writes it with TE flip kernels)")
    return ctx.call("cumsum", x, axis=int(np.asarray(axis).reshape(-1)[0]),
                    exclusive=bool(ctx.attr("exclusive", 0)))


@_register("OneHot")
def _one_hot(ctx):
    """``R.one_hot`` with constant depth and ``[off, on]`` values; negative indices wrap by
    ``depth`` at run time, as TVM's importer does."""
    indices = ctx.tensor_operand(0)
    depth = ctx.constant_array(1, "the depth")
    values = ctx.constant_array(2, "the values")
    if depth is None or values is None or np.asarray(values).size != 2:
        raise ctx.error("OneHot needs a constant depth and two constant values")
    depth = np.asarray(depth).tolist()
    depth = int(depth[0] if isinstance(depth, list) else depth)
    off, on = np.asarray(values).reshape(-1).tolist()
    dtype = ctx.dtype_of(indices)
    indices = _normalize_negative(ctx, indices, ctx.const(depth, dtype))
    return ctx.call("one_hot", indices, on, off, depth=depth, axis=int(ctx.attr("axis", -1)))


# ------------------------------------------------------------------------------------ depth / space
def _static_nchw(ctx, x):
    dims = [static_dim(d) for d in ctx.shape_of(x)]
    if len(dims) != 4 or None in dims:
        raise ctx.error(f"the input must be a static 4-D NCHW tensor; got shape {list(ctx.shape_of(x))}")
    return dims


@_register("DepthToSpace")
def _depth_to_space(ctx):
    x = ctx.tensor_operand(0)
    bs = int(ctx.attr("blocksize"))
    b, c, h, w = _static_nchw(ctx, x)
    mode = ctx.attr("mode", "DCR")
    if mode == "DCR":
        y = ctx.call("permute_dims", ctx.call("reshape", x, [b, bs, bs, c // bs ** 2, h, w]), axes=[0, 3, 4, 1, 5, 2])
    elif mode == "CRD":
        y = ctx.call("permute_dims", ctx.call("reshape", x, [b, c // bs ** 2, bs, bs, h, w]), axes=[0, 1, 4, 2, 5, 3])
    else:
        raise ctx.error(f"mode={mode!r} is not supported (DCR and CRD are)")
    return ctx.call("reshape", y, [b, c // bs ** 2, h * bs, w * bs])


@_register("SpaceToDepth")
def _space_to_depth(ctx):
    x = ctx.tensor_operand(0)
    bs = int(ctx.attr("blocksize"))
    b, c, h, w = _static_nchw(ctx, x)
    y = ctx.call("permute_dims", ctx.call("reshape", x, [b, c, h // bs, bs, w // bs, bs]), axes=[0, 3, 5, 1, 2, 4])
    return ctx.call("reshape", y, [b, c * bs * bs, h // bs, w // bs])


@_register("NonZero")
def _nonzero(ctx):
    """``R.nonzero`` cast to ``(rank, nonzero_numbers)`` int64 (a fresh symbolic count), as TVM."""
    x = ctx.tensor_operand(0)
    rank = max(ctx.rank(x), 1)
    return ctx.bb.match_cast(ctx.call("nonzero", x), TensorType([IntImm(rank), PrimVar("nonzero_numbers", "int64")],
                                                                 "int64"))


@_register("Unique")
def _unique(ctx):
    """``R.unique`` asked for as many results as the node has outputs, each cast
    (``match_cast``) to its data-dependent shape as TVM does: the values to
    ``(unique_numbers,)`` (or the input's shape with ``unique_numbers`` along ``axis``), the
    indices and counts to ``(unique_numbers,)``, the inverse indices to ``(inverse_numbers,)``."""
    x = ctx.tensor_operand(0)
    shape = list(ctx.shape_of(x))
    n = len(ctx.node.output)
    axis = ctx.attr("axis")
    args = [x, bool(ctx.attr("sorted", 1)), n > 1, n > 2, n > 3] + ([int(axis)] if axis is not None else [])
    call = ctx.call("unique", *args)
    count = PrimVar("unique_numbers", "int64")
    if axis is None:
        values = TensorType([count], ctx.dtype_of(x))
    else:
        axis = _normalized(ctx, [int(axis)], len(shape))[0]
        values = TensorType([count if i == axis else d for i, d in enumerate(shape)], ctx.dtype_of(x))
    if n == 1:
        return ctx.bb.match_cast(call, values)
    out = ctx.emit(call)
    vectors = [TensorType([count], "int64"), TensorType([PrimVar("inverse_numbers", "int64")], "int64"),
               TensorType([count], "int64")]
    return [ctx.bb.match_cast(ctx.item(out, i), ty) for i, ty in enumerate([values] + vectors[:n - 1])]


# ------------------------------------------------------------------------------------ resize
def _resize_mode(ctx, mode: str) -> str:
    if mode not in ("nearest", "linear", "cubic"):
        raise ctx.error(f"mode={mode!r} is not supported (nearest, linear and cubic are)")
    return "nearest_neighbor" if mode == "nearest" else mode


def _static_sizes(ctx, x, scales) -> list:
    """TVM's ``int64(scale * dim)`` for the spatial dims of a static shape."""
    dims = [static_dim(d) for d in ctx.shape_of(x)]
    if None in dims:
        raise ctx.error("scales need a static input shape")
    if len(scales) != len(dims):
        raise ctx.error(f"{len(scales)} scales for an input of rank {len(dims)}")
    return [int(float(np.float32(s)) * d) for s, d in zip(scales[2:], dims[2:])]


@_register("Resize")
def _resize(ctx):
    """4-D ``R.image.resize2d`` with a constant ROI and constant scales or sizes (TVM writes
    1-D resizes and run-time ROIs with TE kernels; memcore's IR has no ``resize3d``)."""
    if ctx.opset < 11:
        raise ctx.error(f"Resize of opset {ctx.opset} (inputs X, scales) is not supported; opset >= 11 is")
    x = ctx.tensor_operand(0)
    if ctx.rank(x) != 4:
        raise ctx.error(f"a resize of rank {ctx.rank(x)} is not supported (4-D NCHW is)")
    roi = ctx.constant_array(1, "the roi")
    scales, sizes = ctx.constant_array(2, "the scales"), ctx.constant_array(3, "the sizes")
    if (scales is None) == (sizes is None):
        raise ctx.error("exactly one of scales and sizes must be given")
    roi = [] if roi is None else [float(v) for v in np.asarray(roi).reshape(-1)]
    if len(roi) == 8:
        roi = roi[2:4] + roi[6:8]
    elif not roi:
        roi = [0.0] * 4
    elif len(roi) != 4:
        raise ctx.error(f"the roi must have 0, 4 or 8 values; got {len(roi)}")
    if scales is not None:
        size = _static_sizes(ctx, x, np.asarray(scales).reshape(-1))
    else:
        size = [int(v) for v in np.asarray(sizes).astype("int64").reshape(-1)[2:]]
    return ctx.call("image.resize2d", x, size, roi=roi, layout="NCHW",
                    method=_resize_mode(ctx, ctx.attr("mode", "nearest")),
                    coordinate_transformation_mode=ctx.attr("coordinate_transformation_mode", "half_pixel"),
                    rounding_method=ctx.attr("nearest_mode", "round_prefer_floor"),
                    cubic_alpha=float(ctx.attr("cubic_coeff_a", -0.75)),
                    cubic_exclude=int(ctx.attr("exclude_outside", 0)),
                    extrapolation_value=float(ctx.attr("extrapolation_value", 0.0)))


@_register("Upsample")
def _upsample(ctx):
    """Opsets 7-8 (``scales`` an attribute, as TVM reads it): 4-D ``R.image.resize2d`` with
    ``asymmetric`` coordinates."""
    x = ctx.tensor_operand(0)
    scales = ctx.attr("scales")
    if scales is None:
        raise ctx.error("Upsample needs the scales attribute (opset 7-8; TVM 0.27 reads no scales input)")
    if ctx.rank(x) != 4 or len(scales) != 4 or scales[0] != 1 or scales[1] != 1:
        raise ctx.error("a 4-D input with scales [1, 1, h, w] is needed")
    return ctx.call("image.resize2d", x, _static_sizes(ctx, x, scales), layout="NCHW",
                    method=_resize_mode(ctx, ctx.attr("mode", "nearest")),
                    coordinate_transformation_mode="asymmetric")


@_register("Compress")
def _compress(ctx):
    """``take`` of the ``nonzero`` positions of a 1-D bool condition (cast to
    ``(1, num_nonzero)``), along ``axis`` or of the flattened input."""
    x, condition = ctx.tensor_operand(0), ctx.tensor_operand(1)
    if ctx.dtype_of(condition) != "bool" or ctx.rank(condition) != 1:
        raise ctx.error("the condition must be a 1-D bool tensor")
    positions = ctx.bb.match_cast(ctx.call("nonzero", condition),
                                  TensorType([IntImm(1), PrimVar("num_nonzero", "int64")], "int64"))
    positions = ctx.call("reshape", positions, [-1])
    axis = ctx.attr("axis")
    if axis is None:
        return ctx.call("take", ctx.call("reshape", x, [-1]), positions, axis=0)
    return ctx.call("take", x, positions, axis=int(axis))


@_register("Scatter")
def _scatter(ctx):
    """Opset < 11: ``R.scatter_elements`` when the indices have the data's shape, else TVM's
    ``scatter_nd`` over an explicit coordinate grid (static indices shape)."""
    if ctx.opset >= 11:
        raise ctx.error("Scatter is deprecated at opset 11 (use ScatterElements)")
    data, indices, updates = ctx.tensor_operand(0), ctx.tensor_operand(1), ctx.tensor_operand(2)
    axis = int(ctx.attr("axis", 0))
    data_dims, index_dims = list(ctx.shape_of(data)), list(ctx.shape_of(indices))
    same = len(data_dims) == len(index_dims) and all(
        static_dim(a) == static_dim(b) if static_dim(a) is not None or static_dim(b) is not None else a is b
        for a, b in zip(data_dims, index_dims))
    if same:
        return ctx.call("scatter_elements", data, indices, updates, axis=axis)
    shape = [static_dim(d) for d in index_dims]
    if None in shape:
        raise ctx.error("indices of a shape other than the data's must have a static shape")
    rank = len(data_dims)
    axis %= rank
    dtype = ctx.dtype_of(indices)
    n_entries = int(np.prod(shape))
    grid = np.moveaxis(np.indices(shape), 0, -1).reshape(n_entries, rank)
    mask = np.broadcast_to(np.eye(rank, dtype="bool")[axis], (n_entries, rank))
    target = ctx.call("where", ctx.const(np.ascontiguousarray(mask), "bool"),
                      ctx.call("reshape", indices, [n_entries, 1]), ctx.const(grid.astype(dtype), dtype))
    return ctx.call("scatter_nd", data, target, ctx.call("reshape", updates, [n_entries]))


# ------------------------------------------------------------------------------------ image / vision
@_register("AffineGrid")
def _affine_grid(ctx):
    """2-D ``R.image.affine_grid`` of a constant size, its coordinate axis moved last."""
    theta = ctx.tensor_operand(0)
    size = ctx.shape_like(1)
    if size is None or any(static_dim(d) is None for d in size):
        raise ctx.error("the size must be a constant")
    size = [int(static_dim(d)) for d in size]
    if len(size) != 4:
        raise ctx.error(f"a size of {len(size)} values is not supported (2-D [N, C, H, W] is)")
    grid = ctx.emit(ctx.call("image.affine_grid", theta, size[2:], align_corners=bool(ctx.attr("align_corners", 0))))
    return ctx.emit(ctx.call("permute_dims", grid, axes=[0, 2, 3, 1]))


@_register("GridSample")
def _grid_sample(ctx):
    """``R.image.grid_sample`` with the ONNX grid's coordinate axis moved to axis 1."""
    data, grid = ctx.tensor_operand(0), ctx.tensor_operand(1)
    method = {"linear": "bilinear", "cubic": "bicubic"}.get(ctx.attr("mode", "bilinear"), ctx.attr("mode", "bilinear"))
    rank = ctx.rank(data)
    if rank == 4:
        grid, layout = ctx.call("permute_dims", grid, axes=[0, 3, 1, 2]), "NCHW"
    elif rank == 5 and method != "bicubic":
        grid, layout = ctx.call("permute_dims", grid, axes=[0, 4, 1, 2, 3]), "NCDHW"
    else:
        raise ctx.error(f"GridSample of a rank-{rank} input with mode {method!r} is not supported")
    return ctx.call("image.grid_sample", data, grid, method=method, layout=layout,
                    padding_mode=ctx.attr("padding_mode", "zeros"), align_corners=bool(ctx.attr("align_corners", 0)))


@_register("RoiAlign")
def _roi_align(ctx):
    """``R.vision.roi_align`` of ``[batch_index, roi]`` rows (``half_pixel``, the opset-16
    default, shifts the rois by -0.5 and sets ``aligned``)."""
    data, rois, batch = ctx.tensor_operand(0), ctx.tensor_operand(1), ctx.tensor_operand(2)
    dtype = ctx.dtype_of(rois)
    mode = ctx.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise ctx.error(f"mode={mode!r} is not supported (avg and max are)")
    transform = ctx.attr("coordinate_transformation_mode", "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    if transform == "half_pixel":
        rois = ctx.call("add", rois, ctx.const(np.full(4, -0.5, dtype=dtype), dtype))
    elif transform != "output_half_pixel":
        raise ctx.error(f"coordinate_transformation_mode={transform!r} is not supported")
    batch = ctx.call("astype", ctx.call("expand_dims", batch, axis=1), dtype=dtype)
    rois = ctx.call("concat", [batch, rois], axis=1)
    return ctx.call("vision.roi_align", data, rois,
                    pooled_size=[int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1))],
                    spatial_scale=float(ctx.attr("spatial_scale", 1.0)),
                    sample_ratio=int(ctx.attr("sampling_ratio", 0)),
                    aligned=transform == "half_pixel", layout="NCHW", mode=mode)


@_register("MaxRoiPool")
def _max_roi_pool(ctx):
    """``R.vision.roi_pool`` (NCHW) of ``[batch_index, x1, y1, x2, y2]`` rois."""
    if len(ctx.node.input) != 2:
        raise ctx.error(f"MaxRoiPool takes 2 inputs; got {len(ctx.node.input)}")
    shape = ctx.attr("pooled_shape")
    if shape is None:
        raise ctx.error("MaxRoiPool needs the pooled_shape attribute")
    return ctx.call("vision.roi_pool", ctx.tensor_operand(0), ctx.tensor_operand(1), pooled_size=list(shape),
                    spatial_scale=float(ctx.attr("spatial_scale", 1.0)), layout="NCHW")


def _nms_scalar(ctx, i: int, default, cast):
    """NonMaxSuppression's scalar input ``i`` as read at import (an initializer or a
    constant), ``default`` when omitted. TVM also uses the default for a computed value;
    memcore refuses that instead of ignoring the operand."""
    if not ctx.has_input(i):
        return default
    value = ctx.constant_array(i, ["max_output_boxes_per_class", "iou_threshold", "score_threshold"][i - 2])
    return cast(np.asarray(value).reshape(-1)[0].item())


def _corner_boxes(ctx, boxes):
    """TVM's ``[yc - h/2, xc - w/2, yc + h/2, xc + w/2]`` of ``[xc, yc, w, h]`` boxes, bound in
    the order its normalizer binds the expression (each part once)."""
    parts = ctx.emit(ctx.call("split", boxes, indices_or_sections=4, axis=2))
    two = ctx.const(2.0, ctx.dtype_of(boxes))
    yc = ctx.emit(ctx.item(parts, 1))
    half_h = ctx.emit(ctx.call("divide", ctx.emit(ctx.item(parts, 3)), two))
    y1 = ctx.emit(ctx.call("subtract", yc, half_h))
    xc = ctx.emit(ctx.item(parts, 0))
    half_w = ctx.emit(ctx.call("divide", ctx.emit(ctx.item(parts, 2)), two))
    x1 = ctx.emit(ctx.call("subtract", xc, half_w))
    y2, x2 = ctx.emit(ctx.call("add", yc, half_h)), ctx.emit(ctx.call("add", xc, half_w))
    return ctx.emit(ctx.call("concat", [y1, x1, y2, x2], axis=2))


@_register("NonMaxSuppression")
def _non_max_suppression(ctx):
    """``R.vision.all_class_non_max_suppression`` (``onnx`` format) with the constant limits
    (TVM's defaults 0, 0.5 and 0.0 when omitted), and its selected indices: ``[batch *
    classes * boxes, 3]`` rows (static shapes), the unused ones TVM's padding."""
    boxes, scores = ctx.tensor_operand(0), ctx.tensor_operand(1)
    if any(static_dim(d) is None for x in (boxes, scores) for d in ctx.shape_of(x)):
        raise ctx.error(f"static boxes and scores shapes are needed; got {list(ctx.shape_of(boxes))} and "
                        f"{list(ctx.shape_of(scores))}")
    limit = _nms_scalar(ctx, 2, 0, int)
    iou, score = _nms_scalar(ctx, 3, 0.5, float), _nms_scalar(ctx, 4, 0.0, float)
    if ctx.attr("center_point_box", 0):
        boxes = _corner_boxes(ctx, boxes)
    nms = ctx.emit(ctx.call("vision.all_class_non_max_suppression", boxes, scores, ctx.const(limit, "int64"),
                            ctx.const(iou, "float32"), ctx.const(score, "float32"), output_format="onnx"))
    return ctx.emit(ctx.item(nms, 0))


# ------------------------------------------------------------------------------------ sequences, optionals
# A sequence is a Relax tuple (TVM's representation): a ``Tuple`` of its tensors, or the pending
# ``split`` of ``SplitToSequence``. Positions must be constants (TVM's rule).
def _sequence(ctx, i: int = 0):
    """The fields of input ``i``, a sequence built by an earlier sequence node (a ``Tuple``)."""
    seq = ctx.raw(i)
    if not isinstance(seq, Tuple):
        raise ctx.error(f"input {i} must be a sequence built by SequenceConstruct/Insert/Erase/Empty (TVM 0.27 "
                        f"reads its length at import); got a {type(seq).__name__}")
    return list(seq.fields)


def _position(ctx, i: int, default: int) -> int:
    if not ctx.has_input(i):
        return default
    pos = ctx.constant_ints(i, "the position")
    if len(pos) != 1:
        raise ctx.error(f"the position must be one value; got {pos}")
    return pos[0]


@_register("SequenceConstruct")
def _sequence_construct(ctx):
    return Tuple([ctx.tensor_operand(i) for i in range(len(ctx.node.input))])


@_register("SequenceEmpty")
def _sequence_empty(ctx):
    return Tuple([])


@_register("SequenceErase")
def _sequence_erase(ctx):
    fields = _sequence(ctx)
    pos = _position(ctx, 1, -1)
    if not -len(fields) <= pos < len(fields):
        raise ctx.error(f"position {pos} is out of range for a sequence of length {len(fields)}")
    del fields[pos]
    return Tuple(fields)


@_register("SequenceInsert")
def _sequence_insert(ctx):
    fields = _sequence(ctx)
    pos = _position(ctx, 2, -1)
    pos = pos + len(fields) + 1 if pos < 0 else pos
    if not 0 <= pos <= len(fields):
        raise ctx.error(f"position {_position(ctx, 2, -1)} is out of range for a sequence of length {len(fields)}")
    fields.insert(pos, ctx.tensor_operand(1))
    return Tuple(fields)


@_register("SequenceLength")
def _sequence_length(ctx):
    return ctx.const(np.asarray(len(_sequence(ctx)), dtype="int64"), "int64")


@_register("SequenceAt")
def _sequence_at(ctx):
    """The field at a constant position (of a ``Tuple``), or ``TupleGetItem`` of a split."""
    seq = ctx.raw(0)
    pos = _position(ctx, 1, None)
    if pos is None:
        raise ctx.error("SequenceAt needs its position")
    if isinstance(seq, Tuple):
        if not -len(seq.fields) <= pos < len(seq.fields):
            raise ctx.error(f"position {pos} is out of range for a sequence of length {len(seq.fields)}")
        return seq.fields[pos]
    seq = ctx.operand(0)
    n = len(getattr(seq.ty, "fields", ()))
    if not 0 <= pos < n:
        raise ctx.error(f"position {pos} is not supported for a split sequence of length {n} (0 to {n - 1} are)")
    return ctx.item(seq, pos)


@_register("ConcatFromSequence")
def _concat_from_sequence(ctx):
    axis, new_axis = int(ctx.attr("axis", 0)), int(ctx.attr("new_axis", 0))
    if new_axis not in (0, 1):
        raise ctx.error(f"new_axis must be 0 or 1; got {new_axis}")
    fields = _sequence(ctx)
    if new_axis:
        fields = [ctx.call("expand_dims", f, axis=axis) for f in fields]
    return ctx.call("concat", fields, axis=axis)


@_register("SplitToSequence")
def _split_to_sequence(ctx):
    """TVM's ``R.split`` into ``ceil(dim / chunk)`` sections for a scalar (or one-element)
    split, at the cumulative sizes for a vector; ``keepdims=0`` without a split squeezes the
    parts."""
    x = ctx.tensor_operand(0)
    axis = int(ctx.attr("axis", 0))
    split = np.asarray(ctx.constant_array(1, "the split") if ctx.has_input(1) else 1)
    if split.ndim == 1 and split.size > 1:
        sections = [int(v) for v in np.cumsum(split)[:-1]]
    else:
        dim = static_dim(ctx.shape_of(x)[axis])
        if dim is None:
            raise ctx.error("a scalar split of a symbolic dimension is not supported (TVM 0.27 refuses it)")
        sections = -(-dim // int(split.reshape(-1)[0]))
    out = ctx.call("split", x, indices_or_sections=sections, axis=axis)
    if ctx.attr("keepdims", 1) or ctx.has_input(1):
        return out
    out = ctx.emit(out)
    parts = [ctx.emit(ctx.item(out, i)) for i in range(len(out.ty.fields))]
    return Tuple([ctx.emit(ctx.call("squeeze", p, axis=[axis])) for p in parts])


@_register("Optional")
def _optional(ctx):
    """A non-empty optional is its value (TVM's erasure); an empty one is not supported."""
    if not ctx.has_input(0):
        raise ctx.error("an empty Optional (no input) is not supported")
    return ctx.raw(0)


@_register("OptionalHasElement")
def _optional_has_element(ctx):
    return ctx.const(np.asarray(ctx.has_input(0)), "bool")


@_register("OptionalGetElement")
def _optional_get_element(ctx):
    if not ctx.has_input(0):
        raise ctx.error("OptionalGetElement of an empty optional")
    return ctx.raw(0)
