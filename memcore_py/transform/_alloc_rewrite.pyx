"""Compiled allocation rewrite of StaticPlanBlockMemory (built by ``setup.py``; no fallback).

Design
------
The rewriter (:class:`~memcore_py.transform.static_plan_block_memory._StorageAllocationRewriter`)
replaces each planned ``R.builtin.alloc_tensor`` binding by ``var = R.memory.alloc_tensor(
storage, offset, shape, dtype, device)``: one new ``Call`` and ``VarBinding`` per planned
allocation, 10^5 and more per call on large functions. :class:`AllocRewrite` holds what the
rebuild needs for a whole module (the plan's token -> storage / offset lists, the storage
vars as they get emitted, the shared-argument cache). A block with storages to emit and planned
allocations only (the common case) is rebuilt in one pass by :meth:`AllocRewrite.rewrite_block`;
a block with other changes (Case-2 allocations, rewritten ``If`` branches) goes through the
pieces: :meth:`AllocRewrite.rebuild` rewrites the planned allocations of one block in place in a
list of bindings (in arena mode, :meth:`AllocRewrite.rebuild_views` does it in the same single
pass while reaching the tensors at a non-zero offset through zero-offset views) and
:func:`splice` inserts the new bindings. It also names and builds the storage bindings
(:meth:`AllocRewrite.emit_storages`, :meth:`AllocRewrite.new_storage`), so that the storage
counter and the storage vars live in one place. :func:`site_tables` and :func:`dirty_scopes`
build the rewriter's per-block tables (where storages are emitted and allocations rebuilt,
which scopes change).

Nodes are built as ``memcore_py.ir.construct.new_call`` / ``new_binding`` build them, through
the slot access of ``memcore_py/ir/_slots.pxd``.
"""
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from cpython.ref cimport Py_DECREF

from memcore_py.ir._names cimport numbered_name, raw_name
from memcore_py.ir._nodes cimport binding_node, call_node, shape_expr_node, var_node
from memcore_py.ir._slots cimport PyDict_GetItem, alloc_node, get_slot, put_slot, slot_offset

from memcore_py.ir.construct import EMPTY_ATTRS
from memcore_py.ir.expr import Call, DataflowVar, DataTypeImm, ShapeExpr, StringImm, Var, VarBinding
from memcore_py.ir.memo import MEMO
from memcore_py.ir.prim import IntImm, PrimVar
from memcore_py.ir.types import ShapeType, TensorType

cdef Py_ssize_t O_VAR = slot_offset(VarBinding.var)
cdef Py_ssize_t O_VALUE = slot_offset(VarBinding.value)
cdef Py_ssize_t O_TY = slot_offset(Call.ty)
cdef Py_ssize_t O_ARGS = slot_offset(Call.args)
if slot_offset(Var.ty) != O_TY:
    raise ImportError("memcore_py.transform._alloc_rewrite: unexpected slot layout of the IR nodes")
cdef Py_ssize_t O_VAR_NAME = slot_offset(Var.name)
cdef Py_ssize_t O_TT_SHAPE = slot_offset(TensorType.shape)
cdef Py_ssize_t O_TT_DTYPE = slot_offset(TensorType.dtype)
cdef Py_ssize_t O_SE_VALUES = slot_offset(ShapeExpr.values)
cdef Py_ssize_t O_ST_VALUES = slot_offset(ShapeType.values)
cdef Py_ssize_t O_ST_NDIM = slot_offset(ShapeType.ndim)
if slot_offset(ShapeExpr.ty) != O_TY:
    raise ImportError("memcore_py.transform._alloc_rewrite: unexpected slot layout of the IR nodes")
cdef Py_ssize_t O_INT_VALUE = slot_offset(IntImm.value)
cdef Py_ssize_t O_PRIM_DTYPE = slot_offset(IntImm.dtype)
cdef PyTypeObject* T_INT_IMM = <PyTypeObject*>IntImm
cdef PyTypeObject* T_TENSOR_TYPE = <PyTypeObject*>TensorType
cdef PyTypeObject* T_SHAPE_EXPR = <PyTypeObject*>ShapeExpr
cdef PyTypeObject* T_SHAPE_TYPE = <PyTypeObject*>ShapeType
cdef PyTypeObject* T_VAR_BINDING = <PyTypeObject*>VarBinding
cdef PyTypeObject* T_CALL = <PyTypeObject*>Call


#: name -> name + "_raw" (the zero-offset views' raw tensors), shared across calls like the
#: rewriter's other immutable leaves: a memo table (memcore_py.ir.memo).
cdef object _RAW_NAMES_GROUP = MEMO.group("transform.alloc_rewrite.raw_names")
cdef dict _RAW_NAMES = _RAW_NAMES_GROUP.table


cdef object _raw_name(name):
    cdef PyObject* p = PyDict_GetItem(_RAW_NAMES, name)
    if p is not NULL:
        return <object>p
    return _RAW_NAMES_GROUP.put(name, raw_name(name))


cdef inline str _storage_name(Py_ssize_t k):
    """The name of the ``k``-th storage of a module."""
    return numbered_name("storage", k)


cdef object _device_arg(binding):
    """``binding.value.args[2]``: the device argument of an ``R.builtin.alloc_tensor`` binding
    (slots read directly for a ``VarBinding`` of a ``Call``)."""
    cdef PyObject* p
    if Py_TYPE(binding) is T_VAR_BINDING:
        p = get_slot(binding, O_VALUE)
        if p is not NULL and Py_TYPE(<object>p) is T_CALL:
            p = get_slot(<object>p, O_ARGS)
            if p is not NULL and type(<object>p) is tuple:
                return (<tuple>p)[2]
    return binding.value.args[2]


cdef inline object _binding(op, tuple args, ty, var):
    """``VarBinding(var, Call(op, args, ty=ty))``, built as construct.new_call / new_binding do."""
    return binding_node(var, call_node(op, args, EMPTY_ATTRS, (), ty))


def storage_binding(op, str name, nbytes, dev, scope_imm, dtype_imm, var_cls, ty):
    """``name = op(R.shape([nbytes]), dev, scope_imm, dtype_imm)`` with ``name`` a new
    ``var_cls`` (``Var`` or ``DataflowVar``) of type ``ty``, the call typed ``ty`` too: a
    storage allocation, built as ``construct.new_var`` / ``new_shape_expr`` / ``new_call`` /
    ``new_binding`` build it. ``nbytes`` is a PrimExpr; the ``R.shape([nbytes])`` node is
    shared by the storages of the same ``nbytes`` object (an immutable leaf)."""
    if var_cls is not Var and var_cls is not DataflowVar:
        raise TypeError(f"storage_binding: var_cls must be Var or DataflowVar; got {var_cls!r}")
    return _storage_binding(op, name, nbytes, dev, scope_imm, dtype_imm, var_cls is DataflowVar, ty)


cdef object _storage_binding(op, str name, nbytes, dev, scope_imm, dtype_imm, bint dataflow, ty):
    """:func:`storage_binding` with the var class given as ``dataflow``."""
    var = var_node(dataflow, name, ty)
    return _binding(op, (_size_shape(nbytes), dev, scope_imm, dtype_imm), ty, var)


cdef object _new_size_shape(nbytes):
    """A new ``R.shape([nbytes])`` (ShapeExpr and its ShapeType)."""
    cdef tuple values = (nbytes,)
    cdef PyObject* st = alloc_node(T_SHAPE_TYPE)
    put_slot(st, O_ST_VALUES, values)
    put_slot(st, O_ST_NDIM, 1)
    shape_type = <object>st
    Py_DECREF(shape_type)
    return shape_expr_node(values, shape_type)


#: storage size (PrimExpr, by identity: the planner shares the IntImm of each size across
#: calls) -> its ``R.shape([size])``, an immutable leaf shared like the rewriter's other
#: ones: a memo table (memcore_py.ir.memo).
cdef object _SIZE_SHAPES_GROUP = MEMO.group("transform.alloc_rewrite.size_shapes")
cdef dict _SIZE_SHAPES = _SIZE_SHAPES_GROUP.table


cdef object _size_shape(nbytes):
    """The shared ``R.shape([nbytes])`` of a storage allocation."""
    cdef PyObject* p = PyDict_GetItem(_SIZE_SHAPES, nbytes)
    if p is not NULL:
        return <object>p
    return _SIZE_SHAPES_GROUP.put(nbytes, _new_size_shape(nbytes))


def splice(list out, list inserts, list view_positions, list views):
    """``out`` with bindings inserted: before each ``out[i]``, the bindings of every
    ``(i, [bindings])`` of ``inserts``, then every ``views[k]`` with ``view_positions[k] ==
    i``, each in list order. Positions are sorted (non-decreasing) in each list and lie in
    ``[0, len(out)]`` (``len(out)``: at the end). Returns a new list.

    Raises
    ------
    ValueError
        A position out of range or out of order, or lists of different lengths.
    """
    cdef Py_ssize_t n = len(out), n_ins = len(inserts), n_views = len(views)
    cdef Py_ssize_t a = 0, b = 0, i = 0, pa, pb, last_a = 0, last_b = 0
    if len(view_positions) != n_views:
        raise ValueError(f"splice: {len(view_positions)} view positions for {n_views} views")
    cdef list res = []
    pa = _checked(<Py_ssize_t>(<tuple>inserts[0])[0], n, &last_a) if n_ins else n + 1
    pb = _checked(<Py_ssize_t>view_positions[0], n, &last_b) if n_views else n + 1
    while True:
        # everything to insert before out[i]
        while pa == i:
            for x in <list>(<tuple>inserts[a])[1]:
                res.append(x)
            a += 1
            pa = _checked(<Py_ssize_t>(<tuple>inserts[a])[0], n, &last_a) if a < n_ins else n + 1
        while pb == i:
            res.append(views[b])
            b += 1
            pb = _checked(<Py_ssize_t>view_positions[b], n, &last_b) if b < n_views else n + 1
        if i == n:
            break
        res.append(out[i])
        i += 1
    return res


cdef inline Py_ssize_t _checked(Py_ssize_t p, Py_ssize_t n, Py_ssize_t* last) except -1:
    """Insertion position ``p``, checked against ``[0, n]`` and the previous one (``last``)."""
    if p < 0 or p > n or p < last[0]:
        raise ValueError(f"splice: insertion position {p} out of range [0, {n}] or before {last[0]}")
    last[0] = p
    return p


def same_shape(values, shape):
    """Whether two dimension tuples are the same expressions: the allocation's own shape
    argument can then stand for the tensor type's shape. Compares IntImm dims by value and
    dtype, PrimVar dims by name; any other dim only when it is the same object."""
    return _same_shape(values, shape)


cdef bint _same_shape(values, shape) except -1:
    cdef Py_ssize_t k, n
    cdef PyObject* pa
    cdef PyObject* pb
    if values is shape:
        return True
    if len(values) != len(shape):
        return False
    if type(values) is tuple and type(shape) is tuple:
        # tuples of IntImm (the common case), compared through their slots
        n = len(<tuple>values)
        for k in range(n):
            a = (<tuple>values)[k]
            b = (<tuple>shape)[k]
            if a is b:
                continue
            if Py_TYPE(a) is not T_INT_IMM or Py_TYPE(b) is not T_INT_IMM:
                break
            pa = get_slot(a, O_INT_VALUE)
            pb = get_slot(b, O_INT_VALUE)
            if pa is NULL or pb is NULL or not (<object>pa == <object>pb):
                return False
            pa = get_slot(a, O_PRIM_DTYPE)
            pb = get_slot(b, O_PRIM_DTYPE)
            if pa is NULL or pb is NULL or (pa != pb and not (<object>pa == <object>pb)):
                return False
        else:
            return True
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


cdef class AllocRewrite:
    """Rewrite of planned allocations for one module (see the module docstring).

    Parameters
    ----------
    tok_storage, tok_offset : list of int
        Storage index and byte offset of each token.
    storage_var : list
        Storage index -> its ``R.memory.alloc_storage`` var once emitted (filled by
        :meth:`emit_storages` while the rewriter walks; None before).
    dtype_imm : dict
        dtype -> the shared ``DataTypeImm`` (filled by the rewriter and by the storage
        bindings made here).
    op : Op
        ``relax.memory.alloc_tensor``.
    zero : PrimValue
        The shared offset 0.
    storage_op : Op
        ``relax.memory.alloc_storage``.
    storage_ty : Type
        The type of a storage var and of its allocation call (``R.Object``).
    """

    cdef list tok_storage, tok_offset, storage_var
    cdef dict dtype_imm, args_cache
    cdef object op, zero, storage_op, storage_ty
    cdef Py_ssize_t n_storages

    def __init__(self, list tok_storage, list tok_offset, list storage_var, dict dtype_imm, op, zero,
                 storage_op, storage_ty):
        self.tok_storage = tok_storage
        self.tok_offset = tok_offset
        self.storage_var = storage_var
        self.dtype_imm = dtype_imm
        self.args_cache = {}
        self.op = op
        self.zero = zero
        self.storage_op = storage_op
        self.storage_ty = storage_ty
        self.n_storages = 0

    def new_storage(self, nbytes, dev, scope_imm, str dtype, bint dataflow):
        """The binding of the next storage of the module, ``storage<k> =
        R.memory.alloc_storage(R.shape([nbytes]), dev, scope_imm, R.dtype(dtype))``: named
        ``storage``, ``storage1``, ... in the order of the calls (NameTable's sequence for one
        hint), a ``DataflowVar`` when ``dataflow`` (see :func:`storage_binding`)."""
        return self._new_storage(nbytes, dev, scope_imm, dtype, dataflow)

    cdef object _new_storage(self, nbytes, dev, scope_imm, str dtype, bint dataflow):
        cdef Py_ssize_t k = self.n_storages
        self.n_storages = k + 1
        cdef PyObject* dp = PyDict_GetItem(self.dtype_imm, dtype)
        if dp is NULL:
            dtype_imm = self.dtype_imm[dtype] = DataTypeImm(dtype)
        else:
            dtype_imm = <object>dp
        return _storage_binding(self.storage_op, _storage_name(k), nbytes, dev, scope_imm, dtype_imm, dataflow,
                                self.storage_ty)

    def emit_storages(self, storage_ids, list storages, list tok_binding, list sites, dict scope_imm):
        """The bindings of storages ``storage_ids`` (indices into ``storages``, a plan's
        :class:`~memcore_py.planning.memory_plan.StoragePlan` list), in that order, each
        recorded in ``storage_var``. The device argument is that of the storage's first
        allocation (``tok_binding``: each token's ``R.builtin.alloc_tensor`` binding); the
        var is a ``DataflowVar`` when the storage's
        :class:`~memcore_py.planning.emission.EmissionSite` (``sites[k]``) says so;
        ``scope_imm``: scope -> its shared ``StringImm`` (filled here when missing)."""
        cdef list out = []
        self._emit_into(out, storage_ids, storages, tok_binding, sites, scope_imm)
        return out

    cdef int _emit_into(self, list out, storage_ids, list storages, list tok_binding, list sites,
                        dict scope_imm) except -1:
        """:meth:`emit_storages`, appending the bindings to ``out``."""
        cdef list storage_var = self.storage_var
        cdef PyObject* sp
        cdef Py_ssize_t k
        for k in storage_ids:
            s = storages[k]
            dev = _device_arg(tok_binding[s.tokens[0]])
            scope = s.scope
            sp = PyDict_GetItem(scope_imm, scope)
            if sp is NULL:
                scope_node = scope_imm[scope] = StringImm(scope)
            else:
                scope_node = <object>sp
            sb = self._new_storage(s.nbytes, dev, scope_node, s.dtype, (<tuple>sites[k])[2])  # .dataflow_var
            storage_var[k] = <object>get_slot(sb, O_VAR)
            out.append(sb)
        return 0

    def args_for(self, key, call, make_args):
        """The shared argument tuple for ``key = (storage, offset, tensor type, device arg)``,
        made by ``make_args(key, call)`` when missing. (Callbacks are passed per call, so that
        this object holds no reference back to its owner.)"""
        cdef PyObject* p = PyDict_GetItem(self.args_cache, key)
        if p is not NULL:
            return <object>p
        new_args = make_args(key, call)
        self.args_cache[key] = new_args
        return new_args

    cdef object _args(self, var, ty, call, Py_ssize_t t, offset, make_args, dict offset_imm):
        """Arguments ``(storage, offset, shape, dtype, device)`` of the
        ``R.memory.alloc_tensor`` of token ``t`` at byte ``offset`` (a Python int), replacing
        ``call`` bound to ``var`` of type ``ty``. In the common case (a tensor type, the call's
        own shape argument equal to the type's shape, the dtype's ``DataTypeImm`` already
        made, the offset 0 or its ``PrimValue`` in ``offset_imm``, the storage emitted) they
        are built directly (not shared through ``args_cache``: tensor types are mostly
        distinct nodes, so the cache would rarely hit); otherwise they come from
        :meth:`args_for` (with ``make_args``)."""
        cdef PyObject* dp
        cdef PyObject* op_
        cdef Py_ssize_t k
        if t < 0 or t >= len(self.tok_storage):  # indices below are unchecked (boundscheck off)
            raise IndexError(f"AllocRewrite: token {t} out of range [0, {len(self.tok_storage)})")
        args = <object>get_slot(call, O_ARGS)
        if Py_TYPE(ty) is T_TENSOR_TYPE:
            k = self.tok_storage[t]
            if k < 0 or k >= len(self.storage_var):
                raise IndexError(f"AllocRewrite: storage {k} of token {t} out of range [0, {len(self.storage_var)})")
            storage = self.storage_var[k]
            arg0 = args[0]
            dp = PyDict_GetItem(self.dtype_imm, <object>get_slot(ty, O_TT_DTYPE))
            op_ = <PyObject*>self.zero if not offset else PyDict_GetItem(offset_imm, offset)
            if (storage is not None and dp is not NULL and op_ is not NULL and Py_TYPE(arg0) is T_SHAPE_EXPR
                    and _same_shape(<object>get_slot(arg0, O_SE_VALUES), <object>get_slot(ty, O_TT_SHAPE))):
                return (storage, <object>op_, arg0, <object>dp, args[2])
        return self.args_for((self.tok_storage[t], offset, ty, args[2]), call, make_args)

    def rebuild(self, list out, dict allocs, make_args, dict offset_imm):
        """``out[i] = VarBinding(var, Call(op, args, ty=var.ty))`` for each planned
        allocation ``i -> token`` of ``allocs`` (arguments: :meth:`_args`)."""
        cdef list tok_offset = self.tok_offset
        op = self.op
        for i, t in allocs.items():
            b = out[i]
            var = <object>get_slot(b, O_VAR)
            ty = <object>get_slot(var, O_TY)
            call = <object>get_slot(b, O_VALUE)
            out[i] = _binding(op, self._args(var, ty, call, t, tok_offset[t], make_args, offset_imm), ty,
                              var)

    def rebuild_views(self, list out, dict allocs, make_args, view_op, var_cls, dict offset_imm,
                      list positions, list raws):
        """:meth:`rebuild` with zero-offset views (arena mode): each planned allocation
        ``i -> token`` of ``allocs`` at a non-zero offset becomes ``var_raw =
        R.memory.alloc_tensor(storage, offset, ...)`` (appended to ``raws``, ``i`` to
        ``positions``: to be inserted before position ``i``) and ``var = view_op(var_raw)``
        (written to ``out[i]``); one at offset 0 is rebuilt as :meth:`rebuild` does.
        ``var_cls``: the class of the new ``*_raw`` var (``Var``, or ``DataflowVar`` in a
        dataflow block); ``offset_imm``: offset -> its shared ``PrimValue``. Positions come in
        ``allocs`` order."""
        if var_cls is not Var and var_cls is not DataflowVar:
            raise TypeError(f"rebuild_views: var_cls must be Var or DataflowVar; got {var_cls!r}")
        cdef list tok_offset = self.tok_offset
        cdef bint dataflow = var_cls is DataflowVar
        op = self.op
        for i, t in allocs.items():
            offset = tok_offset[t]
            b = out[i]
            var = <object>get_slot(b, O_VAR)
            ty = <object>get_slot(var, O_TY)
            call = <object>get_slot(b, O_VALUE)
            new_args = self._args(var, ty, call, t, offset, make_args, offset_imm)
            if not offset:
                out[i] = _binding(op, new_args, ty, var)
                continue
            raw_var = var_node(dataflow, _raw_name(<object>get_slot(var, O_VAR_NAME)), ty)
            positions.append(i)
            raws.append(_binding(op, new_args, ty, raw_var))
            out[i] = _binding(view_op, (raw_var,), ty, var)


    def rewrite_block(self, tuple bindings, dict emit, dict allocs, list storages, list tok_binding, list sites,
                      dict scope_imm, make_args, dict offset_imm, view_op, bint dataflow):
        """The bindings of a block with storages to emit and planned allocations only (no
        Case-2 allocation, no ``If`` to rewrite), in one pass: before each binding
        ``bindings[i]``, the storages ``emit[i]`` (:meth:`emit_storages`); each planned
        allocation ``i -> token`` of ``allocs`` (positions increasing) rebuilt as
        :meth:`rebuild` does, or, with ``view_op`` (arena mode's zero-offset views; None
        otherwise), as :meth:`rebuild_views` does, the raw allocation right before the view.
        ``dataflow``: the block is a dataflow block (the raw vars are DataflowVars). Returns a
        new list; the same bindings as :meth:`emit_storages`, :meth:`rebuild` /
        :meth:`rebuild_views` and :func:`splice` give together.

        Raises
        ------
        ValueError
            Allocation positions not increasing, or a position out of range.
        """
        cdef list out = []
        cdef Py_ssize_t n = len(bindings), i = 0, pos, p, e = 0, n_e, t
        cdef list epos = sorted(emit) if emit else []
        cdef list tok_offset = self.tok_offset
        n_e = len(epos)
        op = self.op
        if allocs:
            for pos_obj, t_obj in allocs.items():
                pos = pos_obj
                t = t_obj
                if pos < i or pos >= n:
                    raise ValueError(f"rewrite_block: allocation position {pos} out of range [{i}, {n})")
                while e < n_e and <Py_ssize_t>epos[e] <= pos:
                    i = _copy_to(out, bindings, i, epos[e])
                    self._emit_into(out, <list>emit[epos[e]], storages, tok_binding, sites, scope_imm)
                    e += 1
                i = _copy_to(out, bindings, i, pos)
                b = bindings[pos]
                var = <object>get_slot(b, O_VAR)
                ty = <object>get_slot(var, O_TY)
                call = <object>get_slot(b, O_VALUE)
                if t < 0 or t >= len(tok_offset):
                    raise IndexError(f"rewrite_block: token {t} out of range [0, {len(tok_offset)})")
                offset = tok_offset[t]
                new_args = self._args(var, ty, call, t, offset, make_args, offset_imm)
                if view_op is None or not offset:
                    out.append(_binding(op, new_args, ty, var))
                else:
                    raw_var = var_node(dataflow, _raw_name(<object>get_slot(var, O_VAR_NAME)), ty)
                    out.append(_binding(op, new_args, ty, raw_var))
                    out.append(_binding(view_op, (raw_var,), ty, var))
                i = pos + 1
        while e < n_e:
            p = epos[e]
            if p < i or p > n:
                raise ValueError(f"rewrite_block: emission position {p} out of range [{i}, {n}]")
            i = _copy_to(out, bindings, i, p)
            self._emit_into(out, <list>emit[epos[e]], storages, tok_binding, sites, scope_imm)
            e += 1
        _copy_to(out, bindings, i, n)
        return out


cdef inline Py_ssize_t _copy_to(list out, tuple bindings, Py_ssize_t i, Py_ssize_t p) except -1:
    """Append ``bindings[i:p]`` (unchanged bindings before a change) to ``out``; returns ``p``."""
    while i < p:
        out.append(bindings[i])
        i += 1
    return p


def site_tables(list storage_site, list tok_block, list tok_index):
    """Where the rewrite changes each block: ``(emit_before, allocs)``.

    ``emit_before``: block id -> {position: [storage ids to emit before that binding]}, from
    each storage's :class:`~memcore_py.planning.emission.EmissionSite` (``storage_site[k]``:
    ``(block, position, ...)``), ids in increasing order. ``allocs``: block id -> {position:
    token} of the planned allocations (``tok_block`` / ``tok_index``: block id and position of
    each token's allocation, tokens in program order, so positions come increasing).
    """
    cdef dict emit_before = {}, allocs = {}
    cdef Py_ssize_t k, n = len(storage_site), t, n_tok = len(tok_block)
    cdef PyObject* p
    cdef dict at
    cdef tuple site
    for k in range(n):
        site = <tuple>storage_site[k]
        block, position = site[0], site[1]
        p = PyDict_GetItem(emit_before, block)
        if p is NULL:
            at = {}
            emit_before[block] = at
        else:
            at = <dict>p
        p = PyDict_GetItem(at, position)
        if p is NULL:
            at[position] = [k]
        else:
            (<list>p).append(k)
    cdef dict one = None
    if n_tok:
        b0 = tok_block[0]
        for t in range(1, n_tok):
            if tok_block[t] != b0:
                break
        else:  # every planned allocation in one block (the common case)
            one = {}
            for t in range(n_tok):
                one[tok_index[t]] = t
            allocs[b0] = one
            return emit_before, allocs
        for t in range(n_tok):
            block = tok_block[t]
            p = PyDict_GetItem(allocs, block)
            if p is NULL:
                at = {}
                allocs[block] = at
            else:
                at = <dict>p
            at[tok_index[t]] = t
    return emit_before, allocs


def dirty_scopes(tables, list block_scope, list scope_parent):
    """The scope ids that contain a block of some ``{block id: ...}`` dict of ``tables``, and
    every scope around them (``block_scope``: block -> scope; ``scope_parent``: scope ->
    parent, -1 at a function body)."""
    cdef set dirty = set()
    cdef Py_ssize_t sid
    for changed in tables:
        for bid in <dict>changed:
            sid = block_scope[bid]
            while sid >= 0 and sid not in dirty:
                dirty.add(sid)
                sid = scope_parent[sid]
    return dirty

