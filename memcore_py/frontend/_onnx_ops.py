"""The ONNX converter table: one function per ``op_type``, TVM 0.27's ONNX mapping.

Design
------
:data:`CONVERTERS` maps an ONNX ``op_type`` (default domain) to a function ``f(ctx)`` of the
:class:`~._onnx_context.OnnxContext` (its ``node`` is the ONNX node) returning the node's
value: a call built with ``ctx.call`` and left unemitted (the importer normalizes it and
binds it on first use, as TVM does), a leaf (a variable, a constant, a ``ShapeExpr`` or
``PrimValue`` for shape arithmetic done at import time), or a list of values for a node with
several outputs. The converters live in :mod:`._onnx_math` (element-wise, activations, layers,
LSTM) and :mod:`._onnx_shape` (shape, indexing and creation ops). Op types outside the table
are reported all at once by the importer (:class:`~memcore_py.errors.UnsupportedOperatorError`).
"""
from __future__ import annotations

from . import _onnx_math, _onnx_shape

__all__ = ["CONVERTERS"]

#: ONNX ``op_type`` -> ``f(ctx)``; the two converter modules' tables.
CONVERTERS: dict = {**_onnx_math.CONVERTERS, **_onnx_shape.CONVERTERS}
if len(CONVERTERS) != len(_onnx_math.CONVERTERS) + len(_onnx_shape.CONVERTERS):  # pragma: no cover
    raise KeyError("an op type has a converter in both _onnx_math and _onnx_shape")
