"""LowerAllocTensor: give every remaining ``R.builtin.alloc_tensor`` its own storage.

Port of TVM ``LowerAllocTensor`` (src/relax/transform/lower_alloc_tensor.cc), a function
pass, as TVM 0.27.0.post1 behaves (checked in the venv).

Rewrite
-------
Each ``R.builtin.alloc_tensor(shape, dtype, dev, scope)`` left after
StaticPlanBlockMemory (the unplanned ones: function outputs, escaping tensors) becomes::

    storage = R.memory.alloc_storage(R.shape([nbytes]), dev, scope, R.dtype("uint8"))
    alloc = R.memory.alloc_tensor(storage, 0, shape, dtype, dev)

- the storage binding is emitted right before the rewritten binding, name hint
  ``"storage"``, type ``R.Object``; inside a dataflow block it is a DataflowVar;
- ``nbytes`` is ``bytes_per_element(dtype) * d0 * d1 * ...`` built left to right with TIR's
  constant folding (``IntImm * IntImm`` folds, ``1 * x`` is ``x``, ``x * 0`` is ``0``), so a
  (2, 3) float32 tensor gives ``R.shape([24])``, (n, 4) float32 gives ``4 * n * 4`` and
  (n, 4) bool gives ``n * 4``;
- the storage dtype is always ``uint8`` (StaticPlanBlockMemory uses the tensor's dtype);
- ``shape`` may also be a variable whose type is a shape with known values.

Names come from a :class:`~memcore_py.ir.builder.NameTable` made fresh for every function
(TVM makes a new mutator per function), so they may repeat names StaticPlanBlockMemory
chose: TVM's IR then holds two different variables named ``storage``, which its printer
shows as ``storage`` and ``storage_1``. Ours holds the same names.

Not ported: the texture path (a non-``global`` scope on a virtual device whose target
registers ``DeviceGetMemSize.<kind>``), which needs TVM's target registry.

Speed: in a flat block (:func:`~memcore_py.transform.dead_code_elimination.is_flat_block`:
no binding opens a scope or nests a call; every block of a function without control flow,
and the branches' blocks of one with it), only the ``R.builtin.alloc_tensor`` bindings can
change while no variable has been remapped, so the block is rebuilt from slices of its
bindings around those (the mutator's visit would return every other binding unchanged); from
the first remapped variable on (an allocation bound with a less precise type), the rest of the
function goes through the full visit, as does a block with a nested scope (its If is visited,
and the flat blocks of its branches take the slices again).

Preconditions: run after StaticPlanBlockMemory. Every ``builtin.alloc_tensor`` must have
exactly four arguments (shape, ``R.dtype``, ``R.prim_value`` device index, ``R.str``
scope); otherwise :class:`~memcore_py.errors.PassError` names the function and binding.
"""
from __future__ import annotations

from .._compiled import load_compiled
from ..ir.builder import NameTable
from ..ir.construct import new_binding, new_block, new_call, new_shape_expr, new_tensor_type, new_var
from ..ir.expr import (BindingBlock, Call, DataflowBlock, DataflowVar, DataTypeImm, Function, PrimValue, ShapeExpr,
                       StringImm, Var)
from ..ir.module import IRModule
from ..ir.op import get_op
from ..ir.prim import IntImm, Mul
from ..ir.types import ObjectType, ShapeType, dtype_bytes
from ..ir.functor import map_functions
from ._lowering_utils import BindingTrackingMutator
from .dead_code_elimination import is_flat_block
from .pass_infra import FunctionPass, PassContext

__all__ = ["lower_alloc_tensor", "LowerAllocTensor", "storage_bytes_expr"]

_BUILTIN_ALLOC_TENSOR = get_op("relax.builtin.alloc_tensor")
_MEM_ALLOC_STORAGE = get_op("relax.memory.alloc_storage")
_MEM_ALLOC_TENSOR = get_op("relax.memory.alloc_tensor")
#: leaves every lowered allocation shares (IR nodes are immutable)
_UINT8 = DataTypeImm("uint8")
_ZERO_OFFSET = PrimValue(IntImm(0))
_OBJECT = ObjectType()


def storage_bytes_expr(shape, dtype: str):
    """``bytes_per_element(dtype) * shape[0] * shape[1] * ...`` as TVM builds it: folded by
    TIR's ``TryConstFold<Mul>`` (the plan of :func:`memcore_py.ir._const_fold.product_fold_plan`,
    the one statement of that rule), the dims the objects they were.

    Raises
    ------
    OverflowError
        The constant part of the size exceeds int64.
    """
    factors = [d.value if type(d) is IntImm else None for d in shape]
    head, tail = load_compiled("memcore_py.ir._const_fold").product_fold_plan(dtype_bytes(dtype), factors)
    nbytes = IntImm(head) if type(head) is int else shape[head[0]]
    for i in tail:
        nbytes = Mul(nbytes, shape[i])
    return nbytes


class _AllocTensorLowerer(BindingTrackingMutator):
    """Port of TVM's LowerAllocTensor ``Mutator`` (one instance per function)."""

    pass_name = "lower-alloc-tensor"

    def __init__(self, func_name: str):
        super().__init__()
        self.func_name = func_name
        self.names = NameTable()

    def visit_block(self, blk):
        if self.var_remap or not is_flat_block(blk):
            return super().visit_block(blk)
        bindings = blk.bindings
        allocs = [i for i, b in enumerate(bindings)
                  if type(b.value) is Call and b.value.op is _BUILTIN_ALLOC_TENSOR]
        if not allocs:
            return [blk]
        # see the module docstring: slices of unchanged bindings around the allocations
        saved = self.in_dataflow
        is_df = self.in_dataflow = type(blk) is DataflowBlock
        try:
            out = []
            start = 0
            for i in allocs:
                out.extend(bindings[start:i])
                start = i + 1
                super().visit_binding(bindings[i], out)
                if self.var_remap:  # later uses must be rewritten: the full visit for the rest
                    for b in bindings[start:]:
                        super().visit_binding(b, out)
                    start = len(bindings)
                    break
            out.extend(bindings[start:])
        finally:
            self.in_dataflow = saved
        return [new_block(DataflowBlock if is_df else BindingBlock, out)]

    def visit_call(self, call: Call):
        if call.op is not _BUILTIN_ALLOC_TENSOR:
            return self.visit_call_default(call)
        args = call.args
        if len(args) != 4:
            raise self._fail(
                "R.builtin.alloc_tensor must have 4 arguments [shape, dtype, runtime_device_index, "
                f"storage_scope]; got {len(args)}"
            )
        shape_arg, dtype, dev, scope = args
        if type(dtype) is not DataTypeImm:
            raise self._fail(f"the dtype argument of R.builtin.alloc_tensor must be R.dtype(...); got {dtype!r}")
        if type(dev) is not PrimValue:
            raise self._fail(f"the device argument of R.builtin.alloc_tensor must be a prim value; got {dev!r}")
        if type(scope) is not StringImm:
            raise self._fail(f"the storage scope of R.builtin.alloc_tensor must be R.str(...); got {scope!r}")
        if type(shape_arg) is ShapeExpr:
            shape = shape_arg.values
        elif isinstance(shape_arg, Var) and type(shape_arg.ty) is ShapeType and shape_arg.ty.values is not None:
            shape = shape_arg.ty.values
        else:
            raise self._fail(
                "the shape of R.builtin.alloc_tensor must be R.shape(...) or a variable holding a shape "
                f"with known values; got {shape_arg!r}"
            )
        if self._out is None:
            raise self._fail("R.builtin.alloc_tensor must be the value of a binding")
        # checked parts (the arguments' types and the shape's PrimExprs): unchecked constructors
        try:
            size = new_shape_expr((storage_bytes_expr(shape, dtype.value),))
        except OverflowError:
            raise self._fail(f"the storage size in bytes of this {dtype.value} tensor exceeds int64") from None
        storage_value = new_call(_MEM_ALLOC_STORAGE, (size, dev, scope, _UINT8), None, (), _OBJECT)
        storage = new_var(DataflowVar if self.in_dataflow else Var, self.names.fresh("storage"), _OBJECT)
        self._out.append(new_binding(storage, storage_value))
        return new_call(_MEM_ALLOC_TENSOR, (storage, _ZERO_OFFSET, shape_arg, dtype, dev), None, (),
                        new_tensor_type(tuple(shape), dtype.value))


def lower_alloc_tensor(func: Function, name: str = "?") -> Function:
    """``func`` with every ``R.builtin.alloc_tensor`` lowered (see the module docstring);
    ``name`` is used in error messages."""
    return _AllocTensorLowerer(name).visit_function(func)


class LowerAllocTensor(FunctionPass):
    """Function pass: :func:`lower_alloc_tensor` on every Relax function."""

    name = "lower-alloc-tensor"

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return lower_alloc_tensor(func)

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lower_alloc_tensor)
