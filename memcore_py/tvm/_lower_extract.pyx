# cython: language_level=3
"""Compiled LowerAllocTensor of the allocations of exact type, on the TVM objects themselves
(built by ``setup.py``; :mod:`memcore_py.tvm.lower_alloc_extract` drives it and lowers what it
declines with memcore's own lowerer).

Design
------
LowerAllocTensor (:mod:`memcore_py.transform.lower_alloc_tensor`) turns each
``v = R.builtin.alloc_tensor(shape, dtype, device, scope)`` into::

    storage<k> = R.memory.alloc_storage(R.shape([bytes]), device, scope, R.dtype("uint8"))
    v = R.memory.alloc_tensor(storage<k>, 0, shape, dtype, device)

For an allocation whose variable already has the exact type the lowered call gets (a tensor
type of those dims and dtype, no vdevice, a symbolic dim structurally equal in both; otherwise
TVM re-types the variable and every later use changes), that is arithmetic and three
constructors per binding: :func:`allocation_sizes` checks each allocation of a block and folds
``bytes`` (the dtype's bytes times the shape argument's dims, by TIR's constant folding: the
plan of ``memcore_py/ir/_const_fold.pyx``'s ``product_fold``, the one statement of that rule,
which :func:`~memcore_py.transform.lower_alloc_tensor.storage_bytes_expr` follows on memcore's
IR); a size that folds to a constant is a number, any other is handed to the caller, which
has :func:`symbolic_shape` build it of the dims' own objects with TVM's constructors. The
caller makes the ``R.shape([bytes])`` objects (a constant one shared across calls), and
:func:`lower_block` builds the block (the objects every lowered binding shares and the storage
count of the function: a :class:`FunctionLowering` per function):
the storage ``Var`` (a ``DataflowVar`` in a dataflow block) named as the lowerer names it
(``storage``, ``storage1``, ... per function: its ``NameTable``), the two calls, the old
bindings elsewhere. Everything the lowered bindings hold but the storage variable, the offset
and the size is the old call's own argument objects, the call's type the variable's.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t
from memcore_py.ir._const_fold cimport FOLD_OVERFLOW, product_fold
from memcore_py.ir._names cimport numbered_name
from libcpp.vector cimport vector

from memcore_py.tvm._ffi_abi cimport (
    FFIAny, K_ARRAY, K_DATATYPE, K_FUNCTION, K_INT, K_OBJECT_BEGIN, any_obj, any_type, array_data, array_size, obj_field, obj_type,
)
from memcore_py.tvm._ffi_reader cimport Layout, const_dim, dtype_name, element_bytes, exact_alloc, intern_dim, packed_dtype
from memcore_py.tvm._ffi_writer cimport (
    CTOR_ARRAY, CTOR_BLOCK, CTOR_DFBLOCK, CTOR_EMPTY_ARRAY, Keep, check_initialised, handle, make, new_binding, new_call, new_var,
    new_with_array, release, set_obj,
)


cdef enum:
    NOT_HERE = -1   # alloc_size: the allocation is not lowered here
    MAX_DIMS = 64   # the most dims of an allocation lowered here (more: the full pass)
    SYMBOLIC = -2   # alloc_size: lowered here, its size an expression of its symbolic dims


cdef int64_t alloc_size(Layout L, const char* b, const char** sym_dims, int64_t* elem) noexcept:
    """The storage bytes of the allocation binding ``b`` when it is lowered here and its
    bytes fold to a constant (LowerAllocTensor's product, folded by the one rule
    ``product_fold``); :data:`SYMBOLIC` (``sym_dims`` set to the shape argument's dims
    ``Array``, ``elem`` to its bytes per element) when it is lowered here and its bytes are
    an expression; :data:`NOT_HERE` otherwise (module docstring: the exactly typed
    allocations, ``_ffi_reader.exact_alloc``; a constant over int64)."""
    cdef const char* var = obj_field(b, L.o_b_var)
    cdef const char* dims
    cdef const char* ty_dims
    cdef int64_t n, i, dtype, head_value
    cdef Py_ssize_t head_dim, n_tail
    cdef int64_t values[MAX_DIMS]
    cdef uint8_t is_const[MAX_DIMS]
    cdef Py_ssize_t tail[MAX_DIMS]
    if var == NULL or (obj_type(var) != L.t_var and obj_type(var) != L.t_dfvar):
        return NOT_HERE
    n = exact_alloc(L, var, obj_field(b, L.o_b_value), &dtype, &dims, &ty_dims)
    if n < 0 or n > MAX_DIMS:
        return NOT_HERE
    elem[0] = element_bytes(dtype)
    if elem[0] < 0:
        return NOT_HERE
    for i in range(n):
        is_const[i] = any_type(array_data(dims) + 16 * i) == L.t_int_imm
        values[i] = const_dim(L, array_data(dims) + 16 * i) if is_const[i] else 0
    n_tail = product_fold(elem[0], values, is_const, n, &head_value, &head_dim, tail)
    if n_tail == FOLD_OVERFLOW:
        return NOT_HERE
    if head_dim < 0 and n_tail == 0:
        return head_value if head_value >= 0 else NOT_HERE  # a negative constant: the full pass
    sym_dims[0] = dims
    return SYMBOLIC


@cython.final
@cython.freelist(32)
cdef class SymbolicSize:
    """An allocation :func:`allocation_sizes` hands to the caller to size (a symbolic dim).
    Made only there."""
    cdef readonly size_t dims           # address of the shape argument's dims ``Array``
    cdef readonly str dtype             # the dtype's name (``"float32"``)
    cdef readonly int64_t elem          # the dtype's bytes per element
    cdef readonly object key            # a tuple, equal for dims that are structurally equal expressions of
                                        # the same variables; None when a dim has no key

    def __repr__(self):
        return f"SymbolicSize(dims={self.dims:#x}, dtype={self.dtype!r}, key={self.key})"


cdef inline SymbolicSize symbolic_size(size_t dims, str dtype, int64_t elem, key):
    cdef SymbolicSize r = SymbolicSize.__new__(SymbolicSize)
    r.dims, r.dtype, r.elem, r.key = dims, dtype, elem, key
    return r


def allocation_sizes(Layout L, size_t arr, list positions):
    """The storage size of each allocation at ``positions`` of the bindings ``Array`` at
    ``arr`` (``VarBinding`` s of ``R.builtin.alloc_tensor``): its bytes (an int) when its
    shape is constant, a :class:`SymbolicSize` when a dim is symbolic (the caller sizes it);
    None when one is not lowered here (module docstring)."""
    cdef const char* a = <const char*>arr
    cdef const char* data
    cdef const char* b
    cdef const char* dims = NULL
    cdef int64_t n, size, i, elem
    cdef vector[int64_t] key
    if a == NULL or obj_type(a) != K_ARRAY:
        raise ValueError("allocation_sizes: not an ffi.Array")
    data = array_data(a)
    n = array_size(a)
    out = []
    for p in positions:
        if not 0 <= p < n:
            raise ValueError(f"allocation_sizes: position {p} out of range [0, {n})")
        if any_type(data + 16 * <int64_t>p) != L.t_binding:
            return None
        b = any_obj(data + 16 * <int64_t>p)
        size = alloc_size(L, b, &dims, &elem)
        if size == NOT_HERE:
            return None
        if size == SYMBOLIC:
            v = any_obj(array_data(obj_field(obj_field(b, L.o_b_value), L.o_call_args)) + 16) + L.o_const_value
            key.clear()
            for i in range(array_size(dims)):
                if (any_type(array_data(dims) + 16 * i) < K_OBJECT_BEGIN
                        or not intern_dim(L, any_obj(array_data(dims) + 16 * i), key, 0)):
                    break
            else:
                out.append(symbolic_size(<size_t>dims, dtype_name(packed_dtype(v + 8)), elem, tuple(key)))
                continue
            out.append(symbolic_size(<size_t>dims, dtype_name(packed_dtype(v + 8)), elem, None))
        else:
            out.append(size)
    return out


#: the packed ``DLDataType`` of int64 (code 0, 64 bits, 1 lane): every dim's and size's dtype
cdef int64_t INT64_DTYPE = 0 | (64 << 8) | (1 << 16)


def symbolic_shape(Layout L not None, Keep K not None, SymbolicSize size not None, size_t ctor_int_imm,
                   size_t ctor_mul, size_t ctor_shape):
    """The address (owned by ``K``) of the ``R.shape([bytes])`` of an allocation
    :func:`allocation_sizes` handed over: LowerAllocTensor's product ``elem * d0 * d1 * ...``
    as TIR folds it (the plan of ``product_fold``, the one statement of that rule), built of
    the shape argument's own dim objects with TVM's constructors ``ir.IntImm``, ``prim.Mul``
    and ``relax.ShapeExpr`` (their function handles: ``ctor_*``, the caller's to keep valid).

    Raises
    ------
    ValueError
        ``size.dims`` is not an ``ffi.Array``, has more than ``MAX_DIMS`` dims, or the fold
        overflows (the caller then lowers the allocation with the full pass, which reports it);
        a ``ctor_*`` is not the address of an ``ffi.Function``.
    RuntimeError
        The compiled writer is not initialised (:func:`memcore_py.tvm._ffi_writer.init`).
    TVMConversionError
        A constructor failed (a ``ctor_*`` is the wrong function, a dim is not a ``PrimExpr``).
    """
    cdef const char* dims = <const char*>size.dims
    cdef const char* data
    cdef Py_ssize_t n, i, head_dim, n_tail
    cdef int64_t head_value
    cdef int64_t values[MAX_DIMS]
    cdef uint8_t is_const[MAX_DIMS]
    cdef Py_ssize_t tail[MAX_DIMS]
    cdef FFIAny cargs[3]
    cdef void* acc
    cdef void* h
    cdef size_t ctors[3]
    check_initialised("symbolic_shape")
    ctors[0], ctors[1], ctors[2] = ctor_int_imm, ctor_mul, ctor_shape
    for i in range(3):
        if ctors[i] == 0 or obj_type(<const char*>ctors[i]) != K_FUNCTION:
            raise ValueError(f"symbolic_shape: {('ctor_int_imm', 'ctor_mul', 'ctor_shape')[i]} is not the address "
                             "of an ffi.Function")
    if dims == NULL or obj_type(dims) != K_ARRAY:
        raise ValueError("symbolic_shape: the dims are not an ffi.Array")
    data = array_data(dims)
    n = array_size(dims)
    if n > MAX_DIMS:
        raise ValueError(f"symbolic_shape: more than {MAX_DIMS} dims")
    for i in range(n):
        is_const[i] = any_type(data + 16 * i) == L.t_int_imm
        values[i] = const_dim(L, data + 16 * i) if is_const[i] else 0
    n_tail = product_fold(size.elem, values, is_const, n, &head_value, &head_dim, tail)
    if n_tail == FOLD_OVERFLOW:
        raise ValueError("symbolic_shape: the constant part of the size exceeds int64")
    if head_dim < 0:
        cargs[0].type_index = K_DATATYPE
        cargs[0].small_len = 0
        cargs[0].value = INT64_DTYPE
        cargs[1].type_index = K_INT
        cargs[1].small_len = 0
        cargs[1].value = head_value
        set_obj(&cargs[2], NULL)
        acc = make(<void*>ctor_int_imm, cargs, 3, b"an IntImm")
    else:
        acc = NULL  # the head is a dim, an object of the shape argument
    try:
        for i in range(n_tail):
            if acc == NULL:
                cargs[0] = (<const FFIAny*>(data + 16 * head_dim))[0]
            else:
                set_obj(&cargs[0], acc)
            cargs[1] = (<const FFIAny*>(data + 16 * tail[i]))[0]
            set_obj(&cargs[2], NULL)
            h = make(<void*>ctor_mul, cargs, 3, b"a product")
            if acc != NULL:
                release(acc)
            acc = h
        if acc == NULL:  # the product is the head dim itself
            cargs[0] = (<const FFIAny*>(data + 16 * head_dim))[0]
        else:
            set_obj(&cargs[0], acc)
        h = make(handle(CTOR_ARRAY), cargs, 1, b"a shape's values")
    finally:
        if acc != NULL:
            release(acc)
    set_obj(&cargs[0], h)
    set_obj(&cargs[1], NULL)
    try:
        acc = make(<void*>ctor_shape, cargs, 2, b"a shape")
    finally:
        release(h)
    K.own(acc)
    return <size_t>acc


@cython.final
cdef class FunctionLowering:
    """What :func:`lower_block` needs of the function whose blocks it lowers: the objects every
    lowered binding shares (their addresses, the caller's to keep valid) and the storages named
    so far, which :func:`lower_block` advances. One per function.

    Parameters
    ----------
    uint8, zero, any_ty, op_storage, op_alloc : int
        Keyword-only: the fields of the same names.
    """
    cdef readonly size_t uint8          # address of an ``R.dtype("uint8")`` (every storage's dtype)
    cdef readonly size_t zero           # address of the offset ``IntImm`` 0
    cdef readonly size_t any_ty         # address of an ``AnyType`` (every storage's type)
    cdef readonly size_t op_storage     # address of the op ``relax.memory.alloc_storage``
    cdef readonly size_t op_alloc       # address of the op ``relax.memory.alloc_tensor``
    cdef readonly Py_ssize_t n_storages  # storages named so far in the function (the next one's name)

    def __init__(self, *, size_t uint8, size_t zero, size_t any_ty, size_t op_storage, size_t op_alloc):
        self.uint8, self.zero, self.any_ty = uint8, zero, any_ty
        self.op_storage, self.op_alloc = op_storage, op_alloc
        self.n_storages = 0

    def __repr__(self):
        return (f"FunctionLowering(uint8={self.uint8:#x}, zero={self.zero:#x}, any_ty={self.any_ty:#x}, "
                f"op_storage={self.op_storage:#x}, op_alloc={self.op_alloc:#x}, n_storages={self.n_storages})")


def lower_block(Layout L, Keep K, FunctionLowering F not None, size_t arr, list positions, list shapes, bint dataflow):
    """The address (owned by ``K``) of a new block of the bindings ``Array`` at ``arr`` with the
    allocations at ``positions`` lowered (module docstring; :func:`allocation_sizes` accepted
    them).

    Parameters
    ----------
    L : Layout
    K : Keep
        Owns every object built.
    F : FunctionLowering
        The function's shared objects; its ``n_storages`` advances by one per allocation.
    arr : int
        The address of the block's bindings ``Array``.
    positions : list of int
        The positions of the allocations, increasing.
    shapes : list of int
        The address of each allocation's ``R.shape([bytes])``.
    dataflow : bool
        A dataflow block (its storages are ``DataflowVar`` s).

    Returns
    -------
    int
        The new block's address.

    Raises
    ------
    ValueError
        ``arr`` is not an ``ffi.Array``, the lists differ in length, or a position is out of
        range, not increasing or not an allocation :func:`allocation_sizes` accepts (checked
        before anything is built; the addresses given are the caller's to keep valid)."""
    cdef const char* a = <const char*>arr
    cdef const char* data
    cdef const char* b
    cdef const char* args
    cdef const char* var
    cdef int64_t n, i = 0, p, elem
    cdef Py_ssize_t k
    cdef bytes name
    cdef FFIAny cargs[5]
    cdef FFIAny item
    cdef vector[FFIAny] items
    cdef void* storage
    cdef void* h
    cdef const char* dims
    cdef void* empty = handle(CTOR_EMPTY_ARRAY)
    cdef void* uint8 = <void*>F.uint8
    cdef void* zero = <void*>F.zero
    cdef void* any_ty = <void*>F.any_ty
    cdef void* op_storage = <void*>F.op_storage
    cdef void* op_alloc = <void*>F.op_alloc
    cdef Py_ssize_t n_storages = F.n_storages
    if a == NULL or obj_type(a) != K_ARRAY:
        raise ValueError("lower_block: not an ffi.Array")
    if len(shapes) != len(positions):
        raise ValueError(f"lower_block: {len(positions)} positions but {len(shapes)} shapes")
    data = array_data(a)
    n = array_size(a)
    for k in range(len(positions)):  # every position checked before anything is built
        p = positions[k]
        if p < i or p >= n or any_type(data + 16 * p) != L.t_binding:
            raise ValueError(f"lower_block: position {p} out of range or not increasing, or not a binding")
        if alloc_size(L, any_obj(data + 16 * p), &dims, &elem) == NOT_HERE:
            raise ValueError(f"lower_block: binding {p} is not an allocation lowered here")
        i = p + 1
    i = 0
    items.reserve(n + len(positions))
    for k in range(len(positions)):
        p = positions[k]
        b = any_obj(data + 16 * p)
        while i < p:
            items.push_back((<const FFIAny*>(data + 16 * i))[0])
            i += 1
        var = obj_field(b, L.o_b_var)
        args = array_data(obj_field(obj_field(b, L.o_b_value), L.o_call_args))
        name = numbered_name("storage", n_storages).encode()
        n_storages += 1
        storage = new_var(K, name, any_ty, dataflow)
        set_obj(&cargs[0], <void*><size_t>shapes[k])
        cargs[1] = (<const FFIAny*>(args + 32))[0]
        cargs[2] = (<const FFIAny*>(args + 48))[0]
        set_obj(&cargs[3], uint8)
        set_obj(&item, new_binding(K, <const char*>storage, new_call(K, any_ty, op_storage, cargs, 4, NULL, empty)))
        items.push_back(item)
        set_obj(&cargs[0], storage)
        set_obj(&cargs[1], zero)
        cargs[2] = (<const FFIAny*>args)[0]
        cargs[3] = (<const FFIAny*>(args + 16))[0]
        cargs[4] = (<const FFIAny*>(args + 32))[0]
        set_obj(&item, new_binding(K, var, new_call(K, <void*>obj_field(var, L.o_expr_ty), op_alloc, cargs, 5, NULL,
                                                    empty)))
        items.push_back(item)
        i = p + 1
    while i < n:
        items.push_back((<const FFIAny*>(data + 16 * i))[0])
        i += 1
    h = new_with_array(K, CTOR_DFBLOCK if dataflow else CTOR_BLOCK, NULL, NULL, items.data(), <int64_t>items.size(),
                       NULL, NULL, b"a block")
    F.n_storages = n_storages
    return <size_t>h
