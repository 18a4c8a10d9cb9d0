"""Compiled binding loop of StaticPlanBlockMemory's Init walk (built by ``setup.py``; no fallback).

Design
------
:class:`~memcore_py.analysis.storage_tokens._StorageAllocatorInit` walks every block of a
module; in CPython that walk is dominated by per-binding interpreter overhead, so its state
and its common cases live in :class:`InitWalk`:

- the per-token rows (``t_block``, ``t_info``, ``t_binding``, ``t_index``: struct of arrays,
  one entry per ``R.builtin.alloc_tensor`` seen, in program order), the discarded set and the
  packed event list, and the per-function maps (``var_tokens``, ``size_cache``);
- :meth:`InitWalk.walk` runs over one block and handles the post-CallTIRRewrite forms — an
  allocation whose tensor type was seen before with equal arguments (same nodes or same
  values), a call to a PrimFunc / packed function whose arguments are variables, a rebinding
  ``v = x``, a storage-sharing op of a variable (``v = R.reshape(x, ...)``) — and hands every
  other binding, unchanged and in program order, to the Python callback
  ``slow(binding, position, step0)``;
- :meth:`InitWalk.decode` ends the walk: the event list without the discarded tokens,
  renumbered densely, with each token's allocation step, last use and use count, and the
  rows of the kept tokens.

Events are packed one 64-bit integer each, ``step * EV_SCALE + 2 * token + kind`` (kind
``EV_REQUEST`` / ``EV_DECREF`` from ``memcore/_typedefs.pxd``), in a growable C buffer owned by
the walk; tokens must stay below 2**31.
Slots of the IR nodes are read through ``memcore_py/ir/_slots.pxd``.
"""
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.object cimport Py_EQ, PyObject, PyObject_RichCompareBool, PyTypeObject, Py_TYPE
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_SET_ITEM

from memcore._typedefs cimport EV_DECREF, EV_REQUEST, int64_t, kind_t
from memcore_py.ir._slots cimport PyDict_GetItem, PyType_GenericAlloc, get_slot, slot_offset

import numpy as np

cimport numpy as cnp

cnp.import_array()

from memcore_py.ir.expr import Call, DataflowVar, DataTypeImm, MatchCast, PrimValue, StringImm, Var, VarBinding
from memcore_py.ir.prim import IntImm

cdef enum:
    # calls with more arguments than this take the slow path (the loop keeps their tokens
    # in a fixed array)
    MAX_ARGS = 32

#: events are packed as ``step * SCALE + 2 * token + kind`` (C arithmetic in the loops)
cdef long long SCALE = 1LL << 32
EV_SCALE = SCALE

cdef Py_ssize_t O_VAR = slot_offset(VarBinding.var)
cdef Py_ssize_t O_VALUE = slot_offset(VarBinding.value)
cdef Py_ssize_t O_TY = slot_offset(Var.ty)
cdef Py_ssize_t O_OP = slot_offset(Call.op)
cdef Py_ssize_t O_ARGS = slot_offset(Call.args)
if slot_offset(Call.ty) != O_TY or slot_offset(MatchCast.var) != O_VAR or slot_offset(MatchCast.value) != O_VALUE:
    raise ImportError("memcore_py.analysis._storage_walk: unexpected slot layout of the IR nodes")

cdef Py_ssize_t O_DTYPE_VALUE = slot_offset(DataTypeImm.value)
cdef Py_ssize_t O_PRIM_VALUE = slot_offset(PrimValue.value)
cdef Py_ssize_t O_STR_VALUE = slot_offset(StringImm.value)
cdef Py_ssize_t O_INT_VALUE = slot_offset(IntImm.value)

cdef PyTypeObject* T_CALL = <PyTypeObject*>Call
cdef PyTypeObject* T_DTYPE_IMM = <PyTypeObject*>DataTypeImm
cdef PyTypeObject* T_PRIM_VALUE = <PyTypeObject*>PrimValue
cdef PyTypeObject* T_STRING_IMM = <PyTypeObject*>StringImm
cdef PyTypeObject* T_INT_IMM = <PyTypeObject*>IntImm
cdef PyTypeObject* T_VAR_BINDING = <PyTypeObject*>VarBinding
cdef PyTypeObject* T_MATCH_CAST = <PyTypeObject*>MatchCast
cdef PyTypeObject* T_VAR = <PyTypeObject*>Var
cdef PyTypeObject* T_DATAFLOW_VAR = <PyTypeObject*>DataflowVar


cdef inline object _int64_zeros(Py_ssize_t n):
    """A new int64 array of ``n`` zeros."""
    cdef cnp.npy_intp dim = n
    return cnp.PyArray_ZEROS(1, &dim, cnp.NPY_INT64, 0)


cdef object _tuple_of(type cls, a0, a1, a2, a3, a4, a5, a6, a7):
    """``cls((a0, ..., a7))`` for a tuple subclass ``cls`` of 8 fields without instance dict,
    built as ``tuple.__new__(cls, ...)`` builds it (allocated by the type, items set)."""
    cdef PyObject* o = PyType_GenericAlloc(<PyTypeObject*>cls, 8)  # tuple's (and so cls's) tp_alloc
    obj = <object>o
    Py_DECREF(obj)  # the new reference tp_alloc returned is now held by obj
    _put(obj, 0, a0)
    _put(obj, 1, a1)
    _put(obj, 2, a2)
    _put(obj, 3, a3)
    _put(obj, 4, a4)
    _put(obj, 5, a5)
    _put(obj, 6, a6)
    _put(obj, 7, a7)
    return obj


cdef inline void _put(obj, Py_ssize_t i, v) noexcept:
    """Item ``i`` of a new tuple ``obj`` (its slot is empty) becomes ``v``."""
    Py_INCREF(v)
    PyTuple_SET_ITEM(obj, i, v)


def same_alloc_args(tuple args, info):
    """Whether ``R.builtin.alloc_tensor`` arguments ``args`` have the values recorded in
    ``info`` (a :class:`~memcore_py.analysis.storage_tokens.TokenInfo`): dtype, device index
    and scope equal, as parsed from text (distinct nodes). Needs all four arguments."""
    return _same_alloc_args(args, info)


cdef inline bint _slot_equals(obj, Py_ssize_t off, value) except -1:
    """Whether slot ``off`` of ``obj`` is set and equal to ``value``."""
    cdef PyObject* p = get_slot(obj, off)
    return p is not NULL and PyObject_RichCompareBool(<object>p, value, Py_EQ)


cdef bint _same_alloc_args(tuple args, info) except -1:
    # slots read directly: this runs once per allocation (the nodes of parsed text are
    # distinct, so the values are compared)
    if len(args) != 4:
        return False
    a1, a2, a3 = args[1], args[2], args[3]
    cdef tuple fields = <tuple>info  # a TokenInfo (a tuple subclass)
    if Py_TYPE(a1) is not T_DTYPE_IMM or Py_TYPE(a2) is not T_PRIM_VALUE or Py_TYPE(a3) is not T_STRING_IMM:
        return False
    cdef PyObject* pv = get_slot(a2, O_PRIM_VALUE)
    if pv is NULL or Py_TYPE(<object>pv) is not T_INT_IMM:
        return False
    return (_slot_equals(a1, O_DTYPE_VALUE, fields[2]) and _slot_equals(<object>pv, O_INT_VALUE, fields[4])
            and _slot_equals(a3, O_STR_VALUE, fields[3]))


cdef class InitWalk:
    """State and compiled binding loop of the Init walk (see the module docstring).

    Parameters
    ----------
    alloc_op : Op
        ``relax.builtin.alloc_tensor``.
    shares_storage_ops : frozenset of Op
        Ops whose result carries ``args[0]``'s tokens (TVM's in-place memory ops).
    carriers : frozenset of type
        Argument node classes that may carry tokens without being a variable.
    call_kind : dict
        Callee -> whether a call to it counts uses (True) or only propagates (False);
        callees not in it go to ``slow``.
    const_info : dict
        Constant-shape TensorType -> TokenInfo of an earlier allocation (across calls).
        A type not in it is looked up in the current function's ``sym_info``
        (:meth:`begin_function`).
    info_cls : type
        ``TokenInfo``: a tuple subclass of 8 fields without instance dict (a NamedTuple);
        the walk allocates its records directly (calling the class costs more than the rest
        of an allocation's handling). TypeError otherwise.
    """

    # fields: _storage_walk.pxd

    def __init__(self, alloc_op, frozenset shares_storage_ops, frozenset carriers, dict call_kind,
                 dict const_info, type info_cls):
        self.alloc_op = alloc_op
        self.shares_storage_ops = shares_storage_ops
        self.carriers = carriers
        self.call_kind = call_kind
        self.const_info = const_info
        self.sym_info = None
        if (not issubclass(info_cls, tuple) or (<PyTypeObject*>info_cls).tp_dictoffset != 0
                or (<PyTypeObject*>info_cls).tp_basicsize != (<PyTypeObject*>tuple).tp_basicsize
                or len(getattr(info_cls, "_fields", ())) != 8):
            raise TypeError(f"InitWalk: info_cls must be a NamedTuple of 8 fields; got {info_cls!r}")
        self.info_cls = info_cls
        # per-function maps: made by begin_function (None before it)
        self.var_tokens = None
        self.size_cache = None
        self.t_block = []
        self.t_info = []
        self.t_binding = []
        self.t_index = []
        self.infos = []
        self.ev_n = 0
        self.discarded = set()
        self.func_idx = -1

    def begin_function(self, Py_ssize_t func_idx, dict sym_info):
        """Start a new function: fresh var -> tokens map and size cache; ``sym_info``:
        TensorType -> TokenInfo of an earlier allocation under the function's ``tir_var_*``
        bounds (types with a symbolic dim, across calls)."""
        self.func_idx = func_idx
        self.sym_info = sym_info
        self.var_tokens = {}
        self.size_cache = {}

    def new_token(self, info, binding, Py_ssize_t bid, Py_ssize_t index, long long step):
        """Record a token for allocation ``binding`` (position ``index`` of block ``bid``,
        at ``step``) and its EV_REQUEST; returns its id."""
        return self._new_token(info, binding, bid, index, step)

    cdef Py_ssize_t _new_token(self, info, binding, Py_ssize_t bid, Py_ssize_t index, long long step) except -1:
        # a cdef method: no lookup for a Python override per call (cpdef does one)
        cdef Py_ssize_t t = len(self.t_block)
        self.t_block.append(bid)
        self.t_info.append(info)
        self.t_binding.append(binding)
        self.t_index.append(index)
        self._push(step * SCALE + 2 * t + EV_REQUEST)
        return t

    def use(self, long long step, Py_ssize_t t):
        """Record an EV_DECREF of token ``t`` at ``step``."""
        self._push(step * SCALE + 2 * t + EV_DECREF)

    cdef int _use(self, long long step, Py_ssize_t t) except -1:
        """:meth:`use` for compiled callers."""
        return self._push(step * SCALE + 2 * t + EV_DECREF)

    cdef int _push(self, long long e) except -1:
        """Append one packed event (the buffer doubles when full)."""
        cdef Py_ssize_t cap
        cdef long long* grown
        if self.ev_n == self.ev_cap:
            cap = 2 * self.ev_cap if self.ev_cap else 256
            grown = <long long*>PyMem_Realloc(self.ev, cap * sizeof(long long))
            if grown is NULL:
                raise MemoryError()
            self.ev = grown
            self.ev_cap = cap
        self.ev[self.ev_n] = e
        self.ev_n += 1
        return 0

    def __dealloc__(self):
        PyMem_Free(self.ev)

    def walk(self, tuple bindings, Py_ssize_t bid, Py_ssize_t step0, slow):
        """Run the binding loop over one block (its first binding at ``step0``); returns
        ``step0`` after the block (If branches take steps). Every binding the loop does not
        handle goes to ``slow(binding, position, step0) -> step0``, the general code (passed
        per call, so that the walk holds no reference back to its owner)."""
        cdef Py_ssize_t i, n = len(bindings), t, k, nf
        cdef PyObject* found[MAX_ARGS]
        cdef tuple targs
        cdef long long step
        cdef PyObject* p
        cdef PyTypeObject* tb
        cdef PyTypeObject* tv
        cdef PyTypeObject* ta
        cdef bint ok
        cdef dict var_tokens = self.var_tokens
        cdef dict size_cache = self.size_cache
        cdef dict call_kind = self.call_kind
        if var_tokens is None or size_cache is None or self.sym_info is None:
            raise RuntimeError("InitWalk.walk: begin_function must be called first")
        cdef list t_block = self.t_block
        cdef set discarded = self.discarded
        alloc_op = self.alloc_op
        for i in range(n):
            b = bindings[i]
            tb = Py_TYPE(b)
            if tb is not T_VAR_BINDING and tb is not T_MATCH_CAST:
                step0 = slow(b, i, step0)
                continue
            p = get_slot(b, O_VALUE)
            if p is NULL:
                step0 = slow(b, i, step0)
                continue
            value = <object>p
            tv = Py_TYPE(value)
            if tv is T_VAR or tv is T_DATAFLOW_VAR:
                # v = x
                p = PyDict_GetItem(var_tokens, value)
                if p is not NULL:
                    var_tokens[<object>get_slot(b, O_VAR)] = <object>p
                continue
            if tv is not T_CALL or tb is not T_VAR_BINDING:
                step0 = slow(b, i, step0)
                continue
            op = <object>get_slot(value, O_OP)
            args = <object>get_slot(value, O_ARGS)
            if op is alloc_op:
                # allocation of a tensor type seen before in this function (or in an earlier
                # call: constant shape, or symbolic under the same bounds), with equal arguments
                var = <object>get_slot(b, O_VAR)
                p = get_slot(var, O_TY)
                if p is NULL:
                    step0 = slow(b, i, step0)
                    continue
                ty = <object>p
                p = PyDict_GetItem(size_cache, ty)
                if p is NULL:
                    p = PyDict_GetItem(self.const_info, ty)
                    if p is NULL:
                        p = PyDict_GetItem(self.sym_info, ty)
                    if p is NULL or not _same_alloc_args(args, <object>p):
                        step0 = slow(b, i, step0)
                        continue
                    c = <tuple>p
                    info = _tuple_of(self.info_cls, c[0], c[1], c[2], c[3], c[4], self.func_idx, args[1:],
                                     len(self.infos))
                    self.infos.append(info)
                    size_cache[ty] = info
                else:
                    info = <object>p
                    if not _same_alloc_args(args, info) and not (args[1:] == (<tuple>info)[6]):
                        step0 = slow(b, i, step0)
                        continue
                var_tokens[var] = self._new_token(info, b, bid, i, step0 + i)
                continue
            p = PyDict_GetItem(call_kind, op)
            if p is NULL:
                step0 = slow(b, i, step0)
                continue
            if not (<object>p):
                if op in self.shares_storage_ops and len(args) > 0:
                    # v = R.reshape(x, ...) and the other storage-sharing ops: v carries x's tokens
                    a = args[0]
                    ta = Py_TYPE(a)
                    if ta is T_VAR or ta is T_DATAFLOW_VAR:
                        p = PyDict_GetItem(var_tokens, a)
                        if p is not NULL:
                            var_tokens[<object>get_slot(b, O_VAR)] = <object>p
                        continue
                step0 = slow(b, i, step0)
                continue
            # counting call: every argument a variable (or a value carrying no token); the
            # tokens found are kept (borrowed from var_tokens, not changed meanwhile) for the
            # second loop. Calls of more than MAX_ARGS arguments take the slow path.
            if type(args) is not tuple or len(<tuple>args) > MAX_ARGS:
                step0 = slow(b, i, step0)
                continue
            targs = <tuple>args
            ok = True
            nf = 0
            for k in range(len(targs)):
                a = targs[k]
                p = PyDict_GetItem(var_tokens, a)
                if p is NULL:
                    ta = Py_TYPE(a)
                    if ta is T_VAR or ta is T_DATAFLOW_VAR or type(a) not in self.carriers:
                        continue
                    ok = False
                    break
                if type(<object>p) is not int:
                    ok = False
                    break
                found[nf] = p
                nf += 1
            if not ok:
                step0 = slow(b, i, step0)
                continue
            step = step0 + i
            for k in range(nf):
                s = <object>found[k]
                if discarded and s in discarded:
                    continue
                t = s
                if <Py_ssize_t>t_block[t] != bid:
                    discarded.add(s)
                    continue
                self._push(step * SCALE + 2 * t + EV_DECREF)
        return step0

    def decode(self, bint with_new_id=True):
        """The event program without the discarded tokens, kept tokens renumbered densely.

        Returns
        -------
        ev_kind : int8 array, ev_tok : int64 array
            The events of kept tokens, in program order.
        tok_start, tok_end, tok_refs : int64 arrays of shape (n_tok,)
            Allocation step, last use (the allocation step when unused), number of uses.
        tok_info, tok_const, tok_func : int64 arrays of shape (n_tok,)
            ``TokenInfo.id``, ``.const_bytes`` and ``.func`` of each kept token.
        n_symbolic : int
            Kept tokens with a symbolic size (``const_bytes`` -1).
        kept : tuple of lists
            ``(t_block, t_binding, t_index)`` of the kept tokens (the rows themselves when
            nothing was discarded).
        new_id : int64 array of shape (n_all,), or None
            New id of every token seen; -1 for a discarded one. None unless
            ``with_new_id`` (then a small program's ids stay in a C buffer).
        """
        cdef Py_ssize_t n_all = len(self.t_block)
        cdef set discarded = self.discarded
        cdef const long long* ev = self.ev
        cdef list t_info = self.t_info
        cdef Py_ssize_t i, j, m = 0, k = 0, n_ev = self.ev_n
        cdef long long e, step, rest
        cdef int64_t t
        cdef list kept_block, kept_binding, kept_index
        # arrays written through their data pointers (typed memoryviews cost more to set up
        # than the whole loop on small programs); every index is checked or built in range
        cdef int64_t small_ids[64]
        cdef int64_t* new_id
        if with_new_id or n_all > 64:
            new_id_arr = _int64_zeros(n_all)
            new_id = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>new_id_arr)
        else:
            new_id_arr = None
            new_id = small_ids
            for i in range(n_all):
                new_id[i] = 0
        for d in discarded:  # token ids of this walk (checked: the set is public)
            i = d
            if i < 0 or i >= n_all:
                raise ValueError(f"InitWalk.decode: discarded token {i} out of range [0, {n_all})")
            new_id[i] = -1
        for i in range(n_all):
            if new_id[i] == 0:
                new_id[i] = k
                k += 1
        # the six per-token arrays (made through the C API: np.zeros costs more than the loops
        # below on small programs): TokenInfo id, constant bytes, function, start, last use, uses
        info_arr, const_arr, func_arr = _int64_zeros(k), _int64_zeros(k), _int64_zeros(k)
        start_arr, end_arr, refs_arr = _int64_zeros(k), _int64_zeros(k), _int64_zeros(k)
        cdef int64_t* info_id = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>info_arr)
        cdef int64_t* info_const = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>const_arr)
        cdef int64_t* info_func = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>func_arr)
        cdef int64_t* start = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>start_arr)
        cdef int64_t* end = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>end_arr)
        cdef int64_t* refs = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>refs_arr)
        cdef tuple fields
        cdef Py_ssize_t n_sym = 0
        if k == n_all:
            kept_block, kept_binding, kept_index = self.t_block, self.t_binding, self.t_index
            for i in range(n_all):
                fields = <tuple>t_info[i]
                info_id[i] = fields[7]
                info_const[i] = fields[0]
                info_func[i] = fields[5]
        else:
            kept_block, kept_binding, kept_index = [], [], []
            for i in range(n_all):
                t = new_id[i]
                if t >= 0:
                    fields = <tuple>t_info[i]
                    info_id[t] = fields[7]
                    info_const[t] = fields[0]
                    info_func[t] = fields[5]
                    kept_block.append(self.t_block[i])
                    kept_binding.append(self.t_binding[i])
                    kept_index.append(self.t_index[i])
        for i in range(k):
            if info_const[i] < 0:
                n_sym += 1
        cdef cnp.npy_intp dim = n_ev
        kind_arr = cnp.PyArray_EMPTY(1, &dim, cnp.NPY_INT8, 0)
        tok_arr = cnp.PyArray_EMPTY(1, &dim, cnp.NPY_INT64, 0)
        cdef kind_t* kind = <kind_t*>cnp.PyArray_DATA(<cnp.ndarray>kind_arr)
        cdef int64_t* tok = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>tok_arr)
        for j in range(n_ev):
            e = ev[j]
            step = e // SCALE
            rest = e - step * SCALE
            if rest < 0 or (rest >> 1) >= n_all:  # use() is public: check its token ids
                raise ValueError(f"InitWalk.decode: event of token {rest >> 1} out of range [0, {n_all})")
            t = new_id[rest >> 1]
            if t < 0:
                continue
            if rest & 1:
                kind[m] = EV_DECREF
                refs[t] += 1
                if step > end[t]:
                    end[t] = step
            else:
                kind[m] = EV_REQUEST
                start[t] = step
                end[t] = step
            tok[m] = t
            m += 1
        if m < n_ev:  # events of discarded tokens were dropped
            kind_arr, tok_arr = kind_arr[:m], tok_arr[:m]
        return (kind_arr, tok_arr, start_arr, end_arr, refs_arr, info_arr, const_arr, func_arr, n_sym,
                (kept_block, kept_binding, kept_index), new_id_arr if with_new_id else None)
