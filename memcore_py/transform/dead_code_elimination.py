"""DeadCodeElimination: drop unreachable functions and unused pure bindings.

Port of TVM 0.27's ``relax.transform.DeadCodeElimination(entry_functions=None)`` (module
pass ``DeadCodeElimination``; src/relax/transform/dead_code_elimination.cc, with
``RemoveAllUnused`` of src/relax/ir/binding_rewrite.cc and ``CollectVarUsage`` of
src/relax/analysis/udchain.cc), as TVM 0.27.0.post1 behaves.

Stages
------
0. *Entry functions*: the functions named in ``entry_functions`` plus every function with
   external linkage: a Relax function with a ``global_symbol`` attribute (``@R.function``
   without ``private=True``), a PrimFunc that is not private (or has a ``global_symbol``
   attribute).
1. :func:`remove_unreachable_functions`: every function not reachable from an entry
   through GlobalVar references is removed. A Relax function references every GlobalVar
   written anywhere in it (callee or argument, nested scopes included); a PrimFunc the
   ``cls.<name>`` callees of its text (memcore does not read TIR bodies otherwise). As in
   TVM, when a reachable function refers to a name the module does not define, nothing is
   removed.
2. :func:`remove_all_unused` on every Relax function: a ``VarBinding`` is removed when its
   variable is *unused*, the greatest fixpoint of "not externally exposed, and every binding
   that reads it is removed" (TVM ``RemoveAllUnused``). The rule, with TVM's attribution of
   uses and ``ContainsImpureCall``, is the compiled kernel
   :func:`memcore_py.analysis._dce_rules.unused_bindings` over the function's binding table
   (its docstring states them); ``MatchCast`` bindings are never removed. Every SeqExpr then
   has its empty blocks dropped and adjacent blocks of one kind merged (TVM's normalizer).
3. :func:`remove_unreachable_functions` again (callers may have gone in stage 2).

Purity (TVM ``IsImpureCall``): a call of an :class:`~memcore_py.ir.op.Op` is impure when the
op is not registered ``pure`` (the op table, :mod:`memcore_py.ir.op`); a call of a Relax
function's GlobalVar is pure when that function is pure; a call of a variable, whose type is
a function type, as that type says; a call of an ExternFunc (``R.call_packed``) or of a
PrimFunc's GlobalVar is impure (:func:`is_impure_callee`: the kernel takes it per callee).

Deliberate differences from TVM
-------------------------------
- A direct call of a PrimFunc is always impure here; TVM asks ``IsPureFunction`` of the TIR
  body (pure only for a PrimFunc without buffer stores), which memcore does not read.
- TVM aborts when an entry name is not in the module; here it is a :class:`PassError`.

Example::

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            y = R.add(x, x)           # unused: removed
            z = R.multiply(x, x)
            R.output(z)
        return z

becomes ``main`` without ``y``; a private function that no entry reaches any more is removed.
"""
from __future__ import annotations

import re

from .._compiled import load_compiled
from ..analysis.function_table import read_function_table
from ..errors import PassError
from ..ir.construct import function_with_body, new_block, new_if, new_seq
from ..ir.expr import (
    Call,
    Constant,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    PrimFunc,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.functor import normalize_blocks
from ..ir.module import IRModule
from ..ir.op import Op
from ..ir._util import gc_paused
from ..ir.types import FuncType
from .pass_infra import ModulePass, PassContext

__all__ = [
    "DeadCodeElimination",
    "dead_code_elimination",
    "entry_function_names",
    "remove_unreachable_functions",
    "reachable_names",
    "has_external_linkage",
    "remove_all_unused",
    "is_impure_call",
    "is_impure_callee",
    "module_function_is_impure",
    "unused_variables",
    "is_flat",
]

_VARS = (Var, DataflowVar)
#: A reference to a module function in a PrimFunc's text: ``cls.name``, or ``Module.name``
#: through the module's class name, which is how TVM prints a TIR call of a GlobalVar (any
#: capitalised name but TVMScript's ``T``, ``R`` and ``I``)
_CLS_REF = re.compile(r"(?<![\w.])(?:cls|(?!(?:T|R|I)\.)[A-Z][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)")
#: Expressions that hold no GlobalVar and no variable use.
_LEAVES = frozenset((Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc))


def is_flat(func: Function) -> bool:
    """Whether no binding value of ``func`` opens a scope (If, SeqExpr, nested function) or
    holds a call inside its top-level call, tuple or get-item (normal form has none): the
    functions the passes here rewrite with one loop over the bindings (the loop is compiled:
    ``memcore_py/transform/_flat_walks.pyx``)."""
    return load_compiled("memcore_py.transform._flat_walks").is_flat(func)


def is_flat_block(blk) -> bool:
    """:func:`is_flat`'s rule for one binding block: whether no binding value opens a scope or
    holds a call inside its top-level call, tuple or get-item."""
    return load_compiled("memcore_py.transform._flat_walks").is_flat_block(blk)


def _children(e) -> list:
    """The expressions evaluating ``e`` reads directly: a call's arguments (and a callee that
    is not an Op), tuple fields, the tuple of a get-item, an If's condition and branches, a
    SeqExpr's binding values and result, a function's body; nothing for leaves."""
    cls = type(e)
    if cls is Call:
        op = e.op
        return list(e.args) if type(op) is Op else [op, *e.args]
    if cls is Tuple:
        return list(e.fields)
    if cls is TupleGetItem:
        return [e.tuple_value]
    if cls is If:
        return [e.cond, e.true_branch, e.false_branch]
    if cls is SeqExpr:
        return [b.value for blk in e.blocks for b in blk.bindings] + [e.body]
    if cls is Function:
        return [e.body]
    return []


# ------------------------------------------------------------------------ stage 0 and 1
def _is_external(func) -> bool:
    return has_external_linkage(type(func) is PrimFunc and not func.private, func.attrs)


def has_external_linkage(public_prim_func: bool, attr_names) -> bool:
    """Stage 0's linkage rule: a PrimFunc that is not private, or any function with a
    ``global_symbol`` attribute (``attr_names``: its attribute names)."""
    return public_prim_func or "global_symbol" in attr_names


def entry_function_names(mod: IRModule, entry_functions=None) -> list:
    """Names of ``mod``'s entry functions: ``entry_functions`` plus every function with
    external linkage (see the module docstring), in module order after the given ones.

    Raises
    ------
    PassError
        A name in ``entry_functions`` that ``mod`` does not define (TVM aborts).
    """
    names = []
    for name in entry_functions or ():
        if not isinstance(name, str):
            raise PassError(
                f"DeadCodeElimination: entry function names must be str; got {type(name).__name__} {name!r}"
            )
        if name not in mod:
            raise PassError(f"DeadCodeElimination: entry function {name!r} is not in the module; "
                            f"it has {sorted(gv.name for gv in mod.functions)}")
        names.append(name)
    for gv, func in mod.functions.items():
        if _is_external(func) and gv.name not in names:
            names.append(gv.name)
    return names


def _callees(func) -> list:
    """Names of the GlobalVars ``func`` refers to (TVM ``CollectCallees``)."""
    if type(func) is PrimFunc:
        body = func.source_body()  # the object it was read from tells, without a text
        if body is not None:
            return body.callees()
        text = func.reference_text()  # a copy's unwritten text refers to what its base does
        return _CLS_REF.findall(text) if text else []
    out = []
    stack = [func.body]
    leaves = _LEAVES
    while stack:
        e = stack.pop()
        cls = type(e)
        if cls is SeqExpr:
            stack.append(e.body)
            for blk in e.blocks:
                for b in blk.bindings:
                    v = b.value
                    if type(v) is Call:  # the common case, inline: no push per argument
                        op = v.op
                        if type(op) is GlobalVar:
                            out.append(op.name)
                        elif type(op) is not Op:
                            stack.append(op)
                        for a in v.args:
                            ta = type(a)
                            if ta is GlobalVar:
                                out.append(a.name)
                            elif ta is Tuple:
                                for f in a.fields:
                                    tf = type(f)
                                    if tf is GlobalVar:
                                        out.append(f.name)
                                    elif tf is not Var and tf is not DataflowVar and tf not in leaves:
                                        stack.append(f)
                            elif ta is not Var and ta is not DataflowVar and ta not in leaves:
                                stack.append(a)
                    else:
                        stack.append(v)
        elif cls is GlobalVar:
            out.append(e.name)
        else:
            stack.extend(_children(e))
    return out


def remove_unreachable_functions(mod: IRModule, entries) -> IRModule:
    """``mod`` without the functions no entry reaches (TVM ``RemoveUnusedFunctions``).

    Parameters
    ----------
    mod : IRModule
    entries : iterable of str
        Names of the entry functions (all in ``mod``).

    Returns
    -------
    IRModule
        ``mod`` itself when nothing is removed, or when a reachable function refers to a
        name ``mod`` does not define (TVM then removes nothing either).
    """
    by_name = {gv.name: f for gv, f in mod.functions.items()}
    reachable = reachable_names(entries, lambda name: _callees(by_name[name]) if name in by_name else None)
    if reachable is None:
        return mod
    remove = [gv for gv in mod.functions if gv.name not in reachable]
    return mod.with_functions({}, remove=remove) if remove else mod


def reachable_names(entries, callees_of):
    """The names of the functions reachable from ``entries`` (names) through ``callees_of``
    (name -> the names that function refers to, or None when the module does not define
    it): stage 1's rule, for any object model. None when a reachable name is not defined
    (nothing is removed then, as in TVM)."""
    reachable = set(entries)
    todo = list(reachable)
    while todo:
        callees = callees_of(todo.pop())
        if callees is None:
            return None
        for callee in callees:
            if callee not in reachable:
                reachable.add(callee)
                todo.append(callee)
    return reachable


# ------------------------------------------------------------------------ purity
def is_impure_call(call: Call, mod: IRModule | None = None) -> bool:
    """Whether ``call`` may have a visible side effect (TVM ``IsImpureCall``; see the module
    docstring for the rule of each kind of callee). ``mod`` resolves GlobalVar callees."""
    return is_impure_callee(call.op, mod)


def is_impure_callee(op, mod: IRModule | None = None) -> bool:
    """Whether a call of ``op`` may have a visible side effect (:func:`is_impure_call`'s rule,
    which depends on the callee only)."""
    cls = type(op)
    if cls is Op:
        return not op.pure
    if cls is GlobalVar:
        func = mod.functions.get(mod.get_global_var(op.name)) if mod is not None and op.name in mod else None
        if func is None and isinstance(op.ty, FuncType):
            return not op.ty.purity
        return module_function_is_impure(type(func) is Function, type(func) is Function and func.is_pure)
    if cls is ExternFunc:
        return True
    ty = getattr(op, "ty", None)
    if isinstance(ty, FuncType):
        return not ty.purity
    return True


def module_function_is_impure(is_relax_function: bool, is_pure: bool) -> bool:
    """:func:`is_impure_callee`'s rule for a call of a function the module defines: impure
    unless it is a Relax function declared pure (a PrimFunc always is: the module docstring)."""
    return not (is_relax_function and is_pure)


# ------------------------------------------------------------------------ stage 2
def unused_variables(func: Function, mod: IRModule | None = None) -> set:
    """The variables of ``func``'s unused pure VarBindings (stage 2 of the module docstring).

    The rule is the compiled kernel's (:mod:`memcore_py.analysis._dce_rules`), over the
    binding table of ``func``; the impurity of each callee is :func:`is_impure_callee`'s.

    Raises
    ------
    PassError
        What the table's reader cannot read (naming the function).
    """
    table, reader = read_function_table(
        func.body, func.attrs.get("global_symbol", "?") if func.attrs else "?", "DeadCodeElimination")
    impure = bytes([is_impure_callee(c, mod) for c in reader.callees])
    return set(load_compiled("memcore_py.analysis._dce_rules").unused_bindings(table, 0, impure))


def _drop(seq, dead):
    """``seq`` without the VarBindings of ``dead`` vars, every SeqExpr normalized."""
    new_blocks = []
    changed = False
    for blk in seq.blocks:
        kept = []
        blk_changed = False
        for b in blk.bindings:
            if type(b) is VarBinding and b.var in dead:
                blk_changed = True
                continue
            v = b.value
            cv = type(v)
            if cv is If or cv is Function or cv is SeqExpr:
                nv = _drop_expr(v, dead)
                if nv is not v:
                    blk_changed = True
                    b = VarBinding(b.var, nv) if type(b) is VarBinding else MatchCast(b.var, nv, b.ty)
            kept.append(b)
        if blk_changed:
            changed = True
            new_blocks.append(new_block(type(blk), kept))
        else:
            new_blocks.append(blk)
    body = _drop_expr(seq.body, dead)
    normalized = normalize_blocks(new_blocks)
    if not changed and body is seq.body and len(normalized) == len(seq.blocks):
        return seq
    return new_seq(normalized, body, seq.ty)


def _drop_expr(e, dead):
    cls = type(e)
    if cls is SeqExpr:
        return _drop(e, dead)
    if cls is If:
        tb, fb = _drop(e.true_branch, dead), _drop(e.false_branch, dead)
        if tb is e.true_branch and fb is e.false_branch:
            return e
        return new_if(e.cond, tb, fb, e.ty)
    if cls is Function:
        body = _drop(e.body, dead)
        return e if body is e.body else function_with_body(e, body)
    return e


def remove_all_unused(func: Function, mod: IRModule | None = None) -> Function:
    """``func`` without its unused pure VarBindings (TVM ``RemoveAllUnused``; stage 2 of
    the module docstring); ``func`` itself when nothing changes.

    Parameters
    ----------
    func : Function
    mod : IRModule, optional
        Resolves the purity of calls of GlobalVars (without it they count as impure unless
        their type says they are pure).
    """
    return _remove_all_unused(func, mod)


def _remove_all_unused(func, mod):
    if type(func) is not Function:
        raise PassError(f"remove_all_unused expects a Relax Function; got {type(func).__name__}")
    dead = unused_variables(func, mod)
    if not dead and len(normalize_blocks(func.body.blocks)) == len(func.body.blocks):
        return func
    return _drop_expr(func, dead)


# ------------------------------------------------------------------------ the pass
def dead_code_elimination(mod: IRModule, entry_functions=None) -> IRModule:
    """Stages 0-3 of the module docstring.

    Parameters
    ----------
    mod : IRModule
    entry_functions : list of str, optional
        Extra entry functions (besides those with external linkage).

    Returns
    -------
    IRModule
        ``mod`` itself when nothing is removed.

    Raises
    ------
    PassError
        An entry name ``mod`` does not define.
    """
    if not isinstance(mod, IRModule):
        raise PassError(f"DeadCodeElimination expects an IRModule; got {type(mod).__name__}")
    entries = entry_function_names(mod, entry_functions)
    with gc_paused():
        mod = remove_unreachable_functions(mod, entries)
        updates = {}
        for gv, func in mod.functions.items():
            if type(func) is Function:
                new = _remove_all_unused(func, mod)
                if new is not func:
                    updates[gv] = new
        if not updates:  # nothing unreachable became so: the second sweep would find nothing
            return mod
        return remove_unreachable_functions(mod.with_functions(updates), entries)


class DeadCodeElimination(ModulePass):
    """Module pass: :func:`dead_code_elimination` (TVM ``relax.transform.DeadCodeElimination``).

    Parameters
    ----------
    entry_functions : list of str, optional
        Names kept (with what they reach) besides the functions with external linkage.
    """

    name = "dead-code-elimination"

    def __init__(self, entry_functions=None):
        self.entry_functions = None if entry_functions is None else list(entry_functions)

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return dead_code_elimination(mod, self.entry_functions)

    def __repr__(self):
        return f"DeadCodeElimination(entry_functions={self.entry_functions!r})"
