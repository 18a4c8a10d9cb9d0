"""DataflowUseInplaceCalls: compute element-wise op calls in place of a dead argument.

Port of TVM 0.27's ``relax.transform.DataflowUseInplaceCalls`` (module pass
``DataflowInsertInPlaceCalls``, src/relax/transform/dataflow_inplace.cc; spec §3).

Analysis -> rewrite
-------------------
For every dataflow block of every Relax function (nested ones included) that binds a call of
an op registered ``inplace`` (:func:`candidate_blocks`, the binding table's answer; the
native pass's "nothing to do" asks the same) the analyses of
:mod:`memcore_py.analysis.dataflow_inplace` run on the *input* block
(:func:`~memcore_py.analysis.dataflow_inplace.inplace_opportunities`, no inputs assumed
fresh, as in TVM). Each binding with an exact-shape opportunity (ops registered
``inplace``: add, subtract, multiply, divide, nn.relu, nn.silu) is rewritten with the first
candidate in TVM's order (index 1 when both operands qualify)::

    b = R.multiply(a, a)
      ->
    b = R.call_tir_inplace(cls.multiply_inplace, (a, a), out_ty=R.Tensor((2, 3), "float32"),
                           inplace_indices=[1])

The PrimFunc is the op's legalization with its output buffer replaced by the chosen
operand (:mod:`.legalize_elementwise` writes that TIR; TVM's ``LegalizeOps`` is never
called). Names and sharing follow TVM's block builder: the legalization is added under the
op's legalized name (``add``, ``add1`` when an ``add`` of another structure exists),
structurally equal functions share one GlobalVar, the in-place copy is added as
``<legalized name>_inplace`` (uniquified: ``add_inplace1``), and the legalizations are
removed at the end. A folded scalar constant is not an argument of the new call.
Symbolic variables used in the shapes but not a dim of any buffer (``n``, ``m`` of
``(n * m,)``) are scalar parameters after the buffers, and the call passes the caller's
variables after the tensors (:func:`unbound_tir_vars`), as ``bb.call_te`` does::

    b = R.call_tir_inplace(cls.multiply_inplace, (a, y, n, m), out_ty=..., inplace_indices=[0])

Where TVM is unsound or crashes (DIFFERENCES.md, section DataflowUseInplaceCalls)
------------------------------------------------------------------------------
- ``tuple-capture``: a value held by a live tuple is never overwritten (TVM does it).
- ``leading-scalar``: ``R.add(R.const(1.0), z)`` is rewritten with the index shifted past
  the folded constant (TVM fails "In-place index ... out of range").
- ``existing-legalization``: a PrimFunc of the input module that equals a legalization is
  kept (TVM deletes it and leaves its callers dangling).
- ``constant-views``: a view of a constant (``R.expand_dims(c)``, a reshape) is never
  overwritten: TVM's lowering makes it share the constant's storage, so TVM's in-place
  write changes the constant at every run (a decomposed BatchNorm's running variance).

``DataflowUseInplaceCalls(tvm_compat=True)`` reproduces TVM's choices for all but the second
(for differential tests); the second is always fixed.

Sharing is decided by :func:`~.legalize_elementwise.structure_key` for the functions this
pass makes; a pre-existing PrimFunc is recognised as equal when its text equals the one
this pass writes (modulo the function name and whitespace), since memcore does not read
TIR bodies. Calls outside dataflow blocks, other ops, and calls whose result has an
unknown dtype or shape are left alone, as in TVM.
"""
from __future__ import annotations

import dataclasses

from ..errors import IRError, PassError
from ..ir.expr import (Call, Constant, DataflowVar, Function, MatchCast, PrimFunc, PrimFuncParam,
                       PrimValue, ShapeExpr, Tuple, TupleGetItem, Var, VarBinding)
from ..ir.construct import new_binding, new_call, new_match_cast, new_tuple
from ..ir.functor import ExprMutator
from ..ir.infer import infer_type
from ..ir.module import IRModule
from ..ir.op import Op, get_op
from ..ir.prim import IntImm, PrimVar, free_prim_vars
from ..ir.text.prim_func_text import format_prim, str_literal
from ..ir.types import TensorType, TupleType
from ..analysis.dataflow_inplace import inplace_candidate_blocks, inplace_opportunities
from ..analysis.function_table import read_function_table
from .legalize_elementwise import (SUPPORTED, ElementwiseCall, KernelFacts, Operand, folded_operand, kernel_and_text,
                                   kernel_prim_func, legalization_params, prim_func, scalar_of, signature_prim_func,
                                   structure_key)
from ._prim_func_registry import PrimFuncRegistry
from .pass_infra import ModulePass, PassContext

__all__ = ["DataflowUseInplaceCalls", "dataflow_use_inplace_calls"]

_CALL_TIR_INPLACE = get_op("relax.call_tir_inplace")


#: Binding values without nested scopes (no dataflow block can be inside them).
_FLAT_VALUES = frozenset({Call, Tuple, TupleGetItem, Var, DataflowVar, Constant, ShapeExpr, PrimValue})


def unbound_tir_vars(ec: ElementwiseCall, facts=None) -> tuple:
    """The symbolic variables TVM's ``bb.call_te`` passes to the legalized PrimFunc as scalar
    arguments (``gen_call_tir_inputs``' ``unbound_tir_vars``): those used in the buffer
    shapes (the tensor operands in argument order, then the result) that are not themselves
    a dimension of one of them, so the PrimFunc cannot read them from a buffer's shape, e.g.
    ``n`` and ``m`` for operands of shape ``(n * m,)``.

    In first-occurrence order. TVM takes them from a Python ``set`` of objects hashed by
    address: its order is this one whenever at most two are unbound and the first variable
    used is one of them (the cases TVM itself orders the same way every run); otherwise
    TVM's order changes from run to run and this one is one of its orders. ``facts``: a
    :class:`~.legalize_elementwise.KernelFacts` answering the dims' free variables."""
    shapes = [o.shape for o in ec.operands if o.is_buffer]
    shapes.append(ec.shape)
    vars_of = free_prim_vars if facts is None else facts.free_vars
    used: dict = {}
    bound = set()
    for shape in shapes:
        for d in shape:
            if type(d) is PrimVar:
                bound.add(d.name)
            if type(d) is not IntImm:
                for name, v in vars_of(d).items():
                    used.setdefault(name, v)
    return tuple(v for name, v in used.items() if name not in bound)


def _signature_dims(params) -> list:
    """Each buffer's dims as TVM 0.27's printer writes them in a PrimFunc signature: a
    dimension that is a variable (or a constant) bare; an expression as a string
    (``"n * m"``) when it uses a variable that is a dimension of some buffer, or when it uses
    a variable the signature has not written yet (this defines that expression's variables
    for the dims after it), bare otherwise (the rule of TVM's output, checked by
    tests/oracle/test_dataflow_inplace_oracle.py). ``None`` for a scalar parameter."""
    dim_vars = {d.name for p in params if p.is_buffer for d in p.shape if type(d) is PrimVar}
    written = set()
    out = []
    for p in params:
        if not p.is_buffer:
            out.append(None)
            continue
        dims = []
        for d in p.shape:
            text = format_prim(d, tir=True)
            if type(d) is PrimVar:
                written.add(d.name)
            elif type(d) is not IntImm:
                names = free_prim_vars(d).keys()
                if any(n in dim_vars for n in names):
                    text = str_literal(text)
                elif not all(n in written for n in names):
                    text = str_literal(text)
                    written.update(names)
            dims.append(text)
        out.append(dims)
    return out


def _with_scalar_params(params: tuple, kernel, text_of, scalars: tuple, inplace: bool) -> PrimFunc:
    """The PrimFunc with parameters ``params`` (as :func:`~.legalize_elementwise.prim_func`
    writes them), its ``kernel`` (None: a function without one, never written to TVM) and the
    text ``text_of()``, with the scalar parameters ``scalars`` (:func:`unbound_tir_vars`)
    where ``bb.call_te`` puts them: after the input buffers, before the output buffer of a
    legalization (an in-place copy has none), and its signature line written as TVM prints
    it (:func:`_signature_dims`; this also quotes the expression dims of a function without
    scalar parameters)."""
    if not scalars and all(type(d) is IntImm or type(d) is PrimVar for p in params for d in p.shape):
        # the signature is already written as TVM prints it
        return kernel_prim_func(kernel, text_of) if kernel is not None else signature_prim_func(params, text_of)
    params = list(params)
    at = len(params) if inplace else len(params) - 1
    params[at:at] = [PrimFuncParam(v.name, v.dtype) for v in scalars]
    params = tuple(params)

    def text_with_scalars():
        decls = []
        for p, dims in zip(params, _signature_dims(params)):
            if dims is None:
                decls.append(f"{p.name}: T.{p.dtype}")
            else:
                shape = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
                decls.append(f'{p.name}: T.Buffer({shape}, "{p.dtype}")')
        lines = text_of().split("\n")
        k = next(i for i, ln in enumerate(lines) if ln.startswith("def "))
        name = lines[k][4:lines[k].index("(")]
        lines[k] = f"def {name}({', '.join(decls)}):"
        return "\n".join(lines)

    if kernel is None:
        return signature_prim_func(params, text_with_scalars)
    return kernel_prim_func(dataclasses.replace(kernel, params=params), text_with_scalars)


class _Rewriter(ExprMutator):
    """Rewrites the chosen bindings of each dataflow block; owns the module's builder."""

    def __init__(self, mod: IRModule, tvm_compat: bool):
        super().__init__()
        self.mod = mod
        self.tvm_compat = tvm_compat
        self.registry = PrimFuncRegistry(mod)
        self.legal: dict = {}  # structure key -> GlobalVar of the legalization
        self.inplace: dict = {}  # structure key -> GlobalVar of the in-place function
        self.legal_added: list = []
        self.named: dict = {}  # legalization key -> the call whose names its buffers carry
        self.chosen: dict = {}
        self.candidates: set = set()  # id() of the bindings of the blocks searched (candidate_blocks)
        self.by_types: dict = {}  # (op, type ids, index) -> (legalization, in-place GlobalVar, types)
        self.facts = KernelFacts()  # what the kernels of this pass call ask repeatedly

    # -- blocks -------------------------------------------------------------------
    def visit_block(self, blk):
        if id(blk.bindings) not in self.candidates:
            return super().visit_block(blk)
        _size, exact = inplace_opportunities(blk, (), tvm_tuple_capture=self.tvm_compat,
                                             tvm_constant_memory=self.tvm_compat)
        saved = self.chosen
        self.chosen = {blk.bindings[i]: idx[0] for i, idx in exact}
        try:
            return super().visit_block(blk)
        finally:
            self.chosen = saved

    def visit_binding(self, b, out):
        j = self.chosen.get(b)
        if j is None:
            if type(b.value) in _FLAT_VALUES:
                out.append(b)  # no variable is ever renamed, and no scope to enter: as is
                return None
            return super().visit_binding(b, out)
        new_value = self._inplace_call(b, j)
        if type(b) is MatchCast:
            out.append(new_match_cast(b.var, new_value, b.ty))
        else:
            out.append(new_binding(b.var, new_value))

    # -- the rewrite of one call ----------------------------------------------------
    def _fail(self, b, msg):
        return PassError(f"DataflowUseInplaceCalls: binding '{b.var.name}' in function '{self.func_name}': {msg}")

    def _parts(self, b, call: Call):
        """The result type, which operands TVM folds (scalar constants) and the Relax
        arguments the PrimFunc takes."""
        op = call.op
        if op.name not in SUPPORTED:
            raise self._fail(b, f"{op.name} is registered in-place capable but has no legalization here")
        # The call's own type (TVM's legalized out_ty): a VarBinding's var has it already.
        rty = call.ty if call.ty is not None else (b.var.ty if type(b) is VarBinding else None)
        if not isinstance(rty, TensorType) or rty.shape is None or not rty.dtype:
            try:
                rty = infer_type(call, self.mod)
            except IRError as e:
                raise self._fail(b, str(e)) from None
        if not isinstance(rty, TensorType) or rty.shape is None or not rty.dtype:
            raise self._fail(b, f"the result type of {op.name} is not a tensor of known shape and dtype: {rty!r}")
        args = call.args
        k_folded = folded_operand(args)
        folded = [k == k_folded for k in range(len(args))]
        for k, a in enumerate(args):
            if folded[k] and a.data is None:
                raise self._fail(b, "the scalar constant folded into the PrimFunc has no data (metadata not supplied)")
            if not folded[k]:
                t = getattr(a, "ty", None)
                if not isinstance(t, TensorType) or t.shape is None:
                    raise self._fail(b, f"argument {k} of {op.name} is not a tensor of known shape: {t!r}")
        return rty, folded

    @staticmethod
    def _describe(call: Call, rty, folded) -> ElementwiseCall:
        operands = []
        for k, a in enumerate(call.args):
            if folded[k]:
                operands.append(Operand(None, value=scalar_of(a.data)))
            else:
                operands.append(Operand(tuple(a.ty.shape), a.name if isinstance(a, Var) else "A"))
        return ElementwiseCall(call.op.name, rty.dtype, tuple(rty.shape), tuple(operands))

    def _function(self, table: dict, ec: ElementwiseCall, index, hint: str, legal_key: tuple, scalars: tuple):
        """The GlobalVar of the PrimFunc of ``ec`` (in place of ``index``, or the
        legalization for None): shared by structure, added under ``hint`` if new.
        ``legal_key``: ``structure_key(ec)``, whose last item is the index; ``scalars``:
        ``unbound_tir_vars(ec)``."""
        key = legal_key if index is None else legal_key[:-1] + (index,)
        gv = table.get(key)
        if gv is None:
            # TVM derives the in-place function from the legalization it found, whose buffers
            # are named after the arguments of the call that first created it.
            named = self.named.setdefault(legal_key, ec)
            if named is not ec:
                ec, scalars = named, unbound_tir_vars(named, self.facts)
            if index is None:
                # The legalization only names and shares functions (it is removed at the end):
                # its signature is read, its text only when compared with a module function.
                facts = self.facts
                func = _with_scalar_params(legalization_params(ec, facts=facts), None,
                                           lambda: prim_func(ec, hint, None, facts=facts).text, scalars, False)
            else:
                kernel, text_of = kernel_and_text(ec, hint, index, facts=self.facts)
                func = _with_scalar_params(kernel.params, kernel, text_of, scalars, True)
            gv = self.registry.add(func, hint, key)
            table[key] = gv
        return gv

    def _inplace_call(self, b, j: int) -> Call:
        call = b.value
        rty, folded = self._parts(b, call)
        # Types are shared objects: a call of the same op on the same type objects (and the
        # same folded constants) has the same functions, found without building any key.
        fast = (call.op, id(rty), j, tuple(
            ("c", repr(scalar_of(a.data))) if folded[k] else id(a.ty) for k, a in enumerate(call.args)))
        kept = tuple(a for k, a in enumerate(call.args) if not folded[k])
        hit = self.by_types.get(fast)
        if hit is None:
            ec = self._describe(call, rty, folded)
            legal_key = structure_key(ec, facts=self.facts)
            unbound = unbound_tir_vars(ec, self.facts)
            gv_legal = self._function(self.legal, ec, None, call.op.legalize, legal_key, unbound)
            gv = self._function(self.inplace, ec, j, gv_legal.name + "_inplace", legal_key, unbound)
            idx = j - sum(folded[:j])  # position among the PrimFunc's inputs (folded constants skipped)
            # The symbolic variables the PrimFunc takes as scalars follow the tensors in the
            # argument tuple, as bb.call_te appends them (TVM's in-place call keeps its tuple).
            scalars = tuple(PrimValue(v) for v in unbound)
            hit = self.by_types[fast] = (gv_legal, gv, TupleType([a.ty for a in kept] + [p.ty for p in scalars]),
                                         {"inplace_indices": (idx,)}, (rty,), scalars,
                                         (rty,) + tuple(a.ty for a in call.args))  # the last keeps ids valid
        gv_legal, gv, args_ty, attrs, ty_args, scalars = hit[:6]
        self.legal_added.append(gv_legal)
        if self.var_remap:
            kept = tuple(self.visit_expr(a) for a in kept)
        # Parts taken from a checked call and types of its arguments: built unchecked.
        return new_call(_CALL_TIR_INPLACE, (gv, new_tuple(kept + scalars, args_ty)), attrs, ty_args)

    def result(self, updates: dict) -> IRModule:
        out = self.registry.module(updates)
        remove = []
        for gv in dict.fromkeys(self.legal_added):
            if gv in self.mod.functions and not self.tvm_compat:
                continue  # existing-legalization: a function of the input module is kept
            if gv in out.functions:
                remove.append(gv)
        return out.with_functions({}, remove=remove) if remove else out


def dataflow_use_inplace_calls(mod: IRModule, *, tvm_compat: bool = False) -> IRModule:
    """``mod`` with the eligible op calls of its dataflow blocks made in place (see the
    module docstring).

    Parameters
    ----------
    mod : IRModule
    tvm_compat : bool, default False
        Reproduce TVM's unsound choices (tuple capture, deleting an existing PrimFunc equal
        to a legalization); for differential tests.

    Returns
    -------
    IRModule
        ``mod`` itself when no call is rewritten.

    Raises
    ------
    PassError
        A chosen call whose types are unknown or whose folded constant has no data.
    """
    if not isinstance(mod, IRModule):
        raise PassError(f"DataflowUseInplaceCalls expects an IRModule; got {type(mod).__name__}")
    rw = _Rewriter(mod, bool(tvm_compat))
    updates = {}
    for gv, func in mod.functions.items():
        if isinstance(func, Function):
            rw.candidates = candidate_blocks(func, gv.name)
            if not rw.candidates:
                continue
            rw.func_name = gv.name
            new = rw.visit_function(func)
            if new is not func:
                updates[gv] = new
    if not updates:
        return mod
    return rw.result(updates)


def candidate_blocks(func: Function, name: str) -> set:
    """The ``id()`` of the bindings tuple of each block of ``func`` (nested functions included)
    the pass searches: :func:`~memcore_py.analysis.dataflow_inplace.inplace_candidate_blocks`
    of its binding table.

    Raises
    ------
    PassError
        What the binding table's reader cannot read, naming the function.
    """
    table, _reader = read_function_table(func.body, name, "DataflowUseInplaceCalls", with_callee_flags=True)
    bindings = table.block_bindings
    return {id(bindings[block]) for block in inplace_candidate_blocks(table)}


class DataflowUseInplaceCalls(ModulePass):
    """Module pass: :func:`dataflow_use_inplace_calls`.

    Parameters
    ----------
    tvm_compat : bool, default False
        See :func:`dataflow_use_inplace_calls`.
    """

    name = "dataflow-use-inplace-calls"

    def __init__(self, *, tvm_compat: bool = False):
        self.tvm_compat = bool(tvm_compat)

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return dataflow_use_inplace_calls(mod, tvm_compat=self.tvm_compat)

    def __repr__(self):
        return "DataflowUseInplaceCalls(tvm_compat=True)" if self.tvm_compat else "DataflowUseInplaceCalls()"


_ = (Op, TupleType)
