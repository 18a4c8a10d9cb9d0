"""ONNX converters for element-wise math, activations, neural-network layers and LSTM.

Design
------
One function per ``op_type`` (see :mod:`._onnx_ops` for the conventions), each building what
TVM 0.27's ONNX frontend builds for that op, in the same order:

- element-wise ops map one to one (``Relu`` -> ``R.nn.relu``, ``Add`` -> ``R.add``, ...);
  binary ops on two constants or two scalar shape values are folded at import time, a scalar
  shape value meeting a tensor becomes a rank-0 int64 tensor; ``Where`` of constants is
  folded, of 1-D constants and shapes known at import time is a shape (the TorchScript
  exporter's ``Expand`` targets), and reads a shape operand otherwise through
  ``R.shape_to_tensor``; ``Max``/``Min``/``Sum``/``Mean``
  broadcast, stack and reduce; a float -> int ``Cast`` zeroes non-finite values and wraps;
  ``HardSigmoid``, ``HardSwish``, ``Elu``, ``Selu`` and ``Softplus`` are TVM's formulas,
  ``PRelu`` TVM's per-axis ``R.nn.prelu`` (``where`` otherwise);
- ``Gemm`` -> ``permute_dims`` / ``matmul`` / ``add`` (with ``alpha``/``beta`` scaling),
  ``Conv`` -> ``conv1d/2d/3d`` plus a reshaped bias ``add``, pools, ``BatchNormalization``,
  ``LayerNormalization``, ``Softmax`` (opset >= 13), ``Gelu``, reductions;
- TVM's remaining cheap conversions: trigonometric/hyperbolic, ``Round``,
  ``IsInf``/``IsNaN``, ``Mod``/``Xor``/``Bitwise*``/``BitShift``,
  ``Softsign``/``ThresholdedRelu``/``Mish``/``Shrink``, ``MatMulInteger``, ``ConvTranspose``
  (1-D, 2-D), ``LpPool``/``GlobalLpPool``/``GlobalMaxPool``/``MaxUnpool``,
  instance/group/RMS/mean-variance normalization, ``LRN``,
  ``Hardmax`` and the composite reductions. Where TVM's expression uses one call twice, TVM's
  normalizer binds it once; the converter binds it first (``ctx.emit``), in TVM's order;
- the onnxruntime contrib ops TVM converts (``com.microsoft`` domain: ``BiasGelu``,
  ``FastGelu``, ``MatMulInteger16``, ``SkipLayerNormalization``, ``EmbedLayerNormalization``,
  ``Attention``) are TVM's decompositions; their optional outputs TVM does not compute are
  float32 zero placeholders, as in TVM;
- ``Clip`` is ``R.clip`` (TVM writes TE kernels behind ``isnan`` guards of the bounds);
  ``LSTM``, which TVM does not convert, is unrolled (forward, layout 0, default activations,
  a static sequence of at most :data:`MAX_LSTM_STEPS` steps).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.expr import PrimValue, ShapeExpr
from ..ir.prim import FloatImm, IntImm, PrimExpr, as_prim
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
    "Not": "logical_not", "Sign": "sign", "Acos": "acos", "Acosh": "acosh", "Asin": "asin", "Asinh": "asinh",
    "Atan": "atan", "Atanh": "atanh", "Cosh": "cosh", "Sinh": "sinh", "Tan": "tan", "Round": "round",
    "IsNaN": "isnan",
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
_BINARY.update({"Xor": ("logical_xor", np.logical_xor), "BitwiseAnd": ("bitwise_and", np.bitwise_and),
                "BitwiseOr": ("bitwise_or", np.bitwise_or), "BitwiseXor": ("bitwise_xor", np.bitwise_xor)})
_INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
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


def _bitwise(onnx_name, convert):
    """TVM's ``BitwiseBase``: integer operands only, then the binary conversion."""
    def checked(ctx):
        for i in range(len(ctx.node.input)):
            value = ctx.raw(i)
            dtype = ctx.dtype_of(value) if ctx.is_tensor(value) else None
            if dtype not in _INTEGER_DTYPES:
                raise ctx.error(f"{onnx_name} needs integer operands; input {i} is {dtype or type(value).__name__}")
        return convert(ctx)
    return checked


for _onnx_name in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
    CONVERTERS[_onnx_name] = _bitwise(_onnx_name, CONVERTERS[_onnx_name])


_SHIFTS = {"LEFT": ("left_shift", np.left_shift), "RIGHT": ("right_shift", np.right_shift)}


@_register("BitShift")
def _bit_shift(ctx):
    """``R.left_shift`` / ``R.right_shift`` by ``direction``, through TVM's bitwise checks and
    folding (:func:`_bitwise`, :func:`_binary`)."""
    direction = ctx.attr("direction")
    if direction not in _SHIFTS:
        raise ctx.error(f"direction={direction!r} is not supported ('LEFT' and 'RIGHT' are)")
    return _bitwise("BitShift", _binary("BitShift", *_SHIFTS[direction]))(ctx)


@_register("Mod")
def _mod(ctx):
    """``fmod=0``: ``R.floor_mod`` (numpy's ``mod`` when folding), ``fmod=1``: ``R.mod`` (``fmod``)."""
    fmod = bool(ctx.attr("fmod", 0))
    return _binary("Mod", "mod" if fmod else "floor_mod", np.fmod if fmod else np.mod)(ctx)


@_register("BitwiseNot")
def _bitwise_not(ctx):
    x = ctx.raw(0)
    if _is_const(x):
        return ctx.const(np.bitwise_not(np.asarray(x.data)), x.ty.dtype)
    return ctx.call("bitwise_not", ctx.operand(0))


@_register("IsInf")
def _is_inf(ctx):
    # TVM 0.27 ignores detect_negative / detect_positive; refuse them rather than detect both signs
    if ctx.attr("detect_negative", 1) != 1 or ctx.attr("detect_positive", 1) != 1:
        raise ctx.error("detect_negative=0 or detect_positive=0 is not supported (TVM 0.27 detects both signs)")
    return ctx.call("isinf", ctx.tensor_operand(0))


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
    """TVM's ``Where``: constants folded with numpy; constants (1-D) and shapes known at
    import time chosen element by element into a shape (:func:`_where_shape`); otherwise
    ``R.where``, a shape operand read as a tensor by ``R.shape_to_tensor``."""
    raw = [ctx.raw(i) for i in range(3)]
    if all(_is_const(v) for v in raw):
        out = np.where(*(np.asarray(v.data) for v in raw))
        return ctx.const(out, str(out.dtype))
    if all(_is_const(v) or isinstance(v, ShapeExpr) for v in raw) \
            and all(isinstance(v, ShapeExpr) or np.asarray(v.data).ndim == 1 for v in raw):
        return _where_shape(ctx, raw)
    return ctx.call("where", *(ctx.emit(ctx.call("shape_to_tensor", v)) if isinstance(v, ShapeExpr)
                               else ctx.operand(i) for i, v in enumerate(raw)))


def _where_shape(ctx, raw):
    """``Where`` of 1-D constants and shapes, at least one a shape: the shape whose dims are
    ``x[i] if condition[i] else y[i]`` (a length-1 operand repeated), as TVM computes it."""
    lists = [list(v.values) if isinstance(v, ShapeExpr) else np.asarray(v.data).tolist() for v in raw]
    n = max(len(v) for v in lists)
    if not all(len(v) in (1, n) for v in lists):
        raise ctx.error(f"cannot broadcast condition, x and y with lengths {', '.join(str(len(v)) for v in lists)}")
    condition, x, y = (v * n if len(v) == 1 else v for v in lists)
    out = []
    for c, a, b in zip(condition, x, y):
        if not isinstance(c, (bool, int)):
            c = static_dim(c)
            if c is None:
                raise ctx.error("a condition read from a symbolic shape is not supported")
        v = a if c else b
        if isinstance(v, bool) or not isinstance(v, (int, PrimExpr)):
            raise ctx.error(f"a shape chosen by Where must have integer dims; got {v!r}")
        out.append(IntImm(v) if isinstance(v, int) else v)
    return ShapeExpr(out)


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


@_register("Softsign")
def _softsign(ctx):
    x = ctx.tensor_operand(0)
    return ctx.call("divide", x, ctx.call("add", ctx.call("abs", x), ctx.const(1, ctx.dtype_of(x))))


@_register("ThresholdedRelu")
def _thresholded_relu(ctx):
    """TVM's ``astype(greater(x, alpha), "float32") * x`` (``alpha`` a float32 constant)."""
    x = ctx.tensor_operand(0)
    mask = ctx.call("astype", ctx.call("greater", x, ctx.const(float(ctx.attr("alpha", 1.0)))), dtype="float32")
    return ctx.call("multiply", mask, x)


@_register("Mish")
def _mish(ctx):
    x = ctx.tensor_operand(0)
    softplus = ctx.call("log", ctx.call("add", ctx.const(1.0, ctx.dtype_of(x)), ctx.call("exp", x)))
    return ctx.call("multiply", x, ctx.call("tanh", softplus))


@_register("Shrink")
def _shrink(ctx):
    """TVM's ``where(x > lambd, x - bias, 0) + where(x < -lambd, x + bias, 0)``, the zeros
    one ``zeros_like`` (bound once, in TVM's order) and ``-lambd`` a ``negative`` of the constant."""
    x = ctx.tensor_operand(0)
    dtype = ctx.dtype_of(x)
    lambd, bias = ctx.const(float(ctx.attr("lambd", 0.5)), dtype), ctx.const(float(ctx.attr("bias", 0.0)), dtype)
    above, minus = ctx.emit(ctx.call("greater", x, lambd)), ctx.emit(ctx.call("subtract", x, bias))
    zeros = ctx.emit(ctx.call("zeros_like", x))  # TVM's normalizer binds the shared call once
    upper = ctx.emit(ctx.call("where", above, minus, zeros))
    lower = ctx.call("where", ctx.call("less", x, ctx.call("negative", lambd)), ctx.call("add", x, bias), zeros)
    return ctx.call("add", upper, lower)


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


@_register("MatMulInteger")
def _matmul_integer(ctx):
    """``(int32(A) - a_zero) @ (int32(B) - b_zero)`` in int32; a rank-1 zero point becomes
    a column (A's rows) or a row (B's columns), as TVM writes it."""
    a = ctx.call("astype", ctx.tensor_operand(0), dtype="int32")
    b = ctx.call("astype", ctx.tensor_operand(1), dtype="int32")
    for i, axis in ((2, -1), (3, 0)):
        if ctx.has_input(i):
            zero = ctx.call("astype", ctx.tensor_operand(i), dtype="int32")
            if ctx.rank(zero) == 1:
                zero = ctx.call("expand_dims", zero, axis=axis)
            if i == 2:
                a = ctx.call("subtract", a, zero)
            else:
                b = ctx.call("subtract", b, zero)
    return ctx.call("matmul", a, b, out_dtype="int32")


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


_TRANSPOSE_LAYOUTS = {3: ("conv1d_transpose", "NCW", "IOW"), 4: ("conv2d_transpose", "NCHW", "IOHW")}


@_register("ConvTranspose")
def _conv_transpose(ctx):
    """``R.nn.conv1d/2d_transpose`` (memcore's IR has no ``conv3d_transpose``), ``SAME_*``
    pads as TVM derives them from the attributes alone, plus a reshaped bias ``add``."""
    x, w = ctx.tensor_operand(0), ctx.tensor_operand(1)
    rank = ctx.rank(x)
    if rank not in _TRANSPOSE_LAYOUTS:
        raise ctx.error(f"a transposed convolution of rank {rank} is not supported (1D and 2D are)")
    if ctx.attr("output_shape") is not None:
        raise ctx.error("output_shape is not supported (TVM 0.27 ignores it); give pads and output_padding")
    op_name, data_layout, kernel_layout = _TRANSPOSE_LAYOUTS[rank]
    spatial = rank - 2
    strides = list(ctx.attr("strides", [1] * spatial))
    dilations = list(ctx.attr("dilations", [1] * spatial))
    output_padding = list(ctx.attr("output_padding", [0] * spatial))
    pads = ctx.attr("pads", 0)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        kernel = ctx.attr("kernel_shape") or [static_dim(d) for d in ctx.shape_of(w)[2:]]
        begin, end = [], []
        for i in range(spatial):
            total = max((kernel[i] - 1) * dilations[i] + 1 + output_padding[i] - strides[i], 0)
            first = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            begin.append(first)
            end.append(total - first)
        pads = begin + end
    elif auto_pad == "VALID":
        pads = [0] * (2 * spatial)
    elif auto_pad != "NOTSET":
        raise ctx.error(f"auto_pad={auto_pad!r} is not a valid value")
    out = ctx.call("nn." + op_name, x, w, strides=strides, padding=pads, output_padding=output_padding,
                   dilation=dilations, groups=ctx.attr("group", 1), data_layout=data_layout,
                   kernel_layout=kernel_layout)
    if ctx.has_input(2):
        out = ctx.call("add", out, ctx.call("reshape", ctx.tensor_operand(2), [1, -1] + [1] * spatial))
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


@_register("LpPool")
def _lp_pool(ctx):
    """TVM's ``(avg_pool(|x| ** p, count_include_pad) * prod(kernel)) ** (1 / p)``."""
    x = ctx.tensor_operand(0)
    dtype = ctx.dtype_of(x)
    p = ctx.attr("p", 2.0)
    kernel = ctx.attr("kernel_shape")
    if kernel is None or len(kernel) not in (1, 2, 3):
        raise ctx.error(f"kernel_shape {kernel!r} is not supported (1, 2 or 3 dims are)")
    spatial = ctx.rank(x) - 2
    data = ctx.emit(ctx.call("power", ctx.call("abs", x), ctx.const(float(p), dtype)))
    pooled = ctx.call(f"nn.avg_pool{len(kernel)}d", data, pool_size=kernel, strides=ctx.attr("strides", [1] * spatial),
                      padding=_check_auto_pad(ctx, spatial), dilation=ctx.attr("dilations", [1] * spatial),
                      ceil_mode=bool(ctx.attr("ceil_mode", 0)), count_include_pad=True)
    out = ctx.call("multiply", pooled, ctx.const(float(np.prod(kernel)), dtype))
    return ctx.call("power", out, ctx.const(1.0 / p, dtype))


@_register("GlobalLpPool")
def _global_lp_pool(ctx):
    x = ctx.tensor_operand(0)
    dtype = ctx.dtype_of(x)
    p = ctx.attr("p", 2.0)
    total = ctx.call("sum", ctx.call("power", ctx.call("abs", x), ctx.const(float(p), dtype)),
                     axis=list(range(2, ctx.rank(x))), keepdims=True)
    return ctx.call("power", total, ctx.const(1.0 / p, dtype))


@_register("MaxUnpool")
def _max_unpool(ctx):
    """TVM's scatter of the flattened values into flattened zeros of the inferred output
    shape (``(dim - 1) * stride + kernel - pads``); an ``output_shape`` input is not supported."""
    x, indices = ctx.tensor_operand(0), ctx.tensor_operand(1)
    if ctx.has_input(2):
        raise ctx.error("the output_shape input is not supported (TVM 0.27 cannot read it either)")
    kernel = list(ctx.attr("kernel_shape"))
    pads = list(ctx.attr("pads", [0] * len(kernel) * 2))
    strides = list(ctx.attr("strides", [1] * len(kernel)))
    dims = [static_dim(d) for d in ctx.shape_of(x)]
    if None in dims:
        raise ctx.error("the input shape must be static")
    out = np.asarray([1, 1] + strides) * dims + np.asarray([0, 0] + kernel) - np.asarray([0, 0] + strides)
    out = (out - np.reshape([0, 0, 0, 0] + pads, [-1, 2]).sum(axis=-1)).tolist()
    zeros = ctx.emit(ctx.call("zeros", out, dtype=ctx.dtype_of(x)))
    flat = ctx.call("scatter_elements", ctx.call("reshape", zeros, [-1]), ctx.call("reshape", indices, [-1]),
                    ctx.call("reshape", x, [-1]), axis=0)
    return ctx.call("reshape", flat, out)


@_register("GlobalAveragePool")
def _global_avg_pool(ctx):
    x = ctx.tensor_operand(0)
    return ctx.call("mean", x, axis=list(range(2, ctx.rank(x))), keepdims=True)


@_register("GlobalMaxPool")
def _global_max_pool(ctx):
    x = ctx.tensor_operand(0)
    return ctx.call("max", x, axis=list(range(2, ctx.rank(x))), keepdims=True)


@_register("BatchNormalization")
def _batch_norm(ctx):
    """TVM's conversion: ``R.nn.batch_norm`` (``training`` from ``training_mode``) and its
    three results bound at once, used or not (TVM normalizes the tuple it returns: the call,
    then ``[0]``, ``[1]``, ``[2]``, each cast back after its item). Float16 data with float32
    scale/bias or statistics, and float16 data in training, are computed in float32: each
    operand needing it cast (``astype``) as it is read, as TVM's normalizer binds them.

    Refused (``FrontendError``): scale and bias, or mean and variance, of different dtypes, and
    other dtype mixes (TVM refuses them too); ``training_mode=1`` when the running mean or
    variance (outputs 1, 2) is used: TVM passes ONNX's ``momentum`` (the weight of the old
    running value) where TOPI's ``batch_norm`` takes the weight of the batch's, so TVM's
    updated statistics are wrong (DIFFERENCES.md ``onnx-batchnorm-training-stats``).
    """
    dtypes = []
    for i in range(5):
        value = ctx.raw(i)
        if not ctx.is_tensor(value):
            raise ctx.error(f"input {i} must be a tensor")
        dtypes.append(ctx.dtype_of(value))
    data_dt, scale_dt, bias_dt, mean_dt, var_dt = dtypes
    if scale_dt != bias_dt or mean_dt != var_dt:
        raise ctx.error(f"scale and bias, and mean and var, must have the same dtype; got {scale_dt}/{bias_dt}, "
                        f"{mean_dt}/{var_dt}")
    if data_dt == scale_dt == mean_dt:
        compute = data_dt
    elif data_dt == "float16" and scale_dt in ("float16", "float32") and mean_dt in ("float16", "float32"):
        compute = "float32"
    else:
        raise ctx.error(f"mixed dtypes are supported for float16 data with float16/float32 parameters only (as "
                        f"in TVM); got data={data_dt}, scale/bias={scale_dt}, mean/var={mean_dt}")
    training = bool(ctx.attr("training_mode", 0))
    if training and data_dt == "float16":
        compute = "float32"
    if training:
        used = [name for name in ctx.node.output[1:3] if name and name in ctx.used_names]
        if used:
            raise ctx.error(f"training_mode=1 with the running statistics used ({', '.join(map(repr, used))}) is "
                            "not supported: TVM's import computes them with the momentum reversed")
    operands = []
    for i, dt in enumerate(dtypes):
        v = ctx.tensor_operand(i)
        operands.append(v if dt == compute else ctx.emit(ctx.call("astype", v, dtype=compute)))
    out = ctx.emit(ctx.call("nn.batch_norm", *operands, axis=1, epsilon=ctx.attr("epsilon", 1e-5),
                            momentum=ctx.attr("momentum", 0.9), training=training))
    results = []
    for i, dt in enumerate((data_dt, mean_dt, var_dt)):
        item = ctx.emit(ctx.item(out, i))
        results.append(item if dt == compute else ctx.emit(ctx.call("astype", item, dtype=dt)))
    return results


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
    # bound here, used or not: TVM returns a tuple with two placeholder constants, and its
    # normalizer binds the call (a graph output ``y`` is then ``gv = lv``)
    out = ctx.emit(ctx.call("nn.layer_norm", x, scale, bias, axes=axes, epsilon=ctx.attr("epsilon", 1e-5)))
    return [out]


@_register("InstanceNormalization")
def _instance_norm(ctx):
    """TVM's decomposition: ``(x - mean) / sqrt(variance + eps)`` over the spatial axes, then
    the scale and bias reshaped to ``[-1, 1, ...]``."""
    x, scale, bias = ctx.tensor_operand(0), ctx.operand(1), ctx.operand(2)
    rank = ctx.rank(x)
    axes = list(range(2, rank))
    eps = ctx.const(float(ctx.attr("epsilon", 1e-5)), ctx.dtype_of(x))
    mean = ctx.call("mean", x, axis=axes, keepdims=True)
    var = ctx.call("variance", x, axis=axes, keepdims=True)
    out = ctx.call("divide", ctx.call("subtract", x, mean), ctx.call("sqrt", ctx.call("add", var, eps)))
    target = [-1] + [1] * (rank - 2)
    if scale is not None:
        out = ctx.call("multiply", out, ctx.call("reshape", scale, target))
    if bias is not None:
        out = ctx.call("add", out, ctx.call("reshape", bias, target))
    return out


@_register("GroupNormalization")
def _group_norm(ctx):
    """TVM's opset-18 conversion: per-group scale and bias repeated per channel, then
    ``R.nn.group_norm`` (float32, a static channel count divisible by ``num_groups``)."""
    x, scale, bias = ctx.tensor_operand(0), ctx.tensor_operand(1), ctx.tensor_operand(2)
    rank = ctx.rank(x)
    groups = int(ctx.attr("num_groups"))
    if rank < 2 or ctx.dtype_of(x) != "float32":
        raise ctx.error("GroupNormalization needs a float32 input of rank >= 2")
    channels = static_dim(ctx.shape_of(x)[1])
    if channels is None or groups <= 0 or channels % groups:
        raise ctx.error(f"GroupNormalization needs a static channel count divisible by num_groups={groups}; "
                        f"got {ctx.shape_of(x)[1]}")
    per_group = channels // groups

    def per_channel(v):
        v = ctx.call("broadcast_to", ctx.call("reshape", v, [groups, 1]), [groups, per_group])
        return ctx.call("reshape", v, [channels])

    return ctx.call("nn.group_norm", x, per_channel(scale), per_channel(bias), num_groups=groups, channel_axis=1,
                    axes=list(range(2, rank)), epsilon=float(ctx.attr("epsilon", 1e-5)))


@_register("LRN")
def _lrn(ctx):
    """TVM's ``x / (bias + alpha * avg_pool(x ** 2 over channels)) ** beta`` (the pool on an
    added unit axis, 3-D and 4-D inputs; the constants float32)."""
    x = ctx.tensor_operand(0)
    rank = ctx.rank(x)
    if rank not in (3, 4):
        raise ctx.error(f"LRN of a rank-{rank} input is not supported (3-D and 4-D are)")
    size = int(ctx.attr("size"))
    if size % 2 == 0:
        raise ctx.error(f"an even size ({size}) is not supported (TVM's symmetric padding needs an odd size)")
    half = size // 2
    expanded = ctx.call("expand_dims", ctx.call("multiply", x, x), axis=1)
    if rank == 3:
        pooled = ctx.call("nn.avg_pool2d", expanded, pool_size=[size, 1], strides=[1, 1], padding=[half, 0, half, 0],
                          layout="NCHW", ceil_mode=False, count_include_pad=True)
    else:
        pooled = ctx.call("nn.avg_pool3d", expanded, pool_size=[size, 1, 1], strides=[1, 1, 1],
                          padding=[half, 0, 0, half, 0, 0], layout="NCDHW", ceil_mode=False, count_include_pad=True)
    scale = ctx.call("add", ctx.call("multiply", ctx.call("squeeze", pooled, axis=[1]),
                                     ctx.const(float(ctx.attr("alpha", 0.0001)), "float32")),
                     ctx.const(float(ctx.attr("bias", 1.0)), "float32"))
    return ctx.call("divide", x, ctx.call("power", scale, ctx.const(float(ctx.attr("beta", 0.75)), "float32")))


@_register("MeanVarianceNormalization")
def _mean_variance_norm(ctx):
    """TVM's ``(x - mean) / sqrt(mean(x ** 2) - mean ** 2)`` (the exponents float32)."""
    x = ctx.tensor_operand(0)
    axes = list(ctx.attr("axes", [0, 2, 3]))
    mean = ctx.emit(ctx.call("mean", x, axis=axes, keepdims=True))  # used twice: TVM binds it once, first
    mean_squared = ctx.call("power", mean, ctx.const(2, "float32"))
    squared_mean = ctx.call("mean", ctx.call("power", x, ctx.const(2, "float32")), axis=axes, keepdims=True)
    return ctx.call("divide", ctx.call("subtract", x, mean),
                    ctx.call("sqrt", ctx.call("subtract", squared_mean, mean_squared)))


@_register("RMSNormalization")
def _rms_norm(ctx):
    """``R.nn.rms_norm`` over the axes from ``axis`` on, in float32 when ``stash_type=1``."""
    x, scale = ctx.tensor_operand(0), ctx.tensor_operand(1)
    rank = ctx.rank(x)
    axis = ctx.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ctx.error(f"axis {ctx.attr('axis')} is out of range for rank {rank}")
    dtype = ctx.dtype_of(x)
    cast = ctx.attr("stash_type", 1) == 1 and dtype != "float32"
    if cast:
        x, scale = ctx.call("astype", x, dtype="float32"), ctx.call("astype", scale, dtype="float32")
    out = ctx.call("nn.rms_norm", x, scale, axes=list(range(axis, rank)), epsilon=float(ctx.attr("epsilon", 1e-5)))
    return ctx.call("astype", out, dtype=dtype) if cast else out


@_register("Softmax", "LogSoftmax")
def _softmax(ctx):
    if ctx.opset < 13:
        raise ctx.error(f"{ctx.node.op_type} of opset {ctx.opset} (flattening semantics) is not supported; "
                        "opset >= 13 is")
    name = "nn.softmax" if ctx.node.op_type == "Softmax" else "nn.log_softmax"
    return ctx.call(name, ctx.tensor_operand(0), axis=ctx.attr("axis", -1))


@_register("Hardmax")
def _hardmax(ctx):
    """Opset >= 13: ``R.one_hot(R.argmax(x, axis), 1, 0, extent, axis)`` (the on/off values
    scalars of the input's dtype, the axis extent static)."""
    if ctx.opset < 13:
        raise ctx.error(f"Hardmax of opset {ctx.opset} (flattening semantics) is not supported; opset >= 13 is")
    x = ctx.tensor_operand(0)
    rank = ctx.rank(x)
    axis = ctx.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ctx.error(f"axis {ctx.attr('axis')} is out of range for rank {rank}")
    extent = static_dim(ctx.shape_of(x)[axis])
    if extent is None:
        raise ctx.error("the extent of the axis must be static")
    dtype = ctx.dtype_of(x)
    return ctx.call("one_hot", ctx.call("argmax", x, axis=axis), FloatImm(1.0, dtype), FloatImm(0.0, dtype),
                    depth=extent, axis=axis)


@_register("Gelu")
def _gelu(ctx):
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.error(f"approximate={approximate!r} is not supported ('none' and 'tanh' are)")
    return ctx.call("nn.gelu_tanh" if approximate == "tanh" else "nn.gelu", ctx.tensor_operand(0))


def _reduce(op_name, build=None):
    """A reduction over the ``axes`` attribute or (opset >= 18) constant input: ``R.<op_name>``,
    or ``build(ctx, x, axes, keepdims)`` for TVM's composite reductions (``axes`` None: all)."""
    def convert(ctx):
        x = ctx.tensor_operand(0)
        keepdims = bool(ctx.attr("keepdims", 1))
        axes = ctx.attr("axes")
        if axes is None and ctx.has_input(1):
            axes = ctx.constant_ints(1, "the axes")
        if not axes and ctx.attr("noop_with_empty_axes", 0):
            return x
        axes = list(axes) if axes else None
        if build is not None:
            return build(ctx, x, axes, keepdims)
        return ctx.call(op_name, x, axis=axes, keepdims=keepdims)
    return convert


for _onnx_name, _relax_name in (("ReduceMean", "mean"), ("ReduceSum", "sum"), ("ReduceMax", "max"),
                                ("ReduceMin", "min"), ("ReduceProd", "prod")):
    CONVERTERS[_onnx_name] = _reduce(_relax_name)


def _log_sum_exp(ctx, x, axes, keepdims):
    """TVM's ``log(sum(exp(x - max))) + max`` (the max kept, ``squeeze`` when not keepdims)."""
    peak = ctx.emit(ctx.call("max", x, axis=axes, keepdims=True))  # used twice: TVM binds it once, first
    total = ctx.call("sum", ctx.call("exp", ctx.call("subtract", x, peak)), axis=axes, keepdims=True)
    out = ctx.call("add", ctx.call("log", total), peak)
    return out if keepdims else ctx.call("squeeze", out, axis=axes)


CONVERTERS["ReduceL1"] = _reduce("sum", lambda ctx, x, axes, keep: ctx.call(
    "sum", ctx.call("abs", x), axis=axes, keepdims=keep))
CONVERTERS["ReduceL2"] = _reduce("sum", lambda ctx, x, axes, keep: ctx.call(
    "sqrt", ctx.call("sum", ctx.call("multiply", x, x), axis=axes, keepdims=keep)))
CONVERTERS["ReduceSumSquare"] = _reduce("sum", lambda ctx, x, axes, keep: ctx.call(
    "sum", ctx.call("multiply", x, x), axis=axes, keepdims=keep))
CONVERTERS["ReduceLogSum"] = _reduce("sum", lambda ctx, x, axes, keep: ctx.call(
    "log", ctx.call("sum", x, axis=axes, keepdims=keep)))
CONVERTERS["ReduceLogSumExp"] = _reduce("max", _log_sum_exp)


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


# ------------------------------------------------------------------------------------ contrib (com.microsoft)
@_register("BiasGelu")
def _bias_gelu(ctx):
    return ctx.call("nn.gelu", ctx.call("add", ctx.tensor_operand(0), ctx.tensor_operand(1)))


@_register("FastGelu")
def _fast_gelu(ctx):
    """TVM's ``0.5 x (1 + tanh(c1 x + c2 x^3))`` (``x`` plus the optional 1-D bias), each step
    bound as TVM binds it."""
    x = ctx.tensor_operand(0)
    if ctx.has_input(1):
        bias = ctx.tensor_operand(1)
        if ctx.rank(bias) != 1:
            raise ctx.error(f"the bias must be 1-D; got rank {ctx.rank(bias)}")
        x = ctx.emit(ctx.call("add", x, bias))
    dtype = ctx.dtype_of(x)
    c1 = math.sqrt(2 / math.pi)
    half = ctx.emit(ctx.call("multiply", ctx.const(0.5, dtype), x))
    linear = ctx.emit(ctx.call("multiply", ctx.const(c1, dtype), x))
    cubed = ctx.emit(ctx.call("multiply", ctx.call("multiply", x, x), x))
    cubic = ctx.emit(ctx.call("multiply", ctx.const(0.044715 * c1, dtype), cubed))
    tanh = ctx.emit(ctx.call("tanh", ctx.call("add", linear, cubic)))
    return ctx.emit(ctx.call("multiply", half, ctx.call("add", ctx.const(1.0, dtype), tanh)))


@_register("MatMulInteger16")
def _matmul_integer16(ctx):
    """``matmul`` of the (u)int16 operands cast to ``uint32`` (both unsigned) or ``int32``."""
    if len(ctx.node.input) != 2:
        raise ctx.error(f"MatMulInteger16 takes 2 inputs; got {len(ctx.node.input)}")
    a, b = ctx.tensor_operand(0), ctx.tensor_operand(1)
    dtypes = (ctx.dtype_of(a), ctx.dtype_of(b))
    if any(d not in ("int16", "uint16") for d in dtypes):
        raise ctx.error(f"the operands must be int16 or uint16; got {dtypes[0]} and {dtypes[1]}")
    out = "uint32" if dtypes == ("uint16", "uint16") else "int32"
    return ctx.call("matmul", ctx.call("astype", a, dtype=out), ctx.call("astype", b, dtype=out))


_PLACEHOLDER = 0  # TVM's float32 zero standing for the optional outputs it does not compute


@_register("SkipLayerNormalization")
def _skip_layer_norm(ctx):
    """``layer_norm(data + skip + bias)`` over the last axis (beta and bias required, as in
    TVM); the mean and inverse-variance outputs are float32 zero placeholders."""
    if not (ctx.has_input(3) and ctx.has_input(4)):
        raise ctx.error("SkipLayerNormalization without beta or bias is not supported (TVM 0.27 requires both)")
    data = ctx.call("add", ctx.call("add", ctx.tensor_operand(0), ctx.tensor_operand(1)), ctx.tensor_operand(4))
    out = ctx.emit(ctx.call("nn.layer_norm", data, ctx.tensor_operand(2), ctx.tensor_operand(3), axes=[-1],
                            epsilon=float(ctx.attr("epsilon", 1e-12))))
    return [out, ctx.const(_PLACEHOLDER, "float32"), ctx.const(_PLACEHOLDER, "float32")]


@_register("EmbedLayerNormalization")
def _embed_layer_norm(ctx):
    """``layer_norm`` of the word, position (default ``0..seq-1``) and optional segment
    embeddings over the last axis, and the mask's per-row sum (int32 zeros without a mask,
    as TVM's ``relax.const`` makes them); a static ``[batch, seq]`` ``input_ids``."""
    ids = ctx.tensor_operand(0)
    shape = [static_dim(d) for d in ctx.shape_of(ids)]
    if len(shape) != 2 or None in shape:
        raise ctx.error(f"input_ids must have a static [batch, seq] shape; got {list(ctx.shape_of(ids))}")
    batch, seq = shape
    if ctx.has_input(1) and not ctx.has_input(4):
        raise ctx.error("segment_ids need segment_embedding (input 4)")
    positions = ctx.tensor_operand(8) if ctx.has_input(8) else \
        ctx.const(np.tile(np.arange(seq, dtype="int64"), (batch, 1)), "int64")
    total = ctx.call("add", ctx.call("take", ctx.tensor_operand(2), ids, axis=0),
                     ctx.call("take", ctx.tensor_operand(3), positions, axis=0))
    if ctx.has_input(1):
        total = ctx.call("add", total, ctx.call("take", ctx.tensor_operand(4), ctx.tensor_operand(1), axis=0))
    out = ctx.emit(ctx.call("nn.layer_norm", total, ctx.tensor_operand(5), ctx.tensor_operand(6), axes=[-1],
                            epsilon=float(ctx.attr("epsilon", 1e-12))))
    if ctx.has_input(7):
        return [out, ctx.emit(ctx.call("sum", ctx.tensor_operand(7), axis=[1]))]
    return [out, ctx.const(np.zeros(batch, dtype="int32"), "int32")]  # TVM's relax.const of int64 zeros: int32


_ATTENTION_UNSUPPORTED = ("do_rotary", "past_present_share_buffer", "scale", "unidirectional")


@_register("Attention")
def _attention(ctx):
    """TVM's contrib ``Attention``: ``x @ W (+ bias)`` split into Q, K, V, each reshaped to
    ``[batch, seq, heads, head_size]``, ``R.nn.attention`` with the additive bias (input 5)
    plus the mask's (``(1 - mask) * mask_filter_value``, a ``[batch, seq]`` or
    ``[batch, seq, seq]`` mask; a mask needs the bias input, as TVM 0.27 fails without it),
    reshaped back; the ``present`` output is a float32 zero
    placeholder. Static shapes; no past state, rotary embedding, custom scale or
    unidirectional attribute (TVM 0.27 refuses them)."""
    given = [a for a in _ATTENTION_UNSUPPORTED if ctx.attr(a) is not None]
    if given or ctx.has_input(4) or ctx.has_input(6):
        what = ", ".join(given + (["past"] if ctx.has_input(4) else []) +
                         (["past_sequence_length"] if ctx.has_input(6) else []))
        raise ctx.error(f"{what} is not supported (TVM 0.27 refuses it)")
    heads = int(ctx.attr("num_heads"))
    x, weight = ctx.tensor_operand(0), ctx.tensor_operand(1)
    dims = [static_dim(d) for d in ctx.shape_of(x)]
    w_dims = [static_dim(d) for d in ctx.shape_of(weight)]
    if len(dims) != 3 or None in dims or len(w_dims) != 2 or None in w_dims or w_dims[0] != dims[2]:
        raise ctx.error(f"the input must be a static [batch, seq, hidden] tensor and the weight [hidden, n]; got "
                        f"{list(ctx.shape_of(x))} and {list(ctx.shape_of(weight))}")
    batch, seq, _ = dims
    sizes = ctx.attr("qkv_hidden_sizes")
    if sizes is not None and sizes[0] != sizes[1]:
        raise ctx.error(f"qkv_hidden_sizes {sizes}: Q and K must have the same size")
    hidden, hidden_v = (sizes[0], sizes[2]) if sizes is not None else (w_dims[1] // 3, w_dims[1] // 3)
    if hidden % heads:
        raise ctx.error(f"the hidden size {hidden} is not divisible by num_heads={heads}")
    dtype = ctx.dtype_of(x)
    bias = ctx.operand(5)
    if ctx.has_input(3):
        mask = ctx.tensor_operand(3)
        mask_dims = [static_dim(d) for d in ctx.shape_of(mask)]
        if mask_dims not in ([batch, seq], [batch, seq, seq]):
            raise ctx.error(f"the mask must have shape [batch, seq] or [batch, seq, seq]; got {mask_dims}")
        masked = ctx.emit(ctx.call("astype", ctx.call("subtract", ctx.const(1, ctx.dtype_of(mask)), mask), dtype=dtype))
        mask_bias = ctx.call("multiply", masked, ctx.const(float(ctx.attr("mask_filter_value", -10000.0)), dtype))
        if bias is None:  # TVM passes the 2-D/3-D mask bias as the attention bias, which must be 4-D
            raise ctx.error("a mask without the attention bias (input 5) is not supported (TVM 0.27 fails on it)")
        target = [batch, 1, 1, seq] if len(mask_dims) == 2 else [batch, 1, seq, seq]
        bias = ctx.call("add", bias, ctx.emit(ctx.call("reshape", ctx.emit(mask_bias), target)))
    qkv = ctx.call("matmul", x, weight)
    if ctx.has_input(2):
        qkv = ctx.call("add", qkv, ctx.tensor_operand(2))
    qkv = ctx.emit(ctx.call("split", qkv, indices_or_sections=[hidden, 2 * hidden], axis=2))
    q, k, v = (ctx.call("reshape", ctx.emit(ctx.item(qkv, i)), [batch, seq, heads, size // heads])
               for i, size in enumerate((hidden, hidden, hidden_v)))
    out = ctx.call("nn.attention_bias", q, k, v, bias) if bias is not None else ctx.call("nn.attention", q, k, v)
    out = ctx.emit(ctx.call("reshape", out, [batch, seq, hidden_v]))
    return [out, ctx.const(_PLACEHOLDER, "float32")]
