"""The analyses of DataflowUseInplaceCalls: liveness, aliases and in-place opportunities
of one dataflow block, with TVM 0.27's exact results (spec §3.3–§3.5).

Design
------
Three public functions, each the counterpart of one of TVM's testing entry points
(``tvm.relax.testing.transform.dataflow_liveness_analysis``, ``dataflow_alias_analysis``,
``dataflow_inplace_analysis``), returning the same shapes:

- :func:`dataflow_liveness` — ``{var: (start, end)}``. The block is turned into the engine's
  flat-array contract (``def_pos``, CSR uses, ``is_output``) and
  :func:`memcore.live_intervals` computes the intervals: TVM's sentinels are the contract's
  (``-1`` = defined before the block, ``len(bindings)`` = live after it; a non-dataflow
  ``Var`` is "live after the block"). TVM's two special cases are kept: a
  ``TupleGetItem`` value is not a use of its tuple, and a function literal uses only its free
  variables.
- :func:`dataflow_aliases` — ``({var: set of ids}, {tuple id: [set of ids per field]})``.
  Abstract memory locations numbered from 0 in TVM's order of creation; ``-1`` = unknown
  (defined outside the block). Views (ops registered ``view_memory``) take their input's
  set; calls of non-ops and ``call_pure_packed`` are "mystery calls" whose result may alias
  any argument.
- :func:`inplace_opportunities` — ``(size_matches, exact_matches)``, lists of
  ``(binding index, [argument indices])``: the arguments of a supported op call (ops
  registered ``inplace``) big enough (resp. exactly shaped) to hold the result, dead after
  the call, without a live alias and disjoint from the other operands. The argument lists
  are in TVM's order (its ``std::unordered_set<int>`` iterates ``{0, 1}`` as ``[1, 0]``), so
  ``exact[k][1][0]`` is the index the pass picks.

Symbolic sizes: ``numel(arg) >= numel(result)`` is proved when the difference's canonical
polynomial has only non-negative coefficients over plain shape variables (which are
non-negative, as TVM's block builder assumes for a function's shape variables); a dim pair
is equal when :func:`~memcore_py.ir.prim.prove_equal` says so. Anything not provable is
"no match", as in TVM.

With ``tvm_tuple_capture=False`` (what the pass uses unless asked for TVM's behaviour; see
DIFFERENCES.md, ``tuple-capture``) a live tuple also protects the values captured in its
fields, and ``t[i]`` counts as a use of ``t``: TVM checks only the candidate's own tuple
components and does not count get-items, so ``t = (a, a); b = multiply(a, a);
q = concat(t)`` makes ``multiply`` overwrite ``a`` while ``t`` still holds it.
``tvm_tuple_capture=True`` (the default of :func:`inplace_opportunities`, like TVM's testing
entry point) reproduces TVM.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from memcore import live_intervals

from ..errors import IRError
from ..ir.expr import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Function,
    PrimValue,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.functor import var_uses
from ..ir.op import Op
from ..ir.prim import IntImm, Mul, Sub, _poly, prove_equal
from ..ir.types import TensorType, TupleType

__all__ = ["dataflow_liveness", "dataflow_aliases", "inplace_opportunities"]

_CALL_PURE_PACKED = "relax.call_pure_packed"
_CALL_TIR = "relax.call_tir"


def _check_block(block, what):
    if not isinstance(block, DataflowBlock):
        raise IRError(f"{what} takes a DataflowBlock; got {type(block).__name__}")


def _bound_vars(expr):
    """Variables bound inside ``expr`` (params and binding vars of nested scopes)."""
    out = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Function):
            out.update(e.params)
            stack.append(e.body)
        elif hasattr(e, "blocks"):  # SeqExpr
            for blk in e.blocks:
                for b in blk.bindings:
                    out.add(b.var)
                    stack.append(b.value)
            stack.append(e.body)
        elif hasattr(e, "true_branch"):
            stack.extend((e.true_branch, e.false_branch))
        elif isinstance(e, Call):
            stack.extend(e.args)
        elif isinstance(e, Tuple):
            stack.extend(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
    return out


_LEAVES = frozenset({Var, DataflowVar, Constant, PrimValue})


def _used_vars(value, tuple_get_item_is_use=False):
    """TVM's "used vars" of a binding value (§3.3): every variable in it, but none for a
    TupleGetItem (unless ``tuple_get_item_is_use``) and only the free ones for a function
    literal."""
    cls = type(value)
    if cls is TupleGetItem and not tuple_get_item_is_use:
        return []
    if cls is Call and type(value.op) is Op:  # the common case: variables among the arguments
        args = value.args
        if all(type(a) in _LEAVES for a in args):
            return [a for a in args if type(a) is Var or type(a) is DataflowVar]
    uses = var_uses(value)
    if isinstance(value, Function):
        bound = _bound_vars(value)
        return [v for v in uses if v not in bound]
    return uses


# ---------------------------------------------------------------------------- liveness
def dataflow_liveness(block, *, tuple_get_item_is_use: bool = False) -> dict:
    """Live range of every variable defined or used in a dataflow block (spec §3.3).

    Parameters
    ----------
    block : DataflowBlock
    tuple_get_item_is_use : bool, default False
        False: TVM's rule, ``t[i]`` is not a use of ``t``. True: it is (the sound liveness
        DataflowUseInplaceCalls uses by default, so a tuple read later protects its fields).

    Returns
    -------
    dict of Var -> (int, int)
        ``(start, end)``: ``start`` is the index of the defining binding, ``-1`` for a value
        from outside the block; ``end`` the last binding using it, ``len(block.bindings)``
        for a non-dataflow ``Var`` (live after the block), ``start`` for an unused
        DataflowVar. Equal to TVM's ``dataflow_liveness_analysis``.

    Raises
    ------
    IRError
        ``block`` is not a DataflowBlock.
    """
    _check_block(block, "dataflow_liveness")
    index: dict = {}
    order: list = []
    def_pos: list = []
    uses: list = []
    bindings = block.bindings
    n_steps = len(bindings)

    leaves = _LEAVES
    for i, b in enumerate(bindings):
        value = b.value
        if type(value) is Call and type(value.op) is Op and all(type(a) in leaves for a in value.args):
            used = value.args  # the common case: a plain op call (non-variables skipped below)
        else:
            used = _used_vars(value, tuple_get_item_is_use)
        for v in used:
            tv = type(v)
            if tv is not Var and tv is not DataflowVar:
                continue
            k = index.get(v)
            if k is None:
                index[v] = len(order)
                order.append(v)
                def_pos.append(-1)
                uses.append([i])
            else:
                uses[k].append(i)
        v = b.var
        k = index.get(v)
        if k is None:
            index[v] = len(order)
            order.append(v)
            def_pos.append(i)
            uses.append([])
        else:
            def_pos[k] = i
    n = len(order)
    counts = [len(u) for u in uses]
    use_ptr = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(counts, out=use_ptr[1:])
    use_pos = np.fromiter(itertools.chain.from_iterable(uses), dtype=np.int64, count=int(use_ptr[-1]))
    is_output = np.fromiter([type(v) is not DataflowVar for v in order], dtype=np.uint8, count=n)
    start, end = live_intervals(np.asarray(def_pos, dtype=np.int64), use_ptr, use_pos, is_output, n_steps)
    return {v: (int(s), int(e)) for v, s, e in zip(order, start.tolist(), end.tolist())}


# ---------------------------------------------------------------------------- aliases
class _AliasAnalyzer:
    """TVM's ``AliasAnalyzer`` (spec §3.4); ids in TVM's order of creation."""

    def __init__(self):
        self.alias: dict = {}
        self.tuples: dict = {}
        self.next_id = 0

    def fresh(self) -> int:
        k = self.next_id
        self.next_id += 1
        return k

    def fresh_tuple(self, tup_id: int, ty: TupleType) -> None:
        comps = []
        for f in ty.fields:
            c = self.fresh()
            comps.append({c})
            if isinstance(f, TupleType):
                self.fresh_tuple(c, f)
        self.tuples[tup_id] = comps

    def captured(self, out: set, k: int) -> None:
        out.add(k)
        comps = self.tuples.get(k)
        if comps is not None:
            for s in comps:
                for c in list(s):
                    self.captured(out, c)

    def update_components(self, tup_id: int, ids: set) -> None:
        comps = self.tuples.get(tup_id)
        if comps is None:
            return
        for i in range(len(comps)):
            for m in list(comps[i]):
                if m in self.tuples:
                    self.update_components(m, ids)
            self.tuples[tup_id][i] = self.tuples[tup_id][i] | ids

    def mystery_call(self, call: Call, bound_ty, skip_first: bool) -> set:
        out: set = set()
        r = self.fresh()
        if isinstance(bound_ty, TupleType):
            self.fresh_tuple(r, bound_ty)
        self.captured(out, r)
        for a in call.args[1 if skip_first else 0:]:
            for k in self.alias_set(a, bound_ty):
                self.captured(out, k)
        self.update_components(r, out)
        return out

    def alias_set(self, value, bound_ty) -> set:
        cls = type(value)
        if cls is Constant or cls is Function:
            return {self.fresh()}
        if cls is Var or cls is DataflowVar:
            s = self.alias.get(value)
            return set(s) if s is not None else {-1}
        if cls is PrimValue:
            return {self.fresh()}
        if cls is Tuple:
            t = self.fresh()
            self.tuples[t] = [self.alias_set(f, bound_ty) for f in value.fields]
            return {t}
        if cls is TupleGetItem:
            ts = self.alias_set(value.tuple_value, bound_ty)
            if -1 in ts:
                return {-1}
            out: set = set()
            i = value.index
            for m in ts:
                comps = self.tuples.get(m)
                if comps is not None and len(comps) > i:
                    out |= comps[i]
            return out
        if cls is Call:
            op = value.op
            if type(op) is Op:
                if op.name == _CALL_PURE_PACKED:
                    return self.mystery_call(value, bound_ty, True)
                if op.name == _CALL_TIR:
                    out_ty = value.ty_args[0] if value.ty_args else None
                    t = self.fresh()
                    if isinstance(out_ty, TupleType):
                        self.fresh_tuple(t, out_ty)
                    return {t}
                if op.view_memory and value.args:
                    return self.alias_set(value.args[0], bound_ty)
                t = self.fresh()
                if isinstance(bound_ty, TupleType):
                    self.fresh_tuple(t, bound_ty)
                return {t}
            return self.mystery_call(value, bound_ty, False)
        return set()  # other leaves (shapes, strings, dtypes): no location, as in TVM

    def run(self, block, inputs):
        for v in inputs:
            k = self.fresh()
            self.alias[v] = {k}
            if isinstance(v.ty, TupleType):
                self.fresh_tuple(k, v.ty)
        for b in block.bindings:
            self.alias[b.var] = self.alias_set(b.value, b.var.ty)
        return self.alias, self.tuples


def _check_inputs(inputs, what):
    inputs = list(inputs or ())
    for i, v in enumerate(inputs):
        if not isinstance(v, Var):
            raise IRError(f"{what}: inputs[{i}] must be a Var; got {type(v).__name__}")
    return inputs


def dataflow_aliases(block, inputs=()):
    """Which abstract memory locations each variable of a dataflow block may refer to
    (spec §3.4).

    Parameters
    ----------
    block : DataflowBlock
    inputs : sequence of Var, optional
        Values assumed fresh and unaliased (TVM's tests pass the function's params; the
        pass passes none). Each gets a fresh id, a tuple-typed one also its components.

    Returns
    -------
    alias_sets : dict of Var -> set of int
        For every input and every variable bound in the block. ``-1`` = unknown.
    tuple_map : dict of int -> list of set of int
        For ids that are tuples: the id set of each field.

    Raises
    ------
    IRError
        ``block`` is not a DataflowBlock or an input is not a Var.
    """
    _check_block(block, "dataflow_aliases")
    return _AliasAnalyzer().run(block, _check_inputs(inputs, "dataflow_aliases"))


# ---------------------------------------------------------------------------- opportunities
def _candidate_types(ty) -> list:
    """TVM ``GatherCandidateType``: the result types an argument may be written into."""
    if isinstance(ty, TensorType):
        if not ty.dtype or ty.dtype == "void" or ty.shape is None:
            return []
        return [ty]
    if isinstance(ty, TupleType):
        out = []
        for f in ty.fields:
            for c in _candidate_types(f):
                if c not in out:
                    out.append(c)
        if out:
            out.append(ty)
        return out
    return []


def _static_dims(shape):
    out = []
    for d in shape:
        if type(d) is not IntImm:
            return None
        out.append(d.value)
    return out


def element_count(shape):
    """The number of elements of a tensor of ``shape``: the product of its dims (a
    PrimExpr; ``IntImm(1)`` for a 0-d tensor)."""
    out = IntImm(1)
    for d in shape:
        out = Mul(out, d)
    return out


def _provably_nonneg_difference(a, b) -> bool:
    """``a - b >= 0`` for all non-negative values of the shape variables."""
    try:
        p = _poly(Sub(a, b), {})
    except IRError:
        return False
    for mono, c in p.items():
        if c < 0:
            return False
        if any(not (isinstance(f, tuple) and f and f[0] == "v") for f in mono):
            return False
    return True


def _size_matches(target, arg):
    """TVM ``SizeMatches``: (sizes fit, shapes equal exactly)."""
    if isinstance(target, TensorType) and isinstance(arg, TensorType):
        if target.shape is None or arg.shape is None:
            return False, False
        if target.dtype != arg.dtype:
            return False, False
        ts, as_ = _static_dims(target.shape), _static_dims(arg.shape)
        if ts is not None and as_ is not None:  # constant shapes: plain integers
            if math.prod(as_) < math.prod(ts):
                return False, False
            return True, ts == as_
        if not _provably_nonneg_difference(element_count(arg.shape), element_count(target.shape)):
            return False, False
        if len(target.shape) != len(arg.shape):
            return True, False
        return True, all(prove_equal(x, y) for x, y in zip(target.shape, arg.shape))
    if isinstance(target, TupleType) and isinstance(arg, TupleType):
        if len(target.fields) != len(arg.fields):
            return False, False
        exact = True
        for tf, af in zip(target.fields, arg.fields):
            if not isinstance(tf, (TensorType, TupleType)) and not isinstance(af, (TensorType, TupleType)):
                continue
            fits, ex = _size_matches(tf, af)
            if not fits:
                return False, False
            exact = exact and ex
        return True, exact
    return False, False


def _gather_sets(tuples, sets: list, k: int) -> bool:
    comps = tuples.get(k)
    if comps is None:
        return True
    for s in comps:
        if -1 in s:
            return False
        sets.append(s)
        for m in s:
            if m in tuples and not _gather_sets(tuples, sets, m):
                return False
    return True


def _captured_ids(tuples, ids) -> set:
    """``ids`` and, recursively, every id held in the fields of the tuples among them."""
    out = set()
    stack = list(ids)
    while stack:
        k = stack.pop()
        if k in out:
            continue
        out.add(k)
        for s in tuples.get(k, ()):
            stack.extend(s)
    return out


class _LiveAliases:
    """The variables live at the current binding, indexed by the memory ids they may hold
    (TVM's ``currently_live`` set, searched by id instead of scanned)."""

    def __init__(self, alias, tuples, expand_tuples: bool):
        self.alias, self.tuples, self.expand = alias, tuples, expand_tuples and bool(tuples)
        self.by_id: dict = {}
        self.held: dict = {}

    def add(self, v) -> None:
        ids = self.alias.get(v)
        if ids is None:
            return  # not represented: TVM skips such variables
        if self.expand and not self.tuples.keys().isdisjoint(ids):
            ids = _captured_ids(self.tuples, ids)
        self.held[v] = ids
        for k in ids:
            holders = self.by_id.get(k)
            if holders is None:
                self.by_id[k] = {v}
            else:
                holders.add(v)

    def remove(self, v) -> None:
        for k in self.held.pop(v, ()):
            self.by_id[k].discard(v)


def _conditions_met(live, alias, tuples, current: _LiveAliases, target, i) -> bool:
    if isinstance(target, Var):
        r = live.get(target)
        if r is not None and r[1] > i:
            return False
        aset = alias.get(target)
        if aset is None or -1 in aset:
            return False
        sets = [aset]
        for k in aset:
            if not _gather_sets(tuples, sets, k):
                return False
        by_id = current.by_id
        for s in sets:
            for k in s:
                for other in by_id.get(k, ()):
                    if other is not target and live[other][1] > i:
                        return False
        return True
    if isinstance(target, Tuple):
        return all(_conditions_met(live, alias, tuples, current, f, i) for f in target.fields)
    return True


def _disjoint_from_other_args(call: Call, j: int, alias) -> bool:
    cand = call.args[j]
    if not isinstance(cand, Var):
        return False
    cset = alias.get(cand, {-1})
    if -1 in cset:
        return False
    for k, other in enumerate(call.args):
        if k == j or other is cand:
            continue
        oset = alias.get(other, {-1}) if isinstance(other, Var) else {-1}
        if not cset.isdisjoint(oset):
            return False
    return True


def _arg_type(a):
    return getattr(a, "ty", None)


def inplace_opportunities(block, inputs=(), *, tvm_tuple_capture: bool = True):
    """The bindings of a dataflow block whose op call may be computed in place of one of its
    arguments (spec §3.5).

    Parameters
    ----------
    block : DataflowBlock
    inputs : sequence of Var, optional
        As for :func:`dataflow_aliases`.
    tvm_tuple_capture : bool, default True
        True: TVM's rule (a value captured in a live tuple is not protected). False: the
        sound rule DataflowUseInplaceCalls uses by default (module docstring).

    Returns
    -------
    size_matches : list of (int, list of int)
        ``(binding index, argument indices)`` for every supported call with at least one
        argument that is large enough, dead after the call, without a live alias and
        disjoint from the other operands.
    exact_matches : list of (int, list of int)
        The same restricted to arguments whose shape equals the result's exactly; bindings
        without one are left out. Argument indices in TVM's order (descending).

    Raises
    ------
    IRError
        ``block`` is not a DataflowBlock or an input is not a Var.
    """
    _check_block(block, "inplace_opportunities")
    inputs = _check_inputs(inputs, "inplace_opportunities")
    live = dataflow_liveness(block, tuple_get_item_is_use=not tvm_tuple_capture)
    alias, tuples = _AliasAnalyzer().run(block, inputs)
    by_start: dict = {}
    by_end: dict = {}
    for v, (s, e) in live.items():
        by_start.setdefault(s, []).append(v)
        by_end.setdefault(e, []).append(v)
    current = _LiveAliases(alias, tuples, not tvm_tuple_capture)
    for v in by_start.get(-1, ()):
        current.add(v)
    size_list, exact_list = [], []
    for i, b in enumerate(block.bindings):
        for v in by_start.get(i, ()):
            current.add(v)
        for v in by_end.get(i - 1, ()):
            current.remove(v)
        value = b.value
        if type(value) is not Call or type(value.op) is not Op or not value.op.inplace:
            continue
        targets = _candidate_types(b.var.ty)
        if not targets:
            continue
        fits, exact = [], set()
        for j, a in enumerate(value.args):
            aty = _arg_type(a)
            for t in targets:
                ok, ex = _size_matches(t, aty)
                if ok:
                    if j not in fits:
                        fits.append(j)
                    if ex:
                        exact.add(j)
        if not fits:
            continue
        kept = [j for j in fits
                if _conditions_met(live, alias, tuples, current, value.args[j], i)
                and _disjoint_from_other_args(value, j, alias)]
        if not kept:
            continue
        kept.sort(reverse=True)
        size_list.append((i, kept))
        ex = [j for j in kept if j in exact]
        if ex:
            exact_list.append((i, ex))
    return size_list, exact_list

