"""Compiled fused path of KillAfterLastUse for flat functions (built by ``setup.py``; no fallback).

Design
------
:mod:`memcore_py.transform.kill_after_last_use` is the public entry: it validates, documents
the rules and runs the general path (CanonicalizeBindings, ``collect_last_usage``, the kill
inserter) for functions with nested scopes or dataflow blocks. A function whose body is only
binding blocks without nested scopes (every function after ToNonDataflow without control
flow) takes :func:`kill_flat` instead, whose two per-binding loops were most of the pass's
time in CPython (on BERT-base about evenly split between them, a third of each building
nodes). The rules are the general path's, fused:

1. One walk over the bindings does CanonicalizeBindings' planning and rewriting together
   (every replacement target is an earlier binding: ``y = x`` re-bindings are dropped and
   their uses read ``x``; a constant-bound var is inlined; ``t[i]`` of a known tuple and
   ``(t[0], t[1])`` re-packing a known tuple read the source), drops the trivial bindings
   nobody uses (TVM ``UnusedTrivialBindingRemover``), records each variable's last use
   (position in the output list; ``-1`` for the function's result) and, at its
   definition, the kind of kill it would get: 0 ``kill_tensor``, 1 ``kill_storage``,
   2 ``kill_object``; nothing for parameters, constants, ``R.null_value()``, shapes, prim
   values, functions and ``R.Tuple()`` values. The kind is ``kill_kind_of``
   (``memcore_py/analysis/_kill_rules.pxd``), the one statement of that rule, of the codes
   this walk reads off the binding and the variable's type.
2. The second walk groups the killable variables by last-use position (definition order
   within a group, then stably by kind: tensors, storages, objects) and splices their
   kill bindings (named ``_``, ``_1``, ... as a fresh ``NameTable`` would) after the
   binding at that position. Already-killed variables are not killed again.

What the walk knows of each variable lives in a :class:`VarTable` (C arrays behind a hash
table on the variable's address) instead of dicts and sets, and the groups are chained in C
arrays.

Anything the fused path does not handle raises :class:`NotFlat` (the caller takes the general
path, which also reports malformed kill calls); a MatchCast raises :class:`HasMatchCast`
unless ``staged`` (the caller, ``kill_after_last_use._kill_flat``, first runs
CanonicalizeBindings' symbolic stage, then calls again with ``staged=True``). The output is exactly the general path's, binding names
included (tests/memcore_py/transform/test_kill_flat_walk.py compares both on random
programs; the oracle tests compare with TVM).

Nodes are read through ``memcore_py/ir/_slots.pxd`` and built by ``memcore_py/ir/_nodes.pyx``
(as ``construct.new_call`` / ``new_binding`` / ``new_var`` build them); the rare checked constructions (a re-written
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
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject, PyTypeObject
from libc.string cimport memset

from memcore_py.analysis._kill_rules cimport (DEF_NO_REGISTER, DEF_PLAIN, DEF_STORAGE, TY_OBJECT, TY_TUPLE, TY_UNTYPED,
                                             kill_kind_of, memcore_type_code)
from memcore_py.ir._nodes cimport binding_node, call_node, var_node
from memcore_py.ir._slots cimport get_slot, slot_offset

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

from memcore_py.ir.builder import NameTable
from memcore_py.ir.construct import EMPTY_ATTRS, function_with_body, new_block, new_seq
from memcore_py.ir.expr import (BindingBlock, Call, Constant, DataflowVar, DataTypeImm, Expr, ExternFunc, Function,
                                GlobalVar, If, MatchCast, PrimValue, SeqExpr, ShapeExpr, StringImm, Tuple,
                                TupleGetItem, Var, VarBinding)
from memcore_py.ir.functor import value_type
from memcore_py.ir.op import kill_op, ops_with_kill_role
from memcore_py.ir.types import VOID, TupleType, type_equal


class NotFlat(Exception):
    """The function needs KillAfterLastUse's general path."""


class HasMatchCast(Exception):
    """The function has a match_cast: run CanonicalizeBindings' symbolic stage first."""


cdef Py_ssize_t O_VAR = slot_offset(VarBinding.var)
cdef Py_ssize_t O_VALUE = slot_offset(VarBinding.value)
cdef Py_ssize_t O_MC_TY = slot_offset(MatchCast.ty)
cdef Py_ssize_t O_TY = slot_offset(Expr.ty)
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

cdef PyTypeObject* P_CALL = <PyTypeObject*>Call

cdef type VAR = Var
cdef type DFVAR = DataflowVar
cdef type CALL = Call
cdef type CONSTANT = Constant
cdef type TUPLE = Tuple
cdef type TGI = TupleGetItem
cdef type VB = VarBinding
cdef type BLOCK = BindingBlock
cdef type TUPLE_TYPE = TupleType

#: The ops by kill role (``Op.kill_role``, memcore_py.ir.op): the kill ops in kill-kind order,
#: the storage allocations, and the calls whose result holds no register.
cdef object KILL_TENSOR = kill_op(0)
cdef object KILL_STORAGE = kill_op(1)
cdef object KILL_OBJECT = kill_op(2)
cdef frozenset STORAGE_OPS = frozenset(ops_with_kill_role("storage"))
cdef frozenset NO_REGISTER_OPS = frozenset(ops_with_kill_role("no_register"))
cdef object VOID_TY = VOID
cdef object EMPTY = EMPTY_ATTRS
cdef tuple KILL_OPS = (KILL_TENSOR, KILL_STORAGE, KILL_OBJECT)

#: Leaves that hold no Relax variable.
cdef frozenset PLAIN = frozenset((Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, GlobalVar))
#: Values that open a scope.
cdef frozenset SCOPES = frozenset((If, Function, SeqExpr))

#: Kill variable names in order, as the general path names them: what one
#: ``NameTable().fresh("_")`` returns the k-th time (filled from such a table on demand).
cdef list KILL_NAMES = []
cdef object KILL_NAME_TABLE = NameTable()


cdef inline bint is_var(object o):
    t = type(o)
    return t is VAR or t is DFVAR


cdef object kill_name(Py_ssize_t k):
    while len(KILL_NAMES) <= k:
        KILL_NAMES.append(KILL_NAME_TABLE.fresh("_"))
    return KILL_NAMES[k]


cdef inline object new_call(op, tuple args, attrs, ty_args, ty):
    """``construct.new_call(op, args, attrs, ty_args, ty)`` for ``args`` a tuple made by the
    caller (untracked with the call, module docstring)."""
    return call_node(op, args, attrs if attrs else EMPTY, ty_args, ty)


cdef object kill_binding(Py_ssize_t k, int kind, target):
    """``_k = <kill op of kind>(target)`` with a fresh void Var."""
    return binding_node(var_node(False, kill_name(k), VOID_TY), new_call(KILL_OPS[kind], (target,), EMPTY, (), VOID_TY))


# ---------------------------------------------------------------------------- variables
cdef class VarTable:
    """What the walk knows of each variable, in C arrays indexed by a dense number per
    variable (the order of first sight), found from the variable's address by an
    open-addressing hash table: the dict-based bookkeeping (four dicts and a set, several
    lookups per binding) was a third of the walk.

    Per variable ``j``: ``last[j]`` the position of its last use in the output list (-1: the
    function's result; -2: none), ``kind[j]`` its kill kind (-1: none), ``killed[j]`` whether
    an explicit kill names it, ``repl[j]`` the Var or Constant its uses become (NULL: none),
    ``known[j]`` its known value (NULL: none). ``defs`` lists the variables with a kind in
    the order the kind was first set (definition order). Every pointer is borrowed from the
    function being walked, which outlives the table.
    """

    def __cinit__(self, Py_ssize_t expected):
        cdef Py_ssize_t size = 16
        while size < 2 * expected + 16:
            size *= 2
        self.cap = size // 2
        self.n = self.n_defs = 0
        self.mask = size - 1
        self.shift = 64 - _log2(size)
        self.table = <Py_ssize_t*>PyMem_Malloc(size * sizeof(Py_ssize_t))
        self.keys = <PyObject**>PyMem_Malloc(self.cap * sizeof(PyObject*))
        self.last = <Py_ssize_t*>PyMem_Malloc(self.cap * sizeof(Py_ssize_t))
        self.kind = <signed char*>PyMem_Malloc(self.cap * sizeof(signed char))
        self.killed = <char*>PyMem_Malloc(self.cap * sizeof(char))
        self.repl = <PyObject**>PyMem_Malloc(self.cap * sizeof(PyObject*))
        self.known = <PyObject**>PyMem_Malloc(self.cap * sizeof(PyObject*))
        self.defs = <Py_ssize_t*>PyMem_Malloc(self.cap * sizeof(Py_ssize_t))
        if (self.table == NULL or self.keys == NULL or self.last == NULL or self.kind == NULL
                or self.killed == NULL or self.repl == NULL or self.known == NULL or self.defs == NULL):
            raise MemoryError()
        memset(self.table, 0xff, size * sizeof(Py_ssize_t))

    def __dealloc__(self):
        PyMem_Free(self.table)
        PyMem_Free(self.keys)
        PyMem_Free(self.last)
        PyMem_Free(self.kind)
        PyMem_Free(self.killed)
        PyMem_Free(self.repl)
        PyMem_Free(self.known)
        PyMem_Free(self.defs)

    cdef Py_ssize_t get(self, PyObject* key) except -1:
        """The number of ``key``, given the next one (nothing known) when new."""
        cdef size_t i = self.home(key)
        cdef Py_ssize_t j
        while True:
            j = self.table[i]
            if j < 0:
                break
            if self.keys[j] == key:
                return j
            i = (i + 1) & self.mask
        if self.n == self.cap:
            self.grow()
            return self.get(key)
        j = self.n
        self.n += 1
        self.table[i] = j
        self.keys[j] = key
        self.last[j] = -2
        self.kind[j] = -1
        self.killed[j] = 0
        self.repl[j] = NULL
        self.known[j] = NULL
        return j

    cdef int grow(self) except -1:
        cdef Py_ssize_t cap = 2 * self.cap, j
        cdef size_t size = 2 * cap, i
        cdef Py_ssize_t* table = <Py_ssize_t*>PyMem_Malloc(size * sizeof(Py_ssize_t))
        if table == NULL:
            raise MemoryError()
        self.keys = <PyObject**>_realloc(self.keys, cap * sizeof(PyObject*))
        self.last = <Py_ssize_t*>_realloc(self.last, cap * sizeof(Py_ssize_t))
        self.kind = <signed char*>_realloc(self.kind, cap * sizeof(signed char))
        self.killed = <char*>_realloc(self.killed, cap * sizeof(char))
        self.repl = <PyObject**>_realloc(self.repl, cap * sizeof(PyObject*))
        self.known = <PyObject**>_realloc(self.known, cap * sizeof(PyObject*))
        self.defs = <Py_ssize_t*>_realloc(self.defs, cap * sizeof(Py_ssize_t))
        PyMem_Free(self.table)
        memset(table, 0xff, size * sizeof(Py_ssize_t))
        self.table, self.mask, self.shift, self.cap = table, size - 1, 64 - _log2(size), cap
        for j in range(self.n):
            i = self.home(self.keys[j])
            while self.table[i] >= 0:
                i = (i + 1) & self.mask
            self.table[i] = j
        return 0


cdef inline int _log2(size_t size) noexcept:
    cdef int b = 0
    while (<size_t>1 << b) < size:
        b += 1
    return b


cdef void* _realloc(void* p, size_t size) except NULL:
    cdef void* q = PyMem_Realloc(p, size)
    if q == NULL:
        raise MemoryError()
    return q


cdef object rewrite_leafy(e, VarTable V, Py_ssize_t pos):
    """``e`` (a leaf, Tuple or TupleGetItem nest) with replaced variables substituted; the
    variables of the result are recorded as used at ``pos``. NotFlat for anything else."""
    cls = type(e)
    cdef tuple fields
    cdef list new
    cdef bint changed
    cdef PyObject* r
    if cls is VAR or cls is DFVAR:
        e = <object>V.stands_for(<PyObject*>e)
        if type(e) is not CONSTANT:
            V.use(e, pos)
        return e
    if cls is TUPLE:
        fields = <tuple>get_slot(e, O_FIELDS)
        new = []
        changed = False
        for f in fields:
            n = rewrite_leafy(f, V, pos)
            changed = changed or n is not f
            new.append(n)
        return Tuple(new) if changed else e
    if cls is TGI:
        tv = <object>get_slot(e, O_TUPLE_VALUE)
        n = rewrite_leafy(tv, V, pos)
        return e if n is tv else TupleGetItem(n, <object>get_slot(e, O_INDEX))
    if cls in PLAIN:
        return e
    raise NotFlat


cdef object known_value(VarTable V, x):
    """The known value of variable ``x``, or None."""
    cdef Py_ssize_t j = V.find(<PyObject*>x)
    if j < 0 or V.known[j] == NULL:
        return None
    return <object>V.known[j]


cdef object unwrap_var(x, VarTable V):
    while is_var(x):
        nxt = known_value(V, x)
        if nxt is None:
            return x
        x = nxt
    return x


cdef object unwrap_known(e, VarTable V):
    """TVM ``UnwrapKnownValue`` over the known values (see canonicalize_bindings): the field
    a get-item of a known tuple reads, or the tuple that ``(t[0], t[1], ...)`` re-packs; None."""
    cdef tuple fields
    cdef Py_ssize_t i
    if type(e) is TGI:
        tup = unwrap_var(<object>get_slot(e, O_TUPLE_VALUE), V)
        i = <object>get_slot(e, O_INDEX)
        if type(tup) is TUPLE and i < len(<tuple>get_slot(tup, O_FIELDS)):
            return (<tuple>get_slot(tup, O_FIELDS))[i]
        return None
    fields = <tuple>get_slot(e, O_FIELDS)
    if not fields:
        return None
    first = unwrap_var(fields[0], V)
    if type(first) is not TGI:
        return None
    src_ty = value_type(<object>get_slot(first, O_TUPLE_VALUE))
    if type(src_ty) is not TUPLE_TYPE or len(src_ty.fields) != len(fields):
        return None
    earlier = unwrap_var(<object>get_slot(first, O_TUPLE_VALUE), V)
    for i in range(len(fields)):
        el = unwrap_var(fields[i], V)
        if (type(el) is not TGI or <object>get_slot(el, O_INDEX) != i
                or unwrap_var(<object>get_slot(el, O_TUPLE_VALUE), V) is not earlier):
            return None
    return earlier


cdef inline signed char kept_kind(ty) noexcept:
    """The kill kind of a kept binding's variable of type ``ty`` (``_kill_rules.kill_kind_of``;
    -1: none)."""
    return kill_kind_of(DEF_PLAIN, memcore_type_code(ty))


# ---------------------------------------------------------------------------- the walk
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
    cdef tuple blocks = <tuple>get_slot(body, O_BLOCKS)
    cdef Py_ssize_t n_total = 0
    for blk in blocks:
        if type(blk) is not BLOCK:
            raise NotFlat
        n_total += len(<tuple>get_slot(blk, O_BINDINGS))
    cdef VarTable V = VarTable(n_total + 8)
    cdef list out = []
    cdef tuple bindings, args
    cdef list new_args
    cdef Py_ssize_t pos, i, n_args, i_binding, n_bindings, j, jv
    cdef bint is_vb, same_type, constant_binding, subst
    cdef signed char k
    cdef PyObject* r
    for blk in blocks:
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
                    target = args[0]
                    r = V.stands_for(<PyObject*>target)
                    if r != <PyObject*>target:
                        if type(<object>r) is CONSTANT:
                            raise NotFlat
                        target = <object>r
                        b = binding_node(var, new_call(op, (target,), <object>get_slot(value, O_ATTRS),
                                                      <object>get_slot(value, O_TY_ARGS), <object>get_slot(value, O_TY)))
                    V.killed[V.get(<PyObject*>target)] = 1
                    out.append(b)
                    continue
                if is_vb and (op in STORAGE_OPS or op in NO_REGISTER_OPS):
                    for a in args:
                        if type(a) not in PLAIN:
                            raise NotFlat
                    k = kill_kind_of(DEF_STORAGE if op in STORAGE_OPS else DEF_NO_REGISTER, TY_OBJECT)
                    if k >= 0:
                        V.set_kind(V.get(<PyObject*>var), k)
                    out.append(b)
                    continue
                if is_var(op):
                    raise NotFlat
                pos = len(out)
                subst = False
                for a in args:  # common case: nothing to substitute
                    ca = type(a)
                    if ca is VAR or ca is DFVAR:
                        j = V.get(<PyObject*>a)
                        if V.repl[j] != NULL:
                            subst = True
                            break
                        V.last[j] = pos
                    elif ca not in PLAIN:
                        subst = True
                        break
                new_args = None
                if subst:
                    new_args = []
                    for a in args:
                        new_args.append(a if type(a) in PLAIN else rewrite_leafy(a, V, pos))
                vty = <object>get_slot(var, O_TY)
                tc = memcore_type_code(vty)
                if tc == TY_TUPLE or tc == TY_UNTYPED:
                    # Only a tuple-typed (or untyped) call result can be the source of a
                    # tuple re-packing; knowing it is a call keeps `(t[0], t[1])` from
                    # counting as a copy of t.
                    V.known[V.get(<PyObject*>var)] = <PyObject*>orig
                k = kill_kind_of(DEF_PLAIN, tc)
                if k >= 0:
                    V.set_kind(V.get(<PyObject*>var), k)
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
                        out.append(binding_node(var, nc))
                    else:
                        out.append(MatchCast(var, nc, <object>get_slot(b, O_MC_TY)))
                continue
            same_type = is_vb or type_equal(<object>get_slot(var, O_TY), value_type(orig))
            if cls is TGI or cls is TUPLE:
                unwrapped = unwrap_known(value, V)
                if unwrapped is not None:
                    value = unwrapped
                    cls = type(value)
            constant_binding = False
            if cls is VAR or cls is DFVAR:
                # Unwrapping follows var chains only to reach a tuple or a get-item, so a
                # chain through a non-tuple var that is known as nothing more is not kept.
                jv = V.get(<PyObject*>value)
                if V.known[jv] != NULL or type(<object>get_slot(value, O_TY)) is TUPLE_TYPE:
                    V.known[V.get(<PyObject*>var)] = <PyObject*>value
                if same_type:
                    # trivial: dropped
                    V.rebind(<PyObject*>var, <PyObject*>value)
                    continue
            else:
                j = V.get(<PyObject*>var)
                V.known[j] = <PyObject*>value
                if cls is CONSTANT:
                    V.repl[j] = <PyObject*>value
                    constant_binding = is_vb and orig is value
                elif cls in SCOPES:
                    raise NotFlat
            # kept binding: rewrite the original value, record its uses
            pos = len(out)
            if type(orig) in PLAIN:
                new_value = orig
            else:
                new_value = rewrite_leafy(orig, V, pos)
                if (not is_vb and is_var(new_value)
                        and type_equal(<object>get_slot(var, O_TY), <object>get_slot(new_value, O_TY))):
                    raise NotFlat  # a match_cast became trivial: leave it to the general path
            if not constant_binding:
                k = kept_kind(<object>get_slot(var, O_TY))
                if k >= 0:
                    V.set_kind(V.get(<PyObject*>var), k)
            if new_value is orig:
                out.append(b)
            elif is_vb:
                out.append(binding_node(var, new_value))
            else:
                out.append(MatchCast(var, new_value, <object>get_slot(b, O_MC_TY)))
    result = <object>get_slot(body, O_BODY)
    if type(result) not in PLAIN:
        result = rewrite_leafy(result, V, -1)
    final = splice_kills(out, V)
    new_blocks = (new_block(BindingBlock, final),) if final else ()
    return function_with_body(func, new_seq(new_blocks, result))


cdef Py_ssize_t kill_schedule(VarTable V, Py_ssize_t n, Py_ssize_t* order, Py_ssize_t* at) except -1:
    """The kills of a walk whose output list has ``n`` bindings (module docstring, step 2), in
    the order they are spliced in: ``order[c]`` the killed variable's number, ``at[c]`` the
    output position it follows (non-decreasing); returns their count. ``order`` and ``at``
    hold at least ``V.n_defs`` places. The killable variables in definition order are chained
    into one list per last-use position; a position with several kills emits the tensors,
    then the storages, then the objects, each in definition order."""
    cdef Py_ssize_t p, d, j, e, c = 0
    cdef int want
    cdef Py_ssize_t* head = <Py_ssize_t*>PyMem_Malloc((2 * n + V.n_defs + 1) * sizeof(Py_ssize_t))
    if head == NULL:
        raise MemoryError()
    cdef Py_ssize_t* tail = head + n
    cdef Py_ssize_t* nxt = tail + n
    memset(head, 0xff, 2 * n * sizeof(Py_ssize_t))
    for d in range(V.n_defs):
        j = V.defs[d]
        p = V.last[j]
        if p < 0 or V.killed[j]:
            continue
        nxt[d] = -1
        if head[p] < 0:
            head[p] = d
        else:
            nxt[tail[p]] = d
        tail[p] = d
    for p in range(n):
        e = head[p]
        if e < 0:
            continue
        if nxt[e] < 0:
            order[c] = V.defs[e]
            at[c] = p
            c += 1
            continue
        for want in range(3):  # tensors, storages, objects; definition order within each
            e = head[p]
            while e >= 0:
                j = V.defs[e]
                if V.kind[j] == want:
                    order[c] = j
                    at[c] = p
                    c += 1
                e = nxt[e]
    PyMem_Free(head)
    return c


cdef list splice_kills(list out, VarTable V):
    """``out`` with the kills of :func:`kill_schedule` after their positions."""
    cdef Py_ssize_t n = len(out), p, c = 0, n_kills, j
    cdef Py_ssize_t* order = <Py_ssize_t*>PyMem_Malloc((2 * V.n_defs + 1) * sizeof(Py_ssize_t))
    if order == NULL:
        raise MemoryError()
    cdef Py_ssize_t* at = order + V.n_defs
    cdef list final = []
    try:
        n_kills = kill_schedule(V, n, order, at)
        for p in range(n):
            final.append(out[p])
            while c < n_kills and at[c] == p:
                j = order[c]
                final.append(kill_binding(c, V.kind[j], <object>V.keys[j]))
                c += 1
    finally:
        PyMem_Free(order)
    return final
