"""ATen converters for symbolic scalars, data-dependent sizes and runtime assertions (TVM
0.27's mapping).

Design
------
Python operators on ``SymInt`` values (``operator.ge``, ``eq``, ..., ``neg``), ``item`` /
``_local_scalar_dense``, ``masked_select`` and ``_assert_async``. A ``SymInt`` is a
:class:`~memcore_py.ir.prim.PrimExpr` in ``env`` (see :mod:`._aten_ops`), so:

- a comparison emits its ``bool`` expression as a ``PrimValue`` binding (TVM's
  ``_symbolic_comparison``; the ``_assert_scalar`` reading it is a no-op), constants folded;
- ``neg`` is ``x * -1`` (TVM's ``PrimExpr.__neg__``), not emitted;
- ``item`` of a one-element integer tensor becomes a fresh ``int64`` symbol
  ``<node>_dim``, bound by ``match_cast`` of ``tensor_to_shape`` (TVM's ``_item``);
- ``masked_select`` ``match_cast``\\ s ``nonzero``'s result to ``(1, u)`` with ``u`` the
  export's unbacked size symbol (a fresh :class:`~memcore_py.ir.prim.PrimVar` of that name);
- ``_assert_async`` emits ``assert_op``; the importer then builds an impure ``main``
  without a dataflow block, as TVM does (:data:`ASSERT_TARGETS`).
"""
from __future__ import annotations

import operator

from ..ir.expr import Call, PrimValue, StringImm
from ..ir.op import get_op
from ..ir.prim import EQ, GE, GT, LE, LT, NE, IntImm, PrimExpr, PrimVar, prim_equal
from ..ir.types import ShapeType, TensorType
from ._aten_common import mul_folded, registrar, static_dim

__all__ = ["CONVERTERS", "ASSERT_TARGETS"]

CONVERTERS: dict = {}
_register = registrar(CONVERTERS)

#: Targets that make TVM's importer build ``main`` impure and without a dataflow block.
ASSERT_TARGETS = ("_assert_async.default", "_assert_async.msg")


# ------------------------------------------------------------------------------------ symbolic
#: operator -> (TIR node, the node of the reflected operator, Python's result on two ints)
_COMPARISONS = {
    "ge": (GE, LE, operator.ge), "le": (LE, GE, operator.le), "gt": (GT, LT, operator.gt),
    "lt": (LT, GT, operator.lt), "eq": (EQ, EQ, operator.eq), "ne": (NE, NE, operator.ne),
}


def _prim_compare(ctx, name, lhs, rhs):
    """``lhs <op> rhs`` as TVM's Python operators build it: two constants folded to a
    ``bool`` constant, a Python int on the left handled by the reflected operator (Python
    calls ``rhs.__le__(lhs)`` for ``lhs >= rhs``), an int taking the other operand's dtype."""
    node, reflected, python_op = _COMPARISONS[name]
    for v in (lhs, rhs):
        if isinstance(v, bool) or not isinstance(v, (int, PrimExpr)):
            raise ctx.error(f"a symbolic comparison needs ints or symbolic sizes; got {v!r}")
    sl, sr = static_dim(lhs), static_dim(rhs)
    if sl is not None and sr is not None:
        return IntImm(int(python_op(sl, sr)), "bool")
    if type(lhs) is int:
        lhs, rhs, node = rhs, lhs, reflected
    if type(rhs) is int:
        rhs = IntImm(rhs, lhs.dtype)
    return node(lhs, rhs)


def _symbolic_comparison(name):
    def convert(ctx, node):
        lhs, rhs = ctx.args(node)
        return ctx.emit(PrimValue(_prim_compare(ctx, name, lhs, rhs)))
    return convert


for _name in _COMPARISONS:
    CONVERTERS[_name] = _symbolic_comparison(_name)


@_register("neg")
def _neg(ctx, node):
    (x,) = ctx.args(node)
    if isinstance(x, bool) or not isinstance(x, (int, PrimExpr)):
        raise ctx.error(f"symbolic neg needs an int or a symbolic size; got {x!r}")
    return mul_folded(x, -1)


# ------------------------------------------------------------------------------------ data-dependent
@_register("item.default", "_local_scalar_dense.default")
def _item(ctx, node):
    """TVM's ``_item``: a one-element integer tensor becomes the symbol ``<node>_dim``; any
    other rank-0 tensor is returned as is, a larger one gives its first element (``take``)."""
    x = ctx.env[node.args[0]]
    shape = x.ty.shape
    dtype = ctx.dtype_of(x)
    if shape is not None and all(static_dim(d) == 1 for d in shape) and dtype.startswith(("int", "uint")):
        if dtype != "int64":
            x = ctx.op("astype", x, dtype="int64")
        shape_value = ctx.op("tensor_to_shape", ctx.op("reshape", x, [1]))
        dim = PrimVar(f"{node.name}_dim", "int64")
        ctx.bb.match_cast(shape_value, ShapeType([dim]))
        return dim
    if shape is not None and len(shape) == 0:
        return x
    return ctx.op("take", x, ctx.const(0, "int64"), axis=0)


@_register("masked_select.default")
def _masked_select(ctx, node):
    """TVM's ``_masked_select``: the mask broadcast to the data's shape (when it differs),
    both flattened, ``nonzero`` cast to ``(1, n)`` (n: the export's size symbol of the
    result, else ``<node>_num_selected``), squeezed and taken from the data."""
    data, mask = ctx.env[node.args[0]], ctx.env[node.args[1]]
    data_shape, mask_shape = ctx.shape_of(data), ctx.shape_of(mask)
    if len(data_shape) != len(mask_shape) or not all(map(prim_equal, data_shape, mask_shape)):  # structural
        mask = ctx.op("broadcast_to", mask, data_shape)
    data_flat = ctx.op("reshape", data, [-1])
    mask_flat = ctx.op("reshape", mask, [-1])
    indices = ctx.op("nonzero", mask_flat)
    meta = node.meta.get("tensor_meta")
    if meta is not None and len(meta.shape) == 1:
        n = meta.shape[0]
        n = n if isinstance(n, int) else PrimVar(str(n), "int64")
    else:
        n = PrimVar(f"{node.name}_num_selected", "int64")
    indices = ctx.bb.match_cast(indices, TensorType([IntImm(1), n], "int64"))
    return ctx.op("take", data_flat, ctx.op("squeeze", indices, axis=[0]), axis=0)


# ------------------------------------------------------------------------------------ assertions
@_register(*ASSERT_TARGETS)
def _assert_async(ctx, node):
    """TVM's ``_assert_async``: the condition cast to ``bool`` and reshaped to rank 0 when
    needed, then ``assert_op(cond, message, format="{}")``."""
    cond = ctx.env[node.args[0]]
    if ctx.dtype_of(cond) != "bool":
        cond = ctx.op("astype", cond, dtype="bool")
    if cond.ty.ndim != 0:
        cond = ctx.op("reshape", cond, [])
    message = node.args[1] if len(node.args) > 1 else node.kwargs.get("assert_msg", "Assertion Failed")
    # assert_op has no schema in memcore's op table: its arguments as TVM stores them
    return ctx.emit(Call(get_op("relax.assert_op"), [cond, StringImm("{}"), StringImm(message)]))
