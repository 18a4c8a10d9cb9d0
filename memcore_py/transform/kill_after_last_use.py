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

How it runs
-----------
Reader -> binding table -> rule kernel -> edits -> writer: the function is read into the
binding table (:mod:`memcore_py.analysis._ir_reader`), KillAfterLastUse's rule kernel
(:func:`memcore_py.analysis._kill_rules.kill_rules`) says which rebindings go and what is
killed after which binding, and :class:`~memcore_py.transform._kill_writer.EditWriter` applies
that, keeping every other binding the object it was. Stages 1 and 2 are CanonicalizeBindings'
and UnusedTrivialBindingRemover's own code, run first only when the function needs more of
them than the kernel's rebinding rule (``y = x`` dropped, its uses reading ``x``): when it has
a dataflow block the plan changes (a rebinding, constant or variable value in it, or a ``Var``
of it read only inside it, which becomes a ``DataflowVar``), a match_cast of a variable, a
constant bound to a variable, a get-item of a tuple literal or a tuple of get-items, or a
rebinding inside a branch (the kernel reports it, ``needs_canonical``). A function with a
match_cast gets CanonicalizeBindings' symbolic stage first. The native pass on TVM's objects
(:mod:`memcore_py.tvm.kill_extract`) runs the same kernel. The cyclic garbage collector is paused during the pass.

Rules and where each lives
--------------------------
- Which ops define storages, kill, or hold no register: the op table (``Op.kill_role``,
  :mod:`memcore_py.ir.op`), compiled into the binding table's callee flags
  (:func:`~memcore_py.analysis.storage_tokens.callee_flags`).
- Uses, last uses per scope, kill kinds (``kill_kind_of``), placement, kill order and names,
  and the rebinding rule: ``memcore_py/analysis/_kill_rules.pyx`` (its docstring lists them).
- CanonicalizeBindings' other rules: :mod:`memcore_py.transform.canonicalize_bindings`.
- What UnusedTrivialBindingRemover may drop (a binding that rebinds a variable exactly) and
  where a chain of rebindings ends: the canonical kernel's ``rebinds_exactly`` and
  ``chain_end`` (``memcore_py/analysis/_canonical_rules.pxd``), the rules CanonicalizeBindings
  plans with.

Preconditions: meant for non-dataflow, impure-allowed IR after StaticPlanBlockMemory and
LowerAllocTensor. Postconditions: kill calls are placed as above; re-running the pass adds
no kills for already-killed variables. Bad input (a kill call whose argument is not a
single variable) raises :class:`~memcore_py.errors.PassError` naming function and binding.
"""
from __future__ import annotations

from .._compiled import load_compiled
from ..analysis.function_table import read_function_table
from ..analysis.last_usage import function_edits
from ..ir.construct import function_with_body
from ..ir.expr import Function
from ..ir.functor import ExprMutator, map_functions, var_uses
from ..ir.module import IRModule
from ._kill_writer import EditWriter, NeedsCanonical
from .canonicalize_bindings import canonicalize_bindings, canonicalize_tir_variables
from .pass_infra import FunctionPass, PassContext

__all__ = ["kill_after_last_use", "remove_unused_trivial_bindings", "KillAfterLastUse"]


# ------------------------------------------------------------------------ stage 2
def _bound_scope(table, scope) -> bool:
    """Whether ``scope`` of ``table`` is the function body or nested only in scopes each bound
    directly to a variable (an If branch, a nested function or SeqExpr that is a binding's
    value), the scopes UnusedTrivialBindingRemover's walk visits."""
    parents, anchors = table.scope_parent, table.scope_anchor
    while parents[scope] >= 0:
        if anchors[scope] is None:
            return False
        scope = parents[scope]
    return True


class _BindingDropper(ExprMutator):
    def __init__(self, to_remove):
        super().__init__()
        self.to_remove = to_remove

    def visit_binding(self, b, out):
        if b.var not in self.to_remove:
            super().visit_binding(b, out)


def remove_unused_trivial_bindings(func: Function, name: str = "?") -> Function:
    """Drop ``v = <var>`` (and ``v = R.match_cast(<var>, T)`` with ``T`` equal to the var's
    type) when ``v`` is used nowhere (TVM ``UnusedTrivialBindingRemover``).

    Which bindings rebind a variable exactly is the canonical kernel's rule
    (:func:`memcore_py.analysis._canonical_rules.exact_rebindings`), asked of the bindings of
    ``func``'s body and of the scopes bound to its variables (If branches, nested functions and
    SeqExprs, as :func:`~memcore_py.analysis.last_usage.iter_bindings` visits them); a use is an
    occurrence :func:`~memcore_py.ir.functor.var_uses` reports.

    Parameters
    ----------
    func : Function
    name : str, default "?"
        Function name for error messages.

    Returns
    -------
    Function
        ``func`` itself when nothing is dropped.

    Raises
    ------
    PassError
        The binding table cannot read ``func`` (as CanonicalizeBindings, which runs first).
    """
    table, _reader = read_function_table(func.body, name, "KillAfterLastUse")
    block_bindings, block_scope = table.block_bindings, table.block_scope
    candidates = set()
    for block, pos in load_compiled("memcore_py.analysis._canonical_rules").exact_rebindings(table, 0):
        if _bound_scope(table, block_scope[block]):
            candidates.add(block_bindings[block][pos].var)
    if not candidates:
        return func
    used = set(var_uses(func.body))
    to_remove = candidates - used
    if not to_remove:
        return func
    return _BindingDropper(to_remove).visit_function(func)


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


def _apply(func, edits, table):
    if not edits.changed:
        return func
    body = EditWriter(edits, table.block_bindings).seq(func.body)
    return func if body is func.body else function_with_body(func, body)


def _kill_with_rebindings(func, name, tvm_scoping):
    """The pass with only the kernel's rebinding rule of CanonicalizeBindings (after its symbolic
    stage when ``func`` has a match_cast), or None when ``func`` needs CanonicalizeBindings."""
    edits, table = function_edits(func.body, name, tvm_scoping=tvm_scoping, rebind=True)
    if edits.has_match_cast:
        staged = canonicalize_tir_variables(func, name)
        if staged is not func:
            func = staged
            edits, table = function_edits(func.body, name, tvm_scoping=tvm_scoping, rebind=True)
    if edits.needs_canonical:
        return None
    try:
        return _apply(func, edits, table)
    except NeedsCanonical:
        return None


def _kill_after_last_use(func, name, tvm_scoping, allow_fast):
    if allow_fast:
        out = _kill_with_rebindings(func, name, tvm_scoping)
        if out is not None:
            return out
    func = canonicalize_bindings(func, name)
    func = remove_unused_trivial_bindings(func, name)
    edits, table = function_edits(func.body, name, tvm_scoping=tvm_scoping)
    return _apply(func, edits, table)


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
