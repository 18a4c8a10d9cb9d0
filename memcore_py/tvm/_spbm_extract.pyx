# cython: language_level=3
"""Compiled StaticPlanBlockMemory of flat Relax functions, on the TVM objects themselves (built
by ``setup.py``; :mod:`memcore_py.tvm.spbm_extract` drives it and declines to the full
conversion what it declines).

Design
------
Two walks, with the planner between them (:func:`memcore_py.planning.allocate.plan_memory`,
run by the caller on the program the first walk makes):

1. :class:`Scan` runs the Init rules of :mod:`memcore_py.analysis.storage_tokens` (TVM's
   ``StorageAllocatorInit``) over each function's bindings and records its tokens and events
   in the compiled Init walk's own tables (:class:`~memcore_py.analysis._storage_walk.InitWalk`,
   declared in ``_storage_walk.pxd``), so that the same ``decode`` makes the same
   :class:`~memcore_py.analysis.storage_tokens.TokenProgram` as the walk over memcore's IR:
   same token order, steps, events and :class:`TokenInfo` fields. Handled: functions whose
   body is a ``SeqExpr`` (typed, or untyped with a typed result and no ``MatchCast``) of
   non-dataflow binding blocks of ``VarBinding`` s whose values are

   - ``R.builtin.alloc_tensor(shape, dtype, device, scope)`` of a tensor type (no vdevice),
     the shape argument the type's dims (the same symbolic objects), the dtype argument the
     type's dtype (int, uint or float of 8 to 64 bits, bfloat16 or bool; one lane), an
     integer device and a string scope: a token of ``prod(dims) * bytes(dtype)`` bytes when
     the dims are constant; a symbolic shape is sized by the caller's ``symbolic`` (the full
     pass's own sizing of the upper-bounded shape, once per distinct type in a function);
   - a call of a storage-sharing op (``R.reshape``, ``R.memory.view``,
     ``R.memory.ensure_zero_offset``, the packed ``vm.builtin.reshape``): the variable carries
     its first argument's tokens;
   - a call of a PrimFunc of the module, of an ``ExternFunc`` or ``R.vm.call_tir_dyn``: every
     token of its arguments is used (discarded when allocated in another block);
   - a call of any other ``Op`` or of a Relax function: its arguments' tokens are discarded;
   - a variable, a tuple, a get-item (tokens carried, TVM's ``NestedMsg``), or a leaf;

   and of ``MatchCast`` s of the last kind, with call arguments and results that are
   variables, leaves or tuples of them. Anything else (an ``If``, a ``MatchCast`` of a call,
   a dataflow block, a nested call, an unusual allocation, a call of a GlobalVar
   that is not the module's) declines: None, and the caller runs the full conversion, which
   handles and checks it.

2. :func:`rewrite_function` rebuilds a function's blocks that hold planned allocations: each
   storage is emitted right before its first allocation (every use is in the same scope and
   no block is a dataflow block, so that position dominates the others: the rewriter's
   emission rule, :mod:`memcore_py.planning.emission`) as ``storage<k> =
   R.memory.alloc_storage(R.shape([bytes]), device, scope, dtype)`` with the device, scope
   and (unless the arena's dtype differs) dtype objects of that first allocation, and each
   planned allocation becomes ``R.memory.alloc_tensor(storage, offset, shape, dtype,
   device)`` of its own arguments (arena mode at a non-zero offset: ``<name>_raw`` then
   ``R.memory.ensure_zero_offset``), named and typed as the full rewrite names and types
   them (:mod:`memcore_py.transform._alloc_rewrite`). The other bindings stay the objects
   they were.

Reads go through the checked :class:`~memcore_py.tvm._ffi_reader.Layout`: an object's fields
are read only after its type index matched. Objects built here are owned by the caller's
``Keep``; variables are keyed by address (compared, never dereferenced as Python objects).
"""
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint32_t
from libc.stdio cimport snprintf
from libcpp.map cimport map
from libcpp.pair cimport pair
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector
from cython.operator cimport dereference as deref

from memcore_py.analysis._storage_walk cimport InitWalk
from memcore_py.tvm._ffi_abi cimport (
    FFIAny, K_ARRAY, K_DATATYPE, K_INT, K_OBJECT_BEGIN, any_obj, any_type, array_data, array_size, obj_field, obj_type,
)
from memcore_py.tvm._ffi_reader cimport Layout, const_dim, dtype_name, element_bytes, packed_dtype, read_string
from memcore_py.tvm._ffi_writer cimport (
    CTOR_BLOCK, CTOR_EMPTY_ARRAY, Keep, handle, new_binding, new_call, new_var, new_with_array, set_obj,
)

from memcore_py.ir.memo import MEMO
from memcore_py.ir.op import RESHAPE_PACKED
from memcore_py.ir.prim import IntImm

cdef enum:
    NONE = -1               # a message carrying no token (tuples are -2, -3, ...)
    DECLINE = -2147483647   # tokens_of: the walk declines the expression

#: across calls, memo tables (memcore_py.ir.memo): packed dtype -> its name; storage bytes ->
#: memcore IntImm (immutable nodes)
cdef object _INFO_LEAVES = MEMO.group("tvm.spbm_extract.info_leaves", 2)
cdef dict _DTYPE_NAMES = _INFO_LEAVES.tables[0]
cdef dict _BYTES_IMMS = _INFO_LEAVES.tables[1]


cdef object new_info(type info_cls, int64_t nbytes, int64_t dtype, str scope, int64_t device, Py_ssize_t func,
                     Py_ssize_t id_):
    """A ``TokenInfo`` of a constant-size allocation (as the Init walk makes it, the
    allocation's arguments left out: nothing reads them after the walk)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _INFO_LEAVES.put(dtype, dtype_name(dtype), 0)
    imm = _BYTES_IMMS.get(nbytes)
    if imm is None:
        imm = _INFO_LEAVES.put(nbytes, IntImm(nbytes), 1)
    return tuple.__new__(info_cls, (nbytes, imm, name, scope, device, func, None, id_))


cdef class Scan:
    """The first walk (module docstring) over the Relax functions of one module, in module
    order, into ``walk``.

    Parameters
    ----------
    L : Layout
    walk : InitWalk
        Receives the tokens (``t_binding``: the allocation binding's address), the events,
        the discarded tokens and the :class:`TokenInfo` s.
    gvars : dict
        GlobalVar address -> True for a PrimFunc of the module, False for a Relax function.
    ops : tuple of int
        Addresses of ``relax.builtin.alloc_tensor``, ``relax.vm.call_tir_dyn``, then of the
        storage-sharing ops.
    info_cls : type
        ``TokenInfo``.
    """

    cdef Layout L
    cdef InitWalk W
    cdef dict scope_ids, sym_infos
    cdef list infos_of_function, scope_names
    cdef public object symbolic
    """``symbolic(bindings Array address, position)``: ``(const bytes, bytes, dtype, scope,
    device)`` of an allocation of a symbolic shape in the current function (the fields of its
    :class:`TokenInfo` before the function's index), or None to decline; None: decline
    every such allocation."""
    cdef unordered_map[size_t, char] gvars
    cdef unordered_map[size_t, int64_t] scope_of_imm
    cdef map[pair[pair[int64_t, int64_t], pair[int64_t, int64_t]], Py_ssize_t] info_index
    cdef type info_cls
    cdef size_t op_alloc, op_call_tir_dyn
    cdef vector[size_t] sharing
    cdef long long step
    cdef Py_ssize_t n_blocks, func_idx
    cdef vector[size_t] var_keys     # the variables' messages: open addressing, linear probing
    cdef vector[int64_t] var_vals
    cdef size_t var_mask
    cdef vector[int64_t] toks        # scratch
    cdef vector[int64_t] tup_start, tup_len, tup_fields
    cdef vector[Py_ssize_t] tok_block
    cdef vector[char] discarded
    cdef readonly Py_ssize_t at_block, at_binding
    """Where the last :meth:`function` stopped: block and binding position (-1 before the
    first binding, the number of bindings at the result); a decline's place."""

    def __init__(self, Layout L, InitWalk walk, dict gvars, tuple ops, type info_cls):
        cdef char prim_func
        self.L = L
        self.W = walk
        for gv, prim in gvars.items():
            prim_func = 1 if prim else 0  # (assigned to the map element directly, Cython 3 drops it)
            self.gvars[<size_t>gv] = prim_func
        self.scope_ids = {}
        self.scope_names = []
        self.op_alloc = ops[0]
        self.op_call_tir_dyn = ops[1]
        for op in ops[2:]:
            self.sharing.push_back(<size_t>op)
        self.info_cls = info_cls
        self.step = -1
        self.n_blocks = 0

    # ------------------------------------------------------------------ variables
    cdef void reset_vars(self, int64_t n) noexcept:
        """An empty variable table for at most ``n`` variables."""
        cdef size_t cap = 16
        while cap < <size_t>(2 * n + 2):
            cap <<= 1
        self.var_keys.assign(cap, 0)
        self.var_vals.resize(cap)
        self.var_mask = cap - 1

    cdef inline size_t var_slot(self, size_t key) noexcept:
        """The slot of ``key``: its own, or the empty one where it would go."""
        cdef size_t i = ((key >> 4) * <size_t>0x9E3779B97F4A7C15ULL) & self.var_mask
        while self.var_keys[i] != 0 and self.var_keys[i] != key:
            i = (i + 1) & self.var_mask
        return i

    cdef inline int64_t var_get(self, size_t key) noexcept:
        cdef size_t i = self.var_slot(key)
        return self.var_vals[i] if self.var_keys[i] == key else NONE

    cdef inline void var_set(self, size_t key, int64_t msg) noexcept:
        """``key`` carries ``msg`` (the table has room: :meth:`reset_vars`)."""
        cdef size_t i = self.var_slot(key)
        self.var_keys[i] = key
        self.var_vals[i] = msg

    # ------------------------------------------------------------------ messages
    cdef int64_t tokens_of(self, const char* any) except? DECLINE:
        """The message (a token, NONE, or a tuple: ``-2 - k``) of the expression in the
        ``TVMFFIAny`` at ``any``; DECLINE for what the walk declines."""
        cdef Layout L = self.L
        cdef int32_t t = any_type(any)
        cdef const char* e = any_obj(any)
        cdef const char* arr
        cdef int64_t s, n, i, k
        cdef vector[int64_t] fields
        cdef bint some = False
        if t < K_OBJECT_BEGIN or e == NULL:
            return DECLINE
        if t == L.t_var or t == L.t_dfvar:
            return self.var_get(<size_t>e)
        if t == L.t_tuple:
            arr = obj_field(e, L.o_tuple_expr_fields)
            if arr == NULL or obj_type(arr) != K_ARRAY:
                return DECLINE
            n = array_size(arr)
            for i in range(n):
                s = self.tokens_of(array_data(arr) + 16 * i)
                if s == DECLINE:
                    return DECLINE
                fields.push_back(s)
                if s != NONE:
                    some = True
            if not some:
                return NONE
            k = <int64_t>self.tup_start.size()
            self.tup_start.push_back(<int64_t>self.tup_fields.size())
            self.tup_len.push_back(n)
            for i in range(n):
                self.tup_fields.push_back(fields[i])
            return -2 - k
        if t == L.t_tuple_get_item:
            arr = obj_field(e, L.o_tgi_tuple)  # the tuple expression
            if arr == NULL or obj_type(arr) != L.t_var:
                return DECLINE
            s = self.var_get(<size_t>arr)
            if s == NONE:
                return NONE
            i = (<const int32_t*>(e + L.o_tgi_index))[0]
            if s >= 0 or i < 0 or i >= self.tup_len[-2 - s]:
                return DECLINE  # the full conversion reports the malformed get-item
            return self.tup_fields[self.tup_start[-2 - s] + i]
        if (t == L.t_call or t == L.t_if or t == L.t_seq or t == L.t_function or t == L.t_binding
                or t == L.t_match_cast or t == L.t_block or t == L.t_dfblock):
            return DECLINE
        return NONE  # a leaf: a shape, a constant, an integer, a string, a dtype, a callee

    cdef int leaves(self, int64_t s, vector[int64_t]* out) except -1:
        """Append the tokens of the message ``s`` to ``out``."""
        cdef int64_t i, k
        if s >= 0:
            out.push_back(s)
        elif s != NONE:
            k = -2 - s
            for i in range(self.tup_len[k]):
                self.leaves(self.tup_fields[self.tup_start[k] + i], out)
        return 0

    cdef int discard(self, int64_t s) except -1:
        """Discard every token of the message ``s``."""
        cdef size_t j
        cdef int64_t tk
        if s == NONE:
            return 0
        self.toks.clear()
        self.leaves(s, &self.toks)
        for j in range(self.toks.size()):
            tk = self.toks[j]
            if not self.discarded[tk]:
                self.discarded[tk] = 1
                self.W.discarded.add(tk)
        return 0

    cdef int use_args(self, const char* args, Py_ssize_t bid) except -1:
        """A call that uses its arguments' tokens (TVM ``GetTokensWithAllocSiteCheck``, then
        one use each): a token of another block is discarded instead. Returns 1 when an
        argument is declined."""
        cdef int64_t n = array_size(args), i, s, tk
        cdef size_t j
        for i in range(n):
            s = self.tokens_of(array_data(args) + 16 * i)
            if s == DECLINE:
                return 1
            if s == NONE:
                continue
            self.toks.clear()
            self.leaves(s, &self.toks)
            for j in range(self.toks.size()):
                tk = self.toks[j]
                if self.discarded[tk]:
                    continue
                if self.tok_block[tk] != bid:
                    self.discarded[tk] = 1
                    self.W.discarded.add(tk)
                    continue
                self.W._use(self.step, tk)
        return 0

    cdef int share_first(self, const char* var, const char* args) except -1:
        """``var`` carries the tokens of the first argument (a storage-sharing call). Returns
        1 when that argument is declined."""
        cdef int64_t s
        if array_size(args) == 0:
            return 0
        s = self.tokens_of(array_data(args))
        if s == DECLINE:
            return 1
        if s != NONE:
            self.var_set(<size_t>var, s)
        return 0

    cdef int discard_args(self, const char* args) except -1:
        """A call that does not use its arguments: their tokens are discarded. Returns 1 when
        an argument is declined."""
        cdef int64_t n = array_size(args), i, s
        for i in range(n):
            s = self.tokens_of(array_data(args) + 16 * i)
            if s == DECLINE:
                return 1
            self.discard(s)
        return 0

    # ------------------------------------------------------------------ allocations
    cdef object alloc_info(self, const char* arr, int64_t pos, const char* var, const char* call):
        """The :class:`TokenInfo` of the allocation binding at position ``pos`` of the bindings
        ``Array`` at ``arr`` (of ``var`` to ``call``) when it is handled here (module
        docstring), or None."""
        cdef Layout L = self.L
        cdef const char* e
        cdef const char* ty = obj_field(var, L.o_expr_ty)
        cdef const char* pt
        cdef const char* shape
        cdef const char* dims
        cdef const char* args = obj_field(call, L.o_call_args)
        cdef const char* a
        cdef const char* v
        cdef int64_t n, i, d, dtype, elem, nbytes, device, scope
        cdef map[pair[pair[int64_t, int64_t], pair[int64_t, int64_t]], Py_ssize_t].iterator it
        if ty == NULL or obj_type(ty) != L.t_tensor_type or obj_field(ty, L.o_tt_vdevice) != NULL:
            return None
        pt = obj_field(ty, L.o_tt_dtype)
        shape = obj_field(ty, L.o_tt_shape)
        if pt == NULL or obj_type(pt) != L.t_prim_type or shape == NULL or obj_type(shape) != L.t_shape_expr:
            return None
        dtype = packed_dtype(pt + L.o_pt_dtype)
        elem = element_bytes(dtype)
        if elem < 0:
            return None
        dims = obj_field(shape, L.o_shape_values)
        if dims == NULL or obj_type(dims) != K_ARRAY:
            return None
        n = array_size(dims)
        if n != (<const int32_t*>(ty + L.o_tt_ndim))[0]:
            return None
        if args == NULL or obj_type(args) != K_ARRAY or array_size(args) != 4:
            return None
        # the shape argument: the type's dims
        a = array_data(args)
        if any_type(a) != L.t_shape_expr:
            return None
        v = obj_field(any_obj(a), L.o_shape_values)
        if v == NULL or obj_type(v) != K_ARRAY or array_size(v) != n:
            return None
        nbytes = elem
        sym_dims = None
        for i in range(n):
            e = array_data(dims) + 16 * i
            d = const_dim(L, e)
            if d >= 0 and d == const_dim(L, array_data(v) + 16 * i):
                if sym_dims is None:
                    if d and nbytes > INT64_MAX // d:
                        return None  # over int64: the full conversion reports it
                    nbytes *= d
                else:
                    sym_dims.append(d)
                continue
            # a symbolic dim: the same object in the type and the shape argument
            if (any_type(e) < K_OBJECT_BEGIN or any_type(e) == L.t_int_imm
                    or any_obj(e) != any_obj(array_data(v) + 16 * i)):
                return None  # negative, or another shape: the full conversion
            if sym_dims is None:
                sym_dims = [const_dim(L, array_data(dims) + 16 * k) for k in range(i)]
            sym_dims.append(-<int64_t><size_t>any_obj(e) - 1)  # negative: an object's address
        # dtype, device, scope
        if any_type(a + 16) != L.t_generic_const:
            return None
        v = any_obj(a + 16) + L.o_const_value
        if any_type(v) != K_DATATYPE or packed_dtype(v + 8) != dtype:
            return None
        if any_type(a + 32) != L.t_int_imm:
            return None
        v = any_obj(a + 32) + L.o_imm_value
        if any_type(v) != K_INT:
            return None
        device = (<const int64_t*>(v + 8))[0]
        if any_type(a + 48) != L.t_string_imm:
            return None
        scope = self.scope_id(any_obj(a + 48))
        if scope < 0:
            return None
        if sym_dims is not None:
            return self.symbolic_info(arr, pos, (dtype, device, scope, tuple(sym_dims)))
        key = pair[pair[int64_t, int64_t], pair[int64_t, int64_t]](
            pair[int64_t, int64_t](nbytes, dtype), pair[int64_t, int64_t](device, scope))
        it = self.info_index.find(key)
        if it != self.info_index.end():
            return self.infos_of_function[deref(it).second]
        info = new_info(self.info_cls, nbytes, dtype, self.scope_names[scope], device, self.func_idx,
                        len(self.W.infos))
        self.W.infos.append(info)
        self.info_index[key] = len(self.infos_of_function)
        self.infos_of_function.append(info)
        return info

    cdef object symbolic_info(self, const char* arr, int64_t pos, tuple key):
        """The :class:`TokenInfo` of an allocation of a symbolic shape (``key``: its dtype,
        device, scope and dims, a symbolic one by its object), sized by ``symbolic`` (once per
        key and function); None when that declines."""
        info = self.sym_infos.get(key)
        if info is not None:
            return info
        if self.symbolic is None:
            return None
        sized = self.symbolic(<size_t>arr, pos)
        if sized is None:
            return None
        info = tuple.__new__(self.info_cls, tuple(sized) + (self.func_idx, None, len(self.W.infos)))
        self.W.infos.append(info)
        self.sym_infos[key] = info
        return info

    cdef int64_t scope_id(self, const char* imm) except? -2:
        """A number for the string of the ``StringImm`` at ``imm`` (equal strings, equal
        numbers), or -1 when it holds no string."""
        cdef unordered_map[size_t, int64_t].iterator it = self.scope_of_imm.find(<size_t>imm)
        if it != self.scope_of_imm.end():
            return deref(it).second
        text = read_string(imm + self.L.o_str_value)
        if text is None:
            return -1
        k = self.scope_ids.get(text)
        if k is None:
            k = self.scope_ids[text] = len(self.scope_names)
            self.scope_names.append(text)
        self.scope_of_imm[<size_t>imm] = k
        return k

    # ------------------------------------------------------------------ walk
    def function(self, size_t func, Py_ssize_t func_idx):
        """Walk the Relax ``Function`` at ``func`` (the ``func_idx``-th of the module's, in
        module order).

        Returns
        -------
        tuple or None
            ``(SeqExpr address, blocks Array address, [bindings Array address of each block],
            block id of its first block, address of the body's type)``; None when the walk declines the function (the
            walk's tables are then incomplete: run the full conversion).
        """
        cdef Layout L = self.L
        cdef const char* f = <const char*>func
        cdef const char* seq
        cdef const char* blocks
        cdef const char* arr
        cdef const char* b
        cdef const char* var
        cdef const char* value
        cdef const char* op
        cdef const char* args
        cdef const char* ty
        cdef const char* data
        cdef int64_t nb, ib, n, i, s
        cdef int32_t vt, ot
        cdef Py_ssize_t bid, t
        cdef long long step0
        cdef bint found, untyped, match_cast = False
        cdef size_t j
        cdef unordered_map[size_t, char].iterator git
        if f == NULL or obj_type(f) != L.t_function:
            return None
        seq = obj_field(f, L.o_func_body)
        if seq == NULL or obj_type(seq) != L.t_seq:
            return None
        ty = obj_field(seq, L.o_expr_ty)
        untyped = ty == NULL or obj_type(ty) == L.t_type_missing
        if untyped:
            # not normalized: the body's type is its result's, unless a MatchCast defines a
            # variable it names (checked below: the full conversion erases those)
            ty = obj_field(seq, L.o_seq_body)
            if ty != NULL:
                ty = obj_field(ty, L.o_expr_ty)
            if ty == NULL or obj_type(ty) == L.t_type_missing:
                return None  # the full conversion infers it
        blocks = obj_field(seq, L.o_seq_blocks)
        if blocks == NULL or obj_type(blocks) != K_ARRAY:
            return None
        self.func_idx = func_idx
        self.sym_infos = {}
        self.infos_of_function = []
        self.info_index.clear()
        self.at_block = self.at_binding = -1
        self.tup_start.clear()
        self.tup_len.clear()
        self.tup_fields.clear()
        nb = array_size(blocks)
        n = 0
        for ib in range(nb):
            if any_type(array_data(blocks) + 16 * ib) != L.t_block:
                return None  # a dataflow block: the full conversion places its storages
            arr = obj_field(any_obj(array_data(blocks) + 16 * ib), L.o_block_bindings)
            if arr == NULL or obj_type(arr) != K_ARRAY:
                return None
            n += array_size(arr)
        self.reset_vars(n)
        arrays = []
        first_block = self.n_blocks
        for ib in range(nb):
            arr = obj_field(any_obj(array_data(blocks) + 16 * ib), L.o_block_bindings)
            arrays.append(<size_t>arr)
            bid = self.n_blocks
            self.n_blocks += 1
            data = array_data(arr)
            n = array_size(arr)
            step0 = self.step + 1
            self.at_block = ib
            for i in range(n):
                self.at_binding = i
                b = any_obj(data + 16 * i)
                if any_type(data + 16 * i) == L.t_binding:
                    value = obj_field(b, L.o_b_value)
                elif any_type(data + 16 * i) == L.t_match_cast:
                    value = obj_field(b, L.o_mc_value)
                    if value == NULL or obj_type(value) == L.t_call:
                        return None  # a cast call: uses never released, or a malformed allocation
                    match_cast = True
                else:
                    return None
                var = obj_field(b, L.o_b_var)  # MatchCast's var too (Layout checks the offset)
                if var == NULL or obj_type(var) != L.t_var or value == NULL:
                    return None
                self.step = step0 + i
                vt = obj_type(value)
                if vt != L.t_call:
                    s = self.value_tokens(value)
                    if s == DECLINE:
                        return None
                    if s != NONE:
                        self.var_set(<size_t>var, s)
                    continue
                op = obj_field(value, L.o_call_op)
                args = obj_field(value, L.o_call_args)
                if op == NULL or args == NULL or obj_type(args) != K_ARRAY:
                    return None
                if <size_t>op == self.op_alloc:
                    info = self.alloc_info(arr, i, var, value)
                    if info is None:
                        return None
                    t = self.W._new_token(info, <size_t>b, bid, i, self.step)
                    self.tok_block.push_back(bid)
                    self.discarded.push_back(0)
                    self.var_set(<size_t>var, t)
                    continue
                ot = obj_type(op)
                if ot == L.t_op:
                    found = False
                    for j in range(self.sharing.size()):
                        if self.sharing[j] == <size_t>op:
                            found = True
                            break
                    if found:
                        if self.share_first(var, args):
                            return None
                        continue
                    if <size_t>op == self.op_call_tir_dyn:
                        if self.use_args(args, bid):
                            return None
                    elif self.discard_args(args):
                        return None
                elif ot == L.t_global_var:
                    git = self.gvars.find(<size_t>op)
                    if git == self.gvars.end():
                        return None  # not the module's GlobalVar object: the full conversion
                    if (self.use_args(args, bid) if deref(git).second else self.discard_args(args)):
                        return None
                elif ot == L.t_extern_func:
                    symbol = read_string(op + L.o_extern_symbol)
                    if symbol is None:
                        return None
                    if symbol == RESHAPE_PACKED:  # shares its first argument's storage
                        if self.share_first(var, args):
                            return None
                        continue
                    if self.use_args(args, bid):
                        return None
                else:
                    return None
        if untyped and match_cast:
            return None
        # the result's tokens escape
        self.at_block = nb
        s = self.value_of_result(seq)
        if s == DECLINE:
            return None
        self.discard(s)
        return <size_t>seq, <size_t>blocks, arrays, first_block, <size_t>ty

    cdef int64_t value_tokens(self, const char* value) except? DECLINE:
        """The message of a binding's value that is not a call (a variable, a tuple, a
        get-item, a leaf)."""
        cdef FFIAny a
        set_obj(&a, <void*>value)
        return self.tokens_of(<const char*>&a)

    cdef int64_t value_of_result(self, const char* seq) except? DECLINE:
        """The message of a ``SeqExpr``'s result."""
        cdef FFIAny a
        cdef const char* body = obj_field(seq, self.L.o_seq_body)
        if body == NULL:
            return DECLINE
        set_obj(&a, <void*>body)
        return self.tokens_of(<const char*>&a)


# ------------------------------------------------------------------------------ rewrite
cdef void* storage_binding(Layout L, Keep K, const char* alloc_args, void* shape, void* dtype, void* any_ty,
                           void* op, Py_ssize_t k) except NULL:
    """``storage<k> = op(shape, device, scope, dtype)`` of type ``any_ty``, the device and scope
    (and ``dtype`` when NULL) those of the allocation whose argument array is
    ``alloc_args``."""
    cdef char name[32]
    cdef FFIAny cargs[4]
    cdef const char* a = array_data(alloc_args)
    if k == 0:
        snprintf(name, 32, "storage")
    else:
        snprintf(name, 32, "storage%zd", k)
    set_obj(&cargs[0], shape)
    cargs[1] = (<const FFIAny*>(a + 32))[0]
    cargs[2] = (<const FFIAny*>(a + 48))[0]
    if dtype != NULL:
        set_obj(&cargs[3], dtype)
    else:
        cargs[3] = (<const FFIAny*>(a + 16))[0]
    cdef void* var = new_var(K, name, any_ty)
    return new_binding(K, <const char*>var,
                       new_call(K, any_ty, op, cargs, 4, NULL, handle(CTOR_EMPTY_ARRAY)))


cdef class PlannedModule:
    """What the rewrite of every function needs of the module's plan (the planned tokens in
    program order, the storages, the constants the new bindings share), filled once by
    :func:`memcore_py.tvm.spbm_extract.static_plan_block_memory_extracted`; the rewrite of
    each function reads it and records the storages it emits."""
    cdef list tok_block         # block id of each planned token
    cdef list tok_index         # its position in the block
    cdef list tok_binding       # the address of its allocation binding
    cdef list tok_storage       # its storage
    cdef object tok_offset_imm  # list: address of each token's offset IntImm (0: offset 0); None: all 0
    cdef list storage_first     # the first token of each storage
    cdef list storage_shape     # the address of each storage's R.shape([bytes])
    cdef list storage_dtype     # each storage's dtype constant address (0: its first allocation's)
    cdef list storage_var       # the address of each storage's variable, 0 until emitted (filled here)
    cdef size_t zero            # the offset IntImm 0
    cdef size_t any_ty          # an AnyType (a storage's type)
    cdef size_t op_alloc_storage, op_alloc_tensor, op_ensure_zero_offset
    cdef bint views             # reach an allocation at a non-zero offset through ensure_zero_offset
    cdef public Py_ssize_t n_storages  # storages emitted so far in the module (the next one's name)

    def __init__(self, *, list tok_block, list tok_index, list tok_binding, list tok_storage, tok_offset_imm,
                 list storage_first, list storage_shape, list storage_dtype, size_t zero, size_t any_ty,
                 size_t op_alloc_storage, size_t op_alloc_tensor, size_t op_ensure_zero_offset, bint views):
        n_tok, n_sto = len(tok_block), len(storage_first)
        if (len(tok_index) != n_tok or len(tok_binding) != n_tok or len(tok_storage) != n_tok
                or (tok_offset_imm is not None and len(tok_offset_imm) != n_tok)):
            raise ValueError("PlannedModule: the token lists must have one entry per token")
        if len(storage_shape) != n_sto or len(storage_dtype) != n_sto:
            raise ValueError("PlannedModule: the storage lists must have one entry per storage")
        self.tok_block, self.tok_index, self.tok_binding = tok_block, tok_index, tok_binding
        self.tok_storage, self.tok_offset_imm = tok_storage, tok_offset_imm
        self.storage_first, self.storage_shape, self.storage_dtype = storage_first, storage_shape, storage_dtype
        self.storage_var = [0] * n_sto
        self.zero, self.any_ty = zero, any_ty
        self.op_alloc_storage, self.op_alloc_tensor = op_alloc_storage, op_alloc_tensor
        self.op_ensure_zero_offset = op_ensure_zero_offset
        self.views = views and tok_offset_imm is not None
        self.n_storages = 0


def rewrite_function(Layout L, Keep K, PlannedModule P, list arrays, Py_ssize_t first_block, Py_ssize_t t0,
                     Py_ssize_t t1):
    """Rebuild the blocks of one function holding planned allocations (module docstring).

    Parameters
    ----------
    L : Layout
    K : Keep
        Owns every object built.
    P : PlannedModule
        The module's plan; the storages emitted here are recorded in it.
    arrays : list of int
        The bindings ``Array`` of each block of the function (:meth:`Scan.function`'s).
    first_block : int
        The block id of its first block.
    t0, t1 : int
        The function's planned tokens are ``t0 .. t1 - 1`` of ``P``'s.

    Returns
    -------
    list
        ``[(block index in the function, new block address), ...]``.
    """
    cdef void* op_storage = <void*>P.op_alloc_storage
    cdef void* op_alloc = <void*>P.op_alloc_tensor
    cdef void* op_view = <void*>P.op_ensure_zero_offset
    cdef list tok_block = P.tok_block, tok_index = P.tok_index, tok_binding = P.tok_binding
    cdef list tok_storage = P.tok_storage, storage_var = P.storage_var
    tok_offset_imm = P.tok_offset_imm
    cdef size_t zero = P.zero
    cdef void* empty = handle(CTOR_EMPTY_ARRAY)
    cdef Py_ssize_t t = t0, bid, pos, i, n, k
    cdef size_t off
    cdef const char* arr
    cdef const char* data
    cdef const char* b
    cdef const char* var
    cdef const char* call
    cdef const char* args
    cdef void* ty
    cdef void* raw
    cdef void* h
    cdef vector[FFIAny] items
    cdef FFIAny item
    cdef FFIAny nargs[5]
    out = []
    if t0 < 0 or t1 > len(tok_block) or t0 > t1:
        raise IndexError(f"rewrite_function: tokens [{t0}, {t1}) out of range")
    while t < t1:
        bid = tok_block[t]
        if bid < first_block or bid - first_block >= len(arrays):
            raise IndexError(f"rewrite_function: block {bid} is not one of the function's")
        arr = <const char*><size_t>arrays[bid - first_block]
        data = array_data(arr)
        n = array_size(arr)
        items.clear()
        items.reserve(n + 2 * (t1 - t))
        i = 0
        while t < t1 and <Py_ssize_t>tok_block[t] == bid:
            pos = tok_index[t]
            if pos < i or pos >= n or <size_t>tok_binding[t] != <size_t>any_obj(data + 16 * pos):
                raise IndexError(f"rewrite_function: token {t} is not at position {pos} of its block")
            while i < pos:
                items.push_back((<const FFIAny*>(data + 16 * i))[0])
                i += 1
            b = any_obj(data + 16 * pos)
            var = obj_field(b, L.o_b_var)
            call = obj_field(b, L.o_b_value)
            args = obj_field(call, L.o_call_args)
            k = tok_storage[t]
            if storage_var[k] == 0:
                if P.storage_first[k] != t:
                    raise AssertionError(f"internal error: storage {k} used before its first token")
                h = storage_binding(L, K, args, <void*><size_t>P.storage_shape[k], <void*><size_t>P.storage_dtype[k],
                                    <void*>P.any_ty, op_storage, P.n_storages)
                P.n_storages += 1
                storage_var[k] = <size_t>obj_field(<const char*>h, L.o_b_var)
                set_obj(&item, h)
                items.push_back(item)
            off = zero if tok_offset_imm is None else <size_t>tok_offset_imm[t]
            ty = <void*>obj_field(var, L.o_expr_ty)
            set_obj(&nargs[0], <void*><size_t>storage_var[k])
            set_obj(&nargs[1], <void*>(off if off else zero))  # 0: the shared offset 0
            nargs[2] = (<const FFIAny*>array_data(args))[0]
            nargs[3] = (<const FFIAny*>(array_data(args) + 16))[0]
            nargs[4] = (<const FFIAny*>(array_data(args) + 32))[0]
            if P.views and off:
                vname_obj = read_string(var + L.o_var_name)
                if vname_obj is None:
                    raise ValueError("rewrite_function: an allocation's variable has no name")
                raw_str = (<str>vname_obj + "_raw").encode()
                raw = new_var(K, <const char*>raw_str, ty)
                set_obj(&item, new_binding(K, <const char*>raw, new_call(K, ty, op_alloc, nargs, 5, NULL, empty)))
                items.push_back(item)
                set_obj(&nargs[0], raw)
                set_obj(&item, new_binding(K, var, new_call(K, ty, op_view, nargs, 1, NULL, empty)))
            else:
                set_obj(&item, new_binding(K, var, new_call(K, ty, op_alloc, nargs, 5, NULL, empty)))
            items.push_back(item)
            i = pos + 1
            t += 1
        while i < n:
            items.push_back((<const FFIAny*>(data + 16 * i))[0])
            i += 1
        h = new_with_array(K, CTOR_BLOCK, NULL, NULL, items.data(), <int64_t>items.size(), NULL, NULL, b"a block")
        out.append((bid - first_block, <size_t>h))
    return out
