"""KillAfterLastUse: release tensors, storages and objects right after their last use.

Port of TVM ``KillAfterLastUse`` (src/relax/transform/kill_after_last_use.cc), a function
pass (``CreateFunctionPass(..., "KillAfterLastUse")``), as TVM 0.27.0.post1 behaves.

Stages (each over the whole function)
-------------------------------------
1. :func:`~memcore_py.transform.canonicalize_bindings.canonicalize_bindings` (TVM runs
   ``CanonicalizeBindings`` first, and its effects stay in the output: ``y = alloc``
   re-bindings disappear and their uses read ``alloc``; ``b = t[0]`` of a known tuple reads
   the field; constant-bound vars are inlined at their uses).
2. :func:`remove_unused_trivial_bindings` (TVM ``UnusedTrivialBindingRemover``): a binding
   ``v = <var>`` or ``v = R.match_cast(<var>, T)`` with ``T`` equal to the var's type is
   dropped when ``v`` is never used.
3. Kill insertion (TVM ``KillInserter``) from
   :func:`~memcore_py.analysis.last_usage.collect_last_usage`: right after the binding
   that is a variable's last use, emit ``_ = R.memory.kill_tensor(v)`` for tensors, then
   ``R.memory.kill_storage(v)`` for storages, then ``R.vm.kill_object(v)`` for other
   register objects (tuples, packed-call results), each group in the order the killed
   variables were bound. The kill variables are named ``_``, ``_1``, ... by a
   :class:`~memcore_py.ir.builder.NameTable` fresh for each function, so they may repeat
   ``_`` names already present (as in TVM). What is never killed: parameters, unused
   variables, results of their scope, already-killed variables, constants, values bound
   to ``R.null_value()``, shapes, prim values, functions and ``R.Tuple()`` values.

Example (after StaticPlanBlockMemory and LowerAllocTensor)::

    storage = R.memory.alloc_storage(R.shape([24]), 0, R.str("global"), R.dtype("float32"))
    alloc = R.memory.alloc_tensor(storage, 0, R.shape([2, 3]), R.dtype("float32"), 0)
    R.memory.kill_storage(storage)           # the tensor now keeps the storage alive
    add(x, x, alloc)
    ...
    multiply(alloc, alloc, alloc1)
    R.memory.kill_tensor(alloc)              # last use of alloc

Deliberate differences from TVM (DIFFERENCES.md)
------------------------------------------------
- *Scopes.* TVM kills nothing in a scope at or after its first binding that contains a
  nested scope (an If, a nested function), and never kills a variable whose last use is
  inside one. We kill every scope's variables after their last use, counting a use inside
  a nested scope as a use at the enclosing binding (so after the If).
- *Dataflow blocks.* TVM inserts the (impure) kill calls inside dataflow blocks, which is
  ill-formed. We never do: a non-dataflow variable whose last use is inside a dataflow
  block is killed right after the block; DataflowVars (not nameable outside their block)
  are not killed.

``KillAfterLastUse(tvm_scoping=True)`` reproduces TVM's placement in both cases, for
differential testing only.

Performance
-----------
A function whose body is binding blocks without nested scopes (every function after
ToNonDataflow without control flow) takes a fused, compiled path,
:func:`memcore_py.transform._kill_walk.kill_flat`: stages 1-3 in two loops over the bindings
(one that canonicalizes and records last uses, one that splices the kills in), building the
new nodes without re-validating them. It gives exactly the general path's output, which is
its test oracle (tests compare both on random programs); anything else (If, nested
functions, dataflow blocks, unusual kill calls) takes the general path below. The cyclic
garbage collector is paused during the pass (speed against TVM's pass: bench/README.md,
"KillAfterLastUse").

Rules and where each lives
--------------------------
- Which ops define storages, kill, or hold no register: the op table (``Op.kill_role``,
  :mod:`memcore_py.ir.op`), read by every walk through ``ops_with_kill_role`` / ``kill_op``.
- The kill kind of a variable (storage, tensor, other register object, none):
  ``kill_kind_of`` in ``memcore_py/analysis/_kill_rules.pxd``, asked by
  :func:`~memcore_py.analysis.last_usage.collect_last_usage` (through
  ``_kill_rules.kill_kind``), by the compiled flat walk and by the walk over TVM's objects
  (:mod:`memcore_py.tvm._kill_extract`), each of which only reads its object model into the
  rule's codes.
- The kill order after one binding: ``kill_schedule`` (``_kill_walk.pxd``) for both compiled
  walks; the general path groups its kills the same way in ``collect_last_usage``.
- Last uses, re-binding removal and kill names are still walked three times (the general
  path, the compiled flat walk, the walk over TVM's objects); the three-way differential
  suite (tests/oracle/test_three_way.py) holds them equal.

Preconditions: meant for non-dataflow, impure-allowed IR after StaticPlanBlockMemory and
LowerAllocTensor. Postconditions: kill calls are placed as above; re-running the pass adds
no kills for already-killed variables. Bad input (a kill call whose argument is not a
single variable) raises :class:`~memcore_py.errors.PassError` naming function and binding.
"""
from __future__ import annotations

from ..analysis.last_usage import KillSet, collect_last_usage
from ..ir.builder import NameTable
from ..ir.expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Var,
    VarBinding,
)
from ..ir.functor import ExprMutator, map_functions, normalize_blocks, var_uses
from ..ir.module import IRModule
from ..ir.op import kill_op
from ..ir.types import VOID, type_equal
from ._kill_walk import HasMatchCast, NotFlat, kill_flat
from .canonicalize_bindings import canonicalize_bindings, canonicalize_tir_variables
from .pass_infra import FunctionPass, PassContext

__all__ = ["kill_after_last_use", "remove_unused_trivial_bindings", "KillAfterLastUse"]

_KILL_TENSOR, _KILL_STORAGE, _KILL_OBJECT = (kill_op(kind) for kind in range(3))
_SCOPE_CLASSES = (If, Function, SeqExpr)
_VAR_CLASSES = (Var, DataflowVar)


# ------------------------------------------------------------------------ stage 2
def _iter_bindings(seq):
    stack = [seq]
    while stack:
        s = stack.pop()
        for blk in s.blocks:
            for b in blk.bindings:
                yield b
                v = b.value
                cls = type(v)
                if cls is If:
                    stack.append(v.true_branch)
                    stack.append(v.false_branch)
                elif cls is Function:
                    stack.append(v.body)
                elif cls is SeqExpr:
                    stack.append(v)


class _BindingDropper(ExprMutator):
    def __init__(self, to_remove):
        super().__init__()
        self.to_remove = to_remove

    def visit_binding(self, b, out):
        if b.var not in self.to_remove:
            super().visit_binding(b, out)


def remove_unused_trivial_bindings(func: Function) -> Function:
    """Drop ``v = <var>`` (and ``v = R.match_cast(<var>, T)`` with ``T`` equal to the var's
    type) when ``v`` is used nowhere (TVM ``UnusedTrivialBindingRemover``)."""
    candidates = set()
    for b in _iter_bindings(func.body):
        v = b.value
        if type(v) in _VAR_CLASSES and (type(b) is VarBinding or type_equal(b.var.ty, v.ty)):
            candidates.add(b.var)
    if not candidates:
        return func
    used = set(var_uses(func.body))
    to_remove = candidates - used
    if not to_remove:
        return func
    return _BindingDropper(to_remove).visit_function(func)


# ------------------------------------------------------------------------ stage 3
class _KillInserter:
    """Port of TVM ``KillInserter``: rebuilds every scope with the kills of
    :class:`~memcore_py.analysis.last_usage.LastUsage` (one name table per function)."""

    def __init__(self, usage, tvm_scoping):
        self.kills_after = usage.kills_after
        self.deferred = usage.deferred
        self.tvm_scoping = tvm_scoping
        self.names = NameTable()

    def _emit_kills(self, ks: KillSet, out: list, in_dataflow: bool):
        fresh = self.names.fresh
        var_cls = DataflowVar if in_dataflow else Var
        for op, targets in ((_KILL_TENSOR, ks.tensors), (_KILL_STORAGE, ks.storage), (_KILL_OBJECT, ks.objects)):
            for t in targets:
                out.append(VarBinding(var_cls(fresh("_"), VOID), Call(op, (t,), ty=VOID)))

    def expr(self, e):
        cls = type(e)
        if cls is SeqExpr:
            return self.seq(e)
        if cls is If:
            tb, fb = self.seq(e.true_branch), self.seq(e.false_branch)
            if tb is e.true_branch and fb is e.false_branch:
                return e
            return If(e.cond, tb, fb, e.ty)
        if cls is Function:
            body = self.seq(e.body)
            if body is e.body:
                return e
            return Function(e.params, body, e.ret_ty, e.attrs, e.is_pure)
        return e

    def seq(self, seq: SeqExpr) -> SeqExpr:
        kills_after = self.kills_after
        deferred = self.deferred
        new_blocks = []
        changed = False
        for blk in seq.blocks:
            in_df = type(blk) is DataflowBlock
            out = []
            block_changed = False
            for b in blk.bindings:
                value = b.value
                if type(value) in _SCOPE_CLASSES:
                    nv = self.expr(value)
                    if nv is not value:
                        b = MatchCast(b.var, nv, b.ty) if type(b) is MatchCast else VarBinding(b.var, nv)
                        block_changed = True
                out.append(b)
                ks = kills_after.get(b.var)
                if ks is not None:
                    self._emit_kills(ks, out, in_df)
                    block_changed = True
            if block_changed:
                new_blocks.append(type(blk)(out))
                changed = True
            else:
                new_blocks.append(blk)
            if in_df and deferred:
                ks = deferred.get(blk)
                if ks is not None:
                    after = []
                    self._emit_kills(ks, after, False)
                    new_blocks.append(BindingBlock(after))
                    changed = True
        normalized = normalize_blocks(new_blocks)
        if not changed and len(normalized) == len(seq.blocks):
            return seq
        return SeqExpr(normalized, seq.body)


def kill_after_last_use(func: Function, name: str = "?", *, tvm_scoping: bool = False) -> Function:
    """``func`` with kill calls after last uses (see the module docstring).

    Parameters
    ----------
    func : Function
    name : str
        Function name for error messages.
    tvm_scoping : bool, default False
        Reproduce TVM 0.27's kill placement around nested scopes and in dataflow blocks
        (differential testing only; see DIFFERENCES.md).
    """
    return _kill_after_last_use(func, name, tvm_scoping, allow_fast=True)


def _kill_flat(func: Function, name: str = "?"):
    """The compiled flat path's output for ``func`` (after CanonicalizeBindings' symbolic
    stage when ``func`` has a match_cast), or None when ``func`` needs the general path."""
    try:
        try:
            return kill_flat(func)
        except HasMatchCast:
            return kill_flat(canonicalize_tir_variables(func, name), staged=True)
    except NotFlat:
        return None


def _kill_after_last_use(func, name, tvm_scoping, allow_fast):
    if allow_fast:
        out = _kill_flat(func, name)
        if out is not None:
            return out
    func = canonicalize_bindings(func, name)
    func = remove_unused_trivial_bindings(func)
    usage = collect_last_usage(func, tvm_scoping=tvm_scoping, func_name=name)
    return _KillInserter(usage, tvm_scoping).expr(func)


class KillAfterLastUse(FunctionPass):
    """Function pass: :func:`kill_after_last_use` on every Relax function.

    Parameters
    ----------
    tvm_scoping : bool, default False
        Reproduce TVM's placement where it differs from ours (see DIFFERENCES.md); for
        differential tests against TVM only.
    """

    name = "kill-after-last-use"

    def __init__(self, *, tvm_scoping: bool = False):
        self.tvm_scoping = bool(tvm_scoping)

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return kill_after_last_use(func, tvm_scoping=self.tvm_scoping)

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda func, name: kill_after_last_use(func, name, tvm_scoping=self.tvm_scoping))

    def __repr__(self):
        return "KillAfterLastUse(tvm_scoping=True)" if self.tvm_scoping else "KillAfterLastUse()"
