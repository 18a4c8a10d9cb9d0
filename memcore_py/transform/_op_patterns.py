"""The FuseOps op pattern of each kernel LowerForPlanning writes, without TIR.

TVM's ``AnnotateTIROpPattern`` reads the pattern off the TIR that ``LegalizeOps`` wrote
(src/relax/analysis/tir_op_pattern_kind.cc): per block, a load whose indices are the store's
is element-wise, one whose indices are a subsequence of the store's (unit dims read at 0)
is a broadcast, one that uses only store variables in any order is injective; a reduction
block is ``kCommReduce`` when it is a pure reduction and ``kOutEWiseFusable`` when it is a
multiply-accumulate (matmul, convolution) or a reduction over shifted indices (pooling); a
reduction followed by an element-wise output block (mean, softmax, normalisations) is
``kOutEWiseFusable``; anything else (a load indexed by another load, an index that uses a
symbolic shape variable) is ``kOpaque``.

Signature-only kernels have no TIR, so :func:`op_pattern` states, per op, what those rules give
on the TIR TVM 0.27 writes for it; the table was read off TVM (LegalizeOps +
AnnotateTIROpPattern on every op of the shipped models and on single-op modules) and
tests/oracle/test_fused_planning_oracle.py checks it kernel by kernel against TVM on every
model. Shape-dependent cases:

- element-wise ops (unary, binary, ``where``, creation): ``kElemWise`` when a tensor input has
  the output's shape or there is no tensor input, else ``kBroadcast`` (every load broadcasts);
- ``broadcast_to``: ``kElemWise`` when it keeps the shape, else ``kBroadcast``;
- ``reshape``/``flatten``: ``kInjective``, ``kOpaque`` when a shape is symbolic (the index
  arithmetic then reads the shape variable); ``concat`` likewise when an input's offset along
  the axis is symbolic;
- ``batch_norm``: ``kInjective`` in inference (``training=False``), else ``kOutEWiseFusable``;
- ``strided_slice``: ``kOpaque`` when a sliced axis is symbolic, ``kElemWise`` when every slice
  starts at 0 with stride 1 (the load indices are the store's), else ``kInjective``;
- ``nn.batch_flatten`` follows ``reshape`` (TVM legalizes it to ``topi.reshape``);
- ``collapse_sum_like``: ``kElemWise`` when the target has the input's shape (a copy), else
  ``kCommReduce``;
- ``meshgrid``: ``kElemWise`` of a single tensor, else ``kBroadcast``;
- ``nn.prelu``: ``kBroadcast`` when ``alpha`` has one element (topi first broadcasts it along
  the axis, reading ``alpha[0]``), else ``kElemWise``;
- ``image.resize2d``: ``kOpaque`` when a spatial extent (``H``, ``W`` of the layout) of the input or
  the output is symbolic (the source index scales by it), else ``kInjective``;
- ``einsum`` (topi's one block, no ellipsis): an operand dim of extent 1 whose subscript has a
  larger extent is read at 0, any other at its subscript's variable; without contracted
  subscripts the block is classified as an element-wise one (per load: same indices as the
  output, in-order subsequence, any order), with contracted ones it is ``kOutEWiseFusable``
  for two operands that each miss an output subscript (``C += A * B``, matmul-like), else
  ``kCommReduce``.

An op outside the table raises :class:`~memcore_py.errors.PassError`: a wrong guess would fuse
differently from TVM without saying so.
"""
from __future__ import annotations

from ..errors import PassError
from ..ir.prim import IntImm, prove_equal

__all__ = ["K_ELEM_WISE", "K_BROADCAST", "K_INJECTIVE", "K_COMM_REDUCE", "K_OUT_EWISE_FUSABLE", "K_TUPLE",
           "K_OPAQUE", "op_pattern"]

#: TVM's ``OpPatternKind`` values (include/tvm/relax/op_attr_types.h).
K_ELEM_WISE, K_BROADCAST, K_INJECTIVE, K_COMM_REDUCE, K_OUT_EWISE_FUSABLE, K_TUPLE, K_OPAQUE = 0, 1, 2, 3, 4, 7, 8

_UNARY = ("exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "negative", "sin", "cos", "erf", "floor", "ceil",
          "round", "abs", "log2", "log10", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
          "isnan", "isinf", "isfinite", "square", "sign", "trunc", "bitwise_not", "logical_not", "astype", "clip",
          "tril", "triu", "nn.relu", "nn.gelu", "nn.gelu_tanh", "nn.silu", "nn.leakyrelu", "nn.selu",
          "nn.softplus", "quantize", "dequantize")
_BINARY = ("add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum", "equal",
           "not_equal", "less", "less_equal", "greater", "greater_equal", "mod", "floor_mod", "bitwise_and",
           "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor", "left_shift", "right_shift",
           "atan2", "log_add_exp", "where")
_CREATION = ("zeros", "ones", "full", "arange", "zeros_like", "ones_like", "full_like", "eye", "eye_like",
             "hamming_window", "shape_to_tensor")
_ELEMENT_WISE = frozenset(f"relax.{n}" for n in _UNARY + _BINARY + _CREATION)

_FIXED = {
    **{f"relax.{n}": K_BROADCAST for n in ("squeeze", "expand_dims", "stack", "outer", "one_hot")},
    **{f"relax.{n}": K_INJECTIVE for n in ("permute_dims", "split", "tile", "repeat", "flip", "nn.pad",
                                           "image.affine_grid")},
    **{f"relax.{n}": K_COMM_REDUCE for n in ("sum", "max", "min", "prod")},
    **{f"relax.{n}": K_OUT_EWISE_FUSABLE for n in (
        "matmul", "nn.conv1d", "nn.conv2d", "nn.conv3d", "mean", "variance", "std", "argmax", "argmin",
        "nn.softmax", "nn.log_softmax", "nn.layer_norm", "nn.rms_norm", "nn.group_norm", "nn.max_pool1d",
        "nn.max_pool2d", "nn.max_pool3d", "nn.avg_pool1d", "nn.avg_pool2d", "nn.avg_pool3d",
        "nn.adaptive_avg_pool1d", "nn.adaptive_avg_pool2d", "nn.adaptive_avg_pool3d", "nn.conv1d_transpose",
        "nn.conv2d_transpose", "nn.instance_norm", "vision.roi_pool")},
    **{f"relax.{n}": K_OPAQUE for n in (
        "take", "gather_elements", "gather_nd", "index_tensor", "scatter_elements", "scatter_nd", "index_put",
        "slice_scatter", "median", "bucketize", "nn.nll_loss", "image.grid_sample", "vision.roi_align")},
    # a tuple of the output and its (all-ones) mask, both element-wise
    "relax.nn.dropout": K_ELEM_WISE,
    # not legalized by TVM 0.27's LegalizeOps: the kernel of its default pipeline's DispatchSortScan
    # (topi's scan or sort, an opaque TIR loop nest)
    **{f"relax.{n}": K_OPAQUE for n in ("cumsum", "cumprod", "sort", "argsort", "topk")},
    "relax.nn.attention": K_OUT_EWISE_FUSABLE,
    "relax.nn.attention_bias": K_OUT_EWISE_FUSABLE,
}


def _dims(ty):
    return tuple(ty.shape)


def _same_shape(a, b) -> bool:
    return len(a) == len(b) and all(_dim_equal(x, y) for x, y in zip(a, b))


def _dim_equal(x, y) -> bool:
    if type(x) is IntImm and type(y) is IntImm:
        return x.value == y.value
    return prove_equal(x, y)


def _static(shape) -> bool:
    return all(type(d) is IntImm for d in shape)


def op_pattern(call, inputs, out_ty) -> int:
    """The ``op_pattern`` TVM's AnnotateTIROpPattern gives the kernel TVM's LegalizeOps writes
    for ``call`` (module docstring).

    Parameters
    ----------
    call : Call
        The high-level op call.
    inputs : list of Expr
        The kernel's tensor inputs (what LowerForPlanning passes to ``call_tir``).
    out_ty : TensorType or TupleType
        The kernel's result type.

    Raises
    ------
    PassError
        The op is not in the table.
    """
    name = call.op.name
    if name in _ELEMENT_WISE:
        if not inputs or any(_same_shape(_dims(a.ty), _dims(out_ty)) for a in inputs):
            return K_ELEM_WISE
        return K_BROADCAST
    if name == "relax.broadcast_to":
        return K_ELEM_WISE if _same_shape(_dims(inputs[0].ty), _dims(out_ty)) else K_BROADCAST
    if name in ("relax.reshape", "relax.flatten", "relax.nn.batch_flatten"):
        return K_INJECTIVE if _static(_dims(inputs[0].ty)) and _static(_dims(out_ty)) else K_OPAQUE
    if name == "relax.concat":
        return _concat_pattern(call, inputs)
    if name == "relax.nn.batch_norm":  # training: mean and variance are reduced from the data
        return K_OUT_EWISE_FUSABLE if call.attrs.get("training", True) else K_INJECTIVE
    if name == "relax.strided_slice":
        return _strided_slice_pattern(call, inputs[0].ty)
    rule = _SHAPE_RULES.get(name)
    if rule is not None:
        return rule(call, inputs, out_ty)
    kind = _FIXED.get(name)
    if kind is None:
        raise PassError(f"LowerForPlanning(fuse=True): no FuseOps op pattern is known for '{name}' "
                        "(memcore_py/transform/_op_patterns.py lists the supported ops)")
    return kind


def _concat_pattern(call, inputs) -> int:
    """Input ``k`` is read at ``index - offset_k``: a symbolic offset (an extent of an input
    before the last, along the axis) makes the kernel opaque."""
    axis = call.attrs.get("axis", 0)
    axis = axis.value if isinstance(axis, IntImm) else int(axis)
    for a in inputs[:-1]:
        dims = _dims(a.ty)
        if type(dims[axis]) is not IntImm:
            return K_OPAQUE
    return K_INJECTIVE


def _strided_slice_pattern(call, in_ty) -> int:
    _, axes, begin, _, *strides = call.args
    shape = _dims(in_ty)
    begins = _values(begin)
    steps = _values(strides[0]) if strides else [1] * len(begins)
    axes = _values(axes)
    if None in begins or None in steps or None in axes:
        return K_OPAQUE
    if any(type(shape[ax]) is not IntImm for ax in axes):
        return K_OPAQUE  # the begin is clamped against the symbolic extent in the index
    for ax, b, st in zip(axes, begins, steps):
        extent = shape[ax].value
        if b < 0:
            b += extent
        if st != 1 or max(b, 0) != 0:
            return K_INJECTIVE
    return K_ELEM_WISE


def _values(tup) -> list:
    """The integers of a tuple of PrimValues (None for a symbolic one)."""
    out = []
    for f in getattr(tup, "fields", ()):
        v = getattr(f, "value", None)
        out.append(v.value if type(v) is IntImm else None)
    return out


def _collapse_sum_like_pattern(call, inputs, out_ty) -> int:
    return K_ELEM_WISE if _same_shape(_dims(inputs[0].ty), _dims(out_ty)) else K_COMM_REDUCE


def _meshgrid_pattern(call, inputs, out_ty) -> int:
    return K_ELEM_WISE if len(inputs) == 1 else K_BROADCAST


def _prelu_pattern(call, inputs, out_ty) -> int:
    (extent,) = _dims(inputs[1].ty)
    return K_BROADCAST if type(extent) is IntImm and extent.value == 1 else K_ELEM_WISE


def _resize2d_pattern(call, inputs, out_ty) -> int:
    layout = str(call.attrs.get("layout", "NCHW"))
    spatial = [layout.index(c) for c in "HW"]
    for shape in (_dims(inputs[0].ty), _dims(out_ty)):
        if any(type(shape[i]) is not IntImm for i in spatial):
            return K_OPAQUE
    return K_INJECTIVE


def _einsum_pattern(call, inputs, out_ty) -> int:
    """AnnotateTIROpPattern's rules on topi's einsum block (module docstring)."""
    sub = str(call.attrs["subscripts"]).replace(" ", "")
    if "." in sub:
        raise PassError("LowerForPlanning(fuse=True): no FuseOps op pattern is known for 'relax.einsum' "
                        f"with an ellipsis (subscripts {sub!r})")
    lhs, _, out = sub.partition("->")
    terms = lhs.split(",")
    shapes = [_dims(a.ty) for a in inputs]
    extent = {}
    for term, shape in zip(terms, shapes):
        for c, d in zip(term, shape):
            if c not in extent or _is_one(extent[c]):
                extent[c] = d
    loads = [[None if _is_one(d) and not _is_one(extent[c]) else c for c, d in zip(term, shape)]
             for term, shape in zip(terms, shapes)]
    store = list(out) if "->" in sub else sorted(c for c in extent if lhs.count(c) == 1)
    if all(c in store for term in terms for c in term):
        return _index_pattern(store, loads)
    if len(loads) == 2 and all(any(c not in load for c in store) for load in loads):
        return K_OUT_EWISE_FUSABLE
    return K_COMM_REDUCE


def _index_pattern(store, loads) -> int:
    """The element-wise classification of one block: store indices ``store``, each load's
    indices (``None`` for a unit dim read at 0)."""
    kind, elem = K_ELEM_WISE, False
    for load in loads:
        if load == store:
            elem = True
        elif _in_order(store, [c for c in load if c is not None]):
            kind = max(kind, K_BROADCAST)
        else:
            kind = max(kind, K_INJECTIVE)
    return K_ELEM_WISE if kind == K_BROADCAST and elem else kind


def _in_order(store, load) -> bool:
    j = 0
    for c in load:
        while j < len(store) and store[j] != c:
            j += 1
        if j == len(store):
            return False
    return True


def _is_one(d) -> bool:
    return type(d) is IntImm and d.value == 1


_SHAPE_RULES = {
    "relax.collapse_sum_like": _collapse_sum_like_pattern,
    "relax.meshgrid": _meshgrid_pattern,
    "relax.nn.prelu": _prelu_pattern,
    "relax.image.resize2d": _resize2d_pattern,
    "relax.einsum": _einsum_pattern,
}
