# cython: language_level=3, boundscheck=True, wraparound=False
"""Compiled hot loops of StaticPlanBlockMemory (built by ``setup.py``; never a Python fallback).

Loops that, in CPython, are dominated by per-binding (or per-event) interpreter overhead:

- :func:`walk_block`: the binding loop of the Init walk
  (:class:`memcore_py.analysis.storage_tokens._StorageAllocatorInit`). It handles the
  post-CallTIRRewrite forms — an allocation whose tensor type was seen before with equal
  arguments (same nodes or same values), a call to a PrimFunc / packed function whose
  arguments are variables, a rebinding ``v = x``, an in-place memory op of a variable
  (``v = R.reshape(x, ...)``) — and hands every other binding, unchanged, to the Python
  method ``slow(binding, position, step0)`` (the general code), in program order.
- :func:`rebuild_allocs`: the rewrite of the planned allocations of one block into
  ``R.memory.alloc_tensor`` bindings (one new ``Call`` and ``VarBinding`` each).
- :func:`decode_events`: the end of the Init walk — the packed event list filtered of the
  discarded tokens and renumbered, with each token's allocation step, last use and use count
  (``_StorageAllocatorInit._result``).

IR nodes are immutable ``__slots__`` objects; slots are read and written here at the offsets
of their member descriptors (looked up once from the classes, checked to be slots), which is
what the descriptors themselves do, without the attribute-lookup machinery. Nodes are built
uninitialised (``PyType_GenericAlloc``) and every slot is set before the node is visible,
exactly as the Python hot path did with ``object.__new__`` and the slot setters.
"""
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from cpython.ref cimport Py_INCREF, Py_DECREF

from .ir.expr import Call, DataflowVar, DataTypeImm, MatchCast, PrimValue, ShapeExpr, StringImm, Var, VarBinding
from .ir.prim import IntImm, PrimVar
from .ir.types import TensorType

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    PyTypeObject PyMemberDescr_Type
    PyObject* PyType_GenericAlloc(PyTypeObject*, Py_ssize_t) except NULL
    PyObject* PyDict_GetItem(object, object)


cdef Py_ssize_t _offset(descr) except -1:
    if type(descr) is not <object>&PyMemberDescr_Type:
        raise TypeError(f"expected a __slots__ member descriptor; got {descr!r}")
    return (<PyMemberDescrObject*><PyObject*>descr).d_member.offset


cdef Py_ssize_t O_VAR = _offset(VarBinding.var)
cdef Py_ssize_t O_VALUE = _offset(VarBinding.value)
cdef Py_ssize_t O_TY = _offset(Call.ty)
cdef Py_ssize_t O_OP = _offset(Call.op)
cdef Py_ssize_t O_ARGS = _offset(Call.args)
cdef Py_ssize_t O_ATTRS = _offset(Call.attrs)
cdef Py_ssize_t O_TY_ARGS = _offset(Call.ty_args)
if _offset(Var.ty) != O_TY or _offset(MatchCast.var) != O_VAR or _offset(MatchCast.value) != O_VALUE:
    raise ImportError("memcore_py._spbm: unexpected slot layout of the IR nodes")

cdef Py_ssize_t O_TT_SHAPE = _offset(TensorType.shape)
cdef Py_ssize_t O_TT_DTYPE = _offset(TensorType.dtype)
cdef Py_ssize_t O_SE_VALUES = _offset(ShapeExpr.values)
cdef Py_ssize_t O_INT_VALUE = _offset(IntImm.value)
cdef Py_ssize_t O_PRIM_DTYPE = _offset(IntImm.dtype)
cdef PyTypeObject* T_INT_IMM = <PyTypeObject*>IntImm
cdef PyTypeObject* T_TENSOR_TYPE = <PyTypeObject*>TensorType
cdef PyTypeObject* T_SHAPE_EXPR = <PyTypeObject*>ShapeExpr
cdef PyTypeObject* T_CALL = <PyTypeObject*>Call
cdef PyTypeObject* T_VAR_BINDING = <PyTypeObject*>VarBinding
cdef PyTypeObject* T_MATCH_CAST = <PyTypeObject*>MatchCast
cdef PyTypeObject* T_VAR = <PyTypeObject*>Var
cdef PyTypeObject* T_DATAFLOW_VAR = <PyTypeObject*>DataflowVar


cdef inline PyObject* _slot(object o, Py_ssize_t off):
    """Borrowed reference to a slot (NULL when unset)."""
    return (<PyObject**>((<char*><PyObject*>o) + off))[0]


cdef inline void _put(PyObject* o, Py_ssize_t off, object v):
    Py_INCREF(v)
    (<PyObject**>((<char*>o) + off))[0] = <PyObject*>v


cdef bint _same_alloc_args(tuple args, tuple info) except -1:
    """Equal argument values (distinct nodes, as parsed from text) to those of ``info``: the
    second fast path of ``_StorageAllocatorInit._create_token``."""
    if len(args) != 4:
        return False
    a1, a2, a3 = args[1], args[2], args[3]
    return bool(type(a1) is DataTypeImm and a1.value == info[2] and type(a2) is PrimValue
                and type(a2.value) is IntImm and a2.value.value == info[4]
                and type(a3) is StringImm and a3.value == info[3])


cdef bint _same_shape(values, shape) except -1:
    """``static_plan_block_memory._same_shape``."""
    cdef Py_ssize_t k, n
    cdef PyObject* pa
    cdef PyObject* pb
    if values is shape:
        return True
    if type(values) is tuple and type(shape) is tuple:
        # tuples of IntImm (the common case), compared through their slots
        n = len(<tuple>values)
        if n != len(<tuple>shape):
            return False
        for k in range(n):
            a = (<tuple>values)[k]
            b = (<tuple>shape)[k]
            if a is b:
                continue
            if Py_TYPE(a) is not T_INT_IMM or Py_TYPE(b) is not T_INT_IMM:
                break
            pa = _slot(a, O_INT_VALUE)
            pb = _slot(b, O_INT_VALUE)
            if pa is NULL or pb is NULL or not (<object>pa == <object>pb):
                return False
            pa = _slot(a, O_PRIM_DTYPE)
            pb = _slot(b, O_PRIM_DTYPE)
            if pa is NULL or pb is NULL or (pa != pb and not (<object>pa == <object>pb)):
                return False
        else:
            return True
    if len(values) != len(shape):
        return False
    for a, b in zip(values, shape):
        if a is b:
            continue
        ta = type(a)
        if ta is not type(b):
            return False
        if ta is IntImm:
            if a.value != b.value or a.dtype != b.dtype:
                return False
        elif ta is PrimVar:
            if a.name != b.name:
                return False
        else:
            return False
    return True


def walk_block(tuple bindings, Py_ssize_t bid, Py_ssize_t step0, dict var_tokens, dict size_cache,
               dict call_kind, list t_block, list tokens, list ev, set discarded, alloc_op,
               frozenset carriers, long long scale, frozenset inplace_ops, slow,
               dict const_info, list infos, Py_ssize_t func_idx):
    """Run the Init binding loop over one block; returns ``step0`` after the block (Ifs take
    steps). Same effects, in the same order, as the Python loop it replaces (see the module
    docstring). The first allocation of a tensor type in the function whose constant size is
    known from an earlier call (``const_info``, type -> ``(const bytes, bytes, dtype, scope,
    device)``, see ``storage_tokens._CONST_TYPE_INFO``) with equal arguments makes its info
    here (appended to ``infos``, cached in ``size_cache``) as ``_create_token`` would."""
    cdef Py_ssize_t i, n = len(bindings), t
    cdef long long step
    cdef PyObject* p
    cdef PyTypeObject* tb
    cdef PyTypeObject* tv
    cdef PyTypeObject* ta
    cdef bint ok
    for i in range(n):
        b = bindings[i]
        tb = Py_TYPE(b)
        if tb is not T_VAR_BINDING and tb is not T_MATCH_CAST:
            step0 = slow(b, i, step0)
            continue
        p = _slot(b, O_VALUE)
        if p is NULL:
            step0 = slow(b, i, step0)
            continue
        value = <object>p
        tv = Py_TYPE(value)
        if tv is T_VAR or tv is T_DATAFLOW_VAR:
            # v = x
            p = PyDict_GetItem(var_tokens, value)
            if p is not NULL:
                var_tokens[<object>_slot(b, O_VAR)] = <object>p
            continue
        if tv is not T_CALL or tb is not T_VAR_BINDING:
            step0 = slow(b, i, step0)
            continue
        op = <object>_slot(value, O_OP)
        args = <object>_slot(value, O_ARGS)
        if op is alloc_op:
            # allocation of a tensor type seen before in this function, same argument nodes
            var = <object>_slot(b, O_VAR)
            p = _slot(var, O_TY)
            if p is NULL:
                step0 = slow(b, i, step0)
                continue
            ty = <object>p
            p = PyDict_GetItem(size_cache, ty)
            if p is NULL:
                p = PyDict_GetItem(const_info, ty)
                if p is NULL or not _same_alloc_args(args, <object>p):
                    step0 = slow(b, i, step0)
                    continue
                c5 = <object>p
                info = (c5[0], c5[1], c5[2], c5[3], c5[4], func_idx, args[1:], len(infos))
                infos.append(info)
                size_cache[ty] = info
            else:
                info = <object>p
                if not (args[1:] == info[6]) and not _same_alloc_args(args, info):
                    step0 = slow(b, i, step0)
                    continue
            t = len(t_block)
            step = step0 + i
            tokens.append((info, b, step, i))
            t_block.append(bid)
            ev.append(step * scale + 2 * t)
            var_tokens[var] = t
            continue
        p = PyDict_GetItem(call_kind, op)
        if p is NULL:
            step0 = slow(b, i, step0)
            continue
        if not (<object>p):
            if op in inplace_ops and len(args) > 0:
                # v = R.reshape(x, ...) and the other in-place memory ops: v carries x's tokens
                a = args[0]
                ta = Py_TYPE(a)
                if ta is T_VAR or ta is T_DATAFLOW_VAR:
                    p = PyDict_GetItem(var_tokens, a)
                    if p is not NULL:
                        var_tokens[<object>_slot(b, O_VAR)] = <object>p
                    continue
            step0 = slow(b, i, step0)
            continue
        # counting call: every argument a variable (or a value carrying no token)
        ok = True
        for a in args:
            p = PyDict_GetItem(var_tokens, a)
            if p is NULL:
                ta = Py_TYPE(a)
                if ta is T_VAR or ta is T_DATAFLOW_VAR or type(a) not in carriers:
                    continue
                ok = False
                break
            if type(<object>p) is not int:
                ok = False
                break
        if not ok:
            step0 = slow(b, i, step0)
            continue
        step = step0 + i
        for a in args:
            p = PyDict_GetItem(var_tokens, a)
            if p is NULL:
                continue
            s = <object>p
            if s in discarded:
                continue
            t = s
            if <Py_ssize_t>t_block[t] != bid:
                discarded.add(s)
                continue
            ev.append(step * scale + 2 * t + 1)
    return step0


def rebuild_allocs(list out, dict allocs, set skip, list tok_storage, list tok_offset, dict args_cache,
                   make_args, op, attrs, list storage_var, dict dtype_imm, zero):
    """``out[i] = VarBinding(var, Call(op, args, attrs, (), var.ty))`` for each planned
    allocation ``i -> token`` of ``allocs`` not in ``skip``. In the common case (offset 0, a
    tensor type, the call's own shape argument equal to the type's shape, the dtype's
    ``DataTypeImm`` already made: ``dtype_imm``) the arguments ``(storage, 0, shape, dtype,
    device)`` are built directly; otherwise they are ``args_cache[(storage, offset, type,
    device)]``, made when missing by ``make_args(key, call)``
    (``_StorageAllocationRewriter._alloc_tensor_args``)."""
    cdef PyObject* dp
    cdef PyObject* c
    cdef PyObject* nb
    cdef PyObject* p
    empty = ()
    for i, t in allocs.items():
        if i in skip:
            continue
        b = out[i]
        var = <object>_slot(b, O_VAR)
        ty = <object>_slot(var, O_TY)
        call = <object>_slot(b, O_VALUE)
        args = <object>_slot(call, O_ARGS)
        new_args = None
        if not tok_offset[t] and Py_TYPE(ty) is T_TENSOR_TYPE:
            # common case, built directly (not shared through args_cache: tensor types are
            # mostly distinct nodes, so the cache would rarely hit)
            storage = storage_var[tok_storage[t]]
            arg0 = args[0]
            dp = PyDict_GetItem(dtype_imm, <object>_slot(ty, O_TT_DTYPE))
            if (storage is not None and dp is not NULL and Py_TYPE(arg0) is T_SHAPE_EXPR
                    and _same_shape(<object>_slot(arg0, O_SE_VALUES), <object>_slot(ty, O_TT_SHAPE))):
                new_args = (storage, zero, arg0, <object>dp, args[2])
        if new_args is None:
            key = (tok_storage[t], tok_offset[t], ty, args[2])
            p = PyDict_GetItem(args_cache, key)
            if p is NULL:
                new_args = make_args(key, call)
                args_cache[key] = new_args
            else:
                new_args = <object>p
        c = PyType_GenericAlloc(T_CALL, 0)
        _put(c, O_OP, op)
        _put(c, O_ARGS, new_args)
        _put(c, O_ATTRS, attrs)
        _put(c, O_TY_ARGS, empty)
        _put(c, O_TY, ty)
        nb = PyType_GenericAlloc(T_VAR_BINDING, 0)
        _put(nb, O_VAR, var)
        _put(nb, O_VALUE, <object>c)
        Py_DECREF(<object>c)
        out[i] = <object>nb
        Py_DECREF(<object>nb)


def decode_events(list ev, Py_ssize_t n_all, set discarded, long long scale):
    """The event program of the Init walk (``step * scale + 2 * token + kind`` per event, in
    program order), without the discarded tokens and with the kept ones renumbered densely:
    ``(ev_kind int8, ev_tok, tok_start, tok_end, tok_refs, new_id)`` (``new_id[t]`` = -1 for
    a discarded token). ``tok_end`` is the largest step of a token's uses (its allocation
    step when unused); ``tok_refs`` counts its EV_DECREFs."""
    import numpy as np

    new_id_arr = np.empty(n_all, dtype=np.int64)
    cdef long long[::1] new_id = new_id_arr
    cdef Py_ssize_t i, j, m = 0, k = 0, n_ev = len(ev)
    cdef long long e, step, rest, t
    for i in range(n_all):
        if discarded and i in discarded:
            new_id[i] = -1
        else:
            new_id[i] = k
            k += 1
    kind_arr = np.empty(n_ev, dtype=np.int8)
    tok_arr = np.empty(n_ev, dtype=np.int64)
    start_arr = np.zeros(k, dtype=np.int64)
    end_arr = np.zeros(k, dtype=np.int64)
    refs_arr = np.zeros(k, dtype=np.int64)
    cdef signed char[::1] kind = kind_arr
    cdef long long[::1] tok = tok_arr
    cdef long long[::1] start = start_arr
    cdef long long[::1] end = end_arr
    cdef long long[::1] refs = refs_arr
    for j in range(n_ev):
        e = ev[j]
        step = e // scale
        rest = e - step * scale
        t = new_id[rest >> 1]
        if t < 0:
            continue
        if rest & 1:
            kind[m] = 1
            refs[t] += 1
            if step > end[t]:
                end[t] = step
        else:
            kind[m] = 0
            start[t] = step
            end[t] = step
        tok[m] = t
        m += 1
    return kind_arr[:m], tok_arr[:m], start_arr, end_arr, refs_arr, new_id_arr
