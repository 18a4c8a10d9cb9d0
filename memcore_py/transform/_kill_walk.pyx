"""Compiled fused path of KillAfterLastUse for flat functions (built by ``setup.py``; no fallback).

Design
------
:mod:`memcore_py.transform.kill_after_last_use` is the public entry: it validates, documents
the rules and runs the general path (CanonicalizeBindings, ``collect_last_usage``, the kill
inserter) for functions with nested scopes or dataflow blocks. A function whose body is only
binding blocks without nested scopes (every function after ToNonDataflow without control
flow) takes :func:`kill_flat` instead, whose two per-binding loops were most of the pass's
time in CPython (about 1.1 of 1.25 ms on BERT-base: the first loop 55 %, the second 45 %,
a third of each building nodes). The rules are the general path's, fused:

1. One walk over the bindings does CanonicalizeBindings' planning and rewriting together
   (every replacement target is an earlier binding: ``y = x`` re-bindings are dropped and
   their uses read ``x``; a constant-bound var is inlined; ``t[i]`` of a known tuple and
   ``(t[0], t[1])`` re-packing a known tuple read the source), drops the trivial bindings
   nobody uses (TVM ``UnusedTrivialBindingRemover``), records each variable's last use
   (position in the output list; ``-1`` for the function's result) and, at its
   definition, the kind of kill it would get: 0 ``kill_tensor``, 1 ``kill_storage``,
   2 ``kill_object``; nothing for parameters, constants, ``R.null_value()``, shapes, prim
   values, functions and ``R.Tuple()`` values.
2. The second walk buckets the killable variables by last-use position (definition order
   within a bucket, then stably by kind: tensors, storages, objects) and splices their
   kill bindings (named ``_``, ``_1``, ... as a fresh ``NameTable`` would) after the
   binding at that position. Already-killed variables are not killed again.

Anything the fused path does not handle raises :class:`NotFlat` (the caller takes the general
path, which also reports malformed kill calls); a MatchCast raises :class:`HasMatchCast`
unless ``staged`` (the caller first runs CanonicalizeBindings' symbolic stage, then calls
again with ``staged=True``). The output is exactly the general path's, binding names
included (tests/memcore_py/transform/test_kill_flat_walk.py compares both on random
programs; the oracle tests compare with TVM).

Nodes are read and built through ``memcore_py/ir/_slots.pxd`` (as ``construct.new_call`` /
``new_binding`` / ``new_var`` build them); the rare checked constructions (a re-written
tuple or get-item, whose type the checked constructor computes; a MatchCast) use the
public constructors.

Memory. On real models the walk is bound by memory latency, not by instructions: between
two calls the input's nodes leave the CPU caches, and each binding chases pointers (binding
-> value -> argument tuple -> arguments, binding -> var -> type). The first loop therefore
prefetches those nodes a few bindings ahead (``kw_prefetch_ahead``; each level reads only
pointers fetched a binding earlier). The nodes and argument tuples made here are untracked
by the cyclic garbage collector: they are immutable and point only to older objects, so
they cannot be part of a cycle, and the young collection that follows the pass (the pass
pauses the collector, see ``memcore_py.ir._util.gc_paused``) no longer walks them.
"""
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_DECREF

from memcore_py.ir._slots cimport alloc_node, get_slot, put_slot, slot_offset


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void*)

cdef extern from *:
    """
    /* Prefetch the nodes the walk will read a few bindings ahead (module docstring). Each
       level reads only pointers fetched one level (one binding) earlier. */
    #define KW_SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))
    static inline void kw_prefetch_ahead(PyObject *bindings, Py_ssize_t i, Py_ssize_t n,
                                         Py_ssize_t o_var, Py_ssize_t o_value, Py_ssize_t o_ty,
                                         Py_ssize_t o_args, PyTypeObject *call_type) {
        PyObject **items = ((PyTupleObject *)bindings)->ob_item;
        PyObject *b, *v, *a;
        Py_ssize_t k, m;
        if (i + 4 < n) __builtin_prefetch(items[i + 4]);
        if (i + 3 < n) {
            b = items[i + 3];
            __builtin_prefetch(KW_SLOT(b, o_var));
            __builtin_prefetch(KW_SLOT(b, o_value));
        }
        if (i + 2 < n) {
            b = items[i + 2];
            v = KW_SLOT(b, o_value);
            if (Py_TYPE(v) == call_type) __builtin_prefetch(KW_SLOT(v, o_args));
            a = KW_SLOT(KW_SLOT(b, o_var), o_ty);
            if (a != NULL) __builtin_prefetch(a);
        }
        if (i + 1 < n) {
            v = KW_SLOT(items[i + 1], o_value);
            if (Py_TYPE(v) == call_type) {
                a = KW_SLOT(v, o_args);
                m = PyTuple_GET_SIZE(a);
                for (k = 0; k < m && k < 8; k++) __builtin_prefetch(PyTuple_GET_ITEM(a, k));
            }
        }
    }
    """
    void kw_prefetch_ahead(object bindings, Py_ssize_t i, Py_ssize_t n, Py_ssize_t o_var, Py_ssize_t o_value,
                           Py_ssize_t o_ty, Py_ssize_t o_args, PyTypeObject* call_type) noexcept

from memcore_py.ir.construct import EMPTY_ATTRS, function_with_body, new_block, new_seq
from memcore_py.ir.expr import (BindingBlock, Call, Constant, DataflowVar, DataTypeImm, Expr, ExternFunc, Function,
                                GlobalVar, If, MatchCast, PrimValue, SeqExpr, ShapeExpr, StringImm, Tuple,
                                TupleGetItem, Var, VarBinding)
from memcore_py.ir.functor import value_type
from memcore_py.ir.op import get_op
from memcore_py.ir.types import VOID, FuncType, PrimType, ShapeType, TensorType, TupleType, type_equal


class NotFlat(Exception):
    """The function needs KillAfterLastUse's general path."""


class HasMatchCast(Exception):
    """The function has a match_cast: run CanonicalizeBindings' symbolic stage first."""


cdef Py_ssize_t O_VAR = slot_offset(VarBinding.var)
cdef Py_ssize_t O_VALUE = slot_offset(VarBinding.value)
cdef Py_ssize_t O_MC_TY = slot_offset(MatchCast.ty)
cdef Py_ssize_t O_TY = slot_offset(Expr.ty)
cdef Py_ssize_t O_NAME = slot_offset(Var.name)
cdef Py_ssize_t O_OP = slot_offset(Call.op)
cdef Py_ssize_t O_ARGS = slot_offset(Call.args)
cdef Py_ssize_t O_ATTRS = slot_offset(Call.attrs)
cdef Py_ssize_t O_TY_ARGS = slot_offset(Call.ty_args)
cdef Py_ssize_t O_FIELDS = slot_offset(Tuple.fields)
cdef Py_ssize_t O_TUPLE_VALUE = slot_offset(TupleGetItem.tuple_value)
cdef Py_ssize_t O_INDEX = slot_offset(TupleGetItem.index)
cdef Py_ssize_t O_BINDINGS = slot_offset(BindingBlock.bindings)
cdef Py_ssize_t O_BLOCKS = slot_offset(SeqExpr.blocks)
cdef Py_ssize_t O_BODY = slot_offset(SeqExpr.body)
cdef Py_ssize_t O_FUNC_BODY = slot_offset(Function.body)

cdef PyTypeObject* P_VAR = <PyTypeObject*>Var
cdef PyTypeObject* P_CALL = <PyTypeObject*>Call
cdef PyTypeObject* P_VAR_BINDING = <PyTypeObject*>VarBinding

cdef type VAR = Var
cdef type DFVAR = DataflowVar
cdef type CALL = Call
cdef type CONSTANT = Constant
cdef type TUPLE = Tuple
cdef type TGI = TupleGetItem
cdef type VB = VarBinding
cdef type BLOCK = BindingBlock
cdef type TENSOR_TYPE = TensorType
cdef type TUPLE_TYPE = TupleType

cdef object KILL_TENSOR = get_op("relax.memory.kill_tensor")
cdef object KILL_STORAGE = get_op("relax.memory.kill_storage")
cdef object KILL_OBJECT = get_op("relax.vm.kill_object")
cdef object ALLOC_STORAGE = get_op("relax.memory.alloc_storage")
cdef object VM_ALLOC_STORAGE = get_op("relax.vm.alloc_storage")
cdef object NULL_VALUE = get_op("relax.null_value")
cdef object VOID_TY = VOID
cdef object EMPTY = EMPTY_ATTRS
cdef tuple KILL_OPS = (KILL_TENSOR, KILL_STORAGE, KILL_OBJECT)

#: Types whose values hold no register (never killed).
cdef frozenset NO_REGISTER_TYPES = frozenset((FuncType, ShapeType, PrimType))
#: Leaves that hold no Relax variable.
cdef frozenset PLAIN = frozenset((Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, GlobalVar))
#: Values that open a scope.
cdef frozenset SCOPES = frozenset((If, Function, SeqExpr))

#: Kill variable names in order: what ``NameTable().fresh("_")`` returns the k-th time.
cdef list KILL_NAMES = ["_"]


cdef inline bint is_var(object o):
    t = type(o)
    return t is VAR or t is DFVAR


cdef object kill_name(Py_ssize_t k):
    while len(KILL_NAMES) <= k:
        KILL_NAMES.append(f"_{len(KILL_NAMES)}")
    return KILL_NAMES[k]


cdef object new_call(op, tuple args, attrs, ty_args, ty):
    """``construct.new_call(op, args, attrs, ty_args, ty)`` for ``args`` a tuple made by the
    caller (untracked with the call, module docstring)."""
    PyObject_GC_UnTrack(<PyObject*>args)
    cdef PyObject* c = alloc_node(P_CALL)
    put_slot(c, O_OP, op)
    put_slot(c, O_ARGS, args)
    put_slot(c, O_ATTRS, attrs if attrs else EMPTY)
    put_slot(c, O_TY_ARGS, ty_args)
    put_slot(c, O_TY, ty)
    PyObject_GC_UnTrack(c)
    out = <object>c
    Py_DECREF(out)
    return out


cdef object new_binding(var, value):
    """``construct.new_binding(var, value)``."""
    cdef PyObject* b = alloc_node(P_VAR_BINDING)
    put_slot(b, O_VAR, var)
    put_slot(b, O_VALUE, value)
    PyObject_GC_UnTrack(b)
    out = <object>b
    Py_DECREF(out)
    return out


cdef object kill_binding(Py_ssize_t k, int kind, target):
    """``_k = <kill op of kind>(target)`` with a fresh void Var."""
    cdef PyObject* v = alloc_node(P_VAR)
    put_slot(v, O_NAME, kill_name(k))
    put_slot(v, O_TY, VOID_TY)
    PyObject_GC_UnTrack(v)
    var = <object>v
    Py_DECREF(var)
    return new_binding(var, new_call(KILL_OPS[kind], (target,), EMPTY, (), VOID_TY))


cdef object rewrite_leafy(e, dict repl, dict last, Py_ssize_t pos):
    """``e`` (a leaf, Tuple or TupleGetItem nest) with replaced variables substituted; the
    variables of the result are recorded as used at ``pos``. NotFlat for anything else."""
    cls = type(e)
    cdef tuple fields
    cdef list new
    cdef bint changed
    if cls is VAR or cls is DFVAR:
        r = repl.get(e)
        if r is not None:
            e = r
        if type(e) is not CONSTANT:
            last[e] = pos
        return e
    if cls is TUPLE:
        fields = <tuple>get_slot(e, O_FIELDS)
        new = []
        changed = False
        for f in fields:
            n = rewrite_leafy(f, repl, last, pos)
            changed = changed or n is not f
            new.append(n)
        return Tuple(new) if changed else e
    if cls is TGI:
        tv = <object>get_slot(e, O_TUPLE_VALUE)
        n = rewrite_leafy(tv, repl, last, pos)
        return e if n is tv else TupleGetItem(n, <object>get_slot(e, O_INDEX))
    if cls in PLAIN:
        return e
    raise NotFlat


cdef object unwrap_var(x, dict known):
    while is_var(x):
        nxt = known.get(x)
        if nxt is None:
            return x
        x = nxt
    return x


cdef object unwrap_known(e, dict known):
    """TVM ``UnwrapKnownValue`` over ``known`` (see canonicalize_bindings): the field a
    get-item of a known tuple reads, or the tuple that ``(t[0], t[1], ...)`` re-packs; None."""
    cdef tuple fields
    cdef Py_ssize_t i
    if type(e) is TGI:
        tup = unwrap_var(<object>get_slot(e, O_TUPLE_VALUE), known)
        i = <object>get_slot(e, O_INDEX)
        if type(tup) is TUPLE and i < len(<tuple>get_slot(tup, O_FIELDS)):
            return (<tuple>get_slot(tup, O_FIELDS))[i]
        return None
    fields = <tuple>get_slot(e, O_FIELDS)
    if not fields:
        return None
    first = unwrap_var(fields[0], known)
    if type(first) is not TGI:
        return None
    src_ty = value_type(<object>get_slot(first, O_TUPLE_VALUE))
    if type(src_ty) is not TUPLE_TYPE or len(src_ty.fields) != len(fields):
        return None
    earlier = unwrap_var(<object>get_slot(first, O_TUPLE_VALUE), known)
    for i in range(len(fields)):
        el = unwrap_var(fields[i], known)
        if (type(el) is not TGI or <object>get_slot(el, O_INDEX) != i
                or unwrap_var(<object>get_slot(el, O_TUPLE_VALUE), known) is not earlier):
            return None
    return earlier


cdef inline void set_kind(dict kind_of, var, ty):
    """Record the kill kind of a kept binding's variable of type ``ty`` (none for types
    without a register)."""
    tcls = type(ty)
    if tcls is TENSOR_TYPE:
        kind_of[var] = 0
    elif tcls not in NO_REGISTER_TYPES:
        kind_of[var] = 2


def kill_flat(func, bint staged=False):
    """KillAfterLastUse of a flat function (module docstring): the new Function.

    Raises
    ------
    NotFlat
        The function needs the general path.
    HasMatchCast
        A MatchCast was met and ``staged`` is False.
    """
    body = <object>get_slot(func, O_FUNC_BODY)
    cdef dict repl = {}      # var -> the Var or Constant its uses become
    cdef dict known = {}     # var -> its known (unwrapped, original) value (not kept for
    #                          non-tuple call results: nothing unwraps through them)
    cdef dict last = {}      # var -> position in `out` of its last use; -1 = the result
    cdef dict kind_of = {}   # var -> 0 tensor / 1 storage / 2 object, in definition order
    cdef list out = []
    cdef set killed = set()
    cdef tuple bindings, args
    cdef list new_args
    cdef Py_ssize_t pos, i, n_args, i_binding, n_bindings
    cdef bint is_vb, same_type, constant_binding, subst
    for blk in <tuple>get_slot(body, O_BLOCKS):
        if type(blk) is not BLOCK:
            raise NotFlat
        bindings = <tuple>get_slot(blk, O_BINDINGS)
        n_bindings = len(bindings)
        for i_binding in range(n_bindings):
            kw_prefetch_ahead(bindings, i_binding, n_bindings, O_VAR, O_VALUE, O_TY, O_ARGS, P_CALL)
            b = bindings[i_binding]
            var = <object>get_slot(b, O_VAR)
            value = orig = <object>get_slot(b, O_VALUE)
            cls = type(value)
            is_vb = type(b) is VB
            if not is_vb and not staged:
                raise HasMatchCast
            if cls is CALL:
                op = <object>get_slot(value, O_OP)
                args = <tuple>get_slot(value, O_ARGS)
                if is_vb and (op is KILL_TENSOR or op is KILL_STORAGE or op is KILL_OBJECT):
                    if len(args) != 1 or not is_var(args[0]):
                        raise NotFlat  # the general path reports it
                    r = repl.get(args[0])
                    if r is not None:
                        if type(r) is CONSTANT:
                            raise NotFlat
                        value = new_call(op, (r,), <object>get_slot(value, O_ATTRS),
                                         <object>get_slot(value, O_TY_ARGS), <object>get_slot(value, O_TY))
                        b = new_binding(var, value)
                        killed.add(r)
                    else:
                        killed.add(args[0])
                    out.append(b)
                    continue
                if is_vb and (op is ALLOC_STORAGE or op is VM_ALLOC_STORAGE or op is NULL_VALUE):
                    for a in args:
                        if type(a) not in PLAIN:
                            raise NotFlat
                    if op is not NULL_VALUE:  # a null value has no register: never killed
                        kind_of[var] = 1
                    out.append(b)
                    continue
                if is_var(op):
                    raise NotFlat
                pos = len(out)
                subst = False
                for a in args:  # common case: nothing to substitute
                    ca = type(a)
                    if ca is VAR or ca is DFVAR:
                        if a in repl:
                            subst = True
                            break
                        last[a] = pos
                    elif ca not in PLAIN:
                        subst = True
                        break
                new_args = None
                if subst:
                    new_args = []
                    for a in args:
                        new_args.append(a if type(a) in PLAIN else rewrite_leafy(a, repl, last, pos))
                vty = <object>get_slot(var, O_TY)
                tcls = type(vty)
                if tcls is TENSOR_TYPE:
                    kind_of[var] = 0
                elif tcls is TUPLE_TYPE:
                    if vty.fields:
                        # Only a tuple-typed call result can be the source of a tuple
                        # re-packing; knowing it is a call keeps `(t[0], t[1])` from
                        # counting as a copy of t.
                        known[var] = orig
                        kind_of[var] = 2
                    # else R.Tuple() (a DPS call's result): never killed, see last_usage
                elif tcls not in NO_REGISTER_TYPES:
                    if vty is None:
                        known[var] = orig
                    kind_of[var] = 2
                if new_args is not None:
                    n_args = len(args)
                    for i in range(n_args):
                        if new_args[i] is not args[i]:
                            break
                    else:
                        new_args = None  # e.g. only a tuple argument was visited
                if new_args is None:
                    out.append(b)
                else:
                    nc = new_call(op, tuple(new_args), <object>get_slot(value, O_ATTRS),
                                  <object>get_slot(value, O_TY_ARGS), <object>get_slot(value, O_TY))
                    if is_vb:
                        out.append(new_binding(var, nc))
                    else:
                        out.append(MatchCast(var, nc, <object>get_slot(b, O_MC_TY)))
                continue
            same_type = is_vb or type_equal(<object>get_slot(var, O_TY), value_type(orig))
            if cls is TGI or cls is TUPLE:
                unwrapped = unwrap_known(value, known)
                if unwrapped is not None:
                    value = unwrapped
                    cls = type(value)
            constant_binding = False
            if cls is VAR or cls is DFVAR:
                # Unwrapping follows var chains only to reach a tuple or a get-item, so a
                # chain through a non-tuple var that is known as nothing more is not kept.
                if value in known or type(<object>get_slot(value, O_TY)) is TUPLE_TYPE:
                    known[var] = value
                if same_type:
                    repl[var] = repl.get(value, value)  # trivial: dropped
                    continue
            else:
                known[var] = value
                if cls is CONSTANT:
                    repl[var] = value
                    constant_binding = is_vb and orig is value
                elif cls in SCOPES:
                    raise NotFlat
            # kept binding: rewrite the original value, record its uses
            pos = len(out)
            if type(orig) in PLAIN:
                new_value = orig
            else:
                new_value = rewrite_leafy(orig, repl, last, pos)
                if (not is_vb and is_var(new_value)
                        and type_equal(<object>get_slot(var, O_TY), <object>get_slot(new_value, O_TY))):
                    raise NotFlat  # a match_cast became trivial: leave it to the general path
            if not constant_binding:
                set_kind(kind_of, var, <object>get_slot(var, O_TY))
            if new_value is orig:
                out.append(b)
            elif is_vb:
                out.append(new_binding(var, new_value))
            else:
                out.append(MatchCast(var, new_value, <object>get_slot(b, O_MC_TY)))
    result = <object>get_slot(body, O_BODY)
    if type(result) not in PLAIN:
        result = rewrite_leafy(result, repl, last, -1)
    final = splice_kills(out, kind_of, last, killed)
    blocks = (new_block(BindingBlock, final),) if final else ()
    return function_with_body(func, new_seq(blocks, result))


cdef list splice_kills(list out, dict kind_of, dict last, set killed):
    """``out`` with the kills after each last use (module docstring, step 2)."""
    cdef Py_ssize_t n = len(out), p, k = 0
    cdef list buckets = [None] * n
    cdef list g
    cdef int kind, want
    for var, kind_obj in kind_of.items():
        lp = last.get(var)
        if lp is None:
            continue
        p = lp
        if p < 0 or (killed and var in killed):
            continue
        if buckets[p] is None:
            buckets[p] = [var]
        else:
            (<list>buckets[p]).append(var)
    cdef list final = []
    for p in range(n):
        final.append(out[p])
        if buckets[p] is None:
            continue
        g = <list>buckets[p]
        if len(g) == 1:
            var = g[0]
            final.append(kill_binding(k, kind_of[var], var))
            k += 1
            continue
        for want in range(3):  # tensors, storages, objects; definition order within each
            for var in g:
                kind = kind_of[var]
                if kind == want:
                    final.append(kill_binding(k, kind, var))
                    k += 1
    return final
