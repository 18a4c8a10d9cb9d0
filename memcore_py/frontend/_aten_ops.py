"""ATen converters: one function per ``torch.ops.aten`` target, with TVM 0.27's mapping.

Design
------
:data:`CONVERTERS` maps the name TVM's ``ExportedProgramImporter`` dispatches on
(``node.target.__name__``: ``"add.Tensor"``, ``"convolution.default"``, ``"getitem"``) to a
function ``f(ctx, node)`` returning the node's value (:class:`~._aten_context.AtenContext`).
Each converter emits the same Relax calls, with the same attributes and in the same order, as
TVM's converter for that target (``exported_program_translator.py`` and
``base_fx_graph_translator.py`` of the installed TVM), so the builder hands out the same
``lv`` names. TVM's quirks are kept because equality with its output is the contract:

- views are value ops (``view``/``reshape`` -> ``reshape``, identity reshapes dropped;
  ``expand`` -> ``broadcast_to``; ``permute``/``transpose`` -> ``permute_dims``);
  ``clone``, ``alias``, ``detach``, ``contiguous``, ``dropout`` return their input;
- ``copy_``, ``fill_``, ``masked_fill_`` and ``zero_`` rebind their destination node (SSA
  rebinding), the other in-place variants (``add_``, ``relu_``) do not;
- ``matmul``/``mm``/``bmm``/``addmm``/``conv`` request ``out_dtype="float32"``;
- a few converters return a value they have not emitted (``max_pool2d`` of a 3-D input
  returns an unemitted ``squeeze``), which the next emit puts in A-normal form, as in TVM;
- symbolic integers (``sym_size.int``, Python ``add``/``mul`` on ``SymInt``) are
  :class:`~memcore_py.ir.prim.PrimExpr` arithmetic, a static ``sym_size`` an int32 constant.

Targets outside the table are reported all at once by the importer
(:class:`~memcore_py.errors.UnsupportedOperatorError`).
"""
from __future__ import annotations

import math
import operator
import sys

from ..ir.expr import Expr
from ..ir.prim import Add, IntImm, Mul, PrimExpr
from ..ir.types import TensorType, TupleType

__all__ = ["CONVERTERS"]

CONVERTERS: dict = {}


def _register(*names):
    def deco(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn
    return deco


def _static(d):
    """``d`` as a Python int when it is a constant dim, else None."""
    if isinstance(d, bool):
        return None
    if isinstance(d, int):
        return d
    if type(d) is IntImm:
        return d.value
    return None


def _mul_folded(a, b):
    """``a * b`` as TVM's ``tirx`` multiplication builds it: constants folded, a factor 1
    dropped, else a ``Mul`` node (two Python ints: their Python product)."""
    if type(a) is int and type(b) is int:
        return a * b
    sa, sb = _static(a), _static(b)
    if sa is not None and sb is not None:
        return IntImm(sa * sb)
    if sa == 1:
        return b
    if sb == 1:
        return a
    return Mul(a, b)


def _add_folded(a, b):
    """``a + b`` as TVM's ``tirx`` addition builds it: constants folded, a term 0 dropped
    (two Python ints: their Python sum)."""
    if type(a) is int and type(b) is int:
        return a + b
    sa, sb = _static(a), _static(b)
    if sa is not None and sb is not None:
        return IntImm(sa + sb)
    if sa == 0:
        return b
    if sb == 0:
        return a
    return Add(a, b)


def _arg(node, i, key, default):
    """Positional argument ``i`` of ``node``, else keyword ``key``, else ``default``."""
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(key, default)


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
    return ctx.op("nn.softmax", ctx.env[node.args[0]], axis=_arg(node, 1, "dim", -1))


@_register("log_softmax.int", "_log_softmax.default")
def _log_softmax(ctx, node):
    return ctx.op("nn.log_softmax", ctx.env[node.args[0]], axis=_arg(node, 1, "dim", -1))


def _tri(op_name):
    def convert(ctx, node):
        k = _arg(node, 1, "diagonal", 0)
        if not isinstance(k, int):
            raise ctx.error(f"the diagonal must be an int; got {k!r}")
        return ctx.op(op_name, ctx.env[node.args[0]], k)
    return convert


CONVERTERS["tril.default"] = _tri("tril")
CONVERTERS["triu.default"] = _tri("triu")


@_register("leaky_relu.default", "leaky_relu_.default")
def _leaky_relu(ctx, node):
    return ctx.op("nn.leakyrelu", ctx.env[node.args[0]], alpha=_arg(node, 1, "negative_slope", 0.01))


@_register("hardtanh.default", "hardtanh_.default")
def _hardtanh(ctx, node):
    args = ctx.args(node)
    lo = node.args[1] if len(args) > 1 else node.kwargs.get("min_val", -1.0)
    hi = node.args[2] if len(args) > 2 else node.kwargs.get("max_val", 1.0)
    return ctx.op("clip", args[0], lo, hi)


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
    ("add", "add.Tensor", "add.Scalar", "add_.Tensor"): ("add", _add_folded),
    ("sub", "sub.Tensor", "sub.Scalar"): ("subtract", operator.sub),
    ("mul", "mul.Tensor", "mul.Scalar", "mul_.Tensor"): ("multiply", _mul_folded),
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
    if get(6, False):
        raise ctx.error("transposed convolution is not supported by memcore's importer")
    return _conv(ctx, args[0], args[1], get(2, None), get(3, 1), get(4, 0), get(5, 1), get(8, 1))


@_register("conv1d.default", "conv2d.default", "conv3d.default")
def _conv_nd(ctx, node):
    args = ctx.args(node)
    get = lambda i, d: args[i] if len(args) > i else d  # noqa: E731
    return _conv(ctx, args[0], args[1], get(2, None), get(3, 1), get(4, 0), get(5, 1), get(6, 1))


@_register("_native_batch_norm_legit_no_training.default", "batch_norm.default")
def _batch_norm(ctx, node):
    x = ctx.env[node.args[0]]
    channel = _static(ctx.shape_of(x)[1])
    dtype = ctx.dtype_of(x)

    def param(i, fill):
        a = node.args[i] if len(node.args) > i else None
        if a is not None:
            return ctx.env[a]
        if channel is None:
            raise ctx.error("batch_norm without affine parameters needs a static channel count")
        return ctx.const([fill] * channel, dtype)

    weight, bias, mean, var = param(1, 1.0), param(2, 0.0), param(3, 0.0), param(4, 1.0)
    momentum = _arg(node, 5, "momentum", 0.1)
    eps = _arg(node, 6, "eps", 1e-05)
    bn = ctx.op("nn.batch_norm", x, weight, bias, mean, var, axis=1, epsilon=eps,
                scale=len(node.args) > 1 and node.args[1] is not None,
                center=len(node.args) > 2 and node.args[2] is not None, momentum=momentum, training=False)
    return ctx.emit(ctx.item(bn, 0))


@_register("native_layer_norm.default", "layer_norm.default")
def _layer_norm(ctx, node):
    import numpy as np

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
    alpha = node.kwargs.get("alpha", 1)
    beta = node.kwargs.get("beta", 1)
    res = None
    if alpha != 0:
        res = ctx.op("matmul", y, z, out_dtype="float32")
        if alpha != 1:
            res = ctx.op("multiply", res, ctx.const(alpha, ctx.dtype_of(res)))
    if beta != 0:
        bias = x if beta == 1 else ctx.op("multiply", x, ctx.const(beta, ctx.dtype_of(x)))
        res = bias if res is None else ctx.op("add", bias, res)
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
            x = ctx.op("astype", x, dtype=_dtype(ctx, dtype))
        elif widen_ints:
            d = ctx.dtype_of(x)
            if d == "bool" or (d.startswith(("int", "uint")) and d != "int64"):
                x = ctx.op("astype", x, dtype="int64")
        return ctx.op(op_name, x, axis=dim, keepdims=keepdim)
    return convert


CONVERTERS["mean.dim"] = CONVERTERS["mean.default"] = _reduce("mean")
CONVERTERS["sum.dim_IntList"] = CONVERTERS["sum.default"] = _reduce("sum", widen_ints=True)


def _dtype(ctx, torch_dtype):
    from ._aten_context import torch_dtype_name

    return torch_dtype_name(torch_dtype, f"node {ctx.node.name!r}" if ctx.node is not None else "")


# ------------------------------------------------------------------------------------ manipulation
def _dims_arg(ctx, args):
    """``args[1]`` when it is a list (``view(x, [2, 3])``), else ``args[1:]``."""
    if isinstance(args[1], (list, tuple, ctx.torch.Size)):
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
    target = [_static(d) for d in dims]
    if 0 not in target or -1 in target:
        return [dims]
    shape = list(ctx.shape_of(x))
    current = [_static(d) for d in shape]
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


def _same_dims(shape, dims) -> bool:
    """TVM's identity-reshape test ``list(shape) == list(dims)`` (ints against IntImms by
    value, symbolic dims by identity)."""
    if len(shape) != len(dims):
        return False
    for s, d in zip(shape, dims):
        sv, dv = _static(s), _static(d)
        if sv is not None or dv is not None:
            if sv != dv:
                return False
        elif s is not d:
            return False
    return True


@_register("view.default", "reshape.default", "_unsafe_view.default")
def _reshape(ctx, node):
    args = ctx.args(node)
    x = args[0]
    dims = _dims_arg(ctx, args)
    if _same_dims(ctx.shape_of(x), dims):
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
        flat = _mul_folded(flat, shape[i])
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
    in_shape = ctx.shape_of(x)
    offset = len(sizes) - len(in_shape)
    out = []
    for i, s in enumerate(sizes):
        if isinstance(s, int) and s == -1:
            if i - offset < 0:
                raise ctx.error(f"cannot use -1 in expand for the new leading dim {i}")
            out.append(in_shape[i - offset])
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
            if _deep_equal(end, shape[dim if dim >= 0 else len(shape) + dim]):
                return x
    return ctx.op("strided_slice", x, [dim], [start], [end], [step])


def _deep_equal(a, b) -> bool:
    from ..ir.prim import prim_equal

    return prim_equal(a, b)


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
        n = _static(ctx.shape_of(x)[dim])
        if n is None:
            raise ctx.error("split by chunk size needs a static dimension")
        cuts = [size * i for i in range(1, (n + size - 1) // size)]
    return ctx.op("split", x, indices_or_sections=cuts, axis=dim)


@_register("chunk.default")
def _chunk(ctx, node):
    x = ctx.env[node.args[0]]
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    n = _static(ctx.shape_of(x)[dim])
    if n is None:
        raise ctx.error("chunk needs a static dimension")
    return ctx.op("split", x, indices_or_sections=min(node.args[1], n), axis=dim)


@_register("unbind.int")
def _unbind(ctx, node):
    x = ctx.env[node.args[0]]
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    n = _static(ctx.shape_of(x)[dim])
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
            return ctx.op("astype", x, dtype=_dtype(ctx, node.args[1]))
    elif "dtype" in node.kwargs:
        return ctx.op("astype", x, dtype=_dtype(ctx, node.kwargs["dtype"]))
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
        dtype = _dtype(ctx, node.kwargs["dtype"])
    elif any(isinstance(v, float) for v in ses):
        dtype = _dtype(ctx, torch.get_default_dtype())
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
    dtype = _dtype(ctx, torch_dtype)
    return ctx.op("full", list(size), _fill_value(ctx, args[1], dtype), dtype=dtype)


@_register("full_like.default")
def _full_like(ctx, node):
    args = ctx.args(node)
    x, value = args[0], args[1]
    x_dtype = ctx.dtype_of(x)
    torch_dtype = node.kwargs.get("dtype")
    dtype = x_dtype if torch_dtype is None else _dtype(ctx, torch_dtype)
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
    if not _same_dims(ctx.shape_of(dest), ctx.shape_of(src)):
        src = ctx.op("broadcast_to", src, ctx.shape_of(dest))
    ctx.env[node.args[0]] = src
    return src


def _creation_dtype(ctx, node):
    return _dtype(ctx, node.kwargs.get("dtype", ctx.torch.get_default_dtype()))


@_register("zeros.default", "empty.default", "empty.memory_format")
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
