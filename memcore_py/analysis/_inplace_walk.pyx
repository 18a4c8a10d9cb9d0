"""Compiled loops of the DataflowUseInplaceCalls analyses (built by ``setup.py``; no fallback).

Design
------
:mod:`memcore_py.analysis.dataflow_inplace` holds the public functions, their validation
and their documentation; the three per-binding loops behind them live here, because in
CPython they were dominated by interpreter overhead (the analyses were two thirds of the
pass on BERT-base). The semantics are spec §3.3–§3.5, unchanged:

- :func:`collect_uses` — the liveness contract of :func:`memcore.live_intervals` for one
  block: every variable used or defined, in order of first appearance, its defining step
  (``-1`` from outside) and its uses. An op call whose arguments are leaves or tuples of
  leaves reads their variables; any other value goes through the Python callback
  ``used_vars(value, tuple_get_item_is_use)``
  (TVM's special cases: get-items, function literals). Only a variable's first and last
  use are passed on: an interval ends at the last use, and the first is what the engine
  checks against the definition.
- :class:`AliasAnalyzer` — TVM's ``AliasAnalyzer``: abstract memory ids in its order of
  creation, tuple component maps, mystery calls, views.
- :func:`find_opportunities` — TVM's in-place candidate search. TVM keeps the set of live
  variables up to date at every binding and scans it; here each memory id lists the
  variables that may hold it, and a holder blocks a candidate at step i when its interval
  says it is live then and still read later (``start <= i < end``), looked up only when a
  candidate is checked.
  Variables are the indices of :func:`collect_uses`' order. Size checks (``SizeMatches``) read constant shapes as C
  integers; symbolic ones go through ``prove_equal`` and the canonical polynomial.

Slots of the IR nodes are read through ``memcore_py/ir/_slots.pxd``.
"""
from cpython.object cimport PyObject

from libc.limits cimport LLONG_MAX

from memcore._typedefs cimport idx_t
from memcore_py.ir._slots cimport get_slot, slot_offset

import numpy as np

from memcore_py.errors import IRError
from memcore_py.ir.expr import (Call, Constant, DataflowVar, DataTypeImm, Function, PrimValue, ShapeExpr, StringImm, Tuple,
                                TupleGetItem, Var, VarBinding)
from memcore_py.ir.op import Op
from memcore_py.ir.prim import IntImm, Mul, Sub, _poly, prove_equal
from memcore_py.ir.types import TensorType, TupleType

cdef Py_ssize_t O_VAR = slot_offset(VarBinding.var)
cdef Py_ssize_t O_VALUE = slot_offset(VarBinding.value)
cdef Py_ssize_t O_OP = slot_offset(Call.op)
cdef Py_ssize_t O_ARGS = slot_offset(Call.args)

cdef str CALL_PURE_PACKED = "relax.call_pure_packed"
cdef str CALL_TIR = "relax.call_tir"


cdef inline bint _is_var(object o):
    t = type(o)
    return t is Var or t is DataflowVar


cdef inline bint _is_leaf(object o):
    """A node that is a variable or holds none (shapes, constants, immediates)."""
    t = type(o)
    return (t is Var or t is DataflowVar or t is Constant or t is PrimValue or t is ShapeExpr or t is StringImm
            or t is DataTypeImm)


cdef object _plain_uses(tuple args):
    """The variables among an op call's arguments in visit order, when every argument is a
    leaf or a tuple of leaves; None otherwise (the generic walk decides)."""
    cdef list out = []
    for a in args:
        if type(a) is Tuple:
            for fv in (<object>a).fields:
                if not _is_leaf(fv):
                    return None
                if _is_var(fv):
                    out.append(fv)
        elif not _is_leaf(a):
            return None
        elif _is_var(a):
            out.append(a)
    return out


# ---------------------------------------------------------------------------- liveness
cdef class _VarTable:
    """The variables of a block in order of first appearance, with their defining step and
    first and last use (``-1``: none yet) in arrays that grow by doubling."""

    cdef dict index
    cdef list order
    cdef Py_ssize_t n, cap
    cdef object d, f, l
    cdef idx_t[::1] def_pos, first, last

    def __init__(self, Py_ssize_t cap):
        self.index, self.order, self.n, self.cap = {}, [], 0, max(cap, 16)
        self.d = np.empty(self.cap, dtype=np.int64)
        self.f = np.empty(self.cap, dtype=np.int64)
        self.l = np.empty(self.cap, dtype=np.int64)
        self.def_pos, self.first, self.last = self.d, self.f, self.l

    cdef Py_ssize_t slot(self, v) except -1:
        """The position of ``v``, added (defined outside, no use) when new."""
        o = self.index.get(v)
        if o is not None:
            return <Py_ssize_t>o
        cdef Py_ssize_t k = self.n
        if k == self.cap:
            self.cap *= 2
            self.d, self.f, self.l = np.resize(self.d, self.cap), np.resize(self.f, self.cap), np.resize(self.l, self.cap)
            self.def_pos, self.first, self.last = self.d, self.f, self.l
        self.index[v] = k
        self.order.append(v)
        self.def_pos[k] = self.first[k] = self.last[k] = -1
        self.n = k + 1
        return k


def collect_uses(list bindings, bint tuple_get_item_is_use, used_vars):
    """The arguments of :func:`memcore.live_intervals` for a block's bindings.

    Returns
    -------
    order : list of Var
        Every variable used or defined, in order of first appearance.
    index : dict of Var -> int
        Position in ``order``.
    def_pos, use_ptr, use_pos : ndarray of int64
        Defining step (``-1`` = from outside) and CSR uses (first and last use only).
    is_output : ndarray of uint8
        1 for a non-dataflow ``Var``.
    """
    cdef Py_ssize_t n_steps = len(bindings), i, k
    cdef object b, value, v, used
    cdef _VarTable t = _VarTable(2 * n_steps)
    for i in range(n_steps):
        b = bindings[i]
        value = <object>get_slot(b, O_VALUE)
        used = None
        if type(value) is Call and type(<object>get_slot(value, O_OP)) is Op:
            used = _plain_uses(<tuple>get_slot(value, O_ARGS))
        if used is None:
            used = used_vars(value, tuple_get_item_is_use)
        for v in used:
            if _is_var(v):
                k = t.slot(v)
                if t.first[k] < 0:
                    t.first[k] = i
                t.last[k] = i
        t.def_pos[t.slot(<object>get_slot(b, O_VAR))] = i
    cdef Py_ssize_t n = t.n
    cdef list order = t.order
    cdef idx_t[::1] first = t.first, last = t.last
    ptr = np.empty(n + 1, dtype=np.int64)
    pos = np.empty(2 * n, dtype=np.int64)
    out = np.empty(n, dtype=np.uint8)
    cdef idx_t[::1] use_ptr = ptr, use_pos = pos
    cdef unsigned char[::1] is_output = out
    cdef Py_ssize_t m = 0
    use_ptr[0] = 0
    for k in range(n):
        if first[k] >= 0:
            use_pos[m] = first[k]
            m += 1
            if last[k] != first[k]:
                use_pos[m] = last[k]
                m += 1
        use_ptr[k + 1] = m
        is_output[k] = type(order[k]) is not DataflowVar
    return order, t.index, t.d[:n].copy(), ptr, pos[:m].copy(), out


# ---------------------------------------------------------------------------- aliases
cdef class AliasAnalyzer:
    """TVM's ``AliasAnalyzer`` (spec §3.4); ids in TVM's order of creation.

    ``alias``: Var -> set of ids; ``tuples``: tuple id -> [set of ids per field].
    ``constants_external``: a Constant's memory is outside the block (``{-1}``, as a
    parameter's), so neither it nor a view of it is ever written in place; False is TVM's rule
    (a Constant is a fresh location, so a dead view of it may be overwritten, which writes into
    the constant once the view is lowered to share its storage).
    """

    cdef public dict alias
    cdef public dict tuples
    cdef long next_id
    cdef bint constants_external

    def __init__(self, bint constants_external=False):
        self.alias = {}
        self.tuples = {}
        self.next_id = 0
        self.constants_external = constants_external

    cdef inline long fresh(self):
        cdef long k = self.next_id
        self.next_id += 1
        return k

    cdef void fresh_tuple(self, long tup_id, ty) except *:
        cdef list comps = []
        cdef long c
        for fty in ty.fields:
            c = self.fresh()
            comps.append({c})
            if isinstance(fty, TupleType):
                self.fresh_tuple(c, fty)
        self.tuples[tup_id] = comps

    cdef void captured(self, set out, k) except *:
        out.add(k)
        comps = self.tuples.get(k)
        if comps is not None:
            for s in comps:
                for c in list(s):
                    self.captured(out, c)

    cdef void update_components(self, tup_id, set ids) except *:
        cdef list comps = self.tuples.get(tup_id)
        cdef Py_ssize_t i
        if comps is None:
            return
        for i in range(len(comps)):
            for m in list(comps[i]):
                if m in self.tuples:
                    self.update_components(m, ids)
            comps[i] = comps[i] | ids

    cdef set mystery_call(self, call, bound_ty, bint skip_first):
        cdef set out = set()
        cdef long r = self.fresh()
        if isinstance(bound_ty, TupleType):
            self.fresh_tuple(r, bound_ty)
        self.captured(out, r)
        for a in call.args[1 if skip_first else 0:]:
            for k in self.alias_set(a, bound_ty):
                self.captured(out, k)
        self.update_components(r, out)
        return out

    cpdef set alias_set(self, value, bound_ty):
        """The ids ``value`` may refer to (``bound_ty``: the type of the var it is bound to)."""
        cdef long t
        cls = type(value)
        if cls is Var or cls is DataflowVar:
            s = self.alias.get(value)
            return set(s) if s is not None else {-1}
        if cls is Call:
            op = value.op
            if type(op) is Op:
                name = (<object>op).name
                if name == CALL_PURE_PACKED:
                    return self.mystery_call(value, bound_ty, True)
                if name == CALL_TIR:
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
        if cls is Constant and self.constants_external:
            return {-1}
        if cls is Constant or cls is Function or cls is PrimValue:
            return {self.fresh()}
        if cls is Tuple:
            t = self.fresh()
            self.tuples[t] = [self.alias_set(fv, bound_ty) for fv in value.fields]
            return {t}
        if cls is TupleGetItem:
            ts = self.alias_set(value.tuple_value, bound_ty)
            if -1 in ts:
                return {-1}
            out = set()
            i = value.index
            for m in ts:
                comps = self.tuples.get(m)
                if comps is not None and len(comps) > i:
                    out |= comps[i]
            return out
        return set()  # other leaves (shapes, strings, dtypes): no location, as in TVM

    def run(self, list bindings, list inputs):
        """Fill ``alias`` for ``inputs`` (fresh ids) and every binding; returns
        ``(alias, tuples)``."""
        cdef long k
        for v in inputs:
            k = self.fresh()
            self.alias[v] = {k}
            if isinstance(v.ty, TupleType):
                self.fresh_tuple(k, v.ty)
        for b in bindings:
            var = <object>get_slot(b, O_VAR)
            self.alias[var] = self.alias_set(<object>get_slot(b, O_VALUE), var.ty)
        return self.alias, self.tuples


# ---------------------------------------------------------------------------- sizes
cdef list candidate_types(ty):
    """TVM ``GatherCandidateType``: the result types an argument may be written into."""
    cdef list out
    if type(ty) is TensorType:
        if not ty.dtype or ty.dtype == "void" or ty.shape is None:
            return []
        return [ty]
    if type(ty) is TupleType:
        out = []
        for fty in ty.fields:
            for c in candidate_types(fty):
                if c not in out:
                    out.append(c)
        if out:
            out.append(ty)
        return out
    return []


cdef bint _static_numel(tuple shape, long long* numel) except *:
    """The product of ``shape`` when every dim is a non-negative IntImm and the product
    fits in int64 (False otherwise: the exact symbolic path decides)."""
    cdef long long p = 1, x
    for d in shape:
        if type(d) is not IntImm:
            return False
        v = (<object>d).value
        if v < 0 or v > LLONG_MAX:
            return False
        x = v
        if x != 0 and p > LLONG_MAX // x:
            return False
        p *= x
    numel[0] = p
    return True


cdef bint _provably_nonneg_difference(a, b) except *:
    """``a - b >= 0`` for all non-negative values of the shape variables."""
    try:
        p = _poly(Sub(a, b), {})
    except IRError:
        return False
    for mono, c in p.items():
        if c < 0:
            return False
        for fac in mono:
            if not (isinstance(fac, tuple) and fac and fac[0] == "v"):
                return False
    return True


cdef tuple size_matches(target, arg):
    """TVM ``SizeMatches``: (sizes fit, shapes equal exactly)."""
    cdef long long nt, na
    cdef Py_ssize_t r
    cdef bint exact
    if type(target) is TensorType and type(arg) is TensorType:
        ts, as_ = target.shape, arg.shape
        if ts is None or as_ is None:
            return False, False
        if target.dtype != arg.dtype:
            return False, False
        if _static_numel(ts, &nt) and _static_numel(as_, &na):  # constant shapes: C integers
            if na < nt:
                return False, False
            r = len(ts)
            if r != len(as_):
                return True, False
            for k in range(r):
                if (<object>ts[k]).value != (<object>as_[k]).value:
                    return True, False
            return True, True
        if not _provably_nonneg_difference(_numel_expr(as_), _numel_expr(ts)):
            return False, False
        if len(ts) != len(as_):
            return True, False
        return True, all(prove_equal(x, y) for x, y in zip(ts, as_))
    if isinstance(target, TupleType) and isinstance(arg, TupleType):
        if len(target.fields) != len(arg.fields):
            return False, False
        exact = True
        for tf, af in zip(target.fields, arg.fields):
            if not isinstance(tf, (TensorType, TupleType)) and not isinstance(af, (TensorType, TupleType)):
                continue
            fits, ex = size_matches(tf, af)
            if not fits:
                return False, False
            exact = exact and ex
        return True, exact
    return False, False


cdef object _numel_expr(tuple shape):
    out = IntImm(1)
    for d in shape:
        out = Mul(out, d)
    return out


# ---------------------------------------------------------------------------- opportunities
cdef bint _gather_sets(dict tuples, list sets, k) except *:
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


cdef set _captured_ids(dict tuples, ids):
    """``ids`` and, recursively, every id held in the fields of the tuples among them."""
    cdef set out = set()
    cdef list stack = list(ids)
    while stack:
        k = stack.pop()
        if k in out:
            continue
        out.add(k)
        for s in tuples.get(k, ()):
            stack.extend(s)
    return out


cdef class _Search:
    """The state of one candidate search: intervals, aliases, and the variables holding each
    memory id (TVM's ``currently_live`` set, asked as "a holder whose interval contains the
    step": ``start <= i < end``, instead of being updated binding by binding)."""

    cdef dict index, alias, tuples, by_id
    cdef idx_t[::1] start, end
    cdef bint expand

    def __init__(self, list order, dict index, start, end, dict alias, dict tuples, bint expand):
        cdef Py_ssize_t k
        self.index, self.start, self.end = index, start, end
        self.alias, self.tuples, self.expand = alias, tuples, expand and bool(tuples)
        self.by_id = {}
        for k in range(len(order)):
            ids = alias.get(order[k])
            if ids is None:
                continue  # not represented: TVM skips such variables
            if self.expand and not tuples.keys().isdisjoint(ids):
                ids = _captured_ids(tuples, ids)
            for m in ids:
                holders = self.by_id.get(m)
                if holders is None:
                    self.by_id[m] = [k]
                else:
                    (<list>holders).append(k)

    cdef bint conditions_met(self, target, Py_ssize_t i) except *:
        cdef Py_ssize_t kt = -1, k
        cdef list sets
        if _is_var(target):
            o = self.index.get(target)
            if o is not None:
                kt = <Py_ssize_t>o
                if self.end[kt] > i:
                    return False
            aset = self.alias.get(target)
            if aset is None or -1 in aset:
                return False
            sets = [aset]
            for m in aset:
                if not _gather_sets(self.tuples, sets, m):
                    return False
            for s in sets:
                for m in s:
                    holders = self.by_id.get(m)
                    if holders is None:
                        continue
                    for other in <list>holders:
                        k = <Py_ssize_t>other
                        if k != kt and self.start[k] <= i and self.end[k] > i:
                            return False
            return True
        if type(target) is Tuple:
            for fv in target.fields:
                if not self.conditions_met(fv, i):
                    return False
        return True

    cdef bint disjoint_from_other_args(self, tuple args, Py_ssize_t j) except *:
        cand = args[j]
        if not _is_var(cand):
            return False
        cset = self.alias.get(cand)
        if cset is None or -1 in cset:
            return False
        for k in range(len(args)):
            other = args[k]
            if k == j or other is cand:
                continue
            oset = self.alias.get(other) if _is_var(other) else None
            if oset is None:
                oset = {-1}
            if not (<set>cset).isdisjoint(oset):
                return False
        return True


def find_opportunities(list bindings, list order, dict index, start, end, dict alias, dict tuples, bint expand):
    """TVM's in-place candidate search over a block (``inplace_opportunities``' loop).

    ``order``/``index``/``start``/``end``: the block's variables and their live intervals
    (:func:`collect_uses` + :func:`memcore.live_intervals`); ``alias``/``tuples``: the
    :class:`AliasAnalyzer` result; ``expand``: a live tuple also protects what its fields
    hold. Returns ``(size_matches, exact_matches)`` as documented there.
    """
    cdef Py_ssize_t n_steps = len(bindings), i, j, n_args
    cdef list size_list = [], exact_list = [], fits, kept, targets, ex
    cdef set exact
    cdef tuple args
    cdef _Search search = _Search(order, index, start, end, alias, tuples, expand)
    for i in range(n_steps):
        b = bindings[i]
        value = <object>get_slot(b, O_VALUE)
        if type(value) is not Call:
            continue
        op = <object>get_slot(value, O_OP)
        if type(op) is not Op or not op.inplace:
            continue
        targets = candidate_types((<object>get_slot(b, O_VAR)).ty)
        if not targets:
            continue
        args = <tuple>get_slot(value, O_ARGS)
        n_args = len(args)
        fits, exact = [], set()
        for j in range(n_args):
            aty = getattr(args[j], "ty", None)
            for t in targets:
                ok, ex_ = size_matches(t, aty)
                if ok:
                    if j not in fits:
                        fits.append(j)
                    if ex_:
                        exact.add(j)
        if not fits:
            continue
        kept = [j for j in fits if search.conditions_met(args[j], i) and search.disjoint_from_other_args(args, j)]
        if not kept:
            continue
        kept.sort(reverse=True)
        size_list.append((i, kept))
        ex = [j for j in kept if j in exact]
        if ex:
            exact_list.append((i, ex))
    return size_list, exact_list

