# cython: language_level=3
"""StaticPlanBlockMemory's Init rules, once, over the binding table (built by ``setup.py``; no
fallback).

Design
------
:class:`InitRules` is the rule kernel of TVM's ``StorageAllocatorInit``
(src/relax/transform/static_plan_block_memory.cc; the rules in
:mod:`memcore_py.analysis.storage_tokens`'s docstring). It walks the items of a
:class:`~memcore_py.analysis._binding_table.BindingTable` in visit order -- whatever reader
filled it -- and computes for each expression the tokens it carries (a token, none, or a
tuple of those: TVM's ``NestedMsg``, here one 64-bit *message*: ``t >= 0`` a token,
:data:`NONE`, ``-2 - k`` the ``k``-th tuple of the function). Each item takes one step
(module-wide; the bindings of an ``If``'s branches right after the ``If`` binding):

- an allocation binding (a call of a :data:`CF_ALLOCATES` callee) makes a token, sized by the
  :class:`AllocSizer` (once per distinct tensor type and arguments), with an ``EV_REQUEST``;
- a call of a :data:`CF_USES_ARGS` callee uses every token of its arguments (tuple leaves
  included, twice when passed twice) at its step: an ``EV_DECREF`` each, after discarding the
  tokens allocated in another block (TVM ``GetTokensWithAllocSiteCheck``); nested in an
  expression or the value of a ``MatchCast`` the uses are counted but never released
  (``extra_refs``);
- a call of a :data:`CF_SHARES` callee carries its first argument's tokens;
- any other call, an ``If``'s condition and every scope's result discard their tokens;
- a variable, a tuple and a get-item carry their tokens.

Tokens, events and discards are recorded in a :class:`TokenRecorder` (declared in
``_storage_walk.pxd``, so that the scan of TVM's objects, ``memcore_py/tvm/_spbm_extract.pyx``,
records into the same rows), and :meth:`TokenRecorder.decode` makes the
:class:`~memcore_py.analysis.storage_tokens.TokenProgram` of both.

Events are packed one 64-bit integer each, ``step * EV_SCALE + 2 * token + kind`` (kind
``EV_REQUEST`` / ``EV_DECREF`` from ``memcore/_typedefs.pxd``), in a growable C buffer owned by
the recorder; tokens must stay below 2**31.
"""
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.object cimport Py_EQ, PyObject, PyObject_RichCompareBool, PyTypeObject, Py_TYPE
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_SET_ITEM
from libc.stdint cimport int8_t
from libcpp.vector cimport vector

from memcore._typedefs cimport EV_DECREF, EV_REQUEST, int64_t, kind_t
from memcore_py.analysis._binding_table cimport (
    BindingTable, CF_ALLOCATES, CF_SHARES, CF_USES_ARGS, I_BINDING, I_RESULT, X_CALL, X_GET_ITEM, X_IF, X_LEAF,
    X_TUPLE, X_VAR,
)
from memcore_py.ir._slots cimport PyDict_GetItem, PyType_GenericAlloc, get_slot, slot_offset

import numpy as np

cimport numpy as cnp

cnp.import_array()

from memcore_py.ir.expr import Call, DataTypeImm, PrimValue, StringImm, Var, VarBinding
from memcore_py.ir.prim import IntImm

cdef enum:
    NONE = -1           # a message carrying no token (tuples are -2, -3, ...)
    FAILED = -2147483647  # the sentinel of a raised error in message-returning methods

#: events are packed as ``step * SCALE + 2 * token + kind`` (C arithmetic in the loops)
cdef long long SCALE = 1LL << 32
EV_SCALE = SCALE

cdef Py_ssize_t O_VAR = slot_offset(VarBinding.var)
cdef Py_ssize_t O_VALUE = slot_offset(VarBinding.value)
cdef Py_ssize_t O_TY = slot_offset(Var.ty)
cdef Py_ssize_t O_ARGS = slot_offset(Call.args)
cdef Py_ssize_t O_DTYPE_VALUE = slot_offset(DataTypeImm.value)
cdef Py_ssize_t O_PRIM_VALUE = slot_offset(PrimValue.value)
cdef Py_ssize_t O_STR_VALUE = slot_offset(StringImm.value)
cdef Py_ssize_t O_INT_VALUE = slot_offset(IntImm.value)

cdef PyTypeObject* T_DTYPE_IMM = <PyTypeObject*>DataTypeImm
cdef PyTypeObject* T_PRIM_VALUE = <PyTypeObject*>PrimValue
cdef PyTypeObject* T_STRING_IMM = <PyTypeObject*>StringImm
cdef PyTypeObject* T_INT_IMM = <PyTypeObject*>IntImm


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


cdef class Sizer:
    """The sizing the Init rule kernel asks an object model for (``_storage_walk.pxd``); this
    base sizes nothing."""

    cdef object info(self, BindingTable T, int64_t item):
        raise NotImplementedError(f"{type(self).__name__} does not size allocations")

    cdef object site(self, BindingTable T, int64_t item):
        raise NotImplementedError(f"{type(self).__name__} does not record allocation sites")


cdef class AllocSizer(Sizer):
    """The :class:`TokenInfo` of each allocation binding of memcore's IR: the size of its
    tensor type, computed once per distinct type and arguments.

    Lookups, in order: the current function's types (``size_cache``, with equal argument
    nodes or values), a constant-shape type sized in an earlier call (``const_info``) or a
    symbolic one under the same bounds (the function's ``sym_info``), both with equal argument
    values; else ``slow(binding, info_id)``, the pass's own sizing and validation.

    Parameters
    ----------
    const_info : dict
        Constant-shape TensorType -> TokenInfo of an earlier allocation (across calls).
    infos : list
        The TokenInfo list of the walk (``TokenRecorder.infos``): new ones are appended, their
        ``id`` their index.
    info_cls : type
        ``TokenInfo``: a tuple subclass of 8 fields without instance dict (a NamedTuple);
        records are allocated directly. TypeError otherwise.
    """

    cdef dict size_cache, const_info, sym_info
    cdef list infos
    cdef type info_cls
    cdef object slow
    cdef Py_ssize_t func_idx

    def __init__(self, dict const_info, list infos, type info_cls):
        if (not issubclass(info_cls, tuple) or (<PyTypeObject*>info_cls).tp_dictoffset != 0
                or (<PyTypeObject*>info_cls).tp_basicsize != (<PyTypeObject*>tuple).tp_basicsize
                or len(getattr(info_cls, "_fields", ())) != 8):
            raise TypeError(f"AllocSizer: info_cls must be a NamedTuple of 8 fields; got {info_cls!r}")
        self.const_info = const_info
        self.infos = infos
        self.info_cls = info_cls
        self.size_cache = None
        self.sym_info = None
        self.slow = None
        self.func_idx = -1

    def begin_function(self, Py_ssize_t func_idx, dict sym_info, slow):
        """Start a new function: a fresh size cache; ``sym_info``: TensorType -> TokenInfo of
        an earlier allocation under the function's ``tir_var_*`` bounds; ``slow(binding,
        info_id) -> TokenInfo`` sizes and validates what no cache holds."""
        self.func_idx = func_idx
        self.sym_info = sym_info
        self.slow = slow
        self.size_cache = {}
        self.started = True

    cdef object site(self, BindingTable T, int64_t item):
        """The allocation's binding (the object itself)."""
        return <object><PyObject*>T.i_ref[item]

    cdef object info(self, BindingTable T, int64_t item):
        """The TokenInfo of the allocation binding at ``item`` (appended to ``infos`` when
        new)."""
        cdef PyObject* p
        binding = <object><PyObject*>T.i_ref[item]
        var = <object>get_slot(binding, O_VAR)
        args = <object>get_slot(<object>get_slot(binding, O_VALUE), O_ARGS)
        p = get_slot(var, O_TY)
        if p is NULL or type(args) is not tuple:
            return self.fresh(binding, None)
        ty = <object>p
        p = PyDict_GetItem(self.size_cache, ty)
        if p is not NULL:
            info = <object>p
            if _same_alloc_args(args, info) or args[1:] == (<tuple>info)[6]:
                return info
            return self.fresh(binding, ty)
        p = PyDict_GetItem(self.const_info, ty)
        if p is NULL:
            p = PyDict_GetItem(self.sym_info, ty)
        if p is NULL or not _same_alloc_args(args, <object>p):
            return self.fresh(binding, ty)
        c = <tuple>p
        info = _tuple_of(self.info_cls, c[0], c[1], c[2], c[3], c[4], self.func_idx, args[1:], len(self.infos))
        self.infos.append(info)
        self.size_cache[ty] = info
        return info

    cdef object fresh(self, binding, ty):
        info = self.slow(binding, len(self.infos))
        self.infos.append(info)
        if ty is not None:
            self.size_cache[ty] = info
        return info


cdef class InitRules:
    """The Init rules (module docstring) over the functions of one binding table, recorded in
    one :class:`TokenRecorder`.

    Parameters
    ----------
    table : BindingTable
    recorder : TokenRecorder
    error_cls : type
        The pass's error type (a malformed module).

    Attributes
    ----------
    extra_refs : dict
        Token -> uses counted by calls that are not a binding's value (never released).
    tvm_check_failures : list
        Names of the functions on which TVM's pass fails an internal check (a token
        allocated in another block appears twice in one call argument), once per case.
    """

    cdef BindingTable T
    cdef TokenRecorder W
    cdef object error_cls
    cdef public dict extra_refs
    cdef public list tvm_check_failures
    cdef vector[int64_t] tok_block      # token -> block of its allocation
    cdef vector[char] dead              # token -> discarded (W.discarded holds the same)
    cdef vector[int64_t] var_msg        # the current function's var id -> message
    cdef vector[int64_t] tup_start, tup_len, tup_fields
    cdef vector[int64_t] dropped        # scratch: the tokens one argument discarded
    cdef long long step
    cdef Py_ssize_t func, item

    def __init__(self, BindingTable table, TokenRecorder recorder, error_cls):
        self.T = table
        self.W = recorder
        self.error_cls = error_cls
        self.extra_refs = {}
        self.tvm_check_failures = []
        self.step = -1
        self.func = -1
        self.item = -1

    def run_function(self, Py_ssize_t k, Sizer sizer):
        """Apply the rules to the table's ``k``-th function (every earlier one done first);
        raises the reader's error of that function, if any, after the items before it.
        Returns False when ``sizer`` declined an allocation (the rows are then incomplete),
        else True."""
        cdef BindingTable T = self.T
        if k != self.func + 1 or k >= <Py_ssize_t>T.f_first.size():
            raise ValueError(f"InitRules.run_function: function {k} out of order (next is {self.func + 1})")
        if not sizer.started:
            raise RuntimeError("InitRules.run_function: the sizer's begin_function must be called first")
        self.func = k
        cdef int64_t i, first = T.f_first[k]
        cdef int64_t stop = T.f_error[k]
        cdef int64_t end = T.f_first[k + 1] if k + 1 < <Py_ssize_t>T.f_first.size() else <int64_t>T.i_kind.size()
        if stop < 0:
            stop = end
        self.var_msg.assign(T.f_n_vars[k], NONE)
        self.tup_start.clear()
        self.tup_len.clear()
        self.tup_fields.clear()
        for i in range(first, stop):
            self.item = i
            if not self.run_item(i, sizer):
                return False
        if stop < end or T.errors[k] is not None:
            raise T.errors[k]
        return True

    cdef int run_item(self, int64_t i, Sizer sizer) except -1:
        """Apply the rules to item ``i``; 0 when the sizer declined it, else 1."""
        cdef BindingTable T = self.T
        cdef int8_t kind = T.i_kind[i]
        cdef int64_t x = T.i_value[i], s, c, t, bid
        cdef int8_t xk = T.x_kind[x]
        if kind == I_RESULT:
            self.discard(self.eval(x, T.i_outer[i]))
            return 1
        self.step += 1
        bid = T.i_block[i]
        if xk == X_CALL:
            c = T.c_flags[T.x_a[x]]
            if c & CF_ALLOCATES:
                if kind != I_BINDING:
                    self.nested_alloc()
                info = sizer.info(T, i)
                if info is None:
                    return 0
                t = self.W._new_token(info, sizer.site(T, i), bid, T.i_pos[i], self.step)
                self.tok_block.push_back(bid)
                self.dead.push_back(0)
                self.var_msg[T.i_var[i]] = t
                return 1
            if c & CF_SHARES:
                s = self.eval(T.x_child[T.x_first[x]], T.i_outer[i]) if T.x_n[x] else NONE
            elif c & CF_USES_ARGS:
                self.use_args(x, bid, T.i_outer[i], kind == I_BINDING)
                return 1
            else:
                self.discard_args(x, T.i_outer[i])
                return 1
        elif xk == X_IF:
            self.discard(self.eval(T.x_a[x], T.i_outer[i]))
            return 1
        else:
            s = self.eval(x, T.i_outer[i])
        if s != NONE:
            self.var_msg[T.i_var[i]] = s
        return 1

    # ------------------------------------------------------------------ messages
    cdef int64_t eval(self, int64_t x, int64_t outer) except? FAILED:
        """The message of expression ``x`` (calls nested in it visited; ``outer``: the block
        of their uses)."""
        cdef BindingTable T = self.T
        cdef int8_t xk = T.x_kind[x]
        cdef int64_t n, j, s, k, idx
        cdef bint some
        cdef int64_t small[8]
        cdef vector[int64_t] many
        cdef int64_t* fields = small
        if xk == X_VAR:
            return self.var_msg[T.x_a[x]]
        if xk == X_LEAF:
            return NONE
        if xk == X_TUPLE:
            n = T.x_n[x]
            if n > 8:
                many.resize(n)
                fields = many.data()
            some = False
            for j in range(n):
                s = self.eval(T.x_child[T.x_first[x] + j], outer)
                fields[j] = s
                if s != NONE:
                    some = True
            if not some:
                return NONE
            k = <int64_t>self.tup_start.size()
            self.tup_start.push_back(<int64_t>self.tup_fields.size())
            self.tup_len.push_back(n)
            for j in range(n):
                self.tup_fields.push_back(fields[j])
            return -2 - k
        if xk == X_GET_ITEM:
            s = self.eval(T.x_a[x], outer)
            if s == NONE:
                return NONE
            idx = T.x_b[x]
            if s >= 0 or idx < 0 or idx >= self.tup_len[-2 - s]:
                self.bad_index(idx)
            return self.tup_fields[self.tup_start[-2 - s] + idx]
        if xk == X_CALL:
            k = T.c_flags[T.x_a[x]]
            if k & CF_ALLOCATES:
                self.nested_alloc()
            if k & CF_SHARES:
                return self.eval(T.x_child[T.x_first[x]], outer) if T.x_n[x] else NONE
            if k & CF_USES_ARGS:
                self.use_args(x, outer, outer, False)
            else:
                self.discard_args(x, outer)
            return NONE
        raise ValueError(f"InitRules: expression {x} of kind {xk} where a value was expected")

    cdef int discard(self, int64_t s) except -1:
        """Discard every token of the message ``s``."""
        cdef int64_t j, k
        if s >= 0:
            if not self.dead[s]:
                self.dead[s] = 1
                self.W.discarded.add(s)
        elif s != NONE:
            k = -2 - s
            for j in range(self.tup_len[k]):
                self.discard(self.tup_fields[self.tup_start[k] + j])
        return 0

    cdef int discard_args(self, int64_t x, int64_t outer) except -1:
        """A call that does not use its arguments: their tokens are discarded."""
        cdef BindingTable T = self.T
        cdef int64_t j
        for j in range(T.x_n[x]):
            self.discard(self.eval(T.x_child[T.x_first[x] + j], outer))
        return 0

    cdef int use_args(self, int64_t x, int64_t bid, int64_t outer, bint record) except -1:
        """A call that uses its arguments' tokens (TVM ``GetTokensWithAllocSiteCheck``, then
        one use each): a token of another block than ``bid`` is discarded instead; ``record``:
        the uses are released by events at this step, else only counted."""
        cdef BindingTable T = self.T
        cdef int64_t j, s
        for j in range(T.x_n[x]):
            s = self.eval(T.x_child[T.x_first[x] + j], outer)
            if s != NONE:
                self.dropped.clear()
                self.use_leaves(s, bid, record)
        return 0

    cdef int use_leaves(self, int64_t s, int64_t bid, bint record) except -1:
        cdef int64_t j, k
        cdef size_t d
        if s < 0:
            if s != NONE:
                k = -2 - s
                for j in range(self.tup_len[k]):
                    self.use_leaves(self.tup_fields[self.tup_start[k] + j], bid, record)
            return 0
        if self.dead[s]:
            for d in range(self.dropped.size()):
                if self.dropped[d] == s:
                    # TVM looks the token up again after discarding it: internal check failure
                    # (DIFFERENCES.md: duplicate-cross-block-leaf)
                    self.tvm_check_failures.append(self.T.func_names[self.func])
                    break
            return 0
        if self.tok_block[s] != bid:
            self.dead[s] = 1
            self.W.discarded.add(s)
            self.dropped.push_back(s)
            return 0
        if record:
            self.W._use(self.step, s)
        else:
            self.extra_refs[s] = self.extra_refs.get(s, 0) + 1
        return 0

    # ------------------------------------------------------------------ errors
    cdef str where(self):
        """The function and binding of the current item, for messages."""
        cdef BindingTable T = self.T
        cdef int64_t i = self.item
        name = T.func_names[self.func]
        if T.i_kind[i] == I_RESULT:
            return f"function {name!r}, the result of a scope"
        bindings = T.block_bindings[T.i_block[i]] if T.i_block[i] < len(T.block_bindings) else None
        if bindings is None:
            return f"function {name!r}, binding {T.i_pos[i]} of block {T.i_block[i]}"
        return f"function {name!r}, binding {(<tuple>bindings)[T.i_pos[i]].var.name!r}"

    cdef int nested_alloc(self) except -1:
        raise self.error_cls(f"{self.where()}: R.builtin.alloc_tensor must be bound directly to a variable "
                             f"(A-normal form, a VarBinding); got it nested in an expression or matched")

    cdef int bad_index(self, int64_t idx) except -1:
        raise self.error_cls(f"{self.where()}: tuple index {idx} applied to a value that is not a tuple of "
                             f"that many fields")


cdef class TokenRecorder:
    """The token rows and the event list of an Init walk (module docstring), and their decode.

    Attributes
    ----------
    t_block, t_info, t_binding, t_index : list
        Per token (every allocation seen, in program order): its block, :class:`TokenInfo`,
        allocation binding (an object of the reader's object model) and position in the block.
    infos : list
        The TokenInfo records, by id.
    discarded : set
        Tokens discarded (left unplanned).
    """

    # fields: _storage_walk.pxd

    def __init__(self):
        self.t_block = []
        self.t_info = []
        self.t_binding = []
        self.t_index = []
        self.infos = []
        self.ev_n = 0
        self.discarded = set()

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
                raise ValueError(f"TokenRecorder.decode: discarded token {i} out of range [0, {n_all})")
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
                raise ValueError(f"TokenRecorder.decode: event of token {rest >> 1} out of range [0, {n_all})")
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
