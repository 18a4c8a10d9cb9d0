"""ONNX converters for linear quantization: ``QuantizeLinear``, ``DequantizeLinear`` and
``DynamicQuantizeLinear`` (TVM 0.27's ONNX mapping).

Design
------
One function per ``op_type`` (see :mod:`._onnx_ops` for the conventions). TVM maps both
linear ops to one Relax op each, ``R.quantize`` / ``R.dequantize`` (data, scale, zero
point; ``axis`` and ``out_dtype`` attributes), and the rules that pick the attributes live
here once (:func:`_quantize_axis`, :func:`_check_block_size`):

- ``axis`` is the attribute (default 1), or 0 when the data has rank <= 1 and the axis is
  the default 1 (a per-tensor or 1-D quantization); it is passed on unnormalized;
- an omitted zero point is a rank-0 zero constant: of the output dtype for ``QuantizeLinear``,
  of the data's dtype for ``DequantizeLinear``;
- ``QuantizeLinear``'s output dtype is the zero point's (``uint8`` without one); from opset 21
  the ``output_dtype`` attribute comes first (ONNX's type inference makes it agree with the zero
  point's);
  ``DequantizeLinear``'s is ``float32`` below opset 19, the scale's dtype from 19, and from
  opset 23 the ``output_dtype`` attribute when given;
- blocked quantization (``block_size`` != 0, opset 21) and ``QuantizeLinear``'s ``precision``
  (opset 23) are refused, as TVM refuses them.

``DynamicQuantizeLinear`` is TVM's formula: ``scale = (max(0, max(x)) - min(0, min(x))) / 255``,
``zero_point = uint8(round(clip(0 - min(0, min(x)) / scale, 0, 255)))`` and
``R.quantize(x, scale, zero_point, axis=0, out_dtype="uint8")``; its three outputs are bound
in the order TVM's normalizer binds them (the quantized data's operands first).
"""
from __future__ import annotations

from ._aten_common import registrar
from ._onnx_context import onnx_dtype

__all__ = ["CONVERTERS"]

CONVERTERS: dict = {}
_register = registrar(CONVERTERS)


def _quantize_axis(ctx, x) -> int:
    """The ``axis`` attribute (default 1), 0 for data of rank <= 1 with the default axis."""
    axis = int(ctx.attr("axis", 1))
    return 0 if axis == 1 and ctx.rank(x) <= 1 else axis


def _check_block_size(ctx) -> None:
    if ctx.opset >= 21 and ctx.attr("block_size", 0) != 0:
        raise ctx.error(f"blocked quantization (block_size={ctx.attr('block_size')}) is not supported (TVM 0.27 "
                        "refuses it; per-tensor and per-axis quantization are)")


def _output_dtype(ctx):
    """The ``output_dtype`` attribute (opset >= 21) as a Relax dtype, None when absent or 0."""
    code = ctx.attr("output_dtype", 0) if ctx.opset >= 21 else 0
    return onnx_dtype(code, f"node {ctx.node.name!r}: output_dtype") if code else None


@_register("QuantizeLinear")
def _quantize_linear(ctx):
    _check_block_size(ctx)
    if ctx.opset >= 23 and ctx.attr("precision", 0) != 0:
        raise ctx.error(f"precision={ctx.attr('precision')} is not supported (TVM 0.27 refuses it)")
    x, scale = ctx.tensor_operand(0), ctx.tensor_operand(1)
    zero_point = ctx.tensor_operand(2) if ctx.has_input(2) else None
    # a zero point of another dtype than output_dtype fails ONNX's type inference before this
    out_dtype = _output_dtype(ctx) or (ctx.dtype_of(zero_point) if zero_point is not None else "uint8")
    if zero_point is None:
        zero_point = ctx.const(0, out_dtype)
    return ctx.call("quantize", x, scale, zero_point, out_dtype=out_dtype, axis=_quantize_axis(ctx, x))


@_register("DequantizeLinear")
def _dequantize_linear(ctx):
    _check_block_size(ctx)
    x, scale = ctx.tensor_operand(0), ctx.tensor_operand(1)
    zero_point = ctx.tensor_operand(2) if ctx.has_input(2) else ctx.const(0, ctx.dtype_of(x))
    out_dtype = (_output_dtype(ctx) if ctx.opset >= 23 else None) \
        or (ctx.dtype_of(scale) if ctx.opset >= 19 else "float32")
    return ctx.call("dequantize", x, scale, zero_point, out_dtype=out_dtype, axis=_quantize_axis(ctx, x))


@_register("DynamicQuantizeLinear")
def _dynamic_quantize_linear(ctx):
    x = ctx.tensor_operand(0)
    dtype = ctx.dtype_of(x)
    qmin, qmax = ctx.const(0, dtype), ctx.const(255, dtype)
    x_max = ctx.emit(ctx.call("maximum", qmin, ctx.call("max", x)))
    x_min = ctx.emit(ctx.call("minimum", qmin, ctx.call("min", x)))  # read twice: bound once
    scale = ctx.emit(ctx.call("divide", ctx.call("subtract", x_max, x_min), qmax))
    zero_point_fp = ctx.call("subtract", qmin, ctx.call("divide", x_min, scale))
    zero_point = ctx.emit(ctx.call("astype", ctx.call("round", ctx.call("clip", zero_point_fp, 0, 255)),
                                   dtype="uint8"))
    y = ctx.emit(ctx.call("quantize", x, scale, zero_point, out_dtype="uint8", axis=0))
    return [y, scale, zero_point]
