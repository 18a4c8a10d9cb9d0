"""LowerForPlanning: high-level Relax to ``call_tir`` of signature-only PrimFuncs, without TVM.

Why
---
StaticPlanBlockMemory plans the outputs of ``call_tir`` (after CallTIRRewrite). A module
from TVM's torch importer holds high-level op calls (``R.matmul``, ``R.nn.conv2d``, ...);
TVM turns them into ``call_tir`` with ``LegalizeOps`` (which writes real TIR, slow and
TVM-only). For *planning* only the interface of each kernel matters: which tensors it
reads, and the type of what it writes. This pass produces exactly that interface, the way
TVM's unfused pipeline (``LegalizeOps, AnnotateTIROpPattern, FoldConstant,
RewriteDataflowReshape``) leaves it, so that ``LowerForPlanning -> ToNonDataflow ->
RemovePurityChecking -> CallTIRRewrite -> StaticPlanBlockMemory`` plans the same tensors
with the same bytes as TVM's pipeline on the same module.

Rewrite (per binding of a high-level op call; other bindings unchanged)
------------------------------------------------------------------------
- ``y = R.op(args...)`` -> ``y = R.call_tir(cls.<name>, (inputs...), out_ty=type(y))``:
  ``inputs`` are the tensor arguments in order, a tuple literal argument contributing its
  fields (``concat``); shape, prim-value, string and dtype arguments are dropped (they are
  baked into the kernel); for the binary element-wise ops a scalar constant operand is
  folded into the kernel as TVM's legalization folds it (``args[1]`` first, else
  ``args[0]``), and so is every 0-d constant among the fill value of ``full``/``full_like``
  and the scale and zero point of ``quantize``/``dequantize``; a tensor argument the
  legalization reads for its shape only is no input either (the ``x`` of
  ``zeros_like``/``ones_like``/``full_like`` (``topi.full``) and of ``eye_like``
  (``topi.eye``), the target of ``collapse_sum_like``).
- An op whose kernel moves elements as a reshape does (``reshape``, ``squeeze``,
  ``expand_dims``, ``flatten``, ``nn.batch_flatten``; ``broadcast_to`` adding only unit
  dims; ``permute_dims`` moving only unit dims; ``strided_slice`` keeping every element;
  ``collapse_sum_like`` to its input's own shape, a copy), bound to a DataflowVar, with its
  input's dtype and element count, becomes ``R.reshape(x, R.shape([...]))``: a view of
  ``x``, as TVM's RewriteDataflowReshape makes it from the TIR (an output var keeps its own
  kernel and allocation).
- A kernel that TVM's FoldConstant evaluates (the rule of
  :mod:`~memcore_py.transform.fold_constant`: every input a constant, every output shape
  static, and not a creation kernel of more than :data:`MAX_FOLD_ELEMENTS` elements)
  becomes a constant of the output type (a metadata reference without data: only its type
  matters to planning) and its later uses read that constant, so kernels of constants fold
  in turn. As TVM's FoldConstant, a use of any variable bound to a constant
  (``lv = R.const(...)``) reads that constant, and ``index_tensor`` never folds (its
  legalization reads the indices through ``TupleGetItem`` bindings). Folding follows the
  legalization, as in TVM's pipeline: a scalar operand baked into a kernel is one written
  as a constant; a scalar that folding produces stays a (constant) kernel input.
- As TVM's FoldConstant ends (``RemoveAllUnused``), bindings nothing uses are then removed
  from every lowered function (folded kernels' bindings among them).
- The PrimFunc is signature-only (inputs then the outputs, ``tirx.noalias``, private), one
  per op and signature, named after TVM's legalized kernel (``transpose`` for
  ``permute_dims``, ``cast`` for ``astype``, ``tir_exp`` for ``exp``; the op's short name
  otherwise), uniquified ``matmul``, ``matmul1``, ... against the module.

Fused variant (``fuse=True``)
----------------------------
TVM's default CPU pipeline fuses before planning (``DispatchSortScan`` for the scan and sort
ops, then ``LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps, FuseTIR,
RewriteDataflowReshape`` and the planning passes). With
``fuse=True`` the lowering above runs with two changes, then
:func:`~memcore_py.transform.fuse_for_planning.fuse_for_planning` groups the kernels
(FuseOps never sees dead kernels: they went with the unused bindings):

- every kernel carries TVM's ``op_pattern`` attribute, the value AnnotateTIROpPattern gives
  the TIR TVM writes for the op (:func:`~memcore_py.transform._op_patterns.op_pattern`);
  kernels are shared per op, signature and pattern;
- reshape-pattern bindings stay kernels through fusion (RewriteDataflowReshape runs after
  FuseTIR in TVM, so a reshape fuses with its neighbours); those left alone in their group
  (or with only the ``TupleGetItem`` that reads their input: FuseTIR's kernel of that group
  is the reshape's TIR, which RewriteDataflowReshape recognizes) become ``R.reshape`` views
  afterwards.

Fusion is an option of this pass rather than a pass of its own because it needs what only
the lowering knows: each kernel's op pattern (read off TIR by TVM; signature-only kernels
have none) and which kernels are reshapes. ``fuse_for_planning`` alone serves modules whose
kernels already carry ``op_pattern``.

An op call whose type is unknown, or whose argument is a tuple-typed variable, raises
:class:`~memcore_py.errors.PassError` naming the binding; so does, with ``fuse=True``, an op
without a known pattern.
"""
from __future__ import annotations

from ..errors import IRError, PassError
from ..ir.builder import NameTable
from ..ir.expr import (
    Call,
    Constant,
    DataflowVar,
    Function,
    GlobalVar,
    MatchCast,
    PrimFunc,
    PrimFuncParam,
    SeqExpr,
    ShapeExpr,
    Tuple,
    Var,
    VarBinding,
)
from ..ir.construct import function_with_body
from ..ir.functor import ExprMutator
from ..ir.infer import infer_type
from ..ir.module import IRModule
from ..ir.op import Op, get_op
from ..ir.prim import IntImm, prove_equal
from ..ir.types import TensorType, TupleType
from ..analysis.dataflow_inplace import element_count
from ._op_patterns import op_pattern
from .dead_code_elimination import remove_all_unused
from .fold_constant import MAX_FOLD_ELEMENTS, TUPLE_ITEM_INPUT_OPS, folded_constant, folds
from .fuse_for_planning import MAX_FUSE_DEPTH, fuse_with_kernels, tensor_type_key
from .legalize_elementwise import folded_operand
from .pass_infra import ModulePass, PassContext

__all__ = ["LowerForPlanning", "lower_for_planning", "has_high_level_calls", "KERNEL_NAMES", "MAX_FOLD_ELEMENTS"]

_CALL_TIR = get_op("relax.call_tir")
_RESHAPE = get_op("relax.reshape")

#: Ops whose kernel TVM's LegalizeOps names differently from the op's short name.
KERNEL_NAMES = {
    "relax.astype": "cast",
    "relax.concat": "concatenate",
    "relax.permute_dims": "transpose",
    "relax.zeros_like": "zeros",
    "relax.full_like": "full",
    "relax.ones_like": "ones",
    "relax.collapse_sum_like": "collapse_sum",
    "relax.nn.batch_flatten": "reshape",
    **{f"relax.{n}": f"tir_{n}" for n in (
        "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "negative", "sin", "cos", "erf", "floor", "ceil",
        "round", "abs", "log2", "log10", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
        "atanh", "isnan", "isinf", "isfinite", "square", "sign", "trunc", "bitwise_not", "logical_not")},
}
#: Binary element-wise ops whose legalization folds a scalar constant operand.
_FOLDING = frozenset(f"relax.{n}" for n in (
    "add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum", "equal",
    "not_equal", "less", "less_equal", "greater", "greater_equal", "mod", "floor_mod", "bitwise_and",
    "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor", "left_shift", "right_shift",
    "atan2", "log_add_exp"))
#: The tensor argument whose shape alone the op's legalization reads (``arg.ty.shape``).
_SHAPE_ONLY_ARG = {"relax.zeros_like": 0, "relax.ones_like": 0, "relax.full_like": 0, "relax.eye_like": 0,
                   "relax.collapse_sum_like": 1}
#: Arguments the op's legalization bakes into the kernel when they are 0-d constants.
_BAKED_SCALARS = {"relax.full": (1,), "relax.full_like": (1,), "relax.quantize": (1, 2), "relax.dequantize": (1, 2)}
_RESHAPE_LIKE = frozenset({"relax.reshape", "relax.squeeze", "relax.expand_dims", "relax.flatten",
                           "relax.nn.batch_flatten"})
_VIEW_CANDIDATES = _RESHAPE_LIKE | {"relax.broadcast_to", "relax.strided_slice", "relax.permute_dims",
                                     "relax.collapse_sum_like"}
#: Calls that already are kernels, memory operations or views: left alone.
_KEEP_PREFIXES = ("relax.call_", "relax.builtin.", "relax.memory.", "relax.vm.")
_KEEP = frozenset({"relax.shape_of", "relax.null_value"})


class _Lowerer(ExprMutator):
    def __init__(self, mod: IRModule, fuse: bool = False):
        super().__init__()
        self.mod = mod
        self.fuse = fuse
        self.views: set = set()  # fuse: bindings RewriteDataflowReshape makes views after fusion
        self.names = NameTable()
        for gv in mod.functions:
            self.names.reserve(gv.name)
        self.kernels: dict = {}  # (op, input types, output type) -> GlobalVar
        self.new_funcs: dict = {}
        self.n_folded = 0
        self.bound_consts: dict = {}  # Var bound to a Constant -> the Constant (TVM's LookupBinding)

    def _fail(self, b, msg):
        return PassError(f"LowerForPlanning: binding '{b.var.name}' in function '{self.func_name}': {msg}")

    def visit_binding(self, b, out):
        value = b.value
        if not _is_high_level(value):
            if type(value) is Constant and type(b) is VarBinding:
                self.bound_consts[b.var] = value
            return super().visit_binding(b, out)
        new = self._lower(b, value)
        out.append(MatchCast(b.var, new, b.ty) if type(b) is MatchCast else VarBinding(b.var, new))

    def _out_type(self, b, call):
        ty = call.ty if call.ty is not None else (b.var.ty if type(b) is VarBinding else None)
        if not _known(ty):
            try:
                ty = infer_type(call, self.mod)
            except IRError as e:
                raise self._fail(b, str(e)) from None
        if not _known(ty):
            raise self._fail(b, f"{call.op.name}: the result type must be tensors of known shape and dtype; got {ty!r}")
        return ty

    def _lower(self, b, call: Call):
        """The kernel call (or view, or folded constant) of high-level ``call``, bound by
        ``b``. The legalization reads the written arguments (as TVM's LegalizeOps, which runs
        before FoldConstant); the kernel reads them as FoldConstant leaves them."""
        op = call.op
        out_ty = self._out_type(b, call)
        written = self._inputs(b, call)
        inputs = [self._folded_use(a) for a in written]
        if op.name not in TUPLE_ITEM_INPUT_OPS and folds(inputs, out_ty):
            folded, self.n_folded = folded_constant(out_ty, self.n_folded)
            self.var_remap[b.var] = folded
            return folded
        view = self.in_dataflow and type(b.var) is DataflowVar and _is_reshape_pattern(call, out_ty)
        if view and not self.fuse:
            return Call(_RESHAPE, (self.visit_expr(call.args[0]), ShapeExpr(out_ty.shape)))
        pattern = op_pattern(call, inputs, out_ty) if self.fuse else None
        gv = self._kernel(op, inputs, out_ty, pattern)
        if view:
            self.views.add(b.var)
        return Call(_CALL_TIR, (gv, Tuple(inputs)), None, (out_ty,))

    def _folded_use(self, a):
        """Kernel input ``a`` (as written) as TVM's FoldConstant passes it: a folded or
        renamed variable's new value, a variable bound to a constant that constant."""
        a = self.visit_expr(a)
        return self.bound_consts.get(a, a) if self.bound_consts and isinstance(a, Var) else a

    def _inputs(self, b, call: Call) -> list:
        op = call.op
        inputs = []
        dropped = _not_read(call)
        for k, a in enumerate(call.args):
            if k in dropped:
                continue
            if type(a) is Tuple:
                inputs.extend(f for f in a.fields if isinstance(getattr(f, "ty", None), TensorType))
                continue
            t = getattr(a, "ty", None)
            if isinstance(t, TensorType):
                inputs.append(a)
            elif isinstance(t, TupleType) and isinstance(a, Var):
                raise self._fail(b, f"{op.name}: a tuple-typed variable argument ({a.name}) is not supported; "
                                    "pass a tuple literal")
        return inputs

    def _kernel(self, op: Op, inputs, out_ty, pattern) -> GlobalVar:
        outs = list(out_ty.fields) if isinstance(out_ty, TupleType) else [out_ty]
        key = (op, tuple(tensor_type_key(a.ty) for a in inputs), tuple(tensor_type_key(t) for t in outs),
               pattern)
        gv = self.kernels.get(key)
        if gv is None:
            params = [PrimFuncParam(f"A{i}", a.ty.dtype, a.ty.shape) for i, a in enumerate(inputs)]
            params += [PrimFuncParam(f"out{i}", t.dtype, t.shape) for i, t in enumerate(outs)]
            name = self.names.fresh(KERNEL_NAMES.get(op.name, op.name.rsplit(".", 1)[-1]))
            gv = GlobalVar(name)
            attrs = {"tirx.noalias": True} if pattern is None else {"op_pattern": pattern, "tirx.noalias": True}
            self.new_funcs[gv] = PrimFunc(params, attrs, text=None, private=True)
            self.kernels[key] = gv
        return gv


def _not_read(call: Call) -> set:
    """Positions of the tensor arguments of ``call`` its kernel does not take as inputs: a
    scalar constant the legalization bakes into the kernel, an argument it reads the shape of
    (module docstring)."""
    name = call.op.name
    args = call.args
    out = {k for k in _BAKED_SCALARS.get(name, ()) if k < len(args) and _is_scalar_constant(args[k])}
    if name in _FOLDING:
        out.add(folded_operand(args))  # -1 (no position) when no operand folds
    if name in _SHAPE_ONLY_ARG:
        out.add(_SHAPE_ONLY_ARG[name])
    return out


def _is_scalar_constant(a) -> bool:
    t = getattr(a, "ty", None)
    return type(a) is Constant and isinstance(t, TensorType) and t.ndim == 0


def _is_reshape_pattern(call: Call, out_ty) -> bool:
    """Whether TVM's legalized kernel of ``call`` moves elements as a reshape does (same
    dtype and element count, row-major order kept), which RewriteDataflowReshape detects on
    the TIR: reshape-like ops; ``broadcast_to`` that adds only unit dims; ``permute_dims``
    that moves only unit dims; ``strided_slice`` that keeps every element; ``collapse_sum_like``
    that keeps the shape (else a reduction, even of unit dims)."""
    name = call.op.name
    if name not in _VIEW_CANDIDATES or not call.args or not isinstance(out_ty, TensorType):
        return False
    st = getattr(call.args[0], "ty", None)
    if not isinstance(st, TensorType) or st.shape is None or st.dtype != out_ty.dtype:
        return False
    if not prove_equal(element_count(st.shape), element_count(out_ty.shape)):
        return False
    if name in _RESHAPE_LIKE or name in ("relax.broadcast_to", "relax.strided_slice"):
        return True  # equal element counts: a broadcast of unit dims, a slice of everything
    if name == "relax.permute_dims":
        axes = call.attrs.get("axes")
        if axes is None:
            axes = range(len(st.shape) - 1, -1, -1)
        moved = [a.value if isinstance(a, IntImm) else int(a) for a in axes]
        kept = [a for a in moved if not (type(st.shape[a]) is IntImm and st.shape[a].value == 1)]
        return kept == sorted(kept)
    if name == "relax.collapse_sum_like":
        return len(st.shape) == len(out_ty.shape) and all(map(prove_equal, st.shape, out_ty.shape))
    return False


def _known(ty) -> bool:
    if isinstance(ty, TensorType):
        return ty.shape is not None and bool(ty.dtype)
    if isinstance(ty, TupleType):
        return bool(ty.fields) and all(isinstance(f, TensorType) and _known(f) for f in ty.fields)
    return False


def _is_high_level(value) -> bool:
    op = getattr(value, "op", None)
    return (type(value) is Call and type(op) is Op and op.name not in _KEEP
            and not op.name.startswith(_KEEP_PREFIXES))


def has_high_level_calls(mod: IRModule) -> bool:
    """Whether a Relax function of ``mod`` binds a high-level op call (what this pass
    lowers; e.g. TVM's torch importer output), at the top level of its blocks.
    ``R.reshape`` alone does not count: lowered modules keep it as a view (what
    RewriteDataflowReshape leaves)."""
    if not isinstance(mod, IRModule):
        raise PassError(f"has_high_level_calls expects an IRModule; got {type(mod).__name__}")
    for f in mod.functions.values():
        if isinstance(f, Function):
            for blk in f.body.blocks:
                for b in blk.bindings:
                    if _is_high_level(b.value) and b.value.op is not _RESHAPE:
                        return True
    return False


def lower_for_planning(mod: IRModule, *, fuse: bool = False, max_depth: int = MAX_FUSE_DEPTH) -> IRModule:
    """``mod`` with its high-level op calls replaced by kernels and views (module docstring).

    Parameters
    ----------
    mod : IRModule
    fuse : bool, default False
        Group the kernels as TVM's fused pipeline does (module docstring, *Fused variant*).
    max_depth : int, default 256
        With ``fuse``: TVM's ``relax.FuseOps.max_depth``.

    Raises
    ------
    PassError
        An op call of unknown result type or with a tuple-typed variable argument; with
        ``fuse``, an op whose FuseOps pattern is not known.
    """
    if not isinstance(mod, IRModule):
        raise PassError(f"LowerForPlanning expects an IRModule; got {type(mod).__name__}")
    lw = _Lowerer(mod, fuse)
    updates = {}
    for gv, func in mod.functions.items():
        if isinstance(func, Function):
            lw.func_name = gv.name
            new = lw.visit_function(func)
            if new is not func:
                updates[gv] = remove_all_unused(new, mod)  # TVM's FoldConstant ends with RemoveAllUnused
    if not updates:
        return mod
    out = mod.with_functions({**updates, **lw.new_funcs})
    if not fuse:
        return out
    fused, grouped = fuse_with_kernels(out, max_depth=max_depth)
    return _views_after_fusion(fused, lw.views, lw.new_funcs, grouped)


def _views_after_fusion(mod: IRModule, views: set, kernels: dict, grouped: dict) -> IRModule:
    """TVM's RewriteDataflowReshape after FuseTIR: a reshape-pattern kernel left alone in its
    group (bound to a DataflowVar, recorded in ``views``) becomes ``R.reshape``, and so does a
    fused kernel whose group calls that one kernel besides ``TupleGetItem`` reads of its input
    (FuseTIR's TIR of it is the reshape's own; ``grouped``: per fused kernel the kernels it
    calls). A fused kernel of several kernels never does (its TIR copies through an
    intermediate)."""
    updates = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, Function):
            continue
        blocks, changed = [], False
        for blk in func.body.blocks:
            bindings = []
            for b in blk.bindings:
                v = b.value
                if (b.var in views and type(b) is VarBinding and type(v) is Call and v.op is _CALL_TIR
                        and (v.args[0] in kernels or len(grouped.get(v.args[0], ())) == 1)
                        and len(v.args[1].fields) == 1):
                    b = VarBinding(b.var, Call(_RESHAPE, (v.args[1].fields[0], ShapeExpr(b.var.ty.shape))))
                    changed = True
                bindings.append(b)
            blocks.append(type(blk)(bindings))
        if changed:
            updates[gv] = function_with_body(func, SeqExpr(blocks, func.body.body))
    return mod.with_functions(updates) if updates else mod


class LowerForPlanning(ModulePass):
    """Module pass: :func:`lower_for_planning`.

    Parameters
    ----------
    fuse : bool, default False
    max_depth : int, default 256
    """

    name = "lower-for-planning"

    def __init__(self, fuse: bool = False, max_depth: int = MAX_FUSE_DEPTH):
        self.fuse = fuse
        self.max_depth = max_depth

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return lower_for_planning(mod, fuse=self.fuse, max_depth=self.max_depth)

    def __repr__(self):
        return f"LowerForPlanning(fuse={self.fuse})" if self.fuse else "LowerForPlanning()"



