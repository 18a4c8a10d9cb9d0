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
ToNonDataflow without control flow) takes a fused path, :func:`_kill_flat`: stages 1-3 in
two passes over the bindings (one walk that canonicalizes and records last uses, one that
splices the kills in), building the new nodes without re-validating them. It gives exactly
the general path's output (tests compare both on random programs); anything else (If,
nested functions, dataflow blocks, unusual kill calls) takes the general path. The cyclic
garbage collector is paused during the pass (speed against TVM's pass: bench/README.md,
"KillAfterLastUse").

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
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.module import IRModule
from ..ir.op import get_op
from ..ir.construct import new_binding, new_block, new_call, new_var
from ..ir.functor import ExprMutator, map_functions, normalize_blocks, value_type, var_uses
from ..ir.types import VOID, FuncType, PrimType, ShapeType, TensorType, TupleType, type_equal
from .canonicalize_bindings import canonicalize_bindings, canonicalize_tir_variables
from .pass_infra import FunctionPass, PassContext

__all__ = ["kill_after_last_use", "remove_unused_trivial_bindings", "KillAfterLastUse"]

_KILL_TENSOR = get_op("relax.memory.kill_tensor")
_KILL_STORAGE = get_op("relax.memory.kill_storage")
_KILL_OBJECT = get_op("relax.vm.kill_object")
_SCOPE_CLASSES = (If, Function, SeqExpr)
_VAR_CLASSES = (Var, DataflowVar)
_VAR_CLASS_SET = frozenset(_VAR_CLASSES)


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


# ------------------------------------------------------------------------ fused fast path
class _NotFlat(Exception):
    """The function needs the general path."""


class _HasMatchCast(Exception):
    """The function has a match_cast: run CanonicalizeBindings' symbolic stage first."""


_STORAGE_OPS = frozenset((get_op("relax.memory.alloc_storage"), get_op("relax.vm.alloc_storage")))
_KILL_OPS = frozenset((_KILL_TENSOR, _KILL_STORAGE, _KILL_OBJECT))
_NULL_VALUE = get_op("relax.null_value")
_SPECIAL_OPS = _STORAGE_OPS | _KILL_OPS | {_NULL_VALUE}
_NO_REGISTER_TYPES = frozenset((FuncType, ShapeType, PrimType))
_PLAIN_LEAVES = frozenset((Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, GlobalVar))


def _kill_flat(func: Function, name: str, staged: bool = False) -> Function:
    """All three stages in two passes, for a function whose body is only binding blocks
    without nested scopes (the shape of every function after ToNonDataflow without
    control flow). Produces exactly what the general path produces (tested); raises
    :class:`_NotFlat` for anything else.

    Pass 1 walks the bindings once, doing CanonicalizeBindings' planning and rewriting
    together (every replacement target is an earlier binding), recording each variable's
    last use and, at its definition, what kind of kill it would get. Pass 2 groups the
    killable variables by last-use position (in definition order) and splices the kills
    into the binding list."""
    body = func.body
    repl = {}            # var -> the Var or Constant its uses become
    known = {}           # var -> its known (unwrapped, original) value (not kept for
    #                      non-tuple call results: nothing unwraps through them)
    last = {}            # var -> position in `out` of its last use; -1 = the result
    kind_of = {}         # var -> 0 tensor / 1 storage / 2 object, in definition order
    out = []
    killed = set()
    tensor_cls = TensorType
    no_reg_types = _NO_REGISTER_TYPES
    plain = _PLAIN_LEAVES
    special = _SPECIAL_OPS
    var_set = _VAR_CLASS_SET
    call_cls, vb_cls, var_cls, dfvar_cls = Call, VarBinding, Var, DataflowVar
    append = out.append
    for blk in body.blocks:
        if type(blk) is not BindingBlock:
            raise _NotFlat
        for b in blk.bindings:
            var = b.var
            value = orig = b.value
            cls = type(value)
            is_vb = type(b) is vb_cls
            if not is_vb and not staged:
                raise _HasMatchCast
            if cls is call_cls:
                op = value.op
                if is_vb and op in special:
                    args = value.args
                    if op in _KILL_OPS:
                        if len(args) != 1 or type(args[0]) not in _VAR_CLASS_SET:
                            raise _NotFlat  # the general path reports it
                        r = repl.get(args[0])
                        if r is not None:
                            if type(r) is Constant:
                                raise _NotFlat
                            value = new_call(op, (r,), value.attrs, value.ty_args, value.ty)
                        killed.add(value.args[0])
                    else:
                        if any(type(a) not in plain for a in args):
                            raise _NotFlat
                        if op is _NULL_VALUE:
                            pass  # no register: never killed
                        else:
                            kind_of[var] = 1  # storage
                    append(b if value is orig else new_binding(var, value))
                    continue
                if type(op) in var_set:
                    raise _NotFlat
                pos = len(out)
                args = value.args
                new_args = None
                for a in args:  # common case: nothing to substitute
                    ca = type(a)
                    if ca in plain:
                        continue
                    if (ca is not var_cls and ca is not dfvar_cls) or a in repl:
                        break
                    last[a] = pos
                else:
                    args = None
                if args is not None:
                    new_args = []
                    for a in args:
                        ca = type(a)
                        if ca is var_cls or ca is dfvar_cls:
                            r = repl.get(a)
                            if r is not None:
                                a = r
                            if type(a) is not Constant:
                                last[a] = pos
                        elif ca not in plain:
                            if ca is not Tuple and ca is not TupleGetItem:
                                raise _NotFlat
                            a = _rewrite_leafy(a, repl)
                            for u in var_uses(a):
                                last[u] = pos
                        new_args.append(a)
                vty = var.ty
                tcls = type(vty)
                if tcls is tensor_cls:
                    kind_of[var] = 0
                elif tcls is TupleType:
                    if vty.fields:
                        # Only a tuple-typed call result can be the source of a tuple
                        # re-packing; knowing it is a call keeps `(t[0], t[1])` from
                        # counting as a copy of t.
                        known[var] = orig
                        kind_of[var] = 2
                    # else R.Tuple() (a DPS call's result): never killed, see last_usage
                elif tcls not in no_reg_types:
                    if vty is None:
                        known[var] = orig
                    kind_of[var] = 2
                if new_args is None:
                    append(b)
                else:
                    new_args = tuple(new_args)
                    if new_args == value.args:  # e.g. only a tuple argument was visited
                        append(b)
                        continue
                    nc = new_call(op, new_args, value.attrs, value.ty_args, value.ty)
                    if is_vb:
                        append(new_binding(var, nc))
                    else:
                        append(MatchCast(var, nc, b.ty))
                continue
            same_type = is_vb or type_equal(var.ty, value_type(orig))
            if cls is TupleGetItem or cls is Tuple:
                unwrapped = _unwrap_known(value, known)
                if unwrapped is not None:
                    value = unwrapped
                    cls = type(value)
            constant_binding = False
            if cls is var_cls or cls is dfvar_cls:
                # Unwrapping follows var chains only to reach a tuple or a get-item, so a
                # chain through a non-tuple var that is known as nothing more is not kept.
                if value in known or type(value.ty) is TupleType:
                    known[var] = value
                if same_type:
                    repl[var] = repl.get(value, value)  # trivial: dropped
                    continue
            else:
                known[var] = value
                if cls is Constant:
                    repl[var] = value
                    constant_binding = is_vb and orig is value
                elif cls in _SCOPE_CLASSES:
                    raise _NotFlat
            # kept binding: rewrite the original value, record its uses
            pos = len(out)
            ocls = type(orig)
            if ocls is Var or ocls is DataflowVar:
                r = repl.get(orig)
                new_value = orig if r is None else r
                if not is_vb and type(new_value) in _VAR_CLASS_SET and type_equal(var.ty, new_value.ty):
                    raise _NotFlat  # a match_cast became trivial: leave it to the general path
                if type(new_value) is not Constant:
                    last[new_value] = pos
            elif ocls in plain:
                new_value = orig
            else:
                new_value = _rewrite_leafy(orig, repl)
                for u in var_uses(new_value):
                    last[u] = pos
            if not constant_binding:
                tcls = type(var.ty)
                if tcls not in no_reg_types:
                    kind_of[var] = 0 if tcls is tensor_cls else 2
            if new_value is orig:
                out.append(b)
            elif is_vb:
                out.append(new_binding(var, new_value))
            else:
                out.append(MatchCast(var, new_value, b.ty))
    result = body.body
    rcls = type(result)
    if rcls is Var or rcls is DataflowVar:
        r = repl.get(result)
        if r is not None:
            result = r
        if type(result) is not Constant:
            last[result] = -1
    elif rcls not in plain:
        if rcls is not Tuple and rcls is not TupleGetItem:
            raise _NotFlat
        result = _rewrite_leafy(result, repl)
        for u in var_uses(result):
            last[u] = -1

    # Pass 2: group the kills by position (definition order within a group), splice.
    groups = {}
    for var, p in zip(kind_of, map(last.get, kind_of)):
        if p is None or p < 0 or var in killed:
            continue
        g = groups.get(p)
        if g is None:
            groups[p] = [var]
        else:
            g.append(var)
    final = []
    extend, append = final.extend, final.append
    prev = 0
    k = 0  # the k-th kill is named what NameTable().fresh("_") returns the k-th time
    kill_ops = (_KILL_TENSOR, _KILL_STORAGE, _KILL_OBJECT)
    for p in sorted(groups):
        extend(out[prev:p + 1])
        prev = p + 1
        g = groups[p]
        if len(g) > 1:
            g.sort(key=kind_of.__getitem__)  # tensors, storages, objects; stable
        for t in g:
            append(new_binding(new_var(Var, f"_{k}" if k else "_", VOID),
                               new_call(kill_ops[kind_of[t]], (t,), None, (), VOID)))
            k += 1
    final.extend(out[prev:])
    blocks = (new_block(BindingBlock, final),) if final else ()
    return Function(func.params, SeqExpr(blocks, result), func.ret_ty, func.attrs, func.is_pure)


def _unwrap_known(e, known):
    """TVM ``UnwrapKnownValue`` over ``known`` (see canonicalize_bindings)."""

    def unwrap_var(x):
        while type(x) in _VAR_CLASS_SET:
            nxt = known.get(x)
            if nxt is None:
                return x
            x = nxt
        return x

    if type(e) is TupleGetItem:
        tup = unwrap_var(e.tuple_value)
        if type(tup) is Tuple and e.index < len(tup.fields):
            return tup.fields[e.index]
        return None
    fields = e.fields
    if not fields:
        return None
    first = unwrap_var(fields[0])
    if type(first) is not TupleGetItem:
        return None
    src_ty = value_type(first.tuple_value)
    if type(src_ty) is not TupleType or len(src_ty.fields) != len(fields):
        return None
    earlier = unwrap_var(first.tuple_value)
    for i, f in enumerate(fields):
        el = unwrap_var(f)
        if type(el) is not TupleGetItem or el.index != i or unwrap_var(el.tuple_value) is not earlier:
            return None
    return earlier


def _rewrite_leafy(e, repl):
    """``e`` (a leaf, Tuple or TupleGetItem nest) with replaced variables substituted."""
    cls = type(e)
    if cls is Var or cls is DataflowVar:
        r = repl.get(e)
        return e if r is None else r
    if cls is Tuple:
        fields = e.fields
        new = [_rewrite_leafy(f, repl) for f in fields]
        for n, o in zip(new, fields):
            if n is not o:
                return Tuple(new)
        return e
    if cls is TupleGetItem:
        tv = _rewrite_leafy(e.tuple_value, repl)
        return e if tv is e.tuple_value else TupleGetItem(tv, e.index)
    if cls in _PLAIN_LEAVES:
        return e
    raise _NotFlat


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


def _kill_after_last_use(func, name, tvm_scoping, allow_fast):
    if allow_fast:
        try:
            try:
                return _kill_flat(func, name)
            except _HasMatchCast:
                return _kill_flat(canonicalize_tir_variables(func, name), name, staged=True)
        except _NotFlat:
            pass
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
