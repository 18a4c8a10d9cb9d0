# cython: language_level=3
"""Compiled StaticPlanBlockMemory on the TVM objects themselves: the sizing of their
allocations and the writer of the plan (built by ``setup.py``; :mod:`memcore_py.tvm.
spbm_extract` drives it and declines to the full conversion what it declines).

Design
------
The Init rules are not here: :mod:`memcore_py.tvm._table_reader` reads the module into the
binding table and the one rule kernel (:class:`~memcore_py.analysis._storage_walk.InitRules`)
runs over it, recording into the same ``TokenRecorder`` as on memcore's IR, so that the same
``decode`` makes the same :class:`~memcore_py.analysis.storage_tokens.TokenProgram`. This
module holds what is specific to TVM's objects, with the planner between
(:func:`memcore_py.planning.allocate.plan_memory`, run by the caller):

1. :class:`TVMSizer`, what the kernel asks at each allocation: the :class:`TokenInfo` of an
   ``R.builtin.alloc_tensor(shape, dtype, device, scope)`` binding of a tensor type (no
   vdevice), the shape argument the type's dims (the same symbolic objects), the dtype
   argument the type's dtype (int, uint or float of 8 to 64 bits, bfloat16 or bool; one
   lane), an integer device and a string scope: ``bytes(dtype) * prod(dims)`` bytes when the
   dims are constant, the product as the fold kernel computes it
   (:func:`~memcore_py.ir._const_fold.product_fold`, which the full pass's
   :func:`~memcore_py.analysis.arith.tensor_bytes` calls too). A symbolic dim of a function with bounds (``tir_var_upper_bound`` ...)
   takes its upper bound from the caller's ``symbolic.dim_bound`` (the full pass's own rule,
   :func:`~memcore_py.analysis.arith.upper_bound_dim`), asked once per distinct dim expression
   in the function: the dims are interned by structure (operator, operands, a variable by its
   object, an integer by its value and type), so ``s * 17`` in twenty bindings, twenty objects,
   is one question. When every dim has a constant bound, the allocation is sized as a
   constant one. Any other symbolic shape is sized by the caller's ``symbolic`` (the full
   pass's own sizing of the upper-bounded shape, once per distinct type in a function). Any
   other allocation declines (None), and the caller runs the full conversion, which checks
   it.

2. :func:`emit_storage` and :func:`rewrite_block` write the plan, driven by
   :mod:`memcore_py.tvm.spbm_extract`, which decides where each storage goes (the full
   rewriter's emission rule, :mod:`memcore_py.planning.emission`) and in which order the
   storages are named: ``emit_storage`` binds storage ``k`` as ``storage<k> =
   R.memory.alloc_storage(R.shape([bytes]), device, scope, dtype)`` with the device, scope and
   (unless the arena's dtype differs) dtype objects of its first allocation;
   ``rewrite_block`` rebuilds one block: the storages emitted there placed before their
   positions, each planned allocation replaced by ``R.memory.alloc_tensor(storage, offset,
   shape, dtype, device)`` of its own arguments (arena mode at a non-zero offset: ``<name>_raw``
   then ``R.memory.ensure_zero_offset``), named and typed as the full rewrite names and types
   them (:mod:`memcore_py.transform._alloc_rewrite`), a rewritten ``If`` binding in place of
   the old one, a dataflow block rebuilt as one. The other bindings stay the objects they were.

Reads go through the checked :class:`~memcore_py.tvm._ffi_reader.Layout`: an object's fields
are read only after its type index matched. Objects built here are owned by the caller's
``Keep``; variables are keyed by address (compared, never dereferenced as Python objects).
"""
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from memcore_py.ir._names cimport numbered_name, raw_name
from libcpp.map cimport map
from libcpp.pair cimport pair
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector
from cython.operator cimport dereference as deref

from memcore_py.analysis._binding_table cimport BindingTable
from memcore_py.analysis._storage_walk cimport Sizer, TokenRecorder
from memcore_py.ir._const_fold cimport FOLD_OVERFLOW, product_fold
from memcore_py.ir._int_bound cimport N_IMM, N_VAR, IntNode, bound_nodes, saturate
from memcore_py.tvm._ffi_abi cimport (
    FFIAny, K_ARRAY, K_DATATYPE, K_INT, K_OBJECT_BEGIN, K_SMALL_STR, any_obj, any_type, array_data, array_size, obj_field, obj_type,
)
from memcore_py.tvm._ffi_reader cimport (
    Layout, const_dim, dtype_name, element_bytes, exact_alloc, intern_dim, packed_dtype, read_string,
)
from memcore_py.tvm._ffi_writer cimport (
    CTOR_BLOCK, CTOR_DFBLOCK, CTOR_EMPTY_ARRAY, Keep, handle, new_binding, new_call, new_var, new_with_array, set_obj,
)

from memcore_py.ir.memo import MEMO
from memcore_py.ir.prim import IntImm

cdef enum:
    MAX_TOKEN_DIMS = 64  # the most dims of an allocation sized here (more: the full conversion)

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


cdef int32_t encode_dim(Layout L, const char* e, dict var_ranges, object var_bound, vector[IntNode]& out,
                        int depth) except -2:
    """Append the nodes of the PrimExpr ``e`` to ``out`` in post-order (``memcore_py/ir/
    _int_bound.pyx``'s encoding): an ``IntImm``, a variable (its range ``var_bound(name)``,
    kept in ``var_ranges`` by address) or a binary node (``BINARY_PRIM_NODES``) of such
    parts; its index, or -1 for anything else or deeper than any shape arithmetic."""
    cdef int32_t ti, x, y
    cdef const char* val
    cdef IntNode nd
    cdef int k
    if e == NULL or depth > 64:
        return -1
    ti = obj_type(e)
    nd.a = nd.b = -1
    nd.v0 = nd.v1 = 0
    if ti == L.t_int_imm:
        val = e + L.o_imm_value
        if any_type(val) != K_INT:
            return -1
        nd.kind = N_IMM
        nd.v0 = saturate((<const int64_t*>(val + 8))[0])
    elif ti == L.t_var:
        r = var_ranges.get(<size_t>e)
        if r is None:
            name = read_string(e + L.o_var_name)
            if name is None:
                return -1
            lo, hi = var_bound(name)
            r = var_ranges[<size_t>e] = (saturate(lo), saturate(hi))
        nd.kind = N_VAR
        nd.v0, nd.v1 = r
    else:
        for k in range(7):
            if ti == L.t_bin[k]:
                break
        else:
            return -1
        x = encode_dim(L, obj_field(e, L.o_bin_a), var_ranges, var_bound, out, depth + 1)
        if x < 0:
            return -1
        y = encode_dim(L, obj_field(e, L.o_bin_b), var_ranges, var_bound, out, depth + 1)
        if y < 0:
            return -1
        nd.kind, nd.a, nd.b = 2 + k, x, y
    out.push_back(nd)
    return <int32_t>out.size() - 1


def named_dims(Layout L, size_t dims):
    """``(key, {name: variable address})`` of the dims ``Array`` at ``dims``: the key is the
    dims' structure (``intern_dim``, its variables in their order of first occurrence) with
    the variables' names, equal for dims a reader reads into equal memcore expressions. None
    when a dim has no structural key, or a variable has no name or shares it with another.

    Raises
    ------
    ValueError
        ``dims`` is not an ``ffi.Array``.
    """
    cdef const char* a = <const char*>dims
    cdef Py_ssize_t i
    cdef vector[int64_t] key
    cdef vector[size_t] var_order
    if a == NULL or obj_type(a) != K_ARRAY:
        raise ValueError("named_dims: not an ffi.Array")
    for i in range(array_size(a)):
        key.push_back(-1)  # a dim's start
        if (any_type(array_data(a) + 16 * i) < K_OBJECT_BEGIN
                or not intern_dim(L, any_obj(array_data(a) + 16 * i), key, 0, &var_order)):
            return None
    names = {}
    for i in range(<Py_ssize_t>var_order.size()):
        name = read_string(<const char*>var_order[i] + L.o_var_name)
        if not name or name in names:
            return None
        names[name] = var_order[i]
    return (tuple(key), tuple(names)), names


cdef class TVMSizer(Sizer):
    """The sizing of the allocations of TVM's objects the Init rule kernel asks for
    (:class:`~memcore_py.analysis._storage_walk.Sizer`): the :class:`TokenInfo` of an
    ``R.builtin.alloc_tensor`` binding read in place (module docstring), recorded in the
    kernel's ``TokenRecorder``; the token rows record the binding's address.

    Parameters
    ----------
    L : Layout
    recorder : TokenRecorder
        Its ``infos`` receive the new :class:`TokenInfo` s.
    info_cls : type
        ``TokenInfo``.
    """

    cdef Layout L
    cdef TokenRecorder W
    cdef dict scope_ids, sym_infos
    cdef list infos_of_function, scope_names
    cdef public object symbolic
    """``symbolic(dims Array address, dtype name)``: ``(const bytes, bytes)`` of an allocation of
    a symbolic shape in the current function (checked here), or None to decline;
    ``symbolic.bounded``: the current function has bounds; ``symbolic.dim_bound(address)``:
    the constant upper bound of the dim PrimExpr at ``address``, or -1. None: decline every
    such allocation."""
    cdef unordered_map[size_t, int64_t] scope_of_imm   # a StringImm's address -> its scope id
    cdef vector[uint64_t] small_keys                    # an inline string's length and bytes
    cdef vector[int64_t] small_ids                      # ... -> its scope id
    cdef map[pair[pair[int64_t, int64_t], pair[int64_t, int64_t]], Py_ssize_t] info_index
    cdef map[vector[int64_t], int64_t] dim_bounds      # an interned dim -> its constant upper bound, or -1
    cdef dict var_ranges                                # a variable's address -> its (lo, hi) in this function
    cdef vector[IntNode] dim_nodes                      # scratch: the dim being bounded, encoded
    cdef vector[int64_t] node_lo, node_hi, node_coeff, node_base  # scratch: the kernel's results
    cdef vector[int64_t] dim_key                        # scratch: the dim being interned
    cdef bint bounded                                   # the current function has bounds
    cdef type info_cls
    cdef Py_ssize_t func_idx

    def __init__(self, Layout L, TokenRecorder recorder, type info_cls):
        self.L = L
        self.W = recorder
        self.scope_ids = {}
        self.scope_names = []
        self.info_cls = info_cls
        self.symbolic = None
        self.func_idx = -1

    def begin_function(self, Py_ssize_t func_idx):
        """Start the ``func_idx``-th function (in module order): TokenInfos are per function."""
        self.func_idx = func_idx
        self.sym_infos = {}
        self.infos_of_function = []
        self.info_index.clear()
        self.dim_bounds.clear()
        self.var_ranges = {}
        self.bounded = self.symbolic is not None and bool(self.symbolic.bounded)
        self.started = True

    cdef object site(self, BindingTable T, int64_t item):
        """The allocation binding's address."""
        return T.i_ref[item]

    cdef object info(self, BindingTable T, int64_t item):
        """The TokenInfo of the allocation binding at ``item``, or None to decline it."""
        cdef const char* b = <const char*>T.i_ref[item]
        cdef const char* arr = <const char*>T.b_ref[T.i_block[item]]
        if b == NULL or arr == NULL or obj_type(b) != self.L.t_binding:
            return None
        return self.alloc_info(arr, T.i_pos[item], obj_field(b, self.L.o_b_var), obj_field(b, self.L.o_b_value))

    # ------------------------------------------------------------------ allocations
    cdef object alloc_info(self, const char* arr, int64_t pos, const char* var, const char* call):
        """The :class:`TokenInfo` of the allocation binding at position ``pos`` of the bindings
        ``Array`` at ``arr`` (of ``var`` to ``call``) when it is handled here (module
        docstring: the exactly typed allocations, ``_ffi_reader.exact_alloc``), or None."""
        cdef Layout L = self.L
        cdef const char* e
        cdef const char* dims
        cdef const char* arg_dims
        cdef const char* a
        cdef const char* v
        cdef int64_t n, i, d, dtype, elem, nbytes, device, scope
        cdef bint constant = True  # every dim constant or of a constant upper bound so far
        cdef int64_t values[MAX_TOKEN_DIMS]  # each dim's constant or constant upper bound
        cdef uint8_t is_const[MAX_TOKEN_DIMS]
        cdef Py_ssize_t tail[MAX_TOKEN_DIMS]
        cdef Py_ssize_t head_dim
        cdef map[pair[pair[int64_t, int64_t], pair[int64_t, int64_t]], Py_ssize_t].iterator it
        n = exact_alloc(L, var, call, &dtype, &arg_dims, &dims)
        if n < 0 or n > MAX_TOKEN_DIMS:
            return None
        elem = element_bytes(dtype)
        if elem < 0:
            return None
        sym_dims = None
        for i in range(n):
            e = array_data(dims) + 16 * i
            d = const_dim(L, e)
            if d >= 0:
                if sym_dims is not None:
                    sym_dims.append(d)
            else:  # a symbolic dim, the same object in the type and the shape argument
                if sym_dims is None:
                    sym_dims = [const_dim(L, array_data(dims) + 16 * k) for k in range(i)]
                sym_dims.append(-<int64_t><size_t>any_obj(e) - 1)  # negative: an object's address
                d = self.dim_bound(any_obj(e)) if constant and self.bounded else -1
                if d < 0:
                    constant = False
            values[i] = d
            is_const[i] = 1
        # device and scope (the dtype and the argument kinds were checked above)
        a = array_data(obj_field(call, L.o_call_args))
        v = any_obj(a + 32) + L.o_imm_value
        device = (<const int64_t*>(v + 8))[0]
        scope = self.scope_id(any_obj(a + 48))
        if scope < 0:
            return None
        if not constant:
            return self.symbolic_info(dims, (dtype, device, scope, tuple(sym_dims)))
        # the bytes of a token of constant (upper-bounded) shape: the fold kernel's constant
        if product_fold(elem, values, is_const, n, &nbytes, &head_dim, tail) == FOLD_OVERFLOW:
            return None  # over int64: the full conversion reports it
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

    cdef int64_t dim_bound(self, const char* e) except -2:
        """The constant upper bound of the symbolic dim PrimExpr ``e`` in the current function
        (``symbolic.dim_bound``, asked once per interned dim), or -1."""
        cdef map[vector[int64_t], int64_t].iterator it
        self.dim_key.clear()
        if not intern_dim(self.L, e, self.dim_key, 0):
            return -1
        it = self.dim_bounds.find(self.dim_key)
        if it != self.dim_bounds.end():
            return deref(it).second
        cdef int64_t bound = self.kernel_bound(e)
        if bound == -2:  # not bounded by a constant: the symbolic maximum, the full pass's rule
            bound = self.symbolic.dim_bound(<size_t>e)
        if bound < 0:
            bound = -1
        self.dim_bounds[self.dim_key] = bound
        return bound

    cdef int64_t kernel_bound(self, const char* e) except -3:
        """The constant upper bound of the dim ``e`` by the bound kernel
        (``memcore_py/ir/_int_bound.pyx``, what :func:`~memcore_py.analysis.arith.
        upper_bound_dim` asks first), -1 when negative; -2 when the kernel finds none or
        ``e`` is not encoded (then the caller asks the full rule)."""
        cdef Py_ssize_t n
        cdef int64_t hi
        self.dim_nodes.clear()
        if encode_dim(self.L, e, self.var_ranges, self.symbolic.bounds.var_bound, self.dim_nodes, 0) < 0:
            return -2
        n = self.dim_nodes.size()
        self.node_lo.resize(n)
        self.node_hi.resize(n)
        self.node_coeff.resize(n)
        self.node_base.resize(n)
        bound_nodes(self.dim_nodes.data(), n, self.node_lo.data(), self.node_hi.data(), self.node_coeff.data(),
                    self.node_base.data())
        hi = self.node_hi[n - 1]
        if hi == INT64_MAX:
            return -2
        return hi if hi >= 0 else -1

    cdef object symbolic_info(self, const char* dims, tuple key):
        """The :class:`TokenInfo` of an allocation of a symbolic shape (``dims``: its type's dims
        ``Array``; ``key``: its dtype, device, scope and dims, a symbolic one by its object),
        sized by ``symbolic`` (once per key and function); None when that declines."""
        info = self.sym_infos.get(key)
        if info is not None:
            return info
        if self.symbolic is None:
            return None
        dtype = dtype_name(key[0])
        sized = self.symbolic(<size_t>dims, dtype)
        if sized is None:
            return None
        info = tuple.__new__(self.info_cls, (sized[0], sized[1], dtype, self.scope_names[key[2]], key[1],
                                             self.func_idx, None, len(self.W.infos)))
        self.W.infos.append(info)
        self.sym_infos[key] = info
        return info

    cdef int64_t scope_id(self, const char* imm) except? -2:
        """A number for the string of the ``StringImm`` at ``imm`` (equal strings, equal
        numbers), or -1 when it holds no string."""
        cdef unordered_map[size_t, int64_t].iterator it
        cdef uint32_t n
        cdef const char* v = imm + self.L.o_str_value
        cdef size_t j
        cdef uint64_t small = 0
        cdef bint inline_str = any_type(v) == K_SMALL_STR
        if inline_str:
            # an inline string of at most 7 bytes ("global", "local"): its length and bytes
            # are its key
            n = (<const uint32_t*>(v + 4))[0]
            if n < 8:
                small = ((<const uint64_t*>(v + 8))[0] & ((1ULL << (8 * n)) - 1)) | (<uint64_t>n << 56)
            else:
                inline_str = False
        if inline_str:
            for j in range(self.small_keys.size()):
                if self.small_keys[j] == small:
                    return self.small_ids[j]
        else:
            it = self.scope_of_imm.find(<size_t>imm)
            if it != self.scope_of_imm.end():
                return deref(it).second
        text = read_string(v)
        if text is None:
            return -1
        k = self.scope_ids.get(text)
        if k is None:
            k = self.scope_ids[text] = len(self.scope_names)
            self.scope_names.append(text)
        if inline_str:
            self.small_keys.push_back(small)
            self.small_ids.push_back(k)
        else:
            self.scope_of_imm[<size_t>imm] = k
        return k


# ------------------------------------------------------------------------------ rewrite
cdef void* storage_binding(Layout L, Keep K, const char* alloc_args, void* shape, void* dtype, void* any_ty,
                           void* op, Py_ssize_t k, bint dataflow) except NULL:
    """``storage<k> = op(shape, device, scope, dtype)`` of type ``any_ty`` (a ``DataflowVar``
    when ``dataflow``), the device and scope (and ``dtype`` when NULL) those of the allocation
    whose argument array is ``alloc_args``."""
    cdef bytes name = numbered_name("storage", k).encode()
    cdef FFIAny cargs[4]
    cdef const char* a = array_data(alloc_args)
    set_obj(&cargs[0], shape)
    cargs[1] = (<const FFIAny*>(a + 32))[0]
    cargs[2] = (<const FFIAny*>(a + 48))[0]
    if dtype != NULL:
        set_obj(&cargs[3], dtype)
    else:
        cargs[3] = (<const FFIAny*>(a + 16))[0]
    cdef void* var = new_var(K, name, any_ty, dataflow)
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
    cdef list storage_binding   # the address of each storage's binding, 0 until emitted (filled here)
    cdef list storage_dataflow  # each storage's variable is a DataflowVar (its emission site's)
    cdef size_t zero            # the offset IntImm 0
    cdef size_t any_ty          # an AnyType (a storage's type)
    cdef size_t op_alloc_storage, op_alloc_tensor, op_ensure_zero_offset
    cdef bint views             # reach an allocation at a non-zero offset through ensure_zero_offset
    cdef public Py_ssize_t n_storages  # storages emitted so far in the module (the next one's name)

    def __init__(self, *, list tok_block, list tok_index, list tok_binding, list tok_storage, tok_offset_imm,
                 list storage_first, list storage_shape, list storage_dtype, list storage_dataflow, size_t zero,
                 size_t any_ty, size_t op_alloc_storage, size_t op_alloc_tensor, size_t op_ensure_zero_offset,
                 bint views):
        n_tok, n_sto = len(tok_block), len(storage_first)
        if (len(tok_index) != n_tok or len(tok_binding) != n_tok or len(tok_storage) != n_tok
                or (tok_offset_imm is not None and len(tok_offset_imm) != n_tok)):
            raise ValueError("PlannedModule: the token lists must have one entry per token")
        if len(storage_shape) != n_sto or len(storage_dtype) != n_sto or len(storage_dataflow) != n_sto:
            raise ValueError("PlannedModule: the storage lists must have one entry per storage")
        self.tok_block, self.tok_index, self.tok_binding = tok_block, tok_index, tok_binding
        self.tok_storage, self.tok_offset_imm = tok_storage, tok_offset_imm
        self.storage_first, self.storage_shape, self.storage_dtype = storage_first, storage_shape, storage_dtype
        self.storage_var = [0] * n_sto
        self.storage_binding = [0] * n_sto
        self.storage_dataflow = storage_dataflow
        self.zero, self.any_ty = zero, any_ty
        self.op_alloc_storage, self.op_alloc_tensor = op_alloc_storage, op_alloc_tensor
        self.op_ensure_zero_offset = op_ensure_zero_offset
        self.views = views and tok_offset_imm is not None
        self.n_storages = 0


cdef size_t storage_at(Layout L, Keep K, PlannedModule P, Py_ssize_t k) except 0:
    """The address of the binding of storage ``k`` of ``P``, made at the first call (named after
    the storages made so far in the module: ``storage``, ``storage1``, ...; a ``DataflowVar``
    when its emission site says so), its device and scope those of its first allocation."""
    if k < 0 or k >= len(P.storage_first):
        raise IndexError(f"emit_storage: storage {k} out of range")
    cdef size_t made = P.storage_binding[k]
    if made:
        return made
    cdef const char* b = <const char*><size_t>P.tok_binding[P.storage_first[k]]
    cdef const char* args = obj_field(obj_field(b, L.o_b_value), L.o_call_args)
    cdef void* h = storage_binding(L, K, args, <void*><size_t>P.storage_shape[k], <void*><size_t>P.storage_dtype[k],
                                   <void*>P.any_ty, <void*>P.op_alloc_storage, P.n_storages,
                                   bool(P.storage_dataflow[k]))
    P.n_storages += 1
    P.storage_var[k] = <size_t>obj_field(<const char*>h, L.o_b_var)
    P.storage_binding[k] = <size_t>h
    return <size_t>h


def emit_storage(Layout L, Keep K, PlannedModule P, Py_ssize_t k):
    """Make the binding of storage ``k`` now (:func:`storage_at`): the caller names storages in
    the order the full rewriter visits their emission sites (:mod:`memcore_py.planning.
    emission`), which :func:`rewrite_block` follows by itself within a block; a storage
    emitted before an ``If`` is made before the storages inside its branches."""
    storage_at(L, K, P, k)


def rewrite_block(Layout L, Keep K, PlannedModule P, size_t bindings, list positions, list tokens, dict emit,
                  dict replaced, bint dataflow):
    """A new block of the bindings ``Array`` at ``bindings`` (module docstring).

    Parameters
    ----------
    L : Layout
    K : Keep
        Owns every object built.
    P : PlannedModule
        The module's plan; the storages the allocations name are emitted already.
    bindings : int
        The address of the block's ``Array[Binding]``.
    positions, tokens : list of int
        The positions of the block's planned allocations, increasing, and their tokens.
    emit : dict
        Position -> the storages emitted right before it, in order (each made here unless
        :func:`emit_storage` made it already).
    replaced : dict
        Position -> the address of the binding replacing the one there (an ``If`` whose
        branches were rewritten).
    dataflow : bool
        Build a ``DataflowBlock`` (the raw allocations of views are then ``DataflowVar`` s).

    Returns
    -------
    int
        The new block's address.
    """
    cdef void* op_alloc = <void*>P.op_alloc_tensor
    cdef void* op_view = <void*>P.op_ensure_zero_offset
    cdef list tok_binding = P.tok_binding, tok_storage = P.tok_storage, storage_var = P.storage_var
    tok_offset_imm = P.tok_offset_imm
    cdef size_t zero = P.zero
    cdef void* empty = handle(CTOR_EMPTY_ARRAY)
    cdef const char* arr = <const char*>bindings
    cdef Py_ssize_t n, i, j = 0, n_alloc = len(positions), pos, t, k
    cdef size_t off
    cdef const char* data
    cdef const char* b
    cdef const char* var
    cdef const char* call
    cdef const char* args
    cdef void* ty
    cdef void* raw
    cdef vector[FFIAny] items
    cdef FFIAny item
    cdef FFIAny nargs[5]
    if arr == NULL or obj_type(arr) != K_ARRAY:
        raise ValueError("rewrite_block: not a bindings array")
    if len(tokens) != n_alloc:
        raise ValueError("rewrite_block: one token per position")
    data = array_data(arr)
    n = array_size(arr)
    items.reserve(n + 2 * n_alloc + len(emit))
    for i in range(n):
        if emit:
            pre = emit.get(i)
            if pre is not None:
                for k in <list>pre:
                    set_obj(&item, <void*>storage_at(L, K, P, k))
                    items.push_back(item)
        if replaced:
            h = replaced.get(i)
            if h is not None:
                set_obj(&item, <void*><size_t>h)
                items.push_back(item)
                continue
        if j >= n_alloc or <Py_ssize_t>positions[j] != i:
            items.push_back((<const FFIAny*>(data + 16 * i))[0])
            continue
        t = tokens[j]
        j += 1
        if t < 0 or t >= len(tok_binding) or <size_t>tok_binding[t] != <size_t>any_obj(data + 16 * i):
            raise IndexError(f"rewrite_block: token {t} is not at position {i} of its block")
        b = any_obj(data + 16 * i)
        var = obj_field(b, L.o_b_var)
        call = obj_field(b, L.o_b_value)
        args = obj_field(call, L.o_call_args)
        k = tok_storage[t]
        if storage_var[k] == 0:
            raise AssertionError(f"internal error: storage {k} used before its emission site")
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
                raise ValueError("rewrite_block: an allocation's variable has no name")
            raw_str = raw_name(<str>vname_obj).encode()
            raw = new_var(K, <const char*>raw_str, ty, dataflow)
            set_obj(&item, new_binding(K, <const char*>raw, new_call(K, ty, op_alloc, nargs, 5, NULL, empty)))
            items.push_back(item)
            set_obj(&nargs[0], raw)
            set_obj(&item, new_binding(K, var, new_call(K, ty, op_view, nargs, 1, NULL, empty)))
        else:
            set_obj(&item, new_binding(K, var, new_call(K, ty, op_alloc, nargs, 5, NULL, empty)))
        items.push_back(item)
    if j != n_alloc:
        raise IndexError(f"rewrite_block: position {positions[j]} is not in the block")
    return <size_t>new_with_array(K, CTOR_DFBLOCK if dataflow else CTOR_BLOCK, NULL, NULL, items.data(),
                                  <int64_t>items.size(), NULL, NULL, b"a block")
