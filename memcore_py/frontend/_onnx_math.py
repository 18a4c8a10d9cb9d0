"""ONNX converters for element-wise math, activations, neural-network layers and LSTM.

Design
------
One function per ``op_type`` (see :mod:`._onnx_ops` for the conventions), each building what
TVM 0.27's ONNX frontend builds for that op, in the same order:

- element-wise ops map one to one (``Relu`` -> ``R.nn.relu``, ``Add`` -> ``R.add``, ...);
  binary ops on two constants or two scalar shape values are folded at import time, a scalar
  shape value meeting a tensor becomes a rank-0 int64 tensor; ``Max``/``Min``/``Sum``/``Mean``
  broadcast, stack and reduce; a float -> int ``Cast`` zeroes non-finite values and wraps;
  ``HardSigmoid``, ``HardSwish``, ``Elu``, ``Selu`` and ``Softplus`` are TVM's formulas,
  ``PRelu`` TVM's per-axis ``R.nn.prelu`` (``where`` otherwise);
- ``Gemm`` -> ``permute_dims`` / ``matmul`` / ``add`` (with ``alpha``/``beta`` scaling),
  ``Conv`` -> ``conv1d/2d/3d`` plus a reshaped bias ``add``, pools, ``BatchNormalization``,
  ``LayerNormalization``, ``Softmax`` (opset >= 13), ``Gelu``, reductions;
- ``Clip`` is ``R.clip`` (TVM writes TE kernels behind ``isnan`` guards of the bounds);
  ``LSTM``, which TVM does not convert, is unrolled (forward, layout 0, default activations,
  a static sequence of at most :data:`MAX_LSTM_STEPS` steps).
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import PrimValue, ShapeExpr
from ..ir.prim import IntImm, as_prim
from ._aten_common import registrar, static_dim
from ._onnx_context import is_constant as _is_const
from ._onnx_context import onnx_dtype

__all__ = ["CONVERTERS"]

CONVERTERS: dict = {}
_register = registrar(CONVERTERS)


# ------------------------------------------------------------------------------------ element-wise
_UNARY = {
    "Relu": "nn.relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Sqrt": "sqrt", "Erf": "erf", "Exp": "exp",
    "Log": "log", "Cos": "cos", "Sin": "sin", "Abs": "abs", "Floor": "floor", "Ceil": "ceil",
    "Not": "logical_not", "Sign": "sign",
}


def _unary(op_name):
    def convert(ctx):
        return ctx.call(op_name, ctx.tensor_operand(0))
    return convert


for _onnx_name, _relax_name in _UNARY.items():
    CONVERTERS[_onnx_name] = _unary(_relax_name)


@_register("Identity")
def _identity(ctx):
    return ctx.raw(0)


@_register("Neg")
def _neg(ctx):
    x = ctx.raw(0)
    if _is_const(x):
        return ctx.const(np.negative(x.data), x.ty.dtype)
    if isinstance(x, PrimValue):
        return PrimValue(IntImm(0) - x.value)
    return ctx.call("negative", ctx.operand(0))


@_register("Reciprocal")
def _reciprocal(ctx):
    x = ctx.tensor_operand(0)
    return ctx.call("divide", ctx.const(1, ctx.dtype_of(x)), x)


_BINARY = {"Add": ("add", np.add), "Sub": ("subtract", np.subtract), "Mul": ("multiply", np.multiply),
           "Div": ("divide", np.divide), "Pow": ("power", np.power), "Less": ("less", np.less),
           "Greater": ("greater", np.greater), "LessOrEqual": ("less_equal", np.less_equal),
           "GreaterOrEqual": ("greater_equal", np.greater_equal), "And": ("logical_and", np.logical_and),
           "Or": ("logical_or", np.logical_or)}
_PRIM_BINARY = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
                "Div": lambda a, b: a // b}


def _binary(onnx_name, op_name, numpy_op):
    def convert(ctx):
        if len(ctx.node.input) != 2:
            raise ctx.error(f"{onnx_name} with {len(ctx.node.input)} inputs is not supported (2 are)")
        a, b = ctx.raw(0), ctx.raw(1)
        if isinstance(a, PrimValue) or isinstance(b, PrimValue):  # shape arithmetic (TVM folds it)
            pa, pb = ctx.prim_like(0), ctx.prim_like(1)
            if pa is not None and pb is not None and onnx_name in _PRIM_BINARY:
                return PrimValue(as_prim(_PRIM_BINARY[onnx_name](pa, pb)))
        if _is_const(a) and _is_const(b):  # TVM's folding: numpy, then back to the operands' dtype
            x, y = np.asarray(a.data), np.asarray(b.data)
            out = numpy_op(x, y)
            if x.dtype == y.dtype and out.dtype != np.bool_:
                out = out.astype(x.dtype)
            return ctx.const(out, str(out.dtype))
        if isinstance(a, (PrimValue, ShapeExpr)) or isinstance(b, (PrimValue, ShapeExpr)):
            return ctx.call(op_name, ctx.tensor_operand(0), ctx.tensor_operand(1))
        return ctx.call(op_name, ctx.operand(0), ctx.operand(1))
    return convert


for _onnx_name, (_relax_name, _np_op) in _BINARY.items():
    CONVERTERS[_onnx_name] = _binary(_onnx_name, _relax_name, _np_op)


def _broadcast_dims(ctx, shapes):
    """TVM's ``compute_broadcast_shape`` over ``shapes`` (a symbolic dim broadcasts with 1 or
    with the same variable only)."""
    rank = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[[IntImm(1)] * (rank - len(s)) + list(s) for s in shapes]):
        dim = dims[0]
        for d in dims[1:]:
            a, b = static_dim(dim), static_dim(d)
            if a is not None and b is not None:
                if a != b and 1 not in (a, b):
                    raise ctx.error(f"cannot broadcast dimensions {a} and {b}")
                dim = IntImm(max(a, b))
            elif a == 1 or (a is None and b is None and d is dim):
                dim = d
            elif b != 1:
                raise ctx.error(f"cannot broadcast dimensions {dim} and {d} (a symbolic dimension broadcasts with "
                                "1 or itself only)")
        out.append(dim)
    return out


def _variadic(reduce_name, numpy_op):
    """``Max``/``Min``/``Sum``/``Mean`` of any number of inputs, as TVM writes them: each input
    broadcast to the common shape, stacked, reduced over the new axis."""
    def convert(ctx):
        n = len(ctx.node.input)
        raw = [ctx.raw(i) for i in range(n)]
        if all(_is_const(v) for v in raw):
            arrays = [np.asarray(v.data) for v in raw]
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
            out = numpy_op(np.stack([np.broadcast_to(a, shape) for a in arrays]), axis=0)
            return ctx.const(out, str(out.dtype))
        tensors = [ctx.tensor_operand(i) for i in range(n)]
        target = _broadcast_dims(ctx, [ctx.shape_of(t) for t in tensors])
        stacked = ctx.call("stack", [ctx.emit(ctx.call("broadcast_to", t, target)) for t in tensors], axis=0)
        return ctx.call(reduce_name, ctx.emit(stacked), axis=0)
    return convert


for _onnx_name, _relax_name, _np_op in (("Max", "max", np.max), ("Min", "min", np.min), ("Sum", "sum", np.sum),
                                        ("Mean", "mean", np.mean)):
    CONVERTERS[_onnx_name] = _variadic(_relax_name, _np_op)


@_register("Equal")
def _equal(ctx):
    a, b = ctx.raw(0), ctx.raw(1)
    if _is_const(a) and _is_const(b):
        return ctx.const(np.asarray(a.data) == np.asarray(b.data), "bool")
    return ctx.call("equal", ctx.operand(0), ctx.operand(1))


@_register("Where")
def _where(ctx):
    return ctx.call("where", ctx.operand(0), ctx.operand(1), ctx.operand(2))


@_register("Clip")
def _clip(ctx):
    x = ctx.tensor_operand(0)
    if ctx.has_input(1) or ctx.has_input(2):  # opset >= 11: bounds are inputs
        lo, hi = ctx.constant_array(1, "Clip's min"), ctx.constant_array(2, "Clip's max")
    else:
        lo, hi = ctx.attr("min"), ctx.attr("max")
    lo = -float("inf") if lo is None else float(np.asarray(lo).reshape(-1)[0])
    hi = float("inf") if hi is None else float(np.asarray(hi).reshape(-1)[0])
    return ctx.call("clip", x, lo, hi)


@_register("Cast")
def _cast(ctx):
    to = onnx_dtype(ctx.attr("to"), f"node {ctx.node.name!r}")
    x = ctx.raw(0)
    if isinstance(x, ShapeExpr):
        if all(static_dim(d) is not None for d in x.values):
            return ctx.const([static_dim(d) for d in x.values], to)
        x = ctx.call("shape_to_tensor", x)
        return ctx.call("astype", x, dtype=to)
    if _is_const(x):
        return ctx.const(np.asarray(x.data).astype(to), to)
    if isinstance(x, PrimValue):
        return x
    x = ctx.operand(0)
    if to.startswith(("int", "uint")) and ctx.dtype_of(x).startswith(("float", "bfloat")):
        return _float_to_int(ctx, x, to)
    return ctx.call("astype", x, dtype=to)


def _float_to_int(ctx, x, to: str):
    """TVM's float -> int cast: non-finite values become 0, then the value wraps modulo
    ``2**bits`` (two's complement for signed types), as ONNX's reference does."""
    src = ctx.dtype_of(x)
    clean = ctx.emit(ctx.call("where", ctx.call("logical_not", ctx.call("isfinite", x)), ctx.const(0.0, src), x))
    signed, bits = to.startswith("int"), int(to.lstrip("uint"))
    if bits == 64:
        return ctx.call("astype", clean, dtype=to)
    temp = "int64" if bits >= 32 else "int32"
    t = ctx.call("astype", clean, dtype=temp)
    if bits == 32:
        two_pow = ctx.const(1 << bits, temp)
        unsigned = ctx.call("floor_mod", t, two_pow)
    else:
        mask = ctx.const((1 << bits) - 1, temp)
        unsigned = ctx.call("bitwise_and", t, mask)
        two_pow = ctx.call("add", mask, ctx.const(1, temp))
    if signed:  # the unsigned value is read three times: bound once (TVM's normalizer reuses it)
        unsigned = ctx.emit(unsigned)
        unsigned = ctx.call("where", ctx.call("greater_equal", unsigned, ctx.const(1 << (bits - 1), temp)),
                            ctx.call("subtract", unsigned, two_pow), unsigned)
    return ctx.call("astype", unsigned, dtype=to)


@_register("CastLike")
def _cast_like(ctx):
    target = ctx.raw(1)
    if not ctx.is_tensor(target):
        raise ctx.error("input 1 (the dtype to cast to) must be a tensor")
    x = ctx.raw(0)
    to = ctx.dtype_of(target)
    if _is_const(x):
        return ctx.const(np.asarray(x.data).astype(to), to)
    x = ctx.tensor_operand(0)
    return x if ctx.dtype_of(x) == to else ctx.call("astype", x, dtype=to)


# ------------------------------------------------------------------------------------ activations
@_register("LeakyRelu")
def _leaky_relu(ctx):
    return ctx.call("nn.leakyrelu", ctx.tensor_operand(0), alpha=float(ctx.attr("alpha", 0.01)))


@_register("HardSigmoid")
def _hard_sigmoid(ctx):
    x = ctx.tensor_operand(0)
    dtype = ctx.dtype_of(x)
    alpha, beta = ctx.const(float(ctx.attr("alpha", 0.2)), dtype), ctx.const(float(ctx.attr("beta", 0.5)), dtype)
    return ctx.call("clip", ctx.call("add", ctx.call("multiply", alpha, x), beta), 0, 1)


@_register("HardSwish")
def _hard_swish(ctx):
    x = ctx.tensor_operand(0)
    dtype = ctx.dtype_of(x)
    gate = ctx.call("clip", ctx.call("add", x, ctx.const(3, dtype)), 0, 6)
    return ctx.call("multiply", x, ctx.call("divide", gate, ctx.const(6, dtype)))


def _elu_terms(ctx, x, alpha: float):
    """TVM's ``-alpha * relu(1 - exp(x)) + relu(x)`` (constants float32, as ``relax.const``)."""
    neg = ctx.call("multiply", ctx.const(-alpha), ctx.call("nn.relu", ctx.call("subtract", ctx.const(1.0),
                                                                                ctx.call("exp", x))))
    return ctx.call("add", neg, ctx.call("nn.relu", x))


@_register("Elu")
def _elu(ctx):
    return _elu_terms(ctx, ctx.tensor_operand(0), float(ctx.attr("alpha", 1.0)))


@_register("Selu")
def _selu(ctx):
    x = ctx.tensor_operand(0)
    alpha = float(ctx.attr("alpha", 1.67326319217681884765625))
    gamma = float(ctx.attr("gamma", 1.05070102214813232421875))
    return ctx.call("multiply", ctx.const(gamma), _elu_terms(ctx, x, alpha))


@_register("Softplus")
def _softplus(ctx):
    x = ctx.tensor_operand(0)
    dtype = ctx.dtype_of(x)
    tail = ctx.call("log", ctx.call("add", ctx.const(1, dtype),
                                    ctx.call("exp", ctx.call("negative", ctx.call("abs", x)))))
    return ctx.call("add", ctx.call("maximum", x, ctx.const(0, dtype)), tail)


@_register("PRelu")
def _prelu(ctx):
    x, slope = ctx.tensor_operand(0), ctx.tensor_operand(1)
    rank = ctx.rank(x)
    dims = [static_dim(d) for d in ctx.shape_of(slope)]
    if None in dims:
        raise ctx.error("the slope must have a static shape")
    if all(d == 1 for d in dims):
        return ctx.call("nn.prelu", x, ctx.call("reshape", slope, [1]), axis=rank - 1)
    if len(dims) == 1:
        return ctx.call("nn.prelu", x, ctx.call("reshape", slope, [dims[0]]), axis=rank - 1)
    if len(dims) > rank:
        raise ctx.error(f"a slope of rank {len(dims)} does not broadcast to an input of rank {rank}")
    wide = [i for i, d in enumerate(dims) if d != 1]
    if len(wide) == 1:
        return ctx.call("nn.prelu", x, ctx.call("reshape", slope, [dims[wide[0]]]), axis=rank - len(dims) + wide[0])
    return ctx.call("where", ctx.call("less", x, ctx.const(0, ctx.dtype_of(x))), ctx.call("multiply", x, slope), x)


@_register("Dropout")
def _dropout(ctx):
    ratio = ctx.attr("ratio", 0.5)
    if ctx.has_input(1):
        ratio = ctx.constant_array(1, "the ratio")
    out = ctx.emit(ctx.call("nn.dropout", ctx.tensor_operand(0), rate=float(np.asarray(ratio))))
    return [ctx.emit(ctx.item(out, i)) for i in range(len(out.ty.fields))]


def _arg_reduce(op_name):
    def convert(ctx):
        x = ctx.tensor_operand(0)
        if ctx.attr("select_last_index", 0):
            raise ctx.error("select_last_index=1 is not supported")
        axis = ctx.attr("axis", 0)
        axis = axis + ctx.rank(x) if axis < 0 else axis
        return ctx.call(op_name, x, axis=axis, keepdims=bool(ctx.attr("keepdims", 1)))
    return convert


CONVERTERS["ArgMax"] = _arg_reduce("argmax")
CONVERTERS["ArgMin"] = _arg_reduce("argmin")


# ------------------------------------------------------------------------------------ nn
@_register("MatMul")
def _matmul(ctx):
    return ctx.call("matmul", ctx.tensor_operand(0), ctx.tensor_operand(1))


@_register("Gemm")
def _gemm(ctx):
    a, b = ctx.tensor_operand(0), ctx.tensor_operand(1)
    c = ctx.operand(2)
    alpha, beta = ctx.attr("alpha"), ctx.attr("beta")
    dtype = ctx.dtype_of(a)
    if alpha is not None and alpha != 1.0:
        a = ctx.call("multiply", a, ctx.const(alpha, dtype))
    if ctx.attr("transA", 0):
        a = ctx.call("permute_dims", a, axes=[1, 0])
    if ctx.attr("transB", 0):
        b = ctx.call("permute_dims", b, axes=[1, 0])
    y = ctx.call("matmul", a, b)
    if c is not None:
        if beta is not None and beta != 1.0:
            c = ctx.call("multiply", c, ctx.const(beta, dtype))
        y = ctx.call("add", y, c)
    return y


_LAYOUTS = {3: ("conv1d", "NCW", "OIW"), 4: ("conv2d", "NCHW", "OIHW"), 5: ("conv3d", "NCDHW", "OIDHW")}


def _check_auto_pad(ctx, spatial: int):
    """``pads`` after ``auto_pad``: NOTSET keeps them, VALID is zero padding; SAME_* is an error."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad == "VALID":
        return [0] * spatial
    if auto_pad != "NOTSET":
        raise ctx.error(f"auto_pad={auto_pad!r} is not supported (NOTSET and VALID are); export with explicit pads")
    return ctx.attr("pads", 0)


@_register("Conv")
def _conv(ctx):
    x, w = ctx.tensor_operand(0), ctx.tensor_operand(1)
    rank = ctx.rank(x)
    if rank not in _LAYOUTS:
        raise ctx.error(f"a convolution of rank {rank} is not supported (1D, 2D and 3D are)")
    op_name, data_layout, kernel_layout = _LAYOUTS[rank]
    out = ctx.call("nn." + op_name, x, w, strides=ctx.attr("strides", 1), padding=_check_auto_pad(ctx, rank - 2),
                   dilation=ctx.attr("dilations", 1), groups=ctx.attr("group", 1), data_layout=data_layout,
                   kernel_layout=kernel_layout)
    if ctx.has_input(2):
        bias = ctx.call("reshape", ctx.tensor_operand(2), [1, -1] + [1] * (rank - 2))
        out = ctx.call("add", out, bias)
    return out


def _pool(name):
    def convert(ctx):
        x = ctx.tensor_operand(0)
        rank = ctx.rank(x)
        kernel = ctx.attr("kernel_shape")
        if kernel is None or len(kernel) not in (1, 2, 3):
            raise ctx.error(f"kernel_shape {kernel!r} is not supported (1, 2 or 3 dims are)")
        spatial = rank - 2
        return ctx.call(f"nn.{name}{len(kernel)}d", x, pool_size=kernel, strides=ctx.attr("strides", [1] * spatial),
                        padding=_check_auto_pad(ctx, spatial), dilation=ctx.attr("dilations", [1] * spatial),
                        ceil_mode=bool(ctx.attr("ceil_mode", 0)),
                        count_include_pad=bool(ctx.attr("count_include_pad", 0)))
    return convert


CONVERTERS["MaxPool"] = _pool("max_pool")
CONVERTERS["AveragePool"] = _pool("avg_pool")


@_register("GlobalAveragePool")
def _global_avg_pool(ctx):
    x = ctx.tensor_operand(0)
    return ctx.call("mean", x, axis=list(range(2, ctx.rank(x))), keepdims=True)


@_register("BatchNormalization")
def _batch_norm(ctx):
    x = ctx.tensor_operand(0)
    if ctx.attr("training_mode", 0):
        raise ctx.error("training_mode=1 is not supported (inference batch norm is)")
    out = ctx.call("nn.batch_norm", x, ctx.tensor_operand(1), ctx.tensor_operand(2), ctx.tensor_operand(3),
                   ctx.tensor_operand(4), axis=1, epsilon=ctx.attr("epsilon", 1e-5),
                   momentum=ctx.attr("momentum", 0.9), training=False)
    return [ctx.item(out, 0), ctx.item(out, 1), ctx.item(out, 2)]


@_register("LayerNormalization")
def _layer_norm(ctx):
    x, scale = ctx.tensor_operand(0), ctx.tensor_operand(1)
    bias = ctx.operand(2)
    gamma = [static_dim(d) for d in ctx.shape_of(scale)]
    if bias is None:
        bias = ctx.const(np.zeros(gamma), ctx.dtype_of(scale))
    axis = ctx.attr("axis", -1)
    axes = [axis]
    if len(axes) < len(gamma):
        axes.extend(range(axis + 1, axis + 1 + len(gamma) - 1))
    out = ctx.call("nn.layer_norm", x, scale, bias, axes=axes, epsilon=ctx.attr("epsilon", 1e-5))
    return [out]


@_register("Softmax", "LogSoftmax")
def _softmax(ctx):
    if ctx.opset < 13:
        raise ctx.error(f"{ctx.node.op_type} of opset {ctx.opset} (flattening semantics) is not supported; "
                        "opset >= 13 is")
    name = "nn.softmax" if ctx.node.op_type == "Softmax" else "nn.log_softmax"
    return ctx.call(name, ctx.tensor_operand(0), axis=ctx.attr("axis", -1))


@_register("Gelu")
def _gelu(ctx):
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.error(f"approximate={approximate!r} is not supported ('none' and 'tanh' are)")
    return ctx.call("nn.gelu_tanh" if approximate == "tanh" else "nn.gelu", ctx.tensor_operand(0))


def _reduce(op_name):
    def convert(ctx):
        x = ctx.tensor_operand(0)
        keepdims = bool(ctx.attr("keepdims", 1))
        axes = ctx.attr("axes")
        if axes is None and ctx.has_input(1):
            axes = ctx.constant_ints(1, "the axes")
        if not axes:
            if ctx.attr("noop_with_empty_axes", 0):
                return x
            return ctx.call(op_name, x, axis=None, keepdims=keepdims)
        return ctx.call(op_name, x, axis=list(axes), keepdims=keepdims)
    return convert


for _onnx_name, _relax_name in (("ReduceMean", "mean"), ("ReduceSum", "sum"), ("ReduceMax", "max"),
                                ("ReduceMin", "min"), ("ReduceProd", "prod")):
    CONVERTERS[_onnx_name] = _reduce(_relax_name)


# ------------------------------------------------------------------------------------ recurrent
_LSTM_ACTIVATIONS = ["Sigmoid", "Tanh", "Tanh"]

#: Longest static sequence an ``LSTM`` is unrolled over (see :func:`_lstm`).
MAX_LSTM_STEPS = 2**14


def _lstm_check(ctx):
    unsupported = []
    if ctx.attr("direction", "forward") != "forward":
        unsupported.append(f"direction={ctx.attr('direction')!r}")
    if ctx.attr("layout", 0) != 0:
        unsupported.append("layout=1")
    if ctx.attr("input_forget", 0):
        unsupported.append("input_forget=1")
    if ctx.attr("clip") is not None:
        unsupported.append("clip")
    if ctx.attr("activations", _LSTM_ACTIVATIONS) != _LSTM_ACTIVATIONS:
        unsupported.append(f"activations={ctx.attr('activations')!r}")
    if ctx.has_input(4):
        unsupported.append("sequence_lens")
    if ctx.has_input(7):
        unsupported.append("peepholes (input P)")
    if unsupported:
        raise ctx.error(f"{', '.join(unsupported)} is not supported (a forward LSTM of layout 0 with the default "
                        "activations is)")


def _lstm_state(ctx, i: int, batch, hidden: int, dtype: str):
    """The initial state input ``i`` without its direction axis, or zeros."""
    if ctx.has_input(i):
        return ctx.emit(ctx.call("squeeze", ctx.tensor_operand(i), axis=[0]))
    return ctx.emit(ctx.call("zeros", [batch, hidden], dtype=dtype))


@_register("LSTM")
def _lstm(ctx):
    """A forward LSTM unrolled over its (static) sequence length, gates in ONNX's ``iofc``
    order: ``X @ W^T`` for all steps at once, then per step ``+ h @ R^T + Wb + Rb``, the four
    gates split, ``c = f * c + i * tanh(g)``, ``h = o * tanh(c)``. Outputs ``Y`` (the stacked
    ``h``), ``Y_h`` and ``Y_c`` with their direction axis.

    Every step becomes 17 bindings, so the module grows linearly with the sequence length.
    A static length over :data:`MAX_LSTM_STEPS` (2**14 = 16384 steps, about 280,000
    bindings, more than the largest modules the pass benchmarks plan) is refused with a
    :class:`~memcore_py.errors.FrontendError` naming the node and the length before anything
    is built, as ``R.split`` refuses more than :data:`~memcore_py.ir.ops.MAX_SPLIT_SECTIONS`
    parts: exported models have static lengths far below it (a length that varies is a
    ``dim_param``, refused above), and a length such as 2**40 would never finish unrolling."""
    _lstm_check(ctx)
    x, w, r = ctx.tensor_operand(0), ctx.tensor_operand(1), ctx.tensor_operand(2)
    steps, batch, _ = ctx.shape_of(x)
    if static_dim(steps) is None:
        raise ctx.error("the sequence length must be static to unroll the LSTM")
    if static_dim(steps) > MAX_LSTM_STEPS:
        raise ctx.error(f"the sequence length must be at most {MAX_LSTM_STEPS} to unroll the LSTM (one set of "
                        f"bindings per step); got {static_dim(steps)}")
    hidden = int(ctx.attr("hidden_size") or static_dim(ctx.shape_of(r)[2]))
    dtype = ctx.dtype_of(x)
    w_t = ctx.emit(ctx.call("permute_dims", ctx.call("squeeze", w, axis=[0]), axes=[1, 0]))
    r_t = ctx.emit(ctx.call("permute_dims", ctx.call("squeeze", r, axis=[0]), axes=[1, 0]))
    bias = None
    if ctx.has_input(3):
        halves = ctx.emit(ctx.call("split", ctx.call("squeeze", ctx.tensor_operand(3), axis=[0]),
                                   indices_or_sections=2, axis=0))
        bias = ctx.emit(ctx.call("add", ctx.item(halves, 0), ctx.item(halves, 1)))
    h = _lstm_state(ctx, 5, batch, hidden, dtype)
    c = _lstm_state(ctx, 6, batch, hidden, dtype)
    xw = ctx.emit(ctx.call("matmul", x, w_t))
    hs = []
    for t in range(static_dim(steps)):
        gates = ctx.call("add", ctx.call("take", xw, ctx.const(t, "int64"), axis=0), ctx.call("matmul", h, r_t))
        if bias is not None:
            gates = ctx.call("add", gates, bias)
        parts = ctx.emit(ctx.call("split", gates, indices_or_sections=4, axis=1))
        i, o, f = (ctx.call("sigmoid", ctx.item(parts, k)) for k in range(3))
        g = ctx.call("tanh", ctx.item(parts, 3))
        c = ctx.emit(ctx.call("add", ctx.call("multiply", f, c), ctx.call("multiply", i, g)))
        h = ctx.emit(ctx.call("multiply", o, ctx.call("tanh", c)))
        hs.append(h)
    y = ctx.call("expand_dims", ctx.call("stack", hs, axis=0), axis=1)
    return [y, ctx.call("expand_dims", h, axis=0), ctx.call("expand_dims", c, axis=0)]
