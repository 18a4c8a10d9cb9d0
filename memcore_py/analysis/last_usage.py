"""Last usage of every variable, and what to kill after which binding.

Port of TVM ``CollectLastUsage`` (src/relax/transform/kill_after_last_use.cc), the analysis
behind :class:`~memcore_py.transform.KillAfterLastUse`.

Definitions
-----------
A *scope* is a :class:`~memcore_py.ir.SeqExpr`: a function body, an If branch, the body of
a nested function. The variables *of* a scope are those its own bindings define (not those
of scopes nested in it). Within a scope, bindings are numbered in order across its blocks.

A *use* of a variable is any occurrence in a binding's value, with three exceptions:

1. ``v = R.memory.alloc_storage(...)`` / ``R.vm.alloc_storage(...)`` (the ops whose
   ``kill_role`` is ``"storage"`` in the op table, :mod:`memcore_py.ir.op`): the arguments
   are not visited, and ``v`` is a *storage object*;
2. ``v = R.memory.kill_tensor(x)`` / ``kill_storage(x)`` / ``R.vm.kill_object(x)`` (the kill
   roles): ``x``
   is *already killed* and this is not a use (the call must have exactly one argument, a
   variable: anything else raises :class:`~memcore_py.errors.PassError`);
3. ``v = <Constant>`` is a *constant* (no VM register; not visited).

A variable bound by ``v = R.null_value()`` (kill role ``"no_register"``) has no VM register either. Neither is a variable
of type ``R.Tuple()`` (a DPS call's result) ever killed: TVM's normalizer replaces every
use of such a variable by an empty tuple literal, so in TVM it never has a use. The *last use* of a
variable of scope S is the binding of S whose value (including anything nested in it, such
as the branches of an If) contains its last occurrence; an occurrence in S's result
expression makes it an *output* of S.

A variable of S is killed after its last-use binding unless it is an output, has no use,
or is already killed; the kind of kill is ``kill_storage`` for storage objects, else
``kill_tensor`` if its type is a tensor and it has a VM register, else ``kill_object`` if it
has a VM register. "Has a VM register" means: not a constant, not bound to
``R.null_value()``, and its type is not a function, shape or prim type (nor ``R.Tuple()``). Function
parameters are never killed (they belong to no scope's bindings).

Difference from TVM (see DIFFERENCES.md)
----------------------------------------
TVM recomputes the map at every SeqExpr its mutator enters and clears it on exit, so after
the first binding of a scope that contains a nested scope (the first If, a nested function)
nothing more of that scope is killed, and a variable whose last occurrence is inside a
nested scope is never killed. Here every scope keeps its own map and an occurrence in a
nested scope counts as a use at the enclosing binding, which kills those variables after
the If. ``tvm_scoping=True`` reproduces TVM's placement (for differential tests).
"""
from __future__ import annotations

from ..errors import PassError
from ..ir.diagnostics import binding_error
from ..ir.expr import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Function,
    If,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .._compiled import load_compiled
from ..ir.op import KILL_KINDS, ops_with_kill_role

__all__ = ["KillSet", "LastUsage", "collect_last_usage", "OUTPUT"]

#: The ops by ``Op.kill_role`` (the op table's declaration of these rules).
_STORAGE_OPS = frozenset(ops_with_kill_role("storage"))
_KILL_OPS = frozenset(ops_with_kill_role(*KILL_KINDS))
_NO_REGISTER_OPS = frozenset(ops_with_kill_role("no_register"))
_SCOPE_CLASSES = (If, Function, SeqExpr)

#: ``LastUsage.last_use`` value for a variable whose last use is its scope's result.
OUTPUT = None


class KillSet:
    """What to kill right after one binding, each group in binding order.

    Attributes
    ----------
    tensors : list of Var
        ``R.memory.kill_tensor`` targets.
    storage : list of Var
        ``R.memory.kill_storage`` targets.
    objects : list of Var
        ``R.vm.kill_object`` targets.
    """

    __slots__ = ("tensors", "storage", "objects")

    def __init__(self):
        self.tensors = []
        self.storage = []
        self.objects = []

    def __len__(self):
        return len(self.tensors) + len(self.storage) + len(self.objects)

    def __repr__(self):
        return (f"KillSet(tensors={[v.name for v in self.tensors]}, storage={[v.name for v in self.storage]}, "
                f"objects={[v.name for v in self.objects]})")


class LastUsage:
    """Result of :func:`collect_last_usage`.

    Attributes
    ----------
    kills_after : dict of Var -> KillSet
        Binding variable -> what to kill right after that binding (only non-empty sets).
        Binding variables are unique in a function, so one dict serves all scopes.
    last_use : dict of Var -> Var or None
        Every variable with a recorded use -> the binding variable (of the variable's own
        scope) of its last use, or :data:`OUTPUT` (None) for the scope's result.
    killed : set of Var
        Variables some existing kill call already kills.
    deferred : dict of DataflowBlock -> KillSet
        Only without ``tvm_scoping``: kills whose last use is inside a dataflow block are not
        placed there (kill calls are impure); the non-dataflow variables among them are
        collected here per block, to be killed right after the block. DataflowVars cannot
        be named outside their block and are not killed.
    """

    __slots__ = ("kills_after", "last_use", "killed", "deferred")

    def __init__(self):
        self.kills_after: dict = {}
        self.last_use: dict = {}
        self.killed: set = set()
        self.deferred: dict = {}


class _Collector:
    def __init__(self, func_name, tvm_scoping):
        # The kill-kind rule lives once, in _kill_rules; a constant and a null value both
        # hold no VM register ("no_register").
        rules = load_compiled("memcore_py.analysis._kill_rules")
        self.kill_kind = rules.kill_kind
        self.definitions = tuple(rules.DEFINITIONS[k] for k in ("plain", "storage", "no_register"))
        self.func_name = func_name
        self.tvm_scoping = tvm_scoping
        self.result = LastUsage()

    def fail(self, binding, what):
        return binding_error("kill-after-last-use", self.func_name, binding, what)

    def scope(self, seq: SeqExpr) -> None:
        """Collect the kills of one scope (and, recursively, of the scopes nested in it)."""
        result = self.result
        tvm = self.tvm_scoping
        order = []          # binding vars of this scope
        last = {}           # var -> position of its last-use binding; -1 = output
        storage = set()
        no_register = set()
        killed = result.killed
        pos_block = []      # position -> the block it is in (only when dataflow matters)
        cut = None          # TVM scoping: first position whose binding opens a nested scope
        any_dataflow = False
        pos = 0
        for blk in seq.blocks:
            is_df = type(blk) is DataflowBlock
            any_dataflow = any_dataflow or is_df
            for b in blk.bindings:
                var = b.var
                order.append(var)
                pos_block.append(blk)
                value = b.value
                cls = type(value)
                if cls is Call:
                    op = value.op
                    if type(b) is VarBinding:
                        if op in _STORAGE_OPS:
                            storage.add(var)
                            pos += 1
                            continue
                        if op in _KILL_OPS:
                            args = value.args
                            if len(args) != 1:
                                raise self.fail(b, f"{op.name} must have exactly one argument; got {len(args)}")
                            target = args[0]
                            if not isinstance(target, Var):
                                raise self.fail(b, f"{op.name} must be applied to a variable; got {target!r}")
                            killed.add(target)
                            pos += 1
                            continue
                        if op in _NO_REGISTER_OPS:
                            no_register.add(var)
                    if isinstance(op, Var):
                        last[op] = pos
                    for a in value.args:
                        ca = type(a)
                        if ca is Var or ca is DataflowVar:
                            last[a] = pos
                        elif ca is Tuple or ca is TupleGetItem or ca in _SCOPE_CLASSES:
                            self._uses(a, pos, last)
                elif cls is Var or cls is DataflowVar:
                    last[value] = pos
                elif cls is Constant:
                    if type(b) is VarBinding:
                        no_register.add(var)
                else:
                    self._uses(value, pos, last)
                    if cls in _SCOPE_CLASSES and cut is None:
                        cut = pos
                pos += 1
        self._uses(seq.body, -1, last)

        # Classification, in binding order.
        plain, storage_def, no_register_def = self.definitions
        groups = [None] * pos
        for var in order:
            p = last.get(var)
            if p is None:
                continue
            result.last_use[var] = order[p] if p >= 0 else OUTPUT
            if p < 0 or var in killed:
                continue
            kind = self.kill_kind(storage_def if var in storage else no_register_def if var in no_register else plain,
                                  var.ty)
            if kind < 0:
                continue
            if tvm and cut is not None and p >= cut:
                continue  # TVM: nothing is killed at or after the first nested scope
            if not tvm and any_dataflow and type(pos_block[p]) is DataflowBlock:
                if type(var) is not DataflowVar:
                    blk = pos_block[p]
                    g = result.deferred.get(blk)
                    if g is None:
                        g = result.deferred[blk] = KillSet()
                    (g.tensors, g.storage, g.objects)[kind].append(var)
                continue
            g = groups[p]
            if g is None:
                g = groups[p] = KillSet()
            (g.tensors, g.storage, g.objects)[kind].append(var)
        kills_after = result.kills_after
        for p, g in enumerate(groups):
            if g is not None:
                kills_after[order[p]] = g

    def _uses(self, expr, pos, last):
        """Record every variable occurrence in ``expr`` as a use at ``pos``; collect the
        scopes nested in it."""
        stack = [expr]
        while stack:
            e = stack.pop()
            cls = type(e)
            if cls is Var or cls is DataflowVar:
                last[e] = pos
            elif cls is Call:
                if isinstance(e.op, Var):
                    last[e.op] = pos
                stack.extend(e.args)
            elif cls is Tuple:
                stack.extend(e.fields)
            elif cls is TupleGetItem:
                stack.append(e.tuple_value)
            elif cls is If:
                stack.append(e.cond)
                self._nested(e.true_branch, pos, last)
                self._nested(e.false_branch, pos, last)
            elif cls is SeqExpr:
                self._nested(e, pos, last)
            elif cls is Function:
                self._nested(e.body, pos, last)

    def _nested(self, seq, pos, last):
        """A nested scope: its own kills, and every occurrence in it is a use at ``pos``
        for the enclosing scope (TVM attributes it to the innermost binding instead; with
        ``tvm_scoping`` the enclosing scope kills nothing from there on anyway)."""
        self.scope(seq)
        _occurrences(seq, pos, last)


def _occurrences(expr, pos, last):
    """Record every use (as defined in the module docstring) inside ``expr`` at ``pos``.

    Not :func:`memcore_py.ir.functor.var_uses`: the bindings of storage and kill ops in
    nested scopes are not uses here (TVM's last-use rules)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        cls = type(e)
        if cls is Var or cls is DataflowVar:
            last[e] = pos
        elif cls is Call:
            if isinstance(e.op, Var):
                last[e.op] = pos
            stack.extend(e.args)
        elif cls is Tuple:
            stack.extend(e.fields)
        elif cls is TupleGetItem:
            stack.append(e.tuple_value)
        elif cls is If:
            stack.append(e.cond)
            stack.append(e.true_branch)
            stack.append(e.false_branch)
        elif cls is SeqExpr:
            for blk in e.blocks:
                for b in blk.bindings:
                    v = b.value
                    if type(b) is VarBinding and type(v) is Call and (v.op in _STORAGE_OPS or v.op in _KILL_OPS):
                        continue
                    stack.append(v)
            stack.append(e.body)
        elif cls is Function:
            stack.append(e.body)


def collect_last_usage(func, *, tvm_scoping: bool = False, func_name: str = "?") -> LastUsage:
    """Last usage of every variable of ``func`` and the kills KillAfterLastUse inserts.

    Parameters
    ----------
    func : Function or SeqExpr
        A Relax function (its body and every nested scope are analysed) or a single scope.
    tvm_scoping : bool, default False
        Reproduce TVM's placement: in every scope, no kill at or after the first binding
        that contains a nested scope; kills may be placed inside dataflow blocks.
    func_name : str
        Used in error messages.

    Returns
    -------
    LastUsage

    Raises
    ------
    PassError
        A kill call with other than one variable argument.

    Notes
    -----
    One pass over the bindings of each scope, O(number of variable occurrences); nested
    scopes are additionally scanned once per enclosing scope level.
    """
    c = _Collector(func_name, tvm_scoping)
    seq = func.body if isinstance(func, Function) else func
    if not isinstance(seq, SeqExpr):
        raise PassError(f"collect_last_usage expects a Function or SeqExpr; got {type(func).__name__}")
    c.scope(seq)
    return c.result
