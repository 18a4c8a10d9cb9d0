"""Last usage of every variable, and what to kill after which binding.

Port of TVM ``CollectLastUsage`` (src/relax/transform/kill_after_last_use.cc), the analysis
behind :class:`~memcore_py.transform.KillAfterLastUse`. The rules below are stated once, in
KillAfterLastUse's rule kernel (:func:`memcore_py.analysis._kill_rules.kill_rules`, over the
binding table); this module reads a memcore function into that table
(:mod:`memcore_py.analysis._ir_reader`), runs the kernel and presents its result.

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

A variable bound by ``v = R.null_value()`` (kill role ``"no_register"``) has no VM register either.
Neither is a variable
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

from functools import partial

from .._compiled import load_compiled
from ..errors import PassError
from ..ir.diagnostics import binding_error
from ..ir.expr import Function, If, SeqExpr
from .storage_tokens import callee_flags

__all__ = ["KillSet", "LastUsage", "collect_last_usage", "function_edits", "OUTPUT"]

#: ``LastUsage.last_use`` value for a variable whose last use is its scope's result.
OUTPUT = None
_PASS = "kill-after-last-use"


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
        Every bound variable with a recorded use -> the binding variable (of the variable's
        own scope) of its last use, or :data:`OUTPUT` (None) for the scope's result.
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


def iter_bindings(seq: SeqExpr):
    """Every binding of ``seq`` and of the scopes bound in it (If branches, nested functions
    and SeqExprs), depth first, each scope's own in order."""
    stack = [seq]
    while stack:
        s = stack.pop()
        for blk in s.blocks:
            for b in blk.bindings:
                yield b
                v = b.value
                cls = type(v)
                if cls is If:
                    stack.append(v.false_branch)
                    stack.append(v.true_branch)
                elif isinstance(v, Function):
                    stack.append(v.body)
                elif cls is SeqExpr:
                    stack.append(v)


def function_edits(body: SeqExpr, name: str, *, tvm_scoping: bool = False, rebind: bool = False,
                   report: bool = False):
    """KillAfterLastUse's rule kernel on the function whose body is ``body``.

    Returns
    -------
    (KillEdits, BindingTable)
        What the kernel found (``memcore_py/analysis/_kill_rules.pxd``) and the table it read.

    Raises
    ------
    PassError
        A kill call whose argument is not exactly one variable, or what the reader cannot read,
        whichever comes first in visit order, naming the function and binding.
    """
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    reader = load_compiled("memcore_py.analysis._ir_reader").IRReader(
        table, partial(callee_flags, frozenset()), PassError, "KillAfterLastUse", nested_scopes=True)
    reader.read_function(name, body)
    edits = load_compiled("memcore_py.analysis._kill_rules").kill_rules(table, 0, tvm_scoping, rebind, report)
    if edits.error_item >= 0:
        b = next(b for b in iter_bindings(body) if id(b) == edits.error_ref)
        op, args = b.value.op, b.value.args
        what = (f"{op.name} must have exactly one argument; got {len(args)}" if edits.error_code == 1
                else f"{op.name} must be applied to a variable; got {args[0]!r}")
        raise binding_error(_PASS, name, b, what)
    if table.errors[0] is not None:
        raise table.errors[0]
    return edits, table


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
    """
    seq = func.body if isinstance(func, Function) else func
    if not isinstance(seq, SeqExpr):
        raise PassError(f"collect_last_usage expects a Function or SeqExpr; got {type(func).__name__}")
    edits, table = function_edits(seq, func_name, tvm_scoping=tvm_scoping, report=True)
    by_id = {}
    for b in iter_bindings(seq):
        by_id[id(b)] = b
        by_id[id(b.var)] = b.var
    result = LastUsage()
    for var_addr, at in edits.last_use.items():
        result.last_use[by_id[var_addr]] = by_id[at].var if at else OUTPUT
    params = [p for f in ([func] if isinstance(func, Function) else []) for p in f.params]
    params += [p for b in iter_bindings(seq) if isinstance(b.value, Function) for p in b.value.params]
    by_id.update((id(p), p) for p in params)
    result.killed = {by_id[v] for v in edits.killed if v in by_id}

    def add(group, recs):
        for kind, target, _ in recs:
            (group.tensors, group.storage, group.objects)[kind].append(by_id[target])

    blocks = {id(blk.bindings): blk for blk in _blocks(seq)}
    for b, bindings in enumerate(table.block_bindings):
        if not bindings:
            continue
        for pos, binding in enumerate(bindings):
            recs = edits.kills_after(b, pos)
            if recs:
                add(result.kills_after.setdefault(binding.var, KillSet()), recs)
        recs = edits.kills_after_block(b)
        if recs:
            add(result.deferred.setdefault(blocks[id(bindings)], KillSet()), recs)
    return result


def _blocks(seq):
    yield from seq.blocks
    for b in iter_bindings(seq):
        v = b.value
        for s in ((v.true_branch, v.false_branch) if type(v) is If else (v.body,) if isinstance(v, Function)
                  else (v,) if type(v) is SeqExpr else ()):
            yield from s.blocks
