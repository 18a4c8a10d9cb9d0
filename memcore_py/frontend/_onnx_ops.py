"""The ONNX converter table: one function per ``op_type``, TVM 0.27's ONNX mapping.

Design
------
:data:`CONVERTERS` maps an ONNX ``op_type`` (default domain) to a function ``f(ctx)`` of the
:class:`~._onnx_context.OnnxContext` (its ``node`` is the ONNX node) returning the node's
value: a call built with ``ctx.call`` and left unemitted (the importer normalizes it and
binds it on first use, as TVM does), a leaf (a variable, a constant, a ``ShapeExpr`` or
``PrimValue`` for shape arithmetic done at import time), or a list of values for a node with
several outputs. The converters live in :mod:`._onnx_math` (element-wise, activations, layers,
LSTM), :mod:`._onnx_shape` (shape, indexing and creation ops) and :mod:`._onnx_quant`
(linear quantization). Op types outside the table
are reported all at once by the importer (:class:`~memcore_py.errors.UnsupportedOperatorError`).
"""
from __future__ import annotations

from . import _onnx_math, _onnx_quant, _onnx_shape

__all__ = ["CONVERTERS", "CONTRIB_DOMAIN", "CONTRIB_OPS"]

#: The domain of the onnxruntime contrib ops TVM's importer converts (by op type, whatever the
#: domain; memcore converts them in this domain only, since ``Attention`` is also a default-domain
#: op of opset 23 with other semantics).
CONTRIB_DOMAIN = "com.microsoft"
#: The ``com.microsoft`` op types with a converter (in :mod:`._onnx_math`).
CONTRIB_OPS = frozenset({"Attention", "BiasGelu", "EmbedLayerNormalization", "FastGelu", "MatMulInteger16",
                         "SkipLayerNormalization"})

_MODULES = (_onnx_math, _onnx_shape, _onnx_quant)

#: ONNX ``op_type`` -> ``f(ctx)``; the converter modules' tables.
CONVERTERS: dict = {k: v for m in _MODULES for k, v in m.CONVERTERS.items()}
if len(CONVERTERS) != sum(len(m.CONVERTERS) for m in _MODULES):  # pragma: no cover
    raise KeyError("an op type has a converter in two of _onnx_math, _onnx_shape and _onnx_quant")
