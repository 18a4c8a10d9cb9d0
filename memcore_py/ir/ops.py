"""The op table: every operator memcore knows, registered once with all its properties.

Each op has one :func:`~memcore_py.ir.op.register_op` call below, with its purity, storage
aliasing, in-place capability, legalized name, argument counts, TVMScript attributes and its
type rule (the properties are described in :mod:`memcore_py.ir.op`). The type rules are
defined here too, above the registrations: adding an op touches this module only.

A type rule is ``rule(call, arg_types) -> Type``: ``call`` is the :class:`Call`, whose
argument count :func:`~memcore_py.ir.infer.infer_type` has checked against ``n_args``,
and ``arg_types`` the types of its arguments. It raises :class:`IRError` naming the op for
ill-typed calls. Sizes that are constant fold to integers; symbolic ones are written as
TVM writes them: reshape resolves a ``-1`` with TVM's canonical simplification
(:mod:`memcore_py.ir.simplify`: ``s * 256 // (s * 32)`` is ``8``); elsewhere they are
the plain tree (concat's ``n + n``, which TVM writes ``n * 2``: equal by arithmetic, and
what TVM prints is kept when a text carries the annotation). The high-level ops' rules
live in the sibling modules :mod:`~memcore_py.ir.op_rules_tensor` and
:mod:`~memcore_py.ir.op_rules_nn` (shared helpers: :mod:`~memcore_py.ir.op_rules_common`); their
schemas (arguments, attributes in TVM's order, defaults) are declared here with each
registration. Results were checked against TVM 0.27's ``BlockBuilder.normalize`` for the
cases in the tests.

This module is imported by ``memcore_py.ir``, so the ops exist once the package is imported.
"""
from __future__ import annotations

from ..errors import IRError
from .expr import DataTypeImm, Expr, PrimValue, ShapeExpr, StringImm
from .infer import packed_call_type
from . import op_rules_nn as rn
from . import op_rules_tensor as rt
from .op import get_op, list_ops, register_op
from .op_schema import ABSENT, REQUIRED, Attr, make_schema
from .prim import Add, FloatImm, FloorDiv, IntImm, Max, Min, Mul, Sub
from .prim_arith import fold_floordiv, fold_mul
from .simplify import UnsupportedSimplify, simplify
from .types import VOID, ObjectType, ShapeType, TensorType, TupleType, check_dtype, tensor_type_of, type_contradiction
from .op_rules_common import (
    _broadcast,
    _fmt_shape,
    _int_attr,
    _int_attr_value,
    _int_list,
    _norm_axis,
    _product,
    _shape_values,
    _static,
    _static_product,
    _tensor,
)

__all__ = ["SHARES_STORAGE_OPS", "VIEW_MEMORY_OPS", "builtin_alloc_own_type"]


# ---------------------------------------------------------------------------- type rules
# -- element-wise -----------------------------------------------------------------------------
def _binary(result_dtype=None):
    def rule(call, ts):
        name = call.op.name
        a, b = _tensor(ts[0], name, 0), _tensor(ts[1], name, 1)
        if a.dtype and b.dtype and a.dtype != b.dtype:
            raise IRError(f"{name}: operands must have the same dtype; got {a.dtype} and {b.dtype}")
        shape, ndim = _broadcast(name, a, b)
        dtype = result_dtype or (a.dtype if a.dtype else b.dtype)
        vdevice = a.vdevice or b.vdevice
        if shape is None:
            return TensorType(None, dtype, ndim, vdevice)
        return tensor_type_of(shape, dtype, vdevice)  # dims and dtypes of valid types

    return rule


def _unary(call, ts):
    return _tensor(ts[0], call.op.name)


def _astype(call, ts):
    t = _tensor(ts[0], call.op.name)
    dtype = call.attrs.get("dtype")
    if not isinstance(dtype, str) or not dtype:
        raise IRError(f"relax.astype needs a dtype attribute; got {dtype!r}")
    return TensorType(t.shape, dtype, t.ndim, t.vdevice)


def _quantize(call, ts):
    """``R.quantize`` / ``R.dequantize``: the data's shape in ``out_dtype`` (the scale and zero
    point are per-tensor scalars or per-axis vectors)."""
    name = call.op.name
    t = _tensor(ts[0], name)
    _tensor(ts[1], name, 1)  # the scale
    _tensor(ts[2], name, 2)  # the zero point
    dtype = call.attrs.get("out_dtype")
    if not isinstance(dtype, str) or not dtype:
        raise IRError(f"{name} needs an out_dtype attribute; got {dtype!r}")
    return TensorType(t.shape, dtype, t.ndim, t.vdevice)


def _all_class_nms(call, ts):
    """``R.vision.all_class_non_max_suppression`` (``output_format="onnx"``): the selected
    ``[batch, class, box]`` rows, one per (batch, class, box) at most, and their count."""
    name = call.op.name
    boxes, scores = _tensor(ts[0], name, 0), _tensor(ts[1], name, 1)
    if call.attrs.get("output_format", "onnx") != "onnx":
        raise IRError(f"{name}: output_format={call.attrs.get('output_format')!r} is not supported ('onnx' is)")
    dims = [_static(d) for d in (boxes.shape or ())[1:2] + (scores.shape or ())[:2]]
    rows = IntImm(dims[0] * dims[1] * dims[2]) if len(dims) == 3 and None not in dims else None
    indices = TensorType(None if rows is None else (rows, IntImm(3)), "int64", 2)
    return TupleType([indices, TensorType((IntImm(1),), "int64")])


def _unique(call, ts):
    """``R.unique(x, sorted, return_index, return_inverse, return_counts[, axis])``: the unique
    values (rank 1, or ``x``'s rank along an axis; extents unknown until run time) and the
    int64 vectors asked for, a tuple when any is."""
    name = call.op.name
    t = _tensor(ts[0], name)
    flags = []
    for i in (2, 3, 4):
        arg = call.args[i]
        if not isinstance(arg, PrimValue) or _static(arg.value) is None:
            raise IRError(f"{name}: argument {i} must be a constant bool; got {arg!r}")
        flags.append(bool(_static(arg.value)))
    values = TensorType(None, t.dtype, t.ndim if len(call.args) > 5 else 1, t.vdevice)
    n_vectors = sum(flags)
    if not n_vectors:
        return values
    return TupleType([values] + [TensorType(None, "int64", 1, t.vdevice)] * n_vectors)


def _size(call, ts):
    """``R.size``: the element count of a tensor, a rank-0 int64 tensor."""
    _tensor(ts[0], call.op.name)
    return TensorType((), "int64")


# -- matmul -----------------------------------------------------------------------------------
def _matmul(call, ts):
    name = call.op.name
    a, b = _tensor(ts[0], name, 0), _tensor(ts[1], name, 1)
    out_dtype = call.attrs.get("out_dtype")
    if out_dtype in (None, "", "void"):
        if a.dtype and b.dtype and a.dtype != b.dtype:
            raise IRError(f"{name}: operands must have the same dtype; got {a.dtype} and {b.dtype}")
        out_dtype = a.dtype or b.dtype
        written = False
    else:
        written = True
    if a.shape is None or b.shape is None:
        if a.ndim == -1 or b.ndim == -1:
            return TensorType(None, out_dtype)
        nd = max(a.ndim, b.ndim) - (a.ndim == 1) - (b.ndim == 1)
        return TensorType(None, out_dtype, max(nd, 0))
    sa, sb = list(a.shape), list(b.shape)
    if not sa or not sb:
        raise IRError(f"{name}: operands must have rank >= 1; got {_fmt_shape(a.shape)} and {_fmt_shape(b.shape)}")
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    if a_vec:
        sa = [IntImm(1)] + sa
    if b_vec:
        sb = sb + [IntImm(1)]
    k1, k2 = sa[-1], sb[-2]
    s1, s2 = _static(k1), _static(k2)
    if s1 is not None and s2 is not None and s1 != s2:
        raise IRError(f"{name}: reduction dims differ: {_fmt_shape(a.shape)} @ {_fmt_shape(b.shape)}")
    if written:
        check_dtype(out_dtype)
    # a checked or the operands' dtype, the operands' dims
    batch_a = tensor_type_of(tuple(sa[:-2]), out_dtype)
    batch_b = tensor_type_of(tuple(sb[:-2]), out_dtype)
    batch, nd = _broadcast(name, batch_a, batch_b)
    tail = []
    if not a_vec:
        tail.append(sa[-2])
    if not b_vec:
        tail.append(sb[-1])
    if batch is None:
        return TensorType(None, out_dtype, nd + len(tail))
    return tensor_type_of(tuple(batch) + tuple(tail), out_dtype, a.vdevice)


# -- shape ops --------------------------------------------------------------------------------
def _reshape(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    values = _shape_values(call.args[1], ts[1], name)
    if values is None:
        return TensorType(None, t.dtype, ts[1].ndim, t.vdevice)
    n_missing = 0
    for v in values:
        if _static(v) == -1:
            n_missing += 1
    if n_missing:
        if n_missing > 1:
            raise IRError(f"{name}: at most one -1 in the new shape; got {_fmt_shape(values)}")
        if t.shape is None:
            return TensorType(None, t.dtype, len(values), t.vdevice)
        values = _resolve_new_shape(name, t.shape, values)
    elif t.shape is not None:
        st, sn = _static_product(t.shape), _static_product(values)
        if st is not None and sn is not None and st != sn:
            raise IRError(
                f"{name}: cannot reshape {_fmt_shape(t.shape)} ({st} elements) to {_fmt_shape(values)} ({sn} elements)"
            )
    # a shape's values are PrimExprs (ShapeExpr and ShapeType keep them so), the dtype the input's
    return tensor_type_of(tuple(values), t.dtype, t.vdevice)


def _resolve_new_shape(name, shape, values):
    """The new shape with its ``-1`` resolved as TVM's reshape constructor resolves it
    (``ConvertNewShapeToExpr``, ``src/relax/op/tensor/manipulate.cc``): a literal 0 copies the
    input's dim; the missing dim is ``Simplify(floordiv(old_prod, new_prod))``, where
    ``old_prod`` multiplies every input dim and ``new_prod`` every new dim but the ``-1``
    and the literal zeros, left to right from 1 with TVM's constant folding, and ``Simplify``
    is TVM's analyzer without variable bounds (:func:`memcore_py.ir.simplify.simplify`:
    ``s * 256 // (s * 32)`` is ``8``). Where that port does not cover a node of the quotient,
    the quotient is kept unsimplified."""
    values = list(values)
    for i, v in enumerate(values):
        if _static(v) == 0:
            if i >= len(shape):
                raise IRError(f"{name}: a 0 in the new shape {_fmt_shape(values)} copies input dim {i}, "
                              f"but the input {_fmt_shape(shape)} has rank {len(shape)}")
            values[i] = shape[i]
    old_prod = IntImm(1)
    for d in shape:
        old_prod = fold_mul(old_prod, d)
    new_prod = IntImm(1)
    for d in values:
        s = _static(d)
        if s is None or s > 0:
            new_prod = fold_mul(new_prod, d)
    so, sn = _static(old_prod), _static(new_prod)
    if sn == 0 or (so is not None and sn is not None and so % sn):
        raise IRError(f"{name}: cannot reshape {_fmt_shape(shape)} to {_fmt_shape(values)}")
    missing = fold_floordiv(old_prod, new_prod)
    try:
        missing = simplify(missing)
    except UnsupportedSimplify:
        pass
    return tuple(missing if _static(v) == -1 else v for v in values)


#: Most sections ``R.split(x, indices_or_sections=N)`` may ask for (see :func:`_split`).
MAX_SPLIT_SECTIONS = 2**16


def _split(call, ts):
    """``R.split``: a tuple of the parts of ``x`` along ``axis``.

    ``indices_or_sections=N`` (an int) cuts the axis into ``N`` parts of ``ceil(extent / N)``
    elements, the last ones shorter or empty, as TVM 0.27 does: TVM accepts any
    ``0 < N < 2**31``, including more sections than a static extent has elements (the extra
    parts are empty). The result has ``N`` fields, so its cost is linear in ``N``; memcore
    refuses ``N > MAX_SPLIT_SECTIONS`` (65536) with an :class:`IRError` naming the op and
    ``N`` before building any field (TVM refuses ``N >= 2**31``, and runs out of memory long
    before that); models split a tensor into far fewer parts.

    A list of indices cuts the axis at those indices (TVM's clamping to the extent), one
    part more than there are indices; the list is as long as the text that wrote it.
    """
    name = call.op.name
    t = _tensor(ts[0], name)
    ios = call.attrs.get("indices_or_sections")
    axis = _int_attr(call, "axis", 0)
    if ios is None:
        raise IRError(f"{name} needs an indices_or_sections attribute")
    if t.shape is None:
        raise IRError(f"{name} needs a tensor of known shape; got {t!r}")
    axis = _norm_axis(axis, t.ndim, name)
    dim = t.shape[axis]
    if isinstance(ios, (int, IntImm)):
        sizes = _split_section_sizes(name, dim, _int_attr_value(ios))
    else:
        sizes = _split_index_sizes(dim, _int_list(ios))
    fields = []
    for s in sizes:
        shape = list(t.shape)
        shape[axis] = s
        fields.append(TensorType(tuple(shape), t.dtype, vdevice=t.vdevice))
    return TupleType(fields)


def _split_section_sizes(name, dim, k):
    """The extents of ``k`` equal sections of an axis of extent ``dim`` (see :func:`_split`)."""
    if k <= 0:
        raise IRError(f"{name}: indices_or_sections must be positive; got {k}")
    if k > MAX_SPLIT_SECTIONS:
        raise IRError(f"{name}: indices_or_sections = {k} sections is more than memcore supports "
                      f"(at most {MAX_SPLIT_SECTIONS}; TVM refuses 2**31 or more)")
    sdim = _static(dim)
    if sdim is not None:
        part = -(-sdim // k)
        return [IntImm(min(part, max(sdim - i * part, 0))) for i in range(k)]
    if k == 1:
        return [dim]
    part = FloorDiv(Add(dim, IntImm(k - 1)), IntImm(k))
    last = Sub(dim, part) if k == 2 else Sub(dim, Mul(part, IntImm(k - 1)))
    return [part] * (k - 1) + [last]


def _split_index_sizes(dim, idx):
    """The extents of the parts of an axis of extent ``dim`` cut at the indices ``idx``,
    written as TVM writes them."""
    sdim = _static(dim)
    bounds = [0] + idx
    sizes = []
    for i, lo in enumerate(bounds):
        if sdim is not None:
            hi = bounds[i + 1] if i + 1 < len(bounds) else sdim
            sizes.append(IntImm(max(min(hi, sdim) - min(lo, sdim), 0)))
        elif i + 1 == len(bounds):  # TVM: max(n - lo, 0)
            sizes.append(Max(Sub(dim, IntImm(lo)), IntImm(0)) if lo else dim)
        elif lo == 0:  # TVM: min(hi, n)
            sizes.append(Min(IntImm(bounds[i + 1]), dim) if bounds[i + 1] else IntImm(0))
        else:  # TVM: max(min(hi, n) - min(lo, n), 0)
            sizes.append(Max(Sub(Min(IntImm(bounds[i + 1]), dim), Min(IntImm(lo), dim)), IntImm(0)))
    return sizes


def _concat(call, ts):
    name = call.op.name
    tt = ts[0]
    if not isinstance(tt, TupleType):
        raise IRError(f"{name} expects a tuple of tensors; got {tt!r}")
    if not tt.fields:
        raise IRError(f"{name} needs at least one tensor")
    fields = [_tensor(f, name, i) for i, f in enumerate(tt.fields)]
    dtype = fields[0].dtype
    for f in fields:
        if f.dtype != dtype:
            raise IRError(f"{name}: all tensors must have the same dtype; got {dtype} and {f.dtype}")
    if any(f.shape is None for f in fields):
        return TensorType(None, dtype, fields[0].ndim)
    ndim = fields[0].ndim
    axis = _norm_axis(_int_attr(call, "axis", 0), ndim, name)
    total = None
    for f in fields:
        if f.ndim != ndim:
            raise IRError(f"{name}: all tensors must have the same rank; got {ndim} and {f.ndim}")
        d = f.shape[axis]
        if total is None:
            total = d
        else:
            st, sd = _static(total), _static(d)
            total = IntImm(st + sd) if st is not None and sd is not None else Add(total, d)
    shape = list(fields[0].shape)
    shape[axis] = total
    return TensorType(tuple(shape), dtype, vdevice=fields[0].vdevice)


def _permute_dims(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    axes = _int_list(call.attrs.get("axes"))
    if t.shape is None:
        return TensorType(None, t.dtype, t.ndim, t.vdevice)
    if axes is None:
        axes = list(range(t.ndim - 1, -1, -1))
    axes = [_norm_axis(a, t.ndim, name) for a in axes]
    if sorted(axes) != list(range(t.ndim)):
        raise IRError(f"{name}: axes must be a permutation of range({t.ndim}); got {axes}")
    return tensor_type_of(tuple([t.shape[a] for a in axes]), t.dtype, t.vdevice)  # the input's dims


def _reduce(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    axis = _int_list(call.attrs.get("axis"))
    keepdims = bool(call.attrs.get("keepdims", False))
    if t.shape is None:
        if keepdims or t.ndim == -1:
            return TensorType(None, t.dtype, t.ndim)
        return TensorType(None, t.dtype, 0 if axis is None else t.ndim - len(axis))
    axes = set(range(t.ndim)) if axis is None else {_norm_axis(a, t.ndim, name) for a in axis}
    shape = []
    for i, d in enumerate(t.shape):
        if i in axes:
            if keepdims:
                shape.append(IntImm(1))
        else:
            shape.append(d)
    return TensorType(tuple(shape), t.dtype, vdevice=t.vdevice)


def _expand_dims(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    axis = _int_list(call.attrs.get("axis"))
    if axis is None:
        raise IRError(f"{name} needs an axis attribute")
    if t.shape is None:
        return TensorType(None, t.dtype, t.ndim + len(axis) if t.ndim != -1 else -1)
    nd = t.ndim + len(axis)
    axes = sorted(_norm_axis(a, nd, name) for a in axis)
    rest = iter(t.shape)
    shape = [IntImm(1) if i in axes else next(rest) for i in range(nd)]
    return tensor_type_of(tuple(shape), t.dtype, t.vdevice)  # the input's dims and 1s


def _squeeze(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    axis = _int_list(call.attrs.get("axis"))
    if t.shape is None:
        return TensorType(None, t.dtype, -1 if axis is None or t.ndim == -1 else t.ndim - len(axis))
    if axis is None:
        shape = [d for d in t.shape if _static(d) != 1]
    else:
        # TVM keeps a listed axis whose static extent is not 1 (torch's squeeze(dim) no-op)
        drop = {_norm_axis(a, t.ndim, name) for a in axis}
        drop = {a for a in drop if _static(t.shape[a]) in (None, 1)}
        shape = [d for i, d in enumerate(t.shape) if i not in drop]
    return TensorType(tuple(shape), t.dtype, vdevice=t.vdevice)


def _flatten(call, ts):
    t = _tensor(ts[0], call.op.name)
    if t.shape is None:
        return TensorType(None, t.dtype, 1)
    if t.ndim == 0:
        return TensorType((IntImm(1),), t.dtype, vdevice=t.vdevice)
    return TensorType((_product(t.shape),), t.dtype, vdevice=t.vdevice)


def _batch_flatten(call, ts):
    t = _tensor(ts[0], call.op.name)
    if t.shape is None or t.ndim < 1:
        return TensorType(None, t.dtype, 2)
    return TensorType((t.shape[0], _product(t.shape[1:])), t.dtype, vdevice=t.vdevice)


def _shape_of(call, ts):
    t = _tensor(ts[0], call.op.name)
    return ShapeType(t.shape, t.ndim)


def _full_like_shape(call, ts):
    values = _shape_values(call.args[0], ts[0], call.op.name)
    dtype = call.attrs.get("dtype", "")
    if values is None:
        return TensorType(None, dtype, ts[0].ndim)
    return TensorType(values, dtype)


# -- lowering-level calls ------------------------------------------------------------------
def _first_ty_arg(call, ts):
    if not call.ty_args:
        raise IRError(f"{call.op.name} needs an output type (out_ty / ty_args)")
    return call.ty_args[0]


def _packed_op(call, ts):
    return packed_call_type(call)


def _void(call, ts):
    return VOID


def _object(call, ts):
    return ObjectType()


def _dtype_arg(e: Expr, opname: str) -> str:
    if isinstance(e, DataTypeImm):
        return e.value
    if isinstance(e, StringImm):
        return e.value
    raise IRError(f"{opname} expects a dtype (R.dtype(...)); got {e!r}")


def _alloc_tensor(shape_index: int, dtype_index: int):
    """The rule of an allocation of a tensor of shape ``args[shape_index]`` and dtype
    ``args[dtype_index]``."""

    def rule(call, ts):
        name = call.op.name
        values = _shape_values(call.args[shape_index], ts[shape_index], name)
        dtype = _dtype_arg(call.args[dtype_index], name)
        if values is None:
            return TensorType(None, dtype, ts[shape_index].ndim)
        return TensorType(values, dtype)

    return rule


def builtin_alloc_own_type(shape, dtype) -> TensorType:
    """The tensor type ``R.builtin.alloc_tensor(shape, dtype, ...)`` has by its arguments
    alone (what the parser gives it without ``ty_args`` or an annotation, and what the
    printer compares ``ty_args`` with to decide whether they must be written)."""
    dt = dtype.value if isinstance(dtype, (DataTypeImm, StringImm)) else ""
    if isinstance(shape, ShapeExpr):
        return TensorType(shape.values, dt)
    sty = getattr(shape, "ty", None)
    if isinstance(sty, ShapeType):
        return TensorType(sty.values, dt, sty.ndim)
    return TensorType(None, dt)


def builtin_alloc_implied_type(own: TensorType, annotation):
    """The type in the ``ty_args`` of an ``R.builtin.alloc_tensor`` bound without them, as
    memcore reads it (TVM stores none): the binding's tensor ``annotation`` (as CallTIRRewrite
    makes them), else ``own``, the type its shape and dtype arguments give
    (:func:`builtin_alloc_own_type`).

    Returns
    -------
    (Type, str or None)
        The type, and why the annotation contradicts ``own`` (then the type is ``own``), or
        None.
    """
    if not isinstance(annotation, TensorType):
        return own, None
    why = type_contradiction(annotation, own)
    return (own, why) if why is not None else (annotation, None)


def _memory_view(call, ts):
    name = call.op.name
    t = _tensor(ts[0], name)
    shape, ndim, dtype = t.shape, t.ndim, t.dtype
    if len(call.args) > 1 and isinstance(call.args[1], ShapeExpr):
        shape, ndim = call.args[1].values, len(call.args[1].values)
    if len(call.args) > 2 and isinstance(call.args[2], DataTypeImm):
        dtype = call.args[2].value
    return TensorType(shape, dtype, ndim, t.vdevice)


# ---------------------------------------------------------------------------- schemas
# Argument and attribute schemas (memcore_py.ir.op_schema): attributes in TVM 0.27's printing
# order (its Attrs field order), defaults as TVM's Python wrappers fill them, signatures as the
# wrappers take positional values. Checked against what TVM prints for each op by
# tests/oracle/test_highlevel_ops_tvm.py.
def _sig(args=("x",), attrs=(), signature=None, prepare=None):
    return make_schema(args, attrs, signature, prepare)


_X = _sig(("x",))
_DATA = _sig(("data",))
_X1X2 = _sig(("x1", "x2"))
_REDUCE = _sig(("x",), (Attr("axis", "ints?", None), Attr("keepdims", "bool", False)))
_ARG_REDUCE = _sig(("x",), (Attr("axis", "int?", None), Attr("keepdims", "bool", False)))
_LIKE = _sig(("x",), (Attr("dtype", "dtype?", None),))
_SCAN = _sig(("data",), (Attr("axis", "int?", None), Attr("dtype", "dtype?", None), Attr("exclusive", "bool", False)))


def _same_layout(key):
    def default(attrs, args):
        return attrs[key]

    default.__name__ = f"same_as_{key}"
    return default


def _conv_schema(nd, transpose=False):
    data_layout, kernel_layout = ("NCW", "NCHW", "NCDHW")[nd - 1], (("OIW", "OIHW", "OIDHW"), ("IOW", "IOHW", "IODHW"))[
        transpose][nd - 1]
    attrs = [Attr("strides", "ints", (1,) * nd, ("repeat", nd)), Attr("padding", "ints", (0,) * (2 * nd), ("pad", nd))]
    if transpose:
        attrs.append(Attr("output_padding", "ints", (0,) * nd, ("repeat", nd)))
    attrs += [
        Attr("dilation", "ints", (1,) * nd, ("repeat", nd)), Attr("groups", "int", 1),
        Attr("data_layout", "str", data_layout), Attr("kernel_layout", "str", kernel_layout),
        Attr("out_layout", "str", _same_layout("data_layout")), Attr("out_dtype", "dtype?", None),
    ]
    return _sig(("data", "weight"), attrs)


def _pool_schema(nd, count_include_pad):
    layout = ("NCW", "NCHW", "NCDHW")[nd - 1]
    attrs = (
        Attr("pool_size", "ints", (1,) * nd, ("repeat", nd)), Attr("strides", "ints", (1,) * nd, ("repeat", nd)),
        Attr("dilation", "ints", (1,) * nd, ("repeat", nd)), Attr("padding", "ints", (0,) * (2 * nd), ("pad", nd)),
        Attr("ceil_mode", "bool", False), Attr("count_include_pad", "bool", count_include_pad),
        Attr("layout", "str", layout), Attr("out_layout", "str", _same_layout("layout")),
    )
    sig = ("data", "pool_size", "strides", "padding", "dilation", "ceil_mode", "count_include_pad", "layout",
           "out_layout")
    return _sig(("data",), attrs, sig)


def _adaptive_pool_schema(nd):
    layout = ("NCW", "NCHW", "NCDHW")[nd - 1]
    return _sig(("data",), (Attr("output_size", "ints?", None, ("repeat", nd)), Attr("layout", "str", layout),
                            Attr("out_layout", "str", _same_layout("layout"))))


def _arange_dtype(attrs, args):
    """``R.arange``'s dtype when not written: int64 for integer bounds, else float32 (TVM's wrapper)."""
    ints = all(isinstance(a, PrimValue) and a.value.dtype.startswith(("int", "uint")) for a in args)
    return "int64" if ints else "float32"


def _arange_prepare(bound):
    """``R.arange(n)`` is ``arange(0, n, 1)`` (Python's ``range`` convention, as TVM's wrapper)."""
    if "end" not in bound or bound["end"] is None:
        bound["end"] = bound.get("start")
        bound["start"] = 0


def _eye_prepare(bound):
    """``R.eye(n)`` is ``eye(n, n, 0)``."""
    if bound.get("m") is None and "n" in bound:
        bound["m"] = bound["n"]


def _square_size_prepare(bound):
    """``R.image.resize2d(x, 4)`` is ``size=(4, 4)`` (TVM's wrapper widens a single size)."""
    if type(bound.get("size")) is int:
        bound["size"] = (bound["size"], bound["size"])


_NORM_TAIL = (Attr("epsilon", "float", 1e-5), Attr("center", "bool", True), Attr("scale", "bool", True))
_ROI_ZERO = tuple(FloatImm(0.0, "float32") for _ in range(4))
_PRIM = "prim"

# ---------------------------------------------------------------------------- registrations
# --- element-wise arithmetic (in-place capable ones per spec §3.2) ---------------------------
for _n in ("add", "subtract", "multiply", "divide"):
    register_op(f"relax.{_n}", type_rule=_binary(), inplace=True, legalize=_n, schema=_X1X2)
for _n in ("floor_divide", "power", "maximum", "minimum"):
    register_op(f"relax.{_n}", type_rule=_binary(), legalize=_n, schema=_X1X2)
for _n in ("floor_mod", "mod", "atan2", "log_add_exp", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
           "right_shift", "logical_and", "logical_or", "logical_xor"):
    register_op(f"relax.{_n}", type_rule=_binary(), schema=_X1X2)
for _n in ("equal", "less", "greater", "not_equal", "less_equal", "greater_equal"):
    register_op(f"relax.{_n}", type_rule=_binary("bool"), legalize=_n, schema=_X1X2)
for _n in ("nn.relu", "nn.silu"):
    register_op(f"relax.{_n}", type_rule=_unary, inplace=True, legalize=_n.split(".")[-1], schema=_DATA)
for _n in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "negative", "abs", "sin", "cos",
           "erf", "round", "floor", "ceil", "nn.gelu", "nn.gelu_tanh"):
    register_op(f"relax.{_n}", type_rule=_unary, legalize=_n.split(".")[-1],
                schema=_DATA if _n.startswith("nn.") else _X)
for _n in ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "tan", "sign", "square", "trunc",
           "bitwise_not", "logical_not"):
    register_op(f"relax.{_n}", type_rule=_unary, schema=_X)
register_op("relax.nn.selu", type_rule=_unary, schema=_DATA)
for _n in ("isfinite", "isinf", "isnan"):
    register_op(f"relax.{_n}", type_rule=rt.unary_dtype("bool"), schema=_X)
register_op("relax.clip", type_rule=rt.clip, schema=_sig(("x", ("min", _PRIM), ("max", _PRIM))))
register_op("relax.where", type_rule=rt.where, schema=_sig(("condition", "x1", "x2")))
register_op("relax.outer", type_rule=rt.outer, schema=_X1X2)

# --- views: the result shares (shares_storage) or may share (view_memory) args[0]'s storage ---
register_op("relax.reshape", type_rule=_reshape, shares_storage=True, view_memory=True,
            schema=_sig(("x", ("shape", "shape"))))
register_op("relax.memory.view", type_rule=_memory_view, shares_storage=True, view_memory=True, n_args=(1, 4))
register_op("relax.memory.ensure_zero_offset", type_rule=_unary, shares_storage=True, view_memory=True,
            n_args=(1, 1))
register_op("relax.expand_dims", type_rule=_expand_dims, view_memory=True,
            schema=_sig(("x",), (Attr("axis", "ints"),)))
register_op("relax.squeeze", type_rule=_squeeze, view_memory=True, schema=_sig(("x",), (Attr("axis", "ints?", None),)))
register_op("relax.permute_dims", type_rule=_permute_dims, view_memory=True,
            schema=_sig(("x",), (Attr("axes", "ints?", None),)))
register_op("relax.flatten", type_rule=_flatten, view_memory=True, schema=_X)
register_op("relax.nn.batch_flatten", type_rule=_batch_flatten, view_memory=True, schema=_DATA)

# --- manipulation -------------------------------------------------------------------------------
register_op("relax.matmul", type_rule=_matmul, schema=_sig(("x1", "x2"), (Attr("out_dtype", "dtype?", None),)))
register_op("relax.split", type_rule=_split,
            schema=_sig(("x",), (Attr("indices_or_sections", "int|ints"), Attr("axis", "int", 0))))
register_op("relax.concat", type_rule=_concat, schema=_sig((("tensors", "tuple"),), (Attr("axis", "int?", 0),)))
register_op("relax.stack", type_rule=rt.stack, schema=_sig((("tensors", "tuple"),), (Attr("axis", "int?", 0),)))
register_op("relax.astype", type_rule=_astype, schema=_sig(("x",), (Attr("dtype", "dtype"),)))
for _n in ("quantize", "dequantize"):
    register_op(f"relax.{_n}", type_rule=_quantize, schema=_sig(
        ("data", "scale", "zero_point"), (Attr("out_dtype", "dtype", "int8" if _n == "quantize" else "float32"),
                                          Attr("axis", "int", -1))))
register_op("relax.size", type_rule=_size, schema=_sig(("expr",)))
register_op("relax.broadcast_to", type_rule=rt.broadcast_to, schema=_sig(("x", ("shape", "shape"))))
register_op("relax.strided_slice", type_rule=rt.strided_slice, schema=_sig(
    ("x", ("axes", "tuple"), ("begin", "tuple"), ("end", "tuple"), ("strides", "tuple", ABSENT)),
    (Attr("assume_inbound", "bool", False),)))
register_op("relax.take", type_rule=rt.take,
            schema=_sig(("x", "indices"), (Attr("axis", "int?", None), Attr("mode", "str", "fast"))))
register_op("relax.repeat", type_rule=rt.repeat,
            schema=_sig(("data",), (Attr("repeats", "int"), Attr("axis", "int?", None))))
register_op("relax.tile", type_rule=rt.tile, schema=_sig(("data",), (Attr("repeats", "ints"),)))
register_op("relax.flip", type_rule=rt.flip_like, schema=_sig(("data",), (Attr("axis", "int"),)))
for _n in ("tril", "triu"):
    register_op(f"relax.{_n}", type_rule=rt.tri, schema=_sig(("x", ("k", _PRIM, 0))))
register_op("relax.one_hot", type_rule=rt.one_hot, schema=_sig(
    ("indices", ("on_value", _PRIM), ("off_value", _PRIM)), (Attr("depth", "int"), Attr("axis", "int", -1))))
register_op("relax.einsum", type_rule=rt.einsum, schema=_sig((("operands", "tuple"),), (Attr("subscripts", "str"),)))
register_op("relax.meshgrid", type_rule=rt.meshgrid,
            schema=_sig((("tensors", "tuple"),), (Attr("indexing", "str?", "ij"),)))
register_op("relax.collapse_sum_like", type_rule=rt.collapse_sum_like, schema=_sig(("data", "collapse_target")))

# --- indexing -------------------------------------------------------------------------------------
register_op("relax.gather_elements", type_rule=rt.gather_elements,
            schema=_sig(("data", "indices"), (Attr("axis", "int", 0),)))
register_op("relax.gather_nd", type_rule=rt.gather_nd,
            schema=_sig(("data", "indices"), (Attr("batch_dims", "int", 0),)))
register_op("relax.scatter_elements", type_rule=rt.scatter_like, schema=_sig(
    ("data", "indices", "updates"), (Attr("axis", "int", 0), Attr("reduction", "str", "update"))))
register_op("relax.scatter_nd", type_rule=rt.scatter_like,
            schema=_sig(("data", "indices", "updates"), (Attr("reduction", "str", "update"),)))
register_op("relax.index_tensor", type_rule=rt.index_tensor, schema=_sig(("data", ("indices", "tuple"))))
register_op("relax.index_put", type_rule=rt.scatter_like,
            schema=_sig(("data", ("indices", "tuple"), "values"), (Attr("accumulate", "bool", False),)))
register_op("relax.slice_scatter", type_rule=rt.scatter_like, schema=_sig(
    ("input_tensor", "src", ("start", _PRIM), ("end", _PRIM), ("step", _PRIM)), (Attr("axis", "int", 0),)))

# --- reductions, scans, search --------------------------------------------------------------------
for _n in ("sum", "mean", "max", "min", "prod", "variance", "std"):
    register_op(f"relax.{_n}", type_rule=_reduce, schema=_REDUCE)
register_op("relax.median", type_rule=rt.median, schema=_REDUCE)
for _n in ("argmax", "argmin"):
    register_op(f"relax.{_n}", type_rule=rt.reduce_index, schema=_ARG_REDUCE)
register_op("relax.cumsum", type_rule=rt.scan, schema=_SCAN)
register_op("relax.cumprod", type_rule=rt.scan, schema=_SCAN)
register_op("relax.topk", type_rule=rt.topk, schema=_sig(("data",), (
    Attr("k", "int", 1), Attr("axis", "int", -1), Attr("ret_type", "str", "both"), Attr("largest", "bool", True),
    Attr("dtype", "dtype?", "int32"))))
register_op("relax.sort", type_rule=rt.same_as_arg0,
            schema=_sig(("x",), (Attr("axis", "int", -1), Attr("descending", "bool", False))))
register_op("relax.argsort", type_rule=rt.argsort, schema=_sig(("data",), (
    Attr("axis", "int", -1), Attr("descending", "bool", False), Attr("dtype", "dtype?", "int32"))))
register_op("relax.nonzero", type_rule=rt.nonzero, schema=_X)
register_op("relax.unique", type_rule=_unique, schema=_sig((
    "x", ("sorted", _PRIM, True), ("return_index", _PRIM, False), ("return_inverse", _PRIM, False),
    ("return_counts", _PRIM, False), ("axis", _PRIM, ABSENT))))
register_op("relax.bucketize", type_rule=rt.bucketize, schema=_sig(
    ("input_tensor", "boundaries"), (Attr("out_int32", "bool", False), Attr("right", "bool", False))))

# --- creation -------------------------------------------------------------------------------------
register_op("relax.zeros", type_rule=_full_like_shape, schema=_sig((("shape", "shape"),), (Attr("dtype", "dtype"),)))
register_op("relax.ones", type_rule=_full_like_shape, schema=_sig((("shape", "shape"),), (Attr("dtype", "dtype"),)))
register_op("relax.full", type_rule=rt.full,
            schema=_sig((("shape", "shape"), "fill_value"), (Attr("dtype", "dtype?", None),)))
register_op("relax.full_like", type_rule=rt.full_like,
            schema=_sig(("x", "fill_value"), (Attr("dtype", "dtype?", None),)))
register_op("relax.zeros_like", type_rule=rt.init_like, schema=_LIKE)
register_op("relax.ones_like", type_rule=rt.init_like, schema=_LIKE)
register_op("relax.eye_like", type_rule=rt.init_like,
            schema=_sig(("x", ("k", _PRIM, 0)), (Attr("dtype", "dtype?", None),)))
register_op("relax.arange", type_rule=rt.arange, schema=_sig(
    (("start", _PRIM), ("end", _PRIM), ("step", _PRIM, 1)), (Attr("dtype", "dtype?", _arange_dtype),),
    prepare=_arange_prepare))
register_op("relax.eye", type_rule=rt.eye, schema=_sig(
    (("n", _PRIM), ("m", _PRIM), ("k", _PRIM, 0)), (Attr("dtype", "dtype?", "float32"),), prepare=_eye_prepare))
register_op("relax.hamming_window", type_rule=rt.hamming_window, schema=_sig(
    (("window_size", _PRIM), ("periodic", _PRIM), ("alpha", _PRIM), ("beta", _PRIM)), (Attr("dtype", "dtype?"),)))
register_op("relax.shape_of", type_rule=_shape_of, schema=_sig(("expr",)))
register_op("relax.shape_to_tensor", type_rule=rt.shape_to_tensor, schema=_sig(("expr",)))
register_op("relax.tensor_to_shape", type_rule=rt.tensor_to_shape, schema=_sig(("expr",)))

# --- neural network -------------------------------------------------------------------------------
for _d in (1, 2, 3):
    register_op(f"relax.nn.conv{_d}d", type_rule=rn.conv(_d), schema=_conv_schema(_d))
    register_op(f"relax.nn.max_pool{_d}d", type_rule=rn.pool(_d), schema=_pool_schema(_d, False))
    register_op(f"relax.nn.avg_pool{_d}d", type_rule=rn.pool(_d), schema=_pool_schema(_d, _d != 2))
    register_op(f"relax.nn.adaptive_avg_pool{_d}d", type_rule=rn.adaptive_pool(_d), schema=_adaptive_pool_schema(_d))
for _d in (1, 2):
    register_op(f"relax.nn.conv{_d}d_transpose", type_rule=rn.conv_transpose(_d), schema=_conv_schema(_d, True))
register_op("relax.nn.batch_norm", type_rule=rn.batch_norm, schema=_sig(
    ("data", "gamma", "beta", "moving_mean", "moving_var"),
    (Attr("axis", "int"), Attr("epsilon", "float", 1e-5), Attr("center", "bool", True), Attr("scale", "bool", True),
     Attr("momentum", "float", 0.1), Attr("training", "bool", True))))
register_op("relax.nn.layer_norm", type_rule=rn.normalize,
            schema=_sig(("data", "gamma", "beta"), (Attr("axes", "ints"),) + _NORM_TAIL))
register_op("relax.nn.group_norm", type_rule=rn.normalize, schema=_sig(
    ("data", "gamma", "beta"),
    (Attr("num_groups", "int"), Attr("channel_axis", "int"), Attr("axes", "ints")) + _NORM_TAIL))
register_op("relax.nn.instance_norm", type_rule=rn.normalize, schema=_sig(
    ("data", "gamma", "beta"), (Attr("channel_axis", "int"), Attr("axes", "ints")) + _NORM_TAIL))
register_op("relax.nn.rms_norm", type_rule=rn.normalize,
            schema=_sig(("data", "weight"), (Attr("axes", "ints", (-1,)), Attr("epsilon", "float", 1e-5))))
for _n in ("softmax", "log_softmax"):
    register_op(f"relax.nn.{_n}", type_rule=_unary, schema=_sig(("data",), (Attr("axis", "int", -1),)))
register_op("relax.nn.leakyrelu", type_rule=_unary, schema=_sig(("data",), (Attr("alpha", "float", 0.01),)))
register_op("relax.nn.softplus", type_rule=_unary,
            schema=_sig(("data",), (Attr("beta", "float", 1.0), Attr("threshold", "float", 20.0))))
register_op("relax.nn.prelu", type_rule=rt.same_as_arg0, schema=_sig(("data", "alpha"), (Attr("axis", "int", 1),)))
register_op("relax.nn.dropout", type_rule=rt.dropout, schema=_sig(("data",), (Attr("rate", "float", 0.5),)))
register_op("relax.nn.pad", type_rule=rn.pad, schema=_sig(
    ("data",), (Attr("pad_width", "ints"), Attr("pad_value", "float", 0.0), Attr("pad_mode", "str", "constant")),
    ("data", "pad_width", "pad_mode", "pad_value")))
register_op("relax.nn.pixel_shuffle", type_rule=rn.pixel_shuffle,
            schema=_sig(("data",), (Attr("upscale_factor", "int"),)))
register_op("relax.nn.attention", type_rule=rn.attention, schema=_sig(
    ("query", "key", "value"),
    (Attr("scale", "fimm?", None), Attr("causal_mask", "str?", None), Attr("window_size", "int?", None))))
# TVM's ``R.nn.attention(q, k, v, bias)`` builds this op (a separate Op with the same attrs;
# the parser's ``R.nn.attention`` handler chooses between the two as TVM's wrapper does)
register_op("relax.nn.attention_bias", type_rule=rn.attention, schema=_sig(
    ("query", "key", "value", "bias"),
    (Attr("scale", "fimm?", None), Attr("causal_mask", "str?", None), Attr("window_size", "int?", None))))
register_op("relax.nn.nll_loss", type_rule=rn.nll_loss, schema=_sig(
    ("predictions", "targets", ("weights", "expr", ABSENT)),
    (Attr("reduction", "str", "mean"), Attr("ignore_index", "int", -100))))
register_op("relax.image.resize2d", type_rule=rn.resize2d, schema=_sig(("data", ("size", "shape")), (
    Attr("roi", "fimms", _ROI_ZERO), Attr("layout", "str", "NCHW"), Attr("method", "str", "linear"),
    Attr("coordinate_transformation_mode", "str", "half_pixel"), Attr("rounding_method", "str", "round"),
    Attr("cubic_alpha", "float", -0.75), Attr("cubic_exclude", "int", 0), Attr("extrapolation_value", "float", 0.0),
    Attr("out_dtype", "dtype?", None)), prepare=_square_size_prepare))
register_op("relax.image.grid_sample", type_rule=rn.grid_sample, schema=_sig(("data", "grid"), (
    Attr("method", "str", "bilinear"), Attr("layout", "str", "NCHW"), Attr("padding_mode", "str", "zeros"),
    Attr("align_corners", "bool", False))))
register_op("relax.image.affine_grid", type_rule=rn.affine_grid,
            schema=_sig(("data", ("size", "shape")), (Attr("align_corners", "bool", True),),
                        prepare=_square_size_prepare))
register_op("relax.vision.roi_align", type_rule=rn.roi_align, schema=_sig(("data", "rois"), (
    Attr("pooled_size", "ints", REQUIRED, ("repeat", 2)), Attr("spatial_scale", "float"),
    Attr("sample_ratio", "int", -1), Attr("aligned", "bool", False), Attr("layout", "str", "NCHW"),
    Attr("mode", "str", "avg"))))
register_op("relax.vision.roi_pool", type_rule=rn.roi_align, schema=_sig(("data", "rois"), (
    Attr("pooled_size", "ints", REQUIRED, ("repeat", 2)), Attr("spatial_scale", "float"),
    Attr("layout", "str", "NCHW"))))
register_op("relax.vision.all_class_non_max_suppression", type_rule=_all_class_nms, schema=_sig(
    ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold"),
    (Attr("output_format", "str", "onnx"),)))

# --- calls into lower-level functions ------------------------------------------------------------
register_op("relax.call_tir", type_rule=_first_ty_arg, calls_prim_func=True, n_args=(2, 3))
register_op("relax.call_tir_inplace", type_rule=_first_ty_arg, calls_prim_func=True,
            attr_names=("inplace_indices",), n_args=(2, 3))
register_op("relax.call_tir_with_grad", type_rule=_first_ty_arg, calls_prim_func=True,
            attr_names=("te_grad_name", "te_grad_kwargs"), n_args=(2, 3))
register_op("relax.call_dps_packed", type_rule=_first_ty_arg, n_args=(2, 2))
register_op("relax.call_pure_packed", type_rule=_packed_op, n_args=(1, None))
register_op("relax.call_inplace_packed", type_rule=_packed_op, attr_names=("inplace_indices",), n_args=(1, None))
register_op("relax.vm.call_tir_dyn", type_rule=_void, pure=False, n_args=(2, 2))

# --- memory. Purity is TVM 0.27's ``FPurity``: allocations are pure (so they may sit in
# dataflow blocks and DeadCodeElimination drops unused ones); only kills are impure. ---------
register_op("relax.builtin.alloc_tensor", type_rule=_alloc_tensor(0, 1), n_args=(3, 4))
register_op("relax.memory.alloc_storage", type_rule=_object, n_args=(4, 4), kill_role="storage")
register_op("relax.memory.alloc_tensor", type_rule=_alloc_tensor(2, 3), n_args=(4, 5))
register_op("relax.memory.kill_storage", type_rule=_void, pure=False, n_args=(1, 1), kill_role="kill_storage")
register_op("relax.memory.kill_tensor", type_rule=_void, pure=False, n_args=(1, 1), kill_role="kill_tensor")
register_op("relax.vm.alloc_storage", type_rule=_object, n_args=(3, 4), kill_role="storage")
register_op("relax.vm.alloc_tensor", type_rule=_alloc_tensor(2, 3), n_args=(4, 5))
register_op("relax.vm.kill_object", type_rule=_void, pure=False, n_args=(1, 1), kill_role="kill_object")
register_op("relax.null_value", type_rule=_object, n_args=(0, 0), kill_role="no_register")
# ``R.assert_op(cond, *format_args, format=R.str("..."))``: arguments stored as TVM stores
# them, ``(cond, format, *format_args)``; impure, void (a statement). The parser and the
# printer spell it (its keyword sits after the variadic arguments).
register_op("relax.assert_op", type_rule=_void, pure=False, n_args=(2, None))


# ---------------------------------------------------------------------------- derived sets
# For ``op in SET`` tests in hot loops. They hold the ops registered above; an op registered
# later (a test's) has its properties, and ``memcore_py.ir.op.shares_storage(callee)`` reads
# them (and also covers the packed ``vm.builtin.reshape``), but it is not in these sets.
_OPS = [get_op(_n) for _n in list_ops()]
#: Ops whose result is ``args[0]``'s storage (TVM ``IsInplaceMemoryOp``,
#: static_plan_block_memory.cc): reshape, memory.view, memory.ensure_zero_offset.
SHARES_STORAGE_OPS = frozenset(op for op in _OPS if op.shares_storage)
#: Ops whose result may share ``args[0]``'s storage (TVM ``IsViewMemoryOp``,
#: dataflow_inplace.cc); a superset of :data:`SHARES_STORAGE_OPS`.
VIEW_MEMORY_OPS = frozenset(op for op in _OPS if op.view_memory)
del _OPS, _n
