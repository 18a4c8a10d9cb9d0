"""FoldConstant at the kernel interface: which lowered kernels TVM's FoldConstant evaluates.

Port of the decision rule of TVM 0.27's ``relax.transform.FoldConstant``
(``ConstantFolder`` in src/relax/transform/fold_constant.cc), as it acts in the planning
pipelines after ``LegalizeOps`` (every op a ``call_tir``). :class:`~memcore_py.transform.
lower_for_planning.LowerForPlanning` applies it binding by binding while it lowers; this
module holds the rule, so it is written once.

TVM's rule
----------
The folder is a post-order ``ExprMutator`` over each Relax function, followed by
``RemoveAllUnused``:

1. *Constant propagation* (``VisitExpr_(VarNode)``): a use of any variable (a DataflowVar or
   not) whose binding is a ``VarBinding`` to a Constant is replaced by that Constant.
2. *Evaluation* (``VisitCallTIR``): ``call_tir(f, (args...), out_ty)`` becomes a constant
   when ``f`` is a PrimFunc of the module, every argument is a Constant *expression*
   (``MatchConstArrayArgs``: a variable bound to ``t[i]`` of a tuple of constants is not
   one), and every output shape is static (``MatchConstShape``; a tuple output folds to a
   tuple of constants when all its fields are static). TVM builds the PrimFunc for
   ``llvm`` and runs it on the constants; a kernel that fails to build is kept (never the
   case for what ``LegalizeOps`` writes).
3. *Worth folding* (``ShouldBeFolded``): a single-tensor output with more than
   :data:`MAX_FOLD_ELEMENTS` elements (all dims static and positive) is kept when the call
   has no tensor argument (a creation kernel: ``zeros``, ``full``, ``arange`` ...); kernels
   with inputs, tuple outputs and outputs with a zero dim always fold.
4. Folding runs on the legalized module, so what the legalization decided on the *written*
   arguments stands: a scalar constant baked into a kernel (``_try_convert_to_scalar_const``)
   is one only when the argument was a Constant literal before folding; a scalar produced
   by folding stays a kernel input (a constant one).
5. ``index_tensor``'s legalization hands its index tensors to the kernel through
   ``TupleGetItem`` bindings, even for a tuple literal (:data:`TUPLE_ITEM_INPUT_OPS`): by
   (2) such a kernel never folds, whatever its indices are.

What memcore does differently
-----------------------------
memcore has no TIR executor, and planning needs only the *type* of a folded value (a
constant is never planned; later kernels of constants fold in turn). A folded kernel
becomes :func:`folded_constant`: a Constant of the output type without data, written as a
metadata reference (``metadata["relax.expr.Constant"][k]``), a tuple of those for a tuple
output. A pass that needs a folded value (none of the planning passes does) cannot get it
here; DIFFERENCES.md (*LowerForPlanning*) records this.
"""
from __future__ import annotations

from ..ir.expr import Constant, Tuple
from ..ir.prim import IntImm
from ..ir.types import TensorType, TupleType

__all__ = ["MAX_FOLD_ELEMENTS", "TUPLE_ITEM_INPUT_OPS", "folds", "folded_constant", "should_be_folded",
           "static_shape"]

#: TVM's ``kMaxFoldElements``: a kernel without tensor inputs whose single output has more
#: elements than this is not folded (``ShouldBeFolded``).
MAX_FOLD_ELEMENTS = 1024

#: Ops whose legalization passes the fields of a tuple argument to the kernel as variables
#: bound to ``TupleGetItem`` (TVM's ``_index_tensor``), never as the fields themselves.
TUPLE_ITEM_INPUT_OPS = frozenset({"relax.index_tensor"})


def static_shape(ty) -> tuple | None:
    """The shape of tensor type ``ty`` as ints when every dim is an IntImm (TVM
    ``MatchConstShape``); None otherwise (a symbolic dim, an unknown shape, not a tensor)."""
    if not isinstance(ty, TensorType) or ty.shape is None:
        return None
    dims = []
    for d in ty.shape:
        if type(d) is not IntImm:
            return None
        dims.append(d.value)
    return tuple(dims)


def should_be_folded(has_tensor_input: bool, out_ty) -> bool:
    """TVM's ``ShouldBeFolded`` on a kernel call: False only for a kernel without tensor
    arguments whose tensor output is static, with positive dims, and larger than
    :data:`MAX_FOLD_ELEMENTS` elements."""
    if has_tensor_input or not isinstance(out_ty, TensorType):
        return True
    dims = static_shape(out_ty)
    if dims is None or any(d <= 0 for d in dims):
        return True
    n = 1
    for d in dims:
        n *= d
        if n > MAX_FOLD_ELEMENTS:
            return False
    return True


def folds(inputs, out_ty) -> bool:
    """Whether TVM's FoldConstant evaluates a kernel reading ``inputs`` (the expressions it
    passes, after constant propagation) and writing ``out_ty`` (a TensorType or a TupleType
    of them): every input a Constant, every output shape static, and worth folding."""
    if any(type(a) is not Constant for a in inputs):
        return False
    outs = out_ty.fields if isinstance(out_ty, TupleType) else (out_ty,)
    if any(static_shape(t) is None for t in outs):
        return False
    return should_be_folded(bool(inputs), out_ty)


def folded_constant(out_ty, first_index: int):
    """The value a folded kernel of type ``out_ty`` becomes, and the next free index: a
    Constant without data (metadata reference ``first_index``), or for a tuple type a Tuple
    of them numbered from ``first_index`` in field order."""
    if isinstance(out_ty, TupleType):
        fields = []
        k = first_index
        for t in out_ty.fields:
            c, k = folded_constant(t, k)
            fields.append(c)
        return Tuple(fields), k
    return Constant(None, out_ty, meta=("relax.expr.Constant", first_index)), first_index + 1
