"""Oracle: the ONNX converters added for issue 28, each against TVM 0.27's ONNX importer.

Every case is a one-node ONNX graph built here with ``onnx.helper`` (graph inputs, and
initializers for operands TVM reads as constants: axes, ``k``, depth, indices), imported by
memcore's :func:`~memcore_py.frontend.onnx_model.from_onnx` and by
``tvm.relax.frontend.onnx.from_onnx`` (``keep_params_in_input=True``, TVM's ``params``
attribute dropped), and the two modules must be structurally equal.

:func:`test_unconverted_tvm_ops_are_pinned` pins the op types of TVM 0.27's ONNX convert map
that memcore does not convert: a converter that disappears (or a new one) changes the set.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
tvm = pytest.importorskip("tvm")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from tvm.relax.frontend.onnx import from_onnx as tvm_from_onnx  # noqa: E402

from memcore_py.errors import FrontendError  # noqa: E402
from memcore_py.frontend._onnx_ops import CONVERTERS  # noqa: E402
from memcore_py.frontend.onnx_model import from_onnx  # noqa: E402
from memcore_py.tvm import to_tvm  # noqa: E402

pytestmark = pytest.mark.oracle

F, I64, I32, B, U8 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL, TensorProto.UINT8

#: Op types of TVM 0.27's ``_get_convert_map()`` that memcore's ONNX importer does not
#: convert (86 before issue 28, 1 after; the com.microsoft contrib ops are checked in
#: test_onnx_converters_contrib.py, sequences and optionals in test_onnx_converters_sequence.py).
#: Why: DIFFERENCES.md, ONNX importer, "Not converted".
UNCONVERTED = {
    # not an ONNX operator (no schema: ONNX's shape inference, which memcore runs first, refuses the node)
    "AllClassNMS",
}


def _tvm_import(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = tvm_from_onnx(onnx.shape_inference.infer_shapes(model), keep_params_in_input=True)
    mod["main"] = mod["main"].without_attr("params")
    return mod


def _i(name, elem, shape):
    """A graph input."""
    return ("input", name, elem, shape)


def _c(name, array):
    """An initializer (a constant operand)."""
    return ("init", name, np.asarray(array))


def _case(op, inputs, outputs, opset=18, id=None, **attrs):
    return pytest.param(op, inputs, outputs, opset, attrs, id=id or op)


X = _i("x", F, [2, 3, 4, 5])
X2 = _i("x", F, [3, 4])
N = _i("n", I32, [3, 4])

CASES = [
    # element-wise (opset-18 forms)
    *[_case(op, [X2], [F]) for op in ("Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cosh", "Sinh", "Tan",
                                      "Round", "Softsign", "Mish")],
    _case("IsNaN", [X2], [B]), _case("IsInf", [X2], [B]),
    _case("ThresholdedRelu", [X2], [F], alpha=0.3),
    _case("Shrink", [X2], [F], lambd=0.7, bias=0.2),
    _case("Xor", [_i("a", B, [3, 4]), _i("b", B, [4])], [B]),
    *[_case(op, [N, _i("m", I32, [3, 4])], [I32]) for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor")],
    _case("BitwiseNot", [N], [I32]),
    _case("Mod", [N, _i("m", I32, [4])], [I32], id="Mod-floor"),
    _case("Mod", [X2, _i("m", F, [3, 4])], [F], id="Mod-fmod", fmod=1),
    # reductions: axes as the opset-18 input, all axes, the opset-13 attribute
    *[_case(op, [X, _c("axes", np.array([1, -1], "int64"))], [F], keepdims=0)
      for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceSumSquare", "ReduceLogSumExp")],
    *[_case(op, [X], [F], id=f"{op}-all") for op in ("ReduceL2", "ReduceLogSumExp")],
    _case("ReduceLogSumExp", [X], [F], opset=13, id="ReduceLogSumExp-v13", axes=[2], keepdims=0),
    _case("ReduceL1", [X], [F], opset=13, id="ReduceL1-v13", axes=[0, 3]),
    # layers
    _case("GlobalMaxPool", [X], [F]),
    _case("InstanceNormalization", [X, _c("s", np.ones(3, "float32")), _c("b", np.zeros(3, "float32"))], [F],
          epsilon=1e-3),
    _case("GroupNormalization", [_i("x", F, [2, 6, 4, 5]), _c("s", np.ones(3, "float32")),
                                 _c("b", np.zeros(3, "float32"))], [(F, [2, 6, 4, 5])], num_groups=3),
    # opset >= 13: onnx 1.23's strict shape inference fails inside the op's function body
    _case("MeanVarianceNormalization", [X], [F], opset=9),
    _case("RMSNormalization", [X, _c("s", np.ones(5, "float32"))], [F], opset=23, axis=-1),
    _case("RMSNormalization", [_i("x", TensorProto.FLOAT16, [2, 3, 4]), _c("s", np.ones((3, 4), "float16"))],
          [TensorProto.FLOAT16], opset=23, id="RMSNormalization-fp16", axis=1),
    _case("ConvTranspose", [_i("x", F, [1, 2, 5]), _c("w", np.ones((2, 3, 3), "float32"))], [F], id="ConvTranspose-1d",
          strides=[2]),
    _case("ConvTranspose", [_i("x", F, [1, 2, 5, 4]), _c("w", np.ones((2, 2, 3, 3), "float32")),
                            _c("b", np.ones(4, "float32"))], [F], id="ConvTranspose-2d-bias-groups", group=2,
          pads=[1, 0, 1, 1], output_padding=[1, 0], strides=[2, 1]),
    _case("ConvTranspose", [_i("x", F, [1, 2, 5, 4]), _c("w", np.ones((2, 3, 3, 3), "float32"))], [F],
          id="ConvTranspose-2d-same", auto_pad="SAME_UPPER", strides=[2, 2]),
    _case("Hardmax", [X], [F], axis=1),
    _case("Hardmax", [_i("x", TensorProto.FLOAT16, [3, 4])], [TensorProto.FLOAT16], id="Hardmax-fp16"),
    _case("NonZero", [X2], [I64]),
    _case("NonZero", [_i("x", B, [])], [I64], id="NonZero-scalar"),
    _case("Resize", [_i("x", F, [1, 2, 4, 6]), _c("roi", np.zeros(0, "float32")),
                     _c("scales", np.array([1, 1, 2.5, 0.5], "float32"))], [F]),
    _case("Resize", [_i("x", F, [1, 2, 4, 6]), ("init", "", None), ("init", "", None),
                     _c("sizes", np.array([1, 2, 8, 9], "int64"))], [F], id="Resize-sizes-linear", mode="linear",
          coordinate_transformation_mode="align_corners"),
    _case("Resize", [_i("x", F, [1, 2, 4, 6]), _c("roi", np.array([0, 0, 0.1, 0.2, 1, 1, 0.9, 0.8], "float32")),
                     _c("scales", np.array([1, 1, 2, 2], "float32"))], [F], opset=13, id="Resize-roi-cubic",
          mode="cubic", coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=1.5),
    _case("Upsample", [_i("x", F, [1, 2, 3, 4])], [F], opset=8, scales=[1.0, 1.0, 2.0, 3.0]),
    _case("LpPool", [X], [F], kernel_shape=[2, 3], strides=[1, 2], p=3),
    _case("LpPool", [_i("x", F, [1, 2, 7])], [F], id="LpPool-1d-pads", kernel_shape=[3], pads=[1, 1]),
    _case("GlobalLpPool", [X], [F]),
    _case("GlobalLpPool", [X], [F], id="GlobalLpPool-p1", p=1),
    _case("MaxUnpool", [_i("x", F, [1, 2, 2, 3]), _i("idx", I64, [1, 2, 2, 3])], [F], kernel_shape=[2, 2],
          strides=[2, 2]),
    _case("MaxUnpool", [_i("x", F, [1, 1, 3, 3]), _i("idx", I64, [1, 1, 3, 3])], [F], id="MaxUnpool-pads",
          kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    _case("Compress", [X2, _i("c", B, [4])], [F], axis=1),
    _case("Compress", [X2, _i("c", B, [5])], [F], id="Compress-flat"),
    _case("Scatter", [X2, _i("idx", I64, [3, 4]), _i("u", F, [3, 4])], [F], opset=9, axis=1),
    _case("Scatter", [X2, _i("idx", I32, [2, 3]), _i("u", F, [2, 3])], [F], opset=9, id="Scatter-grid", axis=-1),
    _case("LRN", [X], [F], size=3),
    _case("LRN", [_i("x", F, [2, 5, 4])], [F], id="LRN-3d", size=5, alpha=0.01, beta=0.5, bias=2.0),
    _case("AffineGrid", [_i("theta", F, [2, 2, 3]), _c("size", np.array([2, 3, 4, 5], "int64"))], [F], opset=20),
    _case("AffineGrid", [_i("theta", F, [1, 2, 3]), _c("size", np.array([1, 1, 3, 3], "int64"))], [F], opset=20,
          id="AffineGrid-aligned", align_corners=1),
    _case("GridSample", [X, _i("grid", F, [2, 6, 7, 2])], [F], opset=16),
    _case("GridSample", [X, _i("grid", F, [2, 6, 7, 2])], [F], opset=20, id="GridSample-cubic-border",
          mode="cubic", padding_mode="border", align_corners=1),
    _case("RoiAlign", [X, _i("rois", F, [3, 4]), _i("bi", I64, [3])], [F], opset=16, output_height=2,
          output_width=3, sampling_ratio=2, spatial_scale=0.5),
    _case("RoiAlign", [X, _i("rois", F, [3, 4]), _i("bi", I64, [3])], [F], opset=10, id="RoiAlign-v10-max",
          mode="max"),
    _case("MatMulInteger", [_i("a", TensorProto.UINT8, [3, 4]), _i("b", TensorProto.INT8, [4, 5])], [I32]),
    _case("MatMulInteger", [_i("a", TensorProto.UINT8, [3, 4]), _i("b", TensorProto.UINT8, [4, 5]),
                            _c("za", np.array([1, 2, 3], "uint8")), _c("zb", np.array(7, "uint8"))], [I32],
          id="MatMulInteger-zero-points"),
    _case("MatMulInteger", [_i("a", TensorProto.INT8, [2, 3, 4]), _i("b", TensorProto.INT8, [4, 5]),
                            ("init", "", None), _c("zb", np.arange(5, dtype="int8"))], [I32],
          id="MatMulInteger-b-zero"),
    # indexing
    _case("GatherND", [X, _c("idx", np.array([[0, 1], [1, -1]], "int64"))], [F]),
    _case("GatherND", [X, _i("idx", I64, [2, 2, 1])], [F], id="GatherND-batch", batch_dims=1),
    _case("GatherElements", [X2, _i("idx", I64, [3, 2])], [F], axis=1),
    _case("GatherElements", [X2, _i("idx", I32, [2, 4])], [F], id="GatherElements-int32"),
    _case("ScatterND", [X2, _c("idx", np.array([[0], [-1]], "int64")), _i("u", F, [2, 4])], [F]),
    _case("ScatterND", [X2, _i("idx", I64, [2, 2]), _i("u", F, [2])], [F], id="ScatterND-add", reduction="add"),
    _case("ScatterElements", [X2, _i("idx", I64, [2, 2]), _i("u", F, [2, 2])], [F], axis=1),
    _case("ScatterElements", [X2, _i("idx", I64, [2, 2]), _i("u", F, [2, 2])], [F], id="ScatterElements-max",
          reduction="max"),
    _case("TopK", [X, _c("k", np.array([2], "int64"))], [F, I64]),
    _case("TopK", [X, _c("k", np.array([1], "int64"))], [F, I64], id="TopK-smallest", axis=1, largest=0),
    _case("CumSum", [X, _c("axis", np.array(2, "int64"))], [F]),
    _case("CumSum", [N, _c("axis", np.array([-1], "int32"))], [I32], id="CumSum-exclusive", exclusive=1),
    _case("OneHot", [_i("idx", I64, [3]), _c("depth", np.array(4, "int64")), _c("v", np.array([0, 1], "int64"))],
          [I64]),
    _case("OneHot", [_i("idx", I32, [2, 3]), _c("depth", np.array(5, "int32")),
                     _c("v", np.array([0.5, 2.0], "float32"))], [F], id="OneHot-float-axis0", axis=0),
    _case("DepthToSpace", [_i("x", F, [1, 8, 2, 3])], [F], blocksize=2),
    _case("DepthToSpace", [_i("x", F, [1, 8, 2, 3])], [F], id="DepthToSpace-CRD", blocksize=2, mode="CRD"),
    _case("SpaceToDepth", [_i("x", F, [1, 2, 4, 6])], [F], blocksize=2),
    # creation / shape
    _case("Size", [X], [I64]),
    _case("Size", [_i("x", I32, ["n", 4])], [I64], id="Size-symbolic"),
    _case("EyeLike", [X2], [F], k=1),
    _case("EyeLike", [_i("x", I32, [4, 3])], [I32], id="EyeLike-int-dtype", k=-2, dtype=I32),
    # bit shifts (ONNX: unsigned operands)
    _case("BitShift", [_i("a", U8, [3, 4]), _i("b", U8, [4])], [U8], direction="LEFT"),
    _case("BitShift", [_i("a", TensorProto.UINT32, [3, 4]), _c("b", np.array([1, 2, 3, 4], "uint32"))],
          [TensorProto.UINT32], id="BitShift-right", direction="RIGHT"),
    # linear quantization: per-tensor and per-axis, with and without a zero point, each opset's dtype rule
    _case("QuantizeLinear", [X, _c("s", np.array(0.5, "float32"))], [U8], opset=10),
    _case("QuantizeLinear", [X, _c("s", np.array([0.5, 1, 2], "float32")), _c("zp", np.array([1, 2, 3], "int8"))],
          [TensorProto.INT8], opset=13, id="QuantizeLinear-per-axis"),
    _case("QuantizeLinear", [_i("x", F, [6]), _i("s", F, []), _i("zp", U8, [])], [U8], opset=19,
          id="QuantizeLinear-1d-inputs"),
    _case("QuantizeLinear", [X2, _c("s", np.array(0.5, "float32"))], [TensorProto.INT8], opset=21,
          id="QuantizeLinear-output-dtype", output_dtype=TensorProto.INT8),
    _case("QuantizeLinear", [X, _c("s", np.ones(5, "float32")), _c("zp", np.zeros(5, "uint16"))],
          [TensorProto.UINT16], opset=23, id="QuantizeLinear-v23-axis", axis=-1),
    _case("DequantizeLinear", [_i("q", U8, [2, 3, 4]), _c("s", np.array(0.5, "float32"))], [F], opset=10),
    _case("DequantizeLinear", [_i("q", TensorProto.INT8, [2, 3, 4]), _c("s", np.ones(3, "float32")),
                               _c("zp", np.arange(3, dtype="int8"))], [F], opset=13, id="DequantizeLinear-per-axis"),
    _case("DequantizeLinear", [_i("q", U8, [5]), _c("s", np.array(0.5, "float16"))], [TensorProto.FLOAT16],
          opset=19, id="DequantizeLinear-fp16-scale"),
    _case("DequantizeLinear", [_i("q", TensorProto.INT32, [2, 3]), _c("s", np.ones(3, "float32"))], [F], opset=21,
          id="DequantizeLinear-v21-axis1"),
    _case("DequantizeLinear", [_i("q", U8, [2, 3]), _c("s", np.array(2, "float32")), _c("zp", np.array(4, "uint8"))],
          [TensorProto.FLOAT16], opset=23, id="DequantizeLinear-v23-output-dtype", output_dtype=TensorProto.FLOAT16),
    _case("DynamicQuantizeLinear", [X2], [U8, F, U8], opset=11),
    # data-dependent shapes (a match_cast to fresh symbolic extents)
    _case("Unique", [X2], [F], opset=11),
    _case("Unique", [X2], [F, I64, I64, I64], opset=11, id="Unique-axis-all-outputs", axis=1),
    _case("Unique", [_i("x", I32, [5])], [I32, I64], opset=11, id="Unique-unsorted-index", sorted=0),
    _case("Unique", [X2], [F, I64, I64], opset=11, id="Unique-negative-axis", axis=-2),
    # vision
    _case("MaxRoiPool", [_i("x", F, [1, 3, 8, 8]), _i("r", F, [4, 5])], [F], pooled_shape=[2, 3], spatial_scale=0.5),
    _case("NonMaxSuppression", [_i("b", F, [1, 6, 4]), _i("s", F, [1, 2, 6])], [I64]),
    _case("NonMaxSuppression", [_i("b", F, [2, 6, 4]), _i("s", F, [2, 3, 6]), _c("m", np.array([3], "int64")),
                                _c("iou", np.array([0.3], "float32")), _c("st", np.array(0.1, "float32"))], [I64],
          id="NonMaxSuppression-limits"),
    _case("NonMaxSuppression", [_i("b", F, [1, 6, 4]), _i("s", F, [1, 2, 6]), _c("m", np.array([2], "int64"))], [I64],
          id="NonMaxSuppression-center-boxes", center_point_box=1),
    # TOPI kernels (TVM's bb.emit_te): a PrimFunc and its R.call_tir
    _case("Tile", [X2, _c("r", np.array([2, 1], "int64"))], [F]),
    _case("Tile", [_i("x", I32, [2, 1, 3]), _c("r", np.array([1, 3, 2], "int64"))], [I32], id="Tile-unit-dim"),
    _case("Tile", [_i("x", F, [5]), _c("r", np.array([3], "int64"))], [F], id="Tile-1d"),
    _case("Pad", [X2, _c("p", np.array([0, 1, 1, 0], "int64"))], [F]),
    _case("Pad", [X2, _c("p", np.array([-1, 1, 0, 2], "int64")), _c("v", np.array(1.5, "float32"))], [F],
          id="Pad-crop-value"),
    _case("Pad", [_i("x", I32, [2, 3]), _c("p", np.array([1, -1, 0, 2], "int64"))], [I32], id="Pad-edge", mode="edge"),
    _case("Pad", [_i("x", F, [1, 3, 4]), _c("p", np.array([1, 0, 0, 2, 0, 0], "int64"))], [F], id="Pad-edge-3d",
          mode="edge"),
    _case("Pad", [_i("x", F, [1, 3, 4]), _c("p", np.array([1, 2], "int64")), ("init", "", None),
                  _c("ax", np.array([-1], "int64"))], [F], id="Pad-axes"),
    _case("Pad", [_i("x", F, [7])], [F], opset=2, id="Pad-v2", pads=[1, 2], value=0.1),
    _case("Einsum", [_i("a", F, [1, 2, 3, 4]), _i("b", F, [1, 2, 5, 4])], [F], opset=12, equation="bhqd,bhkd->bhqk"),
    *[_case("Einsum", [_i("a", F, [3, 3])], [F], opset=12, id=f"Einsum-{eq}", equation=eq)
      for eq in ("ii->i", "ii->", "ij->ji")],
    _case("Einsum", [_i("a", F, [2, 3]), _i("b", F, [3, 4]), _i("c", F, [4, 5])], [F], opset=12, id="Einsum-3",
          equation="ij,jk,kl->il"),
    _case("Einsum", [_i("a", F, [2, 3]), _i("b", F, [3, 4])], [F], opset=12, id="Einsum-sum-all", equation="kj,ji->"),
    _case("Einsum", [_i("a", F, [2]), _i("b", F, [3])], [F], opset=12, id="Einsum-outer", equation="i,j->ij"),
    _case("Einsum", [_i("a", I32, [2, 3, 4]), _i("b", I32, [2, 5, 4])], [I32], opset=12, id="Einsum-implicit-clash",
          equation="bij,bkj"),
]


def _model(op, inputs, outputs, opset, attrs):
    graph_inputs = [helper.make_tensor_value_info(name, elem, shape) for kind, name, elem, shape in
                    (s for s in inputs if s[0] == "input")]
    inits = [numpy_helper.from_array(arr, name) for kind, name, arr in (s for s in inputs if s[0] == "init" and s[1])]
    out_names = [f"y{k}" for k in range(len(outputs))]
    node = helper.make_node(op, [s[1] for s in inputs], out_names, name="n", **attrs)
    # an output is an element type, or (type, shape) where ONNX's inference gives no shape
    typed = [o if isinstance(o, tuple) else (o, None) for o in outputs]
    graph = helper.make_graph([node], "g", graph_inputs,
                              [helper.make_tensor_value_info(n, e, shape) for n, (e, shape) in zip(out_names, typed)],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("op, inputs, outputs, opset, attrs", CASES)
def test_converter_imports_as_tvm(op, inputs, outputs, opset, attrs):
    model = _model(op, inputs, outputs, opset, attrs)
    tvm.ir.assert_structural_equal(to_tvm(from_onnx(model)), _tvm_import(model))


def _refused(op, inputs, outputs, match, opset=18, id=None, **attrs):
    return pytest.param(op, inputs, outputs, opset, attrs, match, id=id or op)


#: Cases of the converted ops that memcore refuses (TVM refuses them too, or writes them with
#: kernels memcore does not reproduce); the message names the node and the case.
REFUSED = [
    _refused("Pad", [X2, _c("p", np.array([1, 1, 1, 1], "int64"))], [F], "mode='reflect' is not supported",
             id="Pad-reflect", mode="reflect"),
    _refused("Pad", [X2, _i("p", I64, [4])], [F], "the pads .* must be a constant", id="Pad-computed-pads"),
    _refused("Pad", [_i("x", F, ["n", 3]), _c("p", np.array([1, 1, 1, 1], "int64"))], [F],
             "a static input shape is needed", id="Pad-symbolic"),
    _refused("NonMaxSuppression", [_i("b", F, [1, 6, 4]), _i("s", F, [1, 2, 6]), _i("m", I64, [1])], [I64],
             "max_output_boxes_per_class .* must be a constant", id="NonMaxSuppression-computed-limit"),
    _refused("Tile", [X2, _i("r", I64, [2])], [F], "the repeats .* must be a constant", id="Tile-computed-repeats"),
    _refused("Tile", [X2, _c("r", np.array([2, 0], "int64"))], [F], "repeats >= 1 are needed", id="Tile-zero"),
    _refused("Einsum", [_i("a", F, [2, 3, 4]), _i("b", F, [2, 4, 5])], [F], "an ellipsis is not supported", opset=12,
             id="Einsum-ellipsis", equation="...ij,...jk->...ik"),
    _refused("EyeLike", [X2], [I32], "a dtype attribute \\(int32\\) other than the input's \\(float32\\)", dtype=I32),
    _refused("QuantizeLinear", [X2, _c("s", np.ones((3, 2), "float32"))], [U8], "blocked quantization", opset=21,
             id="QuantizeLinear-blocked", axis=1, block_size=2),
]


@pytest.mark.parametrize("op, inputs, outputs, opset, attrs, match", REFUSED)
def test_unsupported_case_is_refused(op, inputs, outputs, opset, attrs, match):
    with pytest.raises(FrontendError, match=f"node 'n' \\({op}\\): .*{match}"):
        from_onnx(_model(op, inputs, outputs, opset, attrs))


def test_unconverted_tvm_ops_are_pinned():
    """TVM 0.27's ONNX convert map minus memcore's converters is exactly :data:`UNCONVERTED`."""
    from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

    missing = set(_get_convert_map()) - set(CONVERTERS)
    assert missing == UNCONVERTED, (f"newly unconverted: {sorted(missing - UNCONVERTED)}; "
                                    f"now converted (unpin them): {sorted(UNCONVERTED - missing)}")
