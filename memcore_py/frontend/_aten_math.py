"""ATen converters for element-wise math and neural-network layers (TVM 0.27's mapping).

Design
------
Unary and binary element-wise ops (with TVM's dtype promotion of two tensor operands and
scalar operands as constants of the tensor's dtype; on two symbolic sizes, ``tirx``
arithmetic), activations, convolutions, batch and layer norm, linear/addmm/matmul, pooling,
embedding, the mean/sum reductions, vector norms, ``softsign`` and ``cross_entropy_loss``
(``nll_loss`` of ``log_softmax``). Each converter emits what TVM's converter of the same
target emits, in the same order (see :mod:`._aten_ops` for the conventions).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..ir.expr import Var
from ._aten_common import add_folded, arg, mul_folded, registrar, relax_dtype, static_dim
from ._aten_nn import conv_transpose

__all__ = ["CONVERTERS"]

CONVERTERS: dict = {}
_register = registrar(CONVERTERS)


# ------------------------------------------------------------------------------------ unary
_UNARY = {
    "abs": "abs", "acos": "acos", "acosh": "acosh", "asin": "asin", "asinh": "asinh",
    "atan": "atan", "atanh": "atanh", "bitwise_not": "bitwise_not", "ceil": "ceil", "cos": "cos",
    "cosh": "cosh", "erf": "erf", "exp": "exp", "floor": "floor", "isfinite": "isfinite",
    "isinf": "isinf", "isnan": "isnan", "log": "log", "neg": "negative", "relu": "nn.relu",
    "relu_": "nn.relu", "selu": "nn.selu", "sigmoid": "sigmoid", "sign": "sign",
    "silu": "nn.silu", "silu_": "nn.silu", "sin": "sin", "sinh": "sinh", "square": "square",
    "tan": "tan", "tanh": "tanh", "trunc": "trunc", "max": "max", "min": "min",
}


def _unary(op_name):
    def convert(ctx, node):
        return ctx.op(op_name, ctx.env[node.args[0]])
    return convert


for _torch_name, _relax_name in _UNARY.items():
    CONVERTERS[_torch_name + ".default"] = _unary(_relax_name)


@_register("sqrt.default", "rsqrt.default")
def _sqrt_like(ctx, node):
    x = ctx.env[node.args[0]]
    if ctx.dtype_of(x) in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        x = ctx.op("astype", x, dtype="float32")
    return ctx.op(node.target.__name__.split(".")[0], x)


@_register("dropout.default", "dropout_.default", "native_dropout.default", "clone.default",
           "contiguous.default", "alias.default", "detach.default", "detach_.default",
           "_assert_tensor_metadata.default", "bernoulli.p", "sym_constrain_range_for_size.default",
           "_assert_scalar.default")
def _identity(ctx, node):
    return ctx.env.get(node.args[0], node.args[0]) if node.args else None


@_register("exponential.default")
def _exponential(ctx, node):
    """TVM's ``_exponential``: ``zeros_like(x)``. Like ``bernoulli.p`` (the input) and
    ``dropout``, TVM keeps a random op's shape and dtype, not its values."""
    return ctx.op("zeros_like", ctx.env[node.args[0]])


@_register("reciprocal.default")
def _reciprocal(ctx, node):
    x = ctx.env[node.args[0]]
    return ctx.op("divide", ctx.const(1.0, ctx.dtype_of(x)), x)


@_register("elu.default")
def _elu(ctx, node):
    x = ctx.env[node.args[0]]
    alpha = arg(node, 1, "alpha", 1.0)
    dtype = ctx.dtype_of(x)
    if not isinstance(alpha, (int, float)):
        raise ctx.error(f"elu's alpha must be a number; got {alpha!r}")
    # TVM: -alpha * relu(1 - exp(x)) + relu(x), one nested expression
    neg = ctx.call("multiply", ctx.const(-alpha, dtype),
                   ctx.call("nn.relu", ctx.call("subtract", ctx.const(1, dtype), ctx.call("exp", x))))
    return ctx.emit(ctx.call("add", neg, ctx.call("nn.relu", x)))


@_register("gelu.default")
def _gelu(ctx, node):
    approximate = node.kwargs.get("approximate", "none")
    x = ctx.env[node.args[0]]
    if approximate == "none":
        return ctx.op("nn.gelu", x)
    if approximate == "tanh":
        return ctx.op("nn.gelu_tanh", x)
    raise ctx.error(f"unknown gelu approximation {approximate!r} (expected 'none' or 'tanh')")


@_register("softmax.int", "_softmax.default")
def _softmax(ctx, node):
    return ctx.op("nn.softmax", ctx.env[node.args[0]], axis=arg(node, 1, "dim", -1))


@_register("log_softmax.int", "_log_softmax.default")
def _log_softmax(ctx, node):
    return ctx.op("nn.log_softmax", ctx.env[node.args[0]], axis=arg(node, 1, "dim", -1))


def _tri(op_name):
    def convert(ctx, node):
        k = arg(node, 1, "diagonal", 0)
        if not isinstance(k, int):
            raise ctx.error(f"the diagonal must be an int; got {k!r}")
        return ctx.op(op_name, ctx.env[node.args[0]], k)
    return convert


CONVERTERS["tril.default"] = _tri("tril")
CONVERTERS["triu.default"] = _tri("triu")


@_register("leaky_relu.default", "leaky_relu_.default")
def _leaky_relu(ctx, node):
    return ctx.op("nn.leakyrelu", ctx.env[node.args[0]], alpha=arg(node, 1, "negative_slope", 0.01))


@_register("hardtanh.default", "hardtanh_.default")
def _hardtanh(ctx, node):
    args = ctx.args(node)
    lo = node.args[1] if len(args) > 1 else node.kwargs.get("min_val", -1.0)
    hi = node.args[2] if len(args) > 2 else node.kwargs.get("max_val", 1.0)
    return ctx.op("clip", args[0], lo, hi)


@_register("relu6.default", "relu6_.default")
def _relu6(ctx, node):
    # TVM 0.27 has no relax.nn.relu6 op; its importer writes R.clip(x, 0, 6) (int bounds)
    return ctx.op("clip", ctx.env[node.args[0]], 0, 6)


def _clamp_bound(ctx, x, bound, combine):
    """A tensor bound of clamp: broadcast and combined with ``x`` (TVM's tensor path)."""
    b = ctx.op("broadcast_to", bound, ctx.shape_of(x))
    return ctx.op(combine, x, b)


@_register("clamp.default", "clamp.Tensor", "clamp_min.default", "clamp_max.default")
def _clamp(ctx, node):
    args = ctx.args(node)
    x = args[0]
    name = node.target.__name__
    lo = -math.inf if name == "clamp_max.default" else (args[1] if len(args) > 1 else node.kwargs.get("min", -math.inf))
    if name == "clamp_min.default":
        hi = math.inf
    else:
        hi = args[2] if len(args) > 2 else node.kwargs.get("max", math.inf)
    lo = -math.inf if lo is None else lo
    hi = math.inf if hi is None else hi
    if not isinstance(lo, (int, float)):
        x, lo = _clamp_bound(ctx, x, lo, "maximum"), -math.inf
    if not isinstance(hi, (int, float)):
        x, hi = _clamp_bound(ctx, x, hi, "minimum"), math.inf
    return ctx.op("clip", x, lo, hi)


# ------------------------------------------------------------------------------------ binary
_TORCH_PROMOTION = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")


def _promote(ctx, a: str, b: str):
    """torch.promote_types over the dtypes TVM's importer maps, else None (as TVM)."""
    if a == b or a not in _TORCH_PROMOTION or b not in _TORCH_PROMOTION:
        return None
    torch = ctx.torch
    ta, tb = getattr(torch, a), getattr(torch, b)
    out = str(torch.promote_types(ta, tb))[len("torch."):]
    return out if out in _TORCH_PROMOTION else None


def _binary_emit(ctx, op_name, lhs, rhs):
    if ctx.is_tensor(lhs) and ctx.is_tensor(rhs):
        target = _promote(ctx, lhs.ty.dtype, rhs.ty.dtype)
        if target is not None:
            if lhs.ty.dtype != target:
                lhs = ctx.op("astype", lhs, dtype=target)
            if rhs.ty.dtype != target:
                rhs = ctx.op("astype", rhs, dtype=target)
    elif ctx.is_tensor(lhs):
        rhs = ctx.const(rhs, lhs.ty.dtype)
    elif ctx.is_tensor(rhs):
        lhs = ctx.const(lhs, rhs.ty.dtype)
    else:
        raise ctx.error(f"{op_name} needs a tensor operand; got {lhs!r} and {rhs!r}")
    return ctx.op(op_name, lhs, rhs)


def _binary(op_name, scalar_op):
    def convert(ctx, node):
        lhs, rhs = ctx.args(node)[:2]
        if ctx.is_tensor(lhs) or ctx.is_tensor(rhs):
            return _binary_emit(ctx, op_name, lhs, rhs)
        return scalar_op(lhs, rhs)
    return convert


def _matmul_op(ctx, node):
    lhs, rhs = ctx.args(node)[:2]
    return ctx.op("matmul", lhs, rhs, out_dtype="float32")


_BINARY = {
    ("add", "add.Tensor", "add.Scalar", "add_.Tensor"): ("add", add_folded),
    ("sub", "sub.Tensor", "sub.Scalar"): ("subtract", operator.sub),
    ("mul", "mul.Tensor", "mul.Scalar", "mul_.Tensor"): ("multiply", mul_folded),
    ("div.Tensor", "div.Scalar"): ("divide", operator.truediv),
    ("floordiv", "floor_divide.default"): ("floor_divide", operator.floordiv),
    ("mod", "remainder.Tensor", "remainder.Scalar"): ("floor_mod", operator.mod),
    ("eq.Tensor", "eq.Scalar"): ("equal", operator.eq),
    ("ne.Tensor", "ne.Scalar"): ("not_equal", operator.ne),
    ("ge.Tensor", "ge.Scalar"): ("greater_equal", operator.ge),
    ("gt.Tensor", "gt.Scalar"): ("greater", operator.gt),
    ("le.Tensor", "le.Scalar"): ("less_equal", operator.le),
    ("lt.Tensor", "lt.Scalar"): ("less", operator.lt),
    ("maximum.default", "max.other"): ("maximum", max),
    ("minimum.default", "min.other"): ("minimum", min),
    ("pow.Scalar", "pow.Tensor_Tensor"): ("power", operator.pow),
    ("bitwise_and.Tensor", "bitwise_and.Scalar", "__and__.Tensor", "__and__.Scalar"): ("bitwise_and", operator.and_),
    ("bitwise_or.Tensor", "bitwise_or.Scalar", "bitwise_or_.Tensor", "bitwise_or_.Scalar",
     "__or__.Tensor", "__or__.Scalar"): ("bitwise_or", operator.or_),
    ("bitwise_xor.Tensor", "bitwise_xor.Scalar", "__xor__.Tensor", "__xor__.Scalar"): ("bitwise_xor", operator.xor),
}
for _names, (_relax_name, _scalar) in _BINARY.items():
    for _n in _names:
        CONVERTERS[_n] = _binary(_relax_name, _scalar)
for _n in ("matmul.default", "mm.default", "bmm.default"):
    CONVERTERS[_n] = _matmul_op


@_register("pow.Tensor_Scalar")
def _pow(ctx, node):
    lhs, rhs = ctx.args(node)[:2]
    if (ctx.is_tensor(lhs) and lhs.ty.dtype.startswith(("int", "uint")) and isinstance(rhs, int)
            and not isinstance(rhs, bool) and rhs >= 0):
        if rhs == 0:
            return ctx.op("ones_like", lhs)
        out = lhs
        for _ in range(rhs - 1):
            out = ctx.op("multiply", out, lhs)
        return out
    return _binary("power", operator.pow)(ctx, node)


@_register("div.Tensor_mode")
def _div_mode(ctx, node):
    args = ctx.args(node)
    a, b = args[0], args[1]
    if isinstance(b, (int, float)):
        b = ctx.const(b)
    mode = args[2] if len(node.args) > 2 else node.kwargs.get("rounding_mode")
    if mode is None:
        return ctx.op("divide", a, b)
    if mode == "floor":
        return ctx.op("floor_divide", a, b)
    if mode == "trunc":
        return ctx.op("trunc", ctx.op("divide", a, b))
    raise ctx.error(f"unknown rounding_mode {mode!r}")


@_register("rsub.Tensor", "rsub.Scalar")
def _rsub(ctx, node):
    args = ctx.args(node)
    lhs, rhs = args[0], args[1]
    if isinstance(rhs, (int, float)):
        rhs = ctx.const(rhs)
    return ctx.op("subtract", rhs, lhs)


@_register("where.self")
def _where(ctx, node):
    return ctx.op("where", ctx.env[node.args[0]], ctx.env[node.args[1]], ctx.env[node.args[2]])


# ------------------------------------------------------------------------------------ nn
def _conv(ctx, x, weight, bias, stride, padding, dilation, groups):
    nd = len(ctx.shape_of(x)) - 2
    layouts = {1: ("NCW", "OIW"), 2: ("NCHW", "OIHW"), 3: ("NCDHW", "OIDHW")}.get(nd)
    if layouts is None:
        raise ctx.error(f"convolution of a rank-{nd + 2} input is not supported (1-D, 2-D and 3-D are)")
    out = ctx.op(f"nn.conv{nd}d", x, weight, strides=stride, padding=padding, dilation=dilation, groups=groups,
                 data_layout=layouts[0], kernel_layout=layouts[1], out_dtype="float32")
    if bias is None:
        return out
    if len(ctx.shape_of(bias)) != 1:
        raise ctx.error("the convolution bias must be 1-D")
    return ctx.op("add", out, ctx.call("reshape", bias, (1, -1) + (1,) * nd))


@_register("convolution.default")
def _convolution(ctx, node):
    args = ctx.args(node)
    get = lambda i, d: args[i] if len(args) > i else d  # noqa: E731
    if get(6, False):  # TVM's _convolution: transposed -> conv{1,2}d_transpose
        return conv_transpose(ctx, args[0], args[1], get(2, None), get(3, 1), get(4, 0), get(5, 1), get(8, 1),
                              get(7, 0))
    return _conv(ctx, args[0], args[1], get(2, None), get(3, 1), get(4, 0), get(5, 1), get(8, 1))


@_register("conv1d.default", "conv2d.default", "conv3d.default")
def _conv_nd(ctx, node):
    args = ctx.args(node)
    get = lambda i, d: args[i] if len(args) > i else d  # noqa: E731
    return _conv(ctx, args[0], args[1], get(2, None), get(3, 1), get(4, 0), get(5, 1), get(6, 1))


@_register("_native_batch_norm_legit_no_training.default", "batch_norm.default")
def _batch_norm(ctx, node):
    x = ctx.env[node.args[0]]
    channel = static_dim(ctx.shape_of(x)[1])
    dtype = ctx.dtype_of(x)

    def param(i, fill):
        a = node.args[i] if len(node.args) > i else None
        if a is not None:
            return ctx.env[a]
        if channel is None:
            raise ctx.error("batch_norm without affine parameters needs a static channel count")
        return ctx.const([fill] * channel, dtype)

    weight, bias, mean, var = param(1, 1.0), param(2, 0.0), param(3, 0.0), param(4, 1.0)
    if node.target.__name__ == "batch_norm.default":
        # aten.batch_norm(x, w, b, mean, var, training, momentum, eps, cudnn_enabled). TVM reads
        # it as the decomposed op's (.., momentum, eps): momentum = the training flag, epsilon =
        # the momentum, training=True. memcore reads the schema (a documented difference; the
        # op only appears without decomposition).
        training = bool(arg(node, 5, "training", False))
        momentum = arg(node, 6, "momentum", 0.1)
        eps = arg(node, 7, "eps", 1e-05)
    else:  # _native_batch_norm_legit_no_training(x, w, b, mean, var, momentum, eps)
        training = False
        momentum = arg(node, 5, "momentum", 0.1)
        eps = arg(node, 6, "eps", 1e-05)
    bn = ctx.op("nn.batch_norm", x, weight, bias, mean, var, axis=1, epsilon=eps,
                scale=len(node.args) > 1 and node.args[1] is not None,
                center=len(node.args) > 2 and node.args[2] is not None, momentum=momentum, training=training)
    return ctx.emit(ctx.item(bn, 0))


@_register("_native_batch_norm_legit_functional.default")
def _batch_norm_functional(ctx, node):
    """``_native_batch_norm_legit_functional(x, w, b, mean, var, training, momentum, eps)``
    (a BatchNorm exported in training mode, decomposed): TVM's ``nn.batch_norm`` with
    ``training=True``, then the tuple (out, new mean, zeros, zeros, zeros) its getitems read
    (the zeros one ``zeros((C,))`` binding)."""
    x = ctx.env[node.args[0]]
    channel = static_dim(ctx.shape_of(x)[1])
    dtype = ctx.dtype_of(x)
    if channel is None:
        raise ctx.error("batch_norm in training mode needs a static channel count (as TVM)")

    def param(i, fill):
        a = node.args[i] if len(node.args) > i else None
        return ctx.env[a] if a is not None else ctx.const([fill] * channel, dtype)

    bn = ctx.op("nn.batch_norm", x, param(1, 1.0), param(2, 0.0), param(3, 0.0), param(4, 1.0), axis=1,
                epsilon=arg(node, 7, "eps", 1e-05), scale=node.args[1] is not None,
                center=node.args[2] is not None, momentum=arg(node, 6, "momentum", 0.1), training=True)
    out = ctx.emit(ctx.item(bn, 0))
    mean = ctx.emit(ctx.item(bn, 1))
    reserve = ctx.op("zeros", [channel], dtype=dtype)
    return ctx.emit(ctx.tuple([out, mean, reserve, reserve, reserve]))


@_register("native_layer_norm.default", "layer_norm.default")
def _layer_norm(ctx, node):
    x = ctx.env[node.args[0]]
    normalized = tuple(node.args[1])
    gamma = ctx.env[node.args[2]] if len(node.args) > 2 and node.args[2] is not None else None
    beta = ctx.env[node.args[3]] if len(node.args) > 3 and node.args[3] is not None else None
    eps = node.args[4] if len(node.args) > 4 else 1e-05
    if gamma is None:
        gamma = ctx.const(np.ones([int(s) for s in normalized]), ctx.dtype_of(x))
    if beta is None:
        beta = ctx.const(np.zeros([int(s) for s in normalized]), ctx.dtype_of(x))
    return ctx.op("nn.layer_norm", x, gamma, beta, axes=list(range(-len(normalized), 0)), epsilon=eps)


@_register("linear.default")
def _linear(ctx, node):
    args = ctx.args(node)
    x, weight = args[0], args[1]
    bias = args[2] if len(args) > 2 else None
    out = ctx.call("matmul", x, ctx.call("permute_dims", weight), out_dtype="float32")
    return ctx.emit(out if bias is None else ctx.call("add", out, bias))


@_register("addmm.default")
def _addmm(ctx, node):
    x, y, z = (ctx.env[a] for a in node.args[:3])
    return _scaled_sum(ctx, node, x, lambda: ctx.op("matmul", y, z, out_dtype="float32"), bias_first=True)


def _scaled_sum(ctx, node, x, product, *, bias_first: bool):
    """``beta * x + alpha * product()`` as TVM's ``_addmm`` / ``_baddbmm`` build it: a term
    with a zero factor left out, a factor of one not multiplied, the product (emitted only
    when used) first; the sum ``add(x, product)`` when ``bias_first``, else
    ``add(product, x)``."""
    alpha = node.kwargs.get("alpha", 1)
    beta = node.kwargs.get("beta", 1)
    res = None
    if alpha != 0:
        res = product()
        if alpha != 1:
            res = ctx.op("multiply", res, ctx.const(alpha, ctx.dtype_of(res)))
    if beta != 0:
        bias = x if beta == 1 else ctx.op("multiply", x, ctx.const(beta, ctx.dtype_of(x)))
        res = bias if res is None else (ctx.op("add", bias, res) if bias_first else ctx.op("add", res, bias))
    return res


def _batched_pool(ctx, x, rank, emit_pool):
    """TVM's pooling wrapper: a missing batch dim is added before and removed after (the
    squeeze is returned unemitted, as TVM does)."""
    unbatched = x.ty.ndim == rank - 1
    if unbatched:
        x = ctx.call("expand_dims", x, axis=0)
    out = emit_pool(x)
    return ctx.call("squeeze", out, axis=[0]) if unbatched else out


@_register("max_pool2d.default", "max_pool2d_with_indices.default")
def _max_pool2d(ctx, node):
    args = ctx.args(node)
    get = lambda i, d: args[i] if len(args) > i else d  # noqa: E731
    kernel = args[1]
    stride = get(2, None)
    stride = kernel if stride is None or stride == [] else stride
    out = _batched_pool(ctx, args[0], 4, lambda x: ctx.op(
        "nn.max_pool2d", x, pool_size=kernel, strides=stride, padding=get(3, 0), dilation=get(4, 1),
        ceil_mode=get(5, False), layout="NCHW"))
    if node.target.__name__ == "max_pool2d.default":
        return out
    if not isinstance(out, Var):
        # TVM's normalizer binds the unemitted squeeze once for both tuple fields
        out = ctx.emit(out)
    return ctx.emit(ctx.tuple([out, ctx.call("zeros_like", out)]))


@_register("avg_pool2d.default")
def _avg_pool2d(ctx, node):
    args = ctx.args(node)
    get = lambda i, key, d: args[i] if len(args) > i else node.kwargs.get(key, d)  # noqa: E731
    kernel = get(1, "kernel_size", None)
    stride = get(2, "stride", None)
    stride = kernel if stride is None or stride == [] else stride
    return _batched_pool(ctx, args[0], 4, lambda x: ctx.op(
        "nn.avg_pool2d", x, pool_size=kernel, strides=stride, padding=get(3, "padding", 0),
        ceil_mode=get(4, "ceil_mode", False), count_include_pad=get(5, "count_include_pad", True), layout="NCHW"))


@_register("adaptive_avg_pool2d.default", "_adaptive_avg_pool2d.default")
def _adaptive_avg_pool2d(ctx, node):
    x = ctx.env[node.args[0]]
    size = node.args[1]
    return _batched_pool(ctx, x, 4, lambda x: ctx.op("nn.adaptive_avg_pool2d", x, output_size=size, layout="NCHW"))


@_register("embedding.default")
def _embedding(ctx, node):
    weight, ids = ctx.env[node.args[0]], ctx.env[node.args[1]]
    ids = ctx.op("astype", ids, dtype="int32")
    if ids.ty.ndim == 1:
        return ctx.op("take", weight, ids, axis=0)
    shape = ctx.shape_of(ids)
    flat = ctx.op("reshape", ids, [-1])
    taken = ctx.op("take", weight, flat, axis=0)
    return ctx.op("reshape", taken, [*shape, ctx.shape_of(weight)[-1]])


# ------------------------------------------------------------------------------------ reductions
def _reduce(op_name, widen_ints=False):
    def convert(ctx, node):
        args = ctx.args(node)
        x = args[0]
        dim = args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        if widen_ints and isinstance(dim, (list, tuple)) and len(dim) == 0:
            dim = None
        keepdim = args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        dtype = node.kwargs.get("dtype")
        if dtype is not None:
            x = ctx.op("astype", x, dtype=relax_dtype(ctx, dtype))
        elif widen_ints:
            d = ctx.dtype_of(x)
            if d == "bool" or (d.startswith(("int", "uint")) and d != "int64"):
                x = ctx.op("astype", x, dtype="int64")
        return ctx.op(op_name, x, axis=dim, keepdims=keepdim)
    return convert


CONVERTERS["mean.dim"] = CONVERTERS["mean.default"] = _reduce("mean")
CONVERTERS["sum.dim_IntList"] = CONVERTERS["sum.default"] = _reduce("sum", widen_ints=True)


# ------------------------------------------------------------------------------------ logical, scans
@_register("logical_not.default")
def _logical_not(ctx, node):
    """TVM casts a non-bool input to bool first (``relax.op.logical_not`` takes bool only)."""
    x = ctx.env[node.args[0]]
    if ctx.dtype_of(x) != "bool":
        x = ctx.op("astype", x, dtype="bool")
    return ctx.op("logical_not", x)


def _logical_binary(op_name):
    def convert(ctx, node):
        """TVM's ``_logical_and``/``_or``/``_xor``: non-bool operands cast to bool, lhs first."""
        lhs, rhs = ctx.tensor(node.args[0]), ctx.tensor(node.args[1])
        if ctx.dtype_of(lhs) != "bool":
            lhs = ctx.op("astype", lhs, dtype="bool")
        if ctx.dtype_of(rhs) != "bool":
            rhs = ctx.op("astype", rhs, dtype="bool")
        return ctx.op(op_name, lhs, rhs)
    return convert


for _n in ("logical_and", "logical_or", "logical_xor"):
    CONVERTERS[_n + ".default"] = _logical_binary(_n)


@_register("any.dim", "any.dims")
def _any(ctx, node):
    """TVM's ``_any``: ``max`` over ``dim``; a bool input goes through int8, one nested
    expression ``astype(max(astype(x, "int8")), "bool")`` (bound inner first by the emit)."""
    args = ctx.args(node)
    x = args[0]
    dim = args[1] if len(node.args) > 1 else node.kwargs.get("dim", None)
    keepdim = args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
    if ctx.dtype_of(x) == "bool":
        ret = ctx.call("max", ctx.call("astype", x, dtype="int8"), axis=dim, keepdims=keepdim)
        return ctx.emit(ctx.call("astype", ret, dtype="bool"))
    return ctx.op("max", x, axis=dim, keepdims=keepdim)


@_register("cumsum.default")
def _cumsum(ctx, node):
    """TVM's ``_cumsum``: ``relax.cumsum(x, dim, dtype)``, the dtype only when the node has one
    (so a bool or int32 input keeps its dtype, unlike torch's int64 promotion)."""
    x = ctx.env[node.args[0]]
    dim = arg(node, 1, "dim", None)
    dtype = relax_dtype(ctx, node.kwargs["dtype"]) if "dtype" in node.kwargs else None
    if "out" in node.kwargs:
        raise ctx.error("specifying out for cumsum is not supported (as in TVM)")
    return ctx.op("cumsum", x, axis=dim, dtype=dtype)


# ------------------------------------------------------------------------------------ attention
@_register("scaled_dot_product_attention.default")
def _scaled_dot_product_attention(ctx, node):
    """TVM's ``_scaled_dot_product_attention``: 4-D (batch, heads, seq, dim) inputs are permuted to
    ``nn.attention``'s (batch, seq, heads, dim) and back; 2-D (seq, dim) inputs get two unit
    dims (``expand_dims`` at 0 for q, k, v, then at 1) and lose them after (``squeeze``); a mask
    makes the call ``nn.attention_bias`` (what TVM's ``attention(..., bias=)`` builds);
    ``is_causal`` is ``causal_mask="TopLeft"``.

    Refused where TVM's import would be wrong or fails: another rank, ``dropout_p != 0``, a
    non-float mask (TVM asserts), and a ``scale`` other than ``1/sqrt(head_dim)`` (TVM drops it;
    DIFFERENCES.md "Stock-model torch converters")."""
    q, k, v = (ctx.env[a] for a in node.args[:3])
    ndim = q.ty.ndim
    if ndim not in (2, 4):
        raise ctx.error(f"scaled_dot_product_attention expects 2-D or 4-D inputs, as TVM's converter; got {ndim}-D")
    dropout_p = arg(node, 4, "dropout_p", 0.0)
    if dropout_p != 0.0:
        raise ctx.error(f"dropout_p={dropout_p!r} is not supported (TVM's converter asserts 0.0)")
    scale = node.kwargs.get("scale")
    if scale is not None:
        head_dim = static_dim(ctx.shape_of(q)[-1])
        if head_dim is None or not math.isclose(scale, 1.0 / math.sqrt(head_dim), rel_tol=1e-6):
            raise ctx.error(f"scale={scale!r}: TVM's converter ignores it and scales by 1/sqrt(head_dim); "
                            "memcore refuses a different scale rather than import a wrong program")
    if ndim == 2:
        q, k, v = (ctx.op("expand_dims", t, axis=0) for t in (q, k, v))
        q, k, v = (ctx.op("expand_dims", t, axis=1) for t in (q, k, v))

        def back(t):
            return ctx.op("squeeze", t, axis=[0, 1])
    else:
        q, k, v = (ctx.op("permute_dims", t, axes=[0, 2, 1, 3]) for t in (q, k, v))

        def back(t):
            return ctx.op("permute_dims", t, axes=[0, 2, 1, 3])
    mask = arg(node, 3, "attn_mask", None)
    causal = "TopLeft" if arg(node, 5, "is_causal", False) else None
    if mask is None:
        out = ctx.op("nn.attention", q, k, v, causal_mask=causal)
    else:
        mask = ctx.env[mask]
        if not ctx.dtype_of(mask).startswith(("float", "bfloat")):
            raise ctx.error(f"only a float attn_mask is supported (as TVM's converter); got {ctx.dtype_of(mask)}")
        out = ctx.op("nn.attention_bias", q, k, v, mask, causal_mask=causal)
    return back(out)


# ------------------------------------------------------------------------------------ more element-wise
def _nested_unary(build):
    def convert(ctx, node):
        x = ctx.env[node.args[0]]
        return ctx.emit(build(ctx, x, ctx.dtype_of(x)))
    return convert


# TVM writes each of these as one nested expression, bound innermost first by the emit
CONVERTERS["expm1.default"] = _nested_unary(
    lambda ctx, x, dt: ctx.call("subtract", ctx.call("exp", x), ctx.const(1.0, dt)))
CONVERTERS["log2.default"] = _nested_unary(
    lambda ctx, x, dt: ctx.call("divide", ctx.call("log", x), ctx.const(0.6931471805599453, dt)))
CONVERTERS["log10.default"] = _nested_unary(
    lambda ctx, x, dt: ctx.call("divide", ctx.call("log", x), ctx.const(2.302585092994046, dt)))
CONVERTERS["log1p.default"] = _nested_unary(
    lambda ctx, x, dt: ctx.call("log", ctx.call("add", x, ctx.const(1, dt))))


def _hard_gate(ctx, x, dt):
    """``clip(x + 3, 0, 6) / 6``, unemitted (TVM's hardsigmoid)."""
    return ctx.call("divide", ctx.call("clip", ctx.call("add", x, ctx.const(3, dt)), 0, 6), ctx.const(6, dt))


CONVERTERS["hardsigmoid.default"] = _nested_unary(_hard_gate)
CONVERTERS["hardswish.default"] = CONVERTERS["hardswish_.default"] = _nested_unary(
    lambda ctx, x, dt: ctx.call("multiply", x, _hard_gate(ctx, x, dt)))


@_register("celu.default")
def _celu(ctx, node):
    """TVM's ``_celu``: ``alpha * min(0, exp(x) / alpha - 1) + relu(x)``, one nested
    expression. TVM divides exp(x), not exp(x / alpha), by alpha: torch's function only for
    alpha = 1, so another alpha is refused (DIFFERENCES.md "More torch converters")."""
    x = ctx.env[node.args[0]]
    dt = ctx.dtype_of(x)
    alpha = arg(node, 1, "alpha", 1.0)
    if not isinstance(alpha, (int, float)) or alpha != 1:
        raise ctx.error(f"celu with alpha={alpha!r}: TVM's converter computes exp(x) / alpha, not exp(x / alpha); "
                        "memcore imports only alpha=1 rather than a different program")
    alpha = ctx.const(alpha, dt)
    inner = ctx.call("subtract", ctx.call("divide", ctx.call("exp", x), alpha), ctx.const(1, dt))
    out = ctx.call("add", ctx.call("multiply", alpha, ctx.call("minimum", ctx.const(0, dt), inner)),
                   ctx.call("nn.relu", x))
    return ctx.emit(out)


@_register("softplus.default")
def _softplus(ctx, node):
    return ctx.op("nn.softplus", ctx.env[node.args[0]], beta=arg(node, 1, "beta", 1.0),
                  threshold=arg(node, 2, "threshold", 20.0))


@_register("softshrink.default")
def _softshrink(ctx, node):
    """TVM's ``_softshrink``: ``(x - l) * (x > l) + (x + l) * (x < -l)`` with the masks cast
    to x's dtype, one nested expression."""
    x = ctx.env[node.args[0]]
    dt = ctx.dtype_of(x)
    lambd = ctx.const(node.args[1] if len(node.args) > 1 else 0.5, dt)
    pos = ctx.call("multiply", ctx.call("subtract", x, lambd),
                   ctx.call("astype", ctx.call("greater", x, lambd), dtype=dt))
    neg = ctx.call("multiply", ctx.call("add", x, lambd),
                   ctx.call("astype", ctx.call("less", x, ctx.call("negative", lambd)), dtype=dt))
    return ctx.emit(ctx.call("add", pos, neg))


@_register("round.default", "round.decimals")
def _round(ctx, node):
    """TVM's ``_round``: ``round``; with ``decimals`` scaled by ``10**|decimals|`` (in float32
    for 16-bit floats, inf past the dtype's range), rounded and scaled back."""
    x = ctx.env[node.args[0]]
    decimals = node.kwargs.get("decimals", 0)
    if decimals == 0:
        return ctx.op("round", x)
    in_dtype = dtype = ctx.dtype_of(x)
    if dtype in ("float16", "bfloat16"):
        dtype = "float32"
        x = ctx.op("astype", x, dtype=dtype)
    exp = abs(decimals)
    scale = ctx.const(math.inf if exp > (308 if dtype == "float64" else 38) else 10.0 ** exp, dtype)
    if decimals > 0:
        out = ctx.call("divide", ctx.call("round", ctx.call("multiply", x, scale)), scale)
    else:
        out = ctx.call("multiply", ctx.call("round", ctx.call("divide", x, scale)), scale)
    if in_dtype in ("float16", "bfloat16"):
        out = ctx.call("astype", out, dtype=in_dtype)
    return ctx.emit(out)


CONVERTERS["atan2.default"] = _binary("atan2", math.atan2)
CONVERTERS["logaddexp.default"] = _binary("log_add_exp", lambda a, b: math.log(math.exp(a) + math.exp(b)))


@_register("fmod.Tensor", "fmod.Scalar")
def _fmod(ctx, node):
    """TVM's ``_fmod``: ``relax.mod``, a scalar operand a constant of the other's dtype (two
    tensors are not promoted)."""
    lhs, rhs = ctx.args(node)[:2]
    if ctx.is_tensor(lhs) and not ctx.is_tensor(rhs):
        rhs = ctx.const(rhs, ctx.dtype_of(lhs))
    elif ctx.is_tensor(rhs) and not ctx.is_tensor(lhs):
        lhs = ctx.const(lhs, ctx.dtype_of(rhs))
    elif not ctx.is_tensor(lhs):
        raise ctx.error("fmod needs a tensor operand")
    return ctx.op("mod", lhs, rhs)


@_register("outer.default")
def _outer(ctx, node):
    return ctx.op("outer", ctx.env[node.args[0]], ctx.env[node.args[1]])


@_register("baddbmm.default")
def _baddbmm(ctx, node):
    """TVM's ``_baddbmm``: ``matmul`` (no out_dtype, unlike bmm), alpha and beta scaling,
    ``add(res, bias)``."""
    x, b1, b2 = (ctx.env[a] for a in node.args[:3])
    return _scaled_sum(ctx, node, x, lambda: ctx.op("matmul", b1, b2), bias_first=False)


# ------------------------------------------------------------------------------------ more reductions
def _dim_keepdim(ctx, node):
    args = ctx.args(node)
    dim = args[1] if len(node.args) > 1 else node.kwargs.get("dim", None)
    keepdim = args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
    return args[0], dim, keepdim


@_register("prod.default")
def _prod(ctx, node):
    x, dim, keepdim = _dim_keepdim(ctx, node)
    return ctx.op("prod", x, axis=dim, keepdims=keepdim)


@_register("std.correction")
def _std(ctx, node):
    """TVM's ``_std``: ``relax.std`` over ``dim`` (the population deviation). TVM does not read
    ``correction``, so only ``correction=0`` is imported (DIFFERENCES.md "More torch converters")."""
    correction = node.kwargs.get("correction", None)
    if correction != 0:
        raise ctx.error(f"std with correction={correction!r}: TVM's converter ignores it (population std); "
                        "memcore imports only correction=0 rather than a different program")
    x, dim, keepdim = _dim_keepdim(ctx, node)
    return ctx.op("std", x, axis=dim, keepdims=keepdim)


@_register("median.default", "median.dim")
def _median(ctx, node):
    x, dim, keepdim = _dim_keepdim(ctx, node)
    return ctx.op("median", x, axis=[dim] if isinstance(dim, int) else dim, keepdims=keepdim)


@_register("var.correction")
def _var_correction(ctx, node):
    """TVM's ``_var_correction``: ``variance`` (population), times ``n / (n - correction)``
    (NaN when not positive) unless the correction is 0; n must be static."""
    args = ctx.args(node)
    x = args[0]
    dim = args[1] if len(node.args) > 1 else node.kwargs.get("dim", None)
    keepdim = node.kwargs.get("keepdim", False)
    correction = node.kwargs.get("correction", None)
    correction = 1 if correction is None else correction
    var = ctx.op("variance", x, axis=dim, keepdims=keepdim)
    if correction == 0:
        return var
    shape = ctx.shape_of(x)
    axes = range(len(shape)) if dim is None else [dim] if isinstance(dim, int) else dim
    n = 1
    for ax in axes:
        d = static_dim(shape[ax])
        if d is None:
            raise ctx.error("var/std with a non-zero correction needs static reduction sizes (as TVM)")
        n *= d
    scale = math.nan if n - correction <= 0 else float(n) / float(n - correction)
    return ctx.op("multiply", var, ctx.const(scale, ctx.dtype_of(x)))


@_register("softsign.default")
def _softsign(ctx, node):
    """TVM's ``_softsign``: ``x / (abs(x) + 1)``, the 1 a float32 constant whatever x's dtype."""
    x = ctx.env[node.args[0]]
    denom = ctx.op("add", ctx.op("abs", x), ctx.const(1.0, "float32"))
    return ctx.op("divide", x, denom)


@_register("linalg_vector_norm.default")
def _linalg_vector_norm(ctx, node):
    """TVM's ``_norm`` (positional ``ord``, ``dim``, ``keepdim``; ``dtype`` not read):
    ``max``/``min`` of ``abs`` for +-inf, else ``sum(abs(x) ** ord) ** (1 / ord)``, one nested
    expression."""
    x = ctx.env[node.args[0]]
    dtype = ctx.dtype_of(x)
    order = node.args[1] if len(node.args) > 1 else node.kwargs.get("p", 2)
    axis = node.args[2] if len(node.args) > 2 else None
    keepdims = node.args[3] if len(node.args) > 3 else False
    if isinstance(order, bool) or not isinstance(order, (int, float)):
        raise ctx.error(f"a vector norm's ord must be a number; got {order!r}")
    if order in (math.inf, -math.inf):
        return ctx.emit(ctx.call("max" if order > 0 else "min", ctx.call("abs", x), axis=axis, keepdims=keepdims))
    if order == 0:
        raise ctx.error("a vector norm with ord=0 is not supported (TVM's converter divides by ord)")
    powered = ctx.call("power", ctx.call("abs", x), ctx.const(float(order), dtype))
    total = ctx.call("sum", powered, axis=axis, keepdims=keepdims)
    return ctx.emit(ctx.call("power", total, ctx.const(1.0 / order, dtype)))


@_register("cross_entropy_loss.default")
def _cross_entropy_loss(ctx, node):
    """TVM's ``_cross_entropy_default``: ``nll_loss(log_softmax(x), target, weight)`` with
    ``reduction`` and ``ignore_index`` read from the keywords only. The export passes them
    positionally (reduction as torch's enum), so a non-default one, or a label smoothing, is
    refused rather than imported as a different program."""
    preds, targets = ctx.env[node.args[0]], ctx.env[node.args[1]]
    weight = ctx.env.get(node.args[2], None) if len(node.args) > 2 else None
    for i, key, default in ((3, "reduction", 1), (4, "ignore_index", -100), (5, "label_smoothing", 0.0)):
        if len(node.args) > i and node.args[i] != default:
            raise ctx.error(f"cross_entropy_loss with {key}={node.args[i]!r}: TVM's converter reads only keyword "
                            "arguments and ignores it; memcore refuses it rather than import a different program")
    reduction = node.kwargs.get("reduction", "mean")
    ignore_index = node.kwargs.get("ignore_index", -100)
    log_probs = ctx.call("nn.log_softmax", preds)
    if weight is None:
        return ctx.op("nn.nll_loss", log_probs, targets, reduction=reduction, ignore_index=ignore_index)
    return ctx.op("nn.nll_loss", log_probs, targets, weight, reduction=reduction, ignore_index=ignore_index)
