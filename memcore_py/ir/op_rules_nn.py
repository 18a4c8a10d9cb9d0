"""Type rules of the neural-network ops (``R.nn.*``, ``R.image.*``, ``R.vision.*``) that
:mod:`memcore_py.ir.ops` registers: convolutions and their transposes, pools, adaptive pools,
normalisations, attention, losses, padding, pixel shuffle, resize, grid sampling, ROI align.

Shapes follow TVM 0.27's ``FInferStructInfo`` for the default layouts (``NCW`` / ``NCHW`` /
``NCDHW`` data, ``OIW`` / ``OIHW`` / ``OIDHW`` kernels, ``IO..`` for transposed convolutions);
a call with another layout is an :class:`IRError` saying so (its type then has to come from
the binding's annotation). Output extents use TVM's formulas, e.g. a pool's
``(in + pad_lo + pad_hi - (dilation * (k - 1) + 1) [+ stride - 1 if ceil_mode]) // stride + 1``,
folded when constant and built as plain trees over symbolic dims.
"""
from __future__ import annotations

from ..errors import IRError
from .op_rules_common import dim_add, dim_floordiv, dim_mul, dim_sub, shape_values, simplify_dim, static, tensor_arg
from .prim import IntImm
from .types import TensorType, TupleType

__all__ = [
    "conv", "conv_transpose", "pool", "adaptive_pool", "batch_norm", "normalize", "attention", "nll_loss", "pad",
    "pixel_shuffle", "resize2d", "grid_sample", "affine_grid", "roi_align",
]

_DATA_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
_KERNEL_LAYOUTS = {1: "OIW", 2: "OIHW", 3: "OIDHW"}
_KERNEL_T_LAYOUTS = {1: "IOW", 2: "IOHW", 3: "IODHW"}


def _attr(call, key):
    return call.op.attr(call, key)


def _check_layout(call, key, want):
    got = _attr(call, key)
    if got is not None and got != want:
        raise IRError(f"{call.op.name}: the type rule supports {key}={want!r} only; got {got!r}")


def _spatial_out(size, lo, hi, k, stride, dilation, ceil_mode=False):
    if static(k) is not None:
        eff_k = IntImm(dilation * (static(k) - 1) + 1)
    else:
        eff_k = dim_add(dim_mul(IntImm(dilation), dim_sub(k, IntImm(1))), IntImm(1))
    num = dim_sub(dim_add(size, IntImm(lo + hi)), eff_k)
    if ceil_mode:
        num = dim_add(num, IntImm(stride - 1))
    return simplify_dim(dim_add(dim_floordiv(num, IntImm(stride)), IntImm(1)))


def _conv_operands(call, ts, nd, kernel_layouts):
    """(data, weight, result dtype) of an ``nd``-D (transposed) convolution whose layouts are
    the defaults the rules support."""
    name = call.op.name
    data, weight = tensor_arg(ts[0], name, 0), tensor_arg(ts[1], name, 1)
    _check_layout(call, "data_layout", _DATA_LAYOUTS[nd])
    _check_layout(call, "kernel_layout", kernel_layouts[nd])
    _check_layout(call, "out_layout", _DATA_LAYOUTS[nd])
    return data, weight, _attr(call, "out_dtype") or data.dtype


def conv(nd):
    """The rule of an ``nd``-D convolution (``R.nn.conv1d/2d/3d``)."""

    def rule(call, ts):
        name = call.op.name
        data, weight, dtype = _conv_operands(call, ts, nd, _KERNEL_LAYOUTS)
        if data.shape is None or weight.shape is None:
            return TensorType(None, dtype, nd + 2, data.vdevice)
        if len(data.shape) != nd + 2 or len(weight.shape) != nd + 2:
            raise IRError(f"{name} expects rank-{nd + 2} data and weight; got {data.ndim} and {weight.ndim}")
        strides, padding, dilation = _attr(call, "strides"), _attr(call, "padding"), _attr(call, "dilation")
        out = [data.shape[0], weight.shape[0]]
        for i in range(nd):
            out.append(_spatial_out(data.shape[2 + i], padding[i], padding[nd + i], weight.shape[2 + i],
                                    strides[i], dilation[i]))
        return TensorType(tuple(out), dtype, vdevice=data.vdevice)

    return rule


def conv_transpose(nd):
    """The rule of an ``nd``-D transposed convolution (``R.nn.conv1d_transpose/conv2d_transpose``)."""

    def rule(call, ts):
        data, weight, dtype = _conv_operands(call, ts, nd, _KERNEL_T_LAYOUTS)
        if data.shape is None or weight.shape is None:
            return TensorType(None, dtype, nd + 2, data.vdevice)
        strides, padding, dilation = _attr(call, "strides"), _attr(call, "padding"), _attr(call, "dilation")
        out_pad, groups = _attr(call, "output_padding"), _attr(call, "groups")
        out = [data.shape[0], dim_mul(weight.shape[1], IntImm(groups))]
        for i in range(nd):
            k = weight.shape[2 + i]
            size = dim_mul(dim_sub(data.shape[2 + i], IntImm(1)), IntImm(strides[i]))
            size = dim_sub(size, IntImm(padding[i] + padding[nd + i]))
            size = dim_add(size, dim_mul(IntImm(dilation[i]), dim_sub(k, IntImm(1))))
            out.append(simplify_dim(dim_add(size, IntImm(out_pad[i] + 1))))
        return TensorType(tuple(out), dtype, vdevice=data.vdevice)

    return rule


def pool(nd):
    """The rule of an ``nd``-D max / avg pool."""

    def rule(call, ts):
        name = call.op.name
        data = tensor_arg(ts[0], name)
        _check_layout(call, "layout", _DATA_LAYOUTS[nd])
        _check_layout(call, "out_layout", _DATA_LAYOUTS[nd])
        if data.shape is None:
            return TensorType(None, data.dtype, nd + 2, data.vdevice)
        ps, strides = _attr(call, "pool_size"), _attr(call, "strides")
        dilation, padding, ceil = _attr(call, "dilation"), _attr(call, "padding"), _attr(call, "ceil_mode")
        out = list(data.shape[:2])
        for i in range(nd):
            out.append(_spatial_out(data.shape[2 + i], padding[i], padding[nd + i], IntImm(ps[i]), strides[i],
                                    dilation[i], ceil))
        return TensorType(tuple(out), data.dtype, vdevice=data.vdevice)

    return rule


def adaptive_pool(nd):
    """The rule of an ``nd``-D adaptive average pool."""

    def rule(call, ts):
        name = call.op.name
        data = tensor_arg(ts[0], name)
        _check_layout(call, "layout", _DATA_LAYOUTS[nd])
        _check_layout(call, "out_layout", _DATA_LAYOUTS[nd])
        size = _attr(call, "output_size")
        if data.shape is None:
            return TensorType(None, data.dtype, nd + 2, data.vdevice)
        if size is None:
            return data
        size = list(size) * nd if len(size) == 1 else list(size)
        return TensorType(tuple(data.shape[:2]) + tuple(IntImm(s) for s in size), data.dtype, vdevice=data.vdevice)

    return rule


def batch_norm(call, ts):
    name = call.op.name
    data = tensor_arg(ts[0], name, 0)
    return TupleType([data, tensor_arg(ts[3], name, 3), tensor_arg(ts[4], name, 4)])


def normalize(call, ts):
    """layer / group / instance / RMS norm: the data's type."""
    return tensor_arg(ts[0], call.op.name, 0)


def attention(call, ts):
    name = call.op.name
    q, k, v = (tensor_arg(ts[i], name, i) for i in range(3))
    if q.shape is None or v.shape is None:
        return TensorType(None, q.dtype, 4, q.vdevice)
    if len(q.shape) != 4 or len(k.shape or ()) not in (0, 4) or len(v.shape) != 4:
        raise IRError(f"{name} expects rank-4 (batch, seq, heads, dim) query, key and value")
    return TensorType((q.shape[0], q.shape[1], q.shape[2], v.shape[3]), q.dtype, vdevice=q.vdevice)


def nll_loss(call, ts):
    name = call.op.name
    pred, tgt = tensor_arg(ts[0], name, 0), tensor_arg(ts[1], name, 1)
    if _attr(call, "reduction") == "none":
        return TensorType(tgt.shape, pred.dtype, tgt.ndim, pred.vdevice)
    return TensorType((), pred.dtype, vdevice=pred.vdevice)


def pad(call, ts):
    name = call.op.name
    data = tensor_arg(ts[0], name)
    width = _attr(call, "pad_width")
    if data.shape is None:
        return data
    if len(width) != 2 * len(data.shape):
        raise IRError(f"{name}: pad_width needs 2 values per dim ({2 * len(data.shape)}); got {len(width)}")
    out = [dim_add(d, IntImm(width[2 * i] + width[2 * i + 1])) for i, d in enumerate(data.shape)]
    return TensorType(tuple(out), data.dtype, vdevice=data.vdevice)


def pixel_shuffle(call, ts):
    name = call.op.name
    data = tensor_arg(ts[0], name)
    r = _attr(call, "upscale_factor")
    if data.shape is None:
        return data
    if len(data.shape) < 3:
        raise IRError(f"{name} expects a tensor of rank >= 3; got rank {len(data.shape)}")
    s = data.shape
    out = list(s[:-3]) + [dim_floordiv(s[-3], IntImm(r * r)), dim_mul(s[-2], IntImm(r)), dim_mul(s[-1], IntImm(r))]
    return TensorType(tuple(out), data.dtype, vdevice=data.vdevice)


def resize2d(call, ts):
    name = call.op.name
    data = tensor_arg(ts[0], name, 0)
    _check_layout(call, "layout", "NCHW")
    dtype = _attr(call, "out_dtype") or data.dtype
    size = shape_values(call.args[1], ts[1], name)
    if data.shape is None or size is None:
        return TensorType(None, dtype, 4, data.vdevice)
    size = list(size) * 2 if len(size) == 1 else list(size)
    return TensorType((data.shape[0], data.shape[1], size[0], size[1]), dtype, vdevice=data.vdevice)


def grid_sample(call, ts):
    name = call.op.name
    data, grid = tensor_arg(ts[0], name, 0), tensor_arg(ts[1], name, 1)
    _check_layout(call, "layout", "NCHW")
    if data.shape is None or grid.shape is None:
        return TensorType(None, data.dtype, 4, data.vdevice)
    return TensorType((data.shape[0], data.shape[1], grid.shape[2], grid.shape[3]), data.dtype, vdevice=data.vdevice)


def affine_grid(call, ts):
    name = call.op.name
    theta = tensor_arg(ts[0], name, 0)
    size = shape_values(call.args[1], ts[1], name)
    if theta.shape is None or size is None:
        return TensorType(None, theta.dtype, 4, theta.vdevice)
    return TensorType((theta.shape[0], IntImm(2), size[0], size[1]), theta.dtype, vdevice=theta.vdevice)


def roi_align(call, ts):
    name = call.op.name
    data, rois = tensor_arg(ts[0], name, 0), tensor_arg(ts[1], name, 1)
    _check_layout(call, "layout", "NCHW")
    ps = _attr(call, "pooled_size")
    if data.shape is None or rois.shape is None:
        return TensorType(None, data.dtype, 4, data.vdevice)
    return TensorType((rois.shape[0], data.shape[1], IntImm(ps[0]), IntImm(ps[-1])), data.dtype, vdevice=data.vdevice)
