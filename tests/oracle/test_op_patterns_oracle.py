"""Oracle: the op pattern memcore states for an op is the one TVM's AnnotateTIROpPattern reads.

Each case is a module of one op call (``s`` a symbolic dim): TVM runs ``LegalizeOps`` and
``AnnotateTIROpPattern`` and must write a single ``call_tir``; memcore's
:func:`~memcore_py.transform._op_patterns.op_pattern` of that call, with the kernel inputs
LowerForPlanning(fuse=True) passes, must be that kernel's ``op_pattern``. The cases cover the
ops whose pattern depends on the shapes with a variant per rule of the module docstring
(broadcast or not, symbolic extents, unit dims, einsum subscripts). A kernel memcore folds (no
tensor input, few elements) has no lowered kernel: its op_pattern is read off the call.
"""
from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")

from _helpers import tvm_from_source
from oracle.test_fused_planning_oracle import (
    _memcore_patterns,
    _tvm_patterns,
    single_op_text,
)

import memcore_py
from memcore_py.ir.expr import Call, Function, Tuple
from memcore_py.ir.types import TensorType
from memcore_py.transform._op_patterns import op_pattern

pytestmark = pytest.mark.oracle

X = "x: R.Tensor((4, 8), 'float32')"
XS = "x: R.Tensor((s, 8), 'float32')"
XY = X + ", y: R.Tensor((4, 8), 'float32')"
NCHW = "x: R.Tensor((1, 4, 8, 8), 'float32')"
V4, V8 = "x: R.Tensor((4,), 'float32')", "y: R.Tensor((8,), 'float32')"
ROIS = ", r: R.Tensor((3, 5), 'float32')"
NORM = ", g: R.Tensor((4,), 'float32'), b: R.Tensor((4,), 'float32')"
Q = ", sc: R.Tensor((8,), 'float32'), z: R.Tensor((8,), 'int8')"
Q0 = ", sc: R.Tensor((), 'float32'), z: R.Tensor((), 'int8')"
I8 = "x: R.Tensor((4, 8), 'int8')"
ONES = "R.prim_value(1.0), R.prim_value(0.0)"

#: One op per case: ``(parameters, expression)`` of ``main``.
CASES = {
    # element-wise
    "softplus": (X, "R.nn.softplus(x)"),
    "softplus_dyn": (XS, "R.nn.softplus(x)"),
    "quantize_axis": (X + Q, "R.quantize(x, sc, z, axis=1, out_dtype='int8')"),
    "quantize_scalar": (X + Q0, "R.quantize(x, sc, z, axis=-1, out_dtype='int8')"),
    "quantize_const": (X, "R.quantize(x, R.const(0.5, 'float32'), R.const(0, 'int8'), axis=-1, out_dtype='int8')"),
    "quantize_dyn": (XS + Q, "R.quantize(x, sc, z, axis=1, out_dtype='int8')"),
    "dequantize_axis": (I8 + Q, "R.dequantize(x, sc, z, axis=1, out_dtype='float32')"),
    "dequantize_scalar_dyn": ("x: R.Tensor((s, 8), 'int8')" + Q0, "R.dequantize(x, sc, z, axis=-1, out_dtype='float32')"),
    "dropout": (X, "R.nn.dropout(x, rate=0.5)"),
    "dropout_dyn": (XS, "R.nn.dropout(x)"),
    "prelu": (NCHW + ", a: R.Tensor((4,), 'float32')", "R.nn.prelu(x, a, axis=1)"),
    "prelu_dyn": (XS + ", a: R.Tensor((8,), 'float32')", "R.nn.prelu(x, a, axis=1)"),
    "prelu_one_alpha": (X + ", a: R.Tensor((1,), 'float32')", "R.nn.prelu(x, a, axis=1)"),
    "prelu_one_alpha_one_channel": ("x: R.Tensor((4, 1), 'float32'), a: R.Tensor((1,), 'float32')",
                                    "R.nn.prelu(x, a, axis=1)"),
    # creation
    "eye": (X, "R.eye(64, 64, 0, 'float32')"),
    "eye_small": (X, "R.eye(4, 4, 1, 'float32')"),
    "eye_dyn": (XS, "R.eye(s, 8, 1, 'float32')"),
    "eye_like": ("x: R.Tensor((64, 64), 'float32')", "R.eye_like(x, 0)"),
    "eye_like_dyn": ("x: R.Tensor((s, s), 'float32')", "R.eye_like(x, 1)"),
    "hamming_window": (X, "R.hamming_window(R.prim_value(2048), R.prim_value(1), R.prim_value(0.54), "
                          + "R.prim_value(0.46), 'float32')"),
    "shape_to_tensor": (X, "R.shape_to_tensor(R.shape([4, 8]))"),
    "shape_to_tensor_dyn": (XS, "R.shape_to_tensor(R.shape([s, 8]))"),
    # broadcast, injective
    "outer": (V4 + ", " + V8, "R.outer(x, y)"),
    "outer_dyn": ("x: R.Tensor((s,), 'float32'), " + V8, "R.outer(x, y)"),
    "outer_unit": ("x: R.Tensor((1,), 'float32'), y: R.Tensor((1,), 'float32')", "R.outer(x, y)"),
    "one_hot": ("i: R.Tensor((4,), 'int64')", f"R.one_hot(i, {ONES}, depth=5, axis=-1)"),
    "one_hot_axis0": ("i: R.Tensor((4,), 'int64')", f"R.one_hot(i, {ONES}, depth=5, axis=0)"),
    "one_hot_dyn": ("i: R.Tensor((s,), 'int64')", f"R.one_hot(i, {ONES}, depth=5, axis=-1)"),
    "meshgrid": (V4 + ", " + V8, "R.meshgrid((x, y), indexing='ij')"),
    "meshgrid_xy": (V4 + ", " + V8, "R.meshgrid((x, y), indexing='xy')"),
    "meshgrid_dyn": ("x: R.Tensor((s,), 'float32'), " + V8, "R.meshgrid((x, y), indexing='ij')"),
    "meshgrid_single": (V4, "R.meshgrid((x,), indexing='ij')"),
    "meshgrid_unit": ("x: R.Tensor((1,), 'float32'), y: R.Tensor((1,), 'float32')", "R.meshgrid((x, y))"),
    "batch_flatten": ("x: R.Tensor((2, 3, 4), 'float32')", "R.nn.batch_flatten(x)"),
    "batch_flatten_2d": ("x: R.Tensor((2, 12), 'float32')", "R.nn.batch_flatten(x)"),
    "batch_flatten_dyn": ("x: R.Tensor((s, 3, 4), 'float32')", "R.nn.batch_flatten(x)"),
    "affine_grid": ("t: R.Tensor((1, 2, 3), 'float32')", "R.image.affine_grid(t, R.shape([8, 8]))"),
    "affine_grid_dyn": ("t: R.Tensor((s, 2, 3), 'float32')", "R.image.affine_grid(t, R.shape([8, 8]))"),
    "resize2d": (NCHW, "R.image.resize2d(x, R.shape([16, 16]))"),
    "resize2d_same": (NCHW, "R.image.resize2d(x, R.shape([8, 8]))"),
    "resize2d_nearest": (NCHW, "R.image.resize2d(x, R.shape([16, 16]), method='nearest_neighbor')"),
    "resize2d_cubic": (NCHW, "R.image.resize2d(x, R.shape([16, 16]), method='cubic')"),
    "resize2d_align": (NCHW, "R.image.resize2d(x, R.shape([16, 16]), coordinate_transformation_mode='align_corners')"),
    "resize2d_dyn_batch": ("x: R.Tensor((s, 4, 8, 8), 'float32')", "R.image.resize2d(x, R.shape([16, 16]))"),
    "resize2d_dyn_channel": ("x: R.Tensor((1, s, 8, 8), 'float32')", "R.image.resize2d(x, R.shape([16, 16]))"),
    "resize2d_dyn_height": ("x: R.Tensor((1, 4, s, 8), 'float32')", "R.image.resize2d(x, R.shape([16, 16]))"),
    "resize2d_dyn_nearest": ("x: R.Tensor((1, 4, 8, s), 'float32')",
                             "R.image.resize2d(x, R.shape([16, 16]), method='nearest_neighbor')"),
    # reductions
    "collapse_sum_like": (X + ", " + V8, "R.collapse_sum_like(x, y)"),
    "collapse_sum_like_same": (XY, "R.collapse_sum_like(x, y)"),
    "collapse_sum_like_keepdims": (X + ", y: R.Tensor((1, 8), 'float32')", "R.collapse_sum_like(x, y)"),
    "collapse_sum_like_unit": ("x: R.Tensor((1, 8), 'float32'), " + V8, "R.collapse_sum_like(x, y)"),
    "collapse_sum_like_dyn": (XS + ", " + V8, "R.collapse_sum_like(x, y)"),
    "collapse_sum_like_same_dyn": (XS + ", y: R.Tensor((s, 8), 'float32')", "R.collapse_sum_like(x, y)"),
    "conv1d_transpose": ("x: R.Tensor((1, 4, 8), 'float32'), w: R.Tensor((4, 6, 3), 'float32')",
                         "R.nn.conv1d_transpose(x, w)"),
    "conv2d_transpose": (NCHW + ", w: R.Tensor((4, 6, 3, 3), 'float32')", "R.nn.conv2d_transpose(x, w)"),
    "conv2d_transpose_dyn": ("x: R.Tensor((1, 4, s, s), 'float32'), w: R.Tensor((4, 6, 3, 3), 'float32')",
                             "R.nn.conv2d_transpose(x, w, strides=[2, 2])"),
    "instance_norm": (NCHW + NORM, "R.nn.instance_norm(x, g, b, channel_axis=1, axes=[2, 3])"),
    "instance_norm_dyn": ("x: R.Tensor((1, 4, s, s), 'float32')" + NORM,
                          "R.nn.instance_norm(x, g, b, channel_axis=1, axes=[2, 3])"),
    "roi_pool": (NCHW + ROIS, "R.vision.roi_pool(x, r, pooled_size=[2, 2], spatial_scale=1.0)"),
    "roi_pool_dyn": ("x: R.Tensor((1, 4, s, s), 'float32')" + ROIS,
                     "R.vision.roi_pool(x, r, pooled_size=[2, 2], spatial_scale=1.0)"),
    # einsum
    "einsum_matmul": (X + ", y: R.Tensor((8, 6), 'float32')", "R.einsum((x, y), 'ij,jk->ik')"),
    "einsum_matmul_implicit": (X + ", y: R.Tensor((8, 6), 'float32')", "R.einsum((x, y), 'ij,jk')"),
    "einsum_matmul_dyn": (XS + ", y: R.Tensor((8, 6), 'float32')", "R.einsum((x, y), 'ij,jk->ik')"),
    "einsum_bmm": ("x: R.Tensor((2, 4, 8), 'float32'), y: R.Tensor((2, 8, 6), 'float32')",
                   "R.einsum((x, y), 'bij,bjk->bik')"),
    "einsum_unit_contraction": ("x: R.Tensor((4, 1), 'float32'), y: R.Tensor((1, 6), 'float32')",
                                "R.einsum((x, y), 'ij,jk->ik')"),
    "einsum_dot": ("x: R.Tensor((4,), 'float32'), y: R.Tensor((4,), 'float32')", "R.einsum((x, y), 'i,i->')"),
    "einsum_row_dot": (XY, "R.einsum((x, y), 'ij,ij->i')"),
    "einsum_three": (X + ", y: R.Tensor((8, 6), 'float32'), z: R.Tensor((6,), 'float32')",
                     "R.einsum((x, y, z), 'ij,jk,k->i')"),
    "einsum_sum": (X, "R.einsum((x,), 'ij->i')"),
    "einsum_product": (XY, "R.einsum((x, y), 'ij,ij->ij')"),
    "einsum_product_dyn": (XS + ", y: R.Tensor((s, 8), 'float32')", "R.einsum((x, y), 'ij,ij->ij')"),
    "einsum_row": (X + ", " + V8, "R.einsum((x, y), 'ij,j->ij')"),
    "einsum_unit_row": (X + ", y: R.Tensor((1, 8), 'float32')", "R.einsum((x, y), 'ij,ij->ij')"),
    "einsum_unit_both": ("x: R.Tensor((1, 8), 'float32'), y: R.Tensor((1, 8), 'float32')",
                         "R.einsum((x, y), 'ij,ij->ij')"),
    "einsum_unit_outer": ("x: R.Tensor((4, 1), 'float32'), y: R.Tensor((1, 8), 'float32')",
                          "R.einsum((x, y), 'ij,ij->ij')"),
    "einsum_outer": (V4 + ", " + V8, "R.einsum((x, y), 'i,j->ij')"),
    "einsum_identity": (X, "R.einsum((x,), 'ij->ij')"),
    "einsum_transpose": (X, "R.einsum((x,), 'ij->ji')"),
    "einsum_transpose_implicit": (X, "R.einsum((x,), 'ji')"),
    "einsum_transposed_operand": (X + ", y: R.Tensor((8, 4), 'float32')", "R.einsum((x, y), 'ij,ji->ij')"),
    "einsum_diagonal": ("x: R.Tensor((4, 4), 'float32')", "R.einsum((x,), 'ii->i')"),
    "einsum_three_elementwise": (X + ", y: R.Tensor((8,), 'float32'), z: R.Tensor((4, 1), 'float32')",
                                 "R.einsum((x, y, z), 'ij,j,ij->ij')"),
    # opaque
    "scatter_elements": (X + ", i: R.Tensor((2, 8), 'int64'), u: R.Tensor((2, 8), 'float32')",
                         "R.scatter_elements(x, i, u, axis=0)"),
    "scatter_elements_add": (X + ", i: R.Tensor((2, 8), 'int64'), u: R.Tensor((2, 8), 'float32')",
                             "R.scatter_elements(x, i, u, axis=0, reduction='add')"),
    "scatter_nd": (X + ", i: R.Tensor((2, 1), 'int64'), u: R.Tensor((2, 8), 'float32')",
                   "R.scatter_nd(x, i, u, reduction='update')"),
    "index_put": (X + ", i: R.Tensor((2,), 'int64'), j: R.Tensor((2,), 'int64'), v: R.Tensor((2,), 'float32')",
                  "R.index_put(x, (i, j), v, accumulate=False)"),
    "index_put_accumulate": (X + ", i: R.Tensor((2,), 'int64'), j: R.Tensor((2,), 'int64'), "
                                 "v: R.Tensor((2,), 'float32')", "R.index_put(x, (i, j), v, accumulate=True)"),
    "slice_scatter": (X + ", y: R.Tensor((2, 8), 'float32')",
                      "R.slice_scatter(x, y, R.prim_value(0), R.prim_value(2), R.prim_value(1), axis=0)"),
    "slice_scatter_step": (X + ", y: R.Tensor((4, 2), 'float32')",
                           "R.slice_scatter(x, y, R.prim_value(0), R.prim_value(4), R.prim_value(2), axis=1)"),
    "median": (X, "R.median(x, axis=[1])"),
    "median_all": (X, "R.median(x)"),
    "bucketize": (X + ", b: R.Tensor((5,), 'float32')", "R.bucketize(x, b)"),
    "bucketize_dyn": (XS + ", b: R.Tensor((5,), 'float32')", "R.bucketize(x, b)"),
    "nll_loss": (X + ", t: R.Tensor((4,), 'int64')", "R.nn.nll_loss(x, t)"),
    "nll_loss_weights": (X + ", t: R.Tensor((4,), 'int64'), w: R.Tensor((8,), 'float32')",
                         "R.nn.nll_loss(x, t, w, reduction='sum')"),
    "nll_loss_none": (X + ", t: R.Tensor((4,), 'int64')", "R.nn.nll_loss(x, t, reduction='none')"),
    "grid_sample": (NCHW + ", g: R.Tensor((1, 6, 6, 2), 'float32')", "R.image.grid_sample(x, g)"),
    "grid_sample_nearest": (NCHW + ", g: R.Tensor((1, 6, 6, 2), 'float32')",
                            "R.image.grid_sample(x, g, method='nearest')"),
    "roi_align": (NCHW + ROIS, "R.vision.roi_align(x, r, pooled_size=[2, 2], spatial_scale=1.0)"),
    "roi_align_max": (NCHW + ROIS, "R.vision.roi_align(x, r, pooled_size=[2, 2], spatial_scale=1.0, mode='max')"),
}


def _call_pattern(mod) -> int:
    """memcore's op_pattern of the one op call of ``main``, its tensor arguments as inputs."""
    func = next(f for f in mod.functions.values() if isinstance(f, Function))
    (binding,) = [b for blk in func.body.blocks for b in blk.bindings if type(b.value) is Call]
    call, inputs = binding.value, []
    for a in call.args:
        fields = a.fields if type(a) is Tuple else (a,)
        inputs.extend(f for f in fields if isinstance(getattr(f, "ty", None), TensorType))
    return op_pattern(call, inputs, binding.var.ty)


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_pattern_is_tvms(case):
    text = single_op_text(*CASES[case])
    theirs = _tvm_patterns(tvm_from_source(text))
    assert len(theirs) == 1, theirs
    mod = memcore_py.parse(text)
    ours = [p for _, p in _memcore_patterns(mod)] or [_call_pattern(mod)]
    assert ours == [theirs[0][1]]
