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
type of those dims and dtype, no vdevice, a symbolic dim the same object in both; otherwise
TVM re-types the variable and every later use changes), that is arithmetic and three
constructors per binding: :func:`allocation_sizes` checks each allocation of a block and
computes ``bytes`` of a constant shape (the dtype's bytes times the dims; TIR's constant
folding gives the same number) or hands a symbolic shape's dims to the caller, which sizes it
with LowerAllocTensor's own rule (:func:`~memcore_py.transform.lower_alloc_tensor.storage_bytes_expr`);
the caller makes the ``R.shape([bytes])`` objects (a constant one shared across calls), and
:func:`lower_block` builds the block:
the storage ``Var`` (a ``DataflowVar`` in a dataflow block) named as the lowerer names it
(``storage``, ``storage1``, ... per function: its ``NameTable``), the two calls, the old
bindings elsewhere. Everything the lowered bindings hold but the storage variable, the offset
and the size is the old call's own argument objects, the call's type the variable's.
"""
from libc.stdint cimport INT64_MAX, int64_t
from libc.stdio cimport snprintf
from libcpp.vector cimport vector

from memcore_py.tvm._ffi_abi cimport (
    FFIAny, K_ARRAY, K_DATATYPE, K_OBJECT_BEGIN, any_obj, any_type, array_data, array_size, obj_field, obj_type,
)
from memcore_py.tvm._ffi_reader cimport Layout, const_dim, dtype_name, element_bytes, exact_alloc, packed_dtype
from memcore_py.tvm._ffi_writer cimport (
    CTOR_BLOCK, CTOR_DFBLOCK, CTOR_EMPTY_ARRAY, Keep, handle, new_binding, new_call, new_var, new_with_array,
    set_obj,
)


cdef enum:
    NOT_HERE = -1   # alloc_size: the allocation is not lowered here
    SYMBOLIC = -2   # alloc_size: lowered here, its size an expression of its symbolic dims


cdef int64_t alloc_size(Layout L, const char* b, const char** sym_dims) noexcept:
    """The storage bytes of the allocation binding ``b`` when it is lowered here with a
    constant shape; :data:`SYMBOLIC` (``sym_dims`` set to the shape's dims ``Array``) when it is
    lowered here with a symbolic dim; :data:`NOT_HERE` otherwise (module docstring: the
    exactly typed allocations, ``_ffi_reader.exact_alloc``)."""
    cdef const char* var = obj_field(b, L.o_b_var)
    cdef const char* dims
    cdef const char* ty_dims
    cdef int64_t n, i, d, dtype, nbytes
    cdef bint symbolic = False
    if var == NULL or (obj_type(var) != L.t_var and obj_type(var) != L.t_dfvar):
        return NOT_HERE
    n = exact_alloc(L, var, obj_field(b, L.o_b_value), &dtype, &dims, &ty_dims)
    if n < 0:
        return NOT_HERE
    nbytes = element_bytes(dtype)
    if nbytes < 0:
        return NOT_HERE
    for i in range(n):
        d = const_dim(L, array_data(dims) + 16 * i)
        if d < 0:
            symbolic = True
        elif not symbolic:
            if d and nbytes > INT64_MAX // d:
                return NOT_HERE
            nbytes *= d
    if symbolic:
        sym_dims[0] = dims
        return SYMBOLIC
    return nbytes


def allocation_sizes(Layout L, size_t arr, list positions):
    """The storage size of each allocation at ``positions`` of the bindings ``Array`` at
    ``arr`` (``VarBinding`` s of ``R.builtin.alloc_tensor``): its bytes (an int) when its
    shape is constant, ``(address of its dims Array, dtype name)`` when a dim is symbolic (the
    caller sizes it); None when one is not lowered here (module docstring)."""
    cdef const char* a = <const char*>arr
    cdef const char* data
    cdef const char* b
    cdef const char* dims = NULL
    cdef int64_t n, size
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
        size = alloc_size(L, b, &dims)
        if size == NOT_HERE:
            return None
        if size == SYMBOLIC:
            v = any_obj(array_data(obj_field(obj_field(b, L.o_b_value), L.o_call_args)) + 16) + L.o_const_value
            out.append((<size_t>dims, dtype_name(packed_dtype(v + 8))))
        else:
            out.append(size)
    return out


def lower_block(Layout L, Keep K, size_t arr, list positions, list shapes, bint dataflow, size_t uint8, size_t zero,
                size_t any_ty, size_t op_storage, size_t op_alloc, Py_ssize_t n_storages):
    """The address (owned by ``K``) of a new block of the bindings ``Array`` at ``arr`` with the
    allocations at ``positions`` lowered (module docstring; :func:`allocation_sizes` accepted
    them): ``shapes`` the addresses of their ``R.shape([bytes])``, ``uint8`` of a
    ``R.dtype("uint8")``, ``zero`` of the offset ``IntImm`` 0, ``any_ty`` of an ``AnyType``,
    ``op_storage`` / ``op_alloc`` of ``relax.memory.alloc_storage`` / ``alloc_tensor``;
    ``dataflow``: a dataflow block; ``n_storages``: storages named so far in the function.
    Returns ``(block address, n_storages)``.

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
    cdef int64_t n, i = 0, p
    cdef Py_ssize_t k
    cdef char name[32]
    cdef FFIAny cargs[5]
    cdef FFIAny item
    cdef vector[FFIAny] items
    cdef void* storage
    cdef void* h
    cdef const char* dims
    cdef void* empty = handle(CTOR_EMPTY_ARRAY)
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
        if alloc_size(L, any_obj(data + 16 * p), &dims) == NOT_HERE:
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
        if n_storages == 0:
            snprintf(name, 32, "storage")
        else:
            snprintf(name, 32, "storage%zd", n_storages)
        n_storages += 1
        storage = new_var(K, name, <void*>any_ty, dataflow)
        set_obj(&cargs[0], <void*><size_t>shapes[k])
        cargs[1] = (<const FFIAny*>(args + 32))[0]
        cargs[2] = (<const FFIAny*>(args + 48))[0]
        set_obj(&cargs[3], <void*>uint8)
        set_obj(&item, new_binding(K, <const char*>storage,
                                   new_call(K, <void*>any_ty, <void*>op_storage, cargs, 4, NULL, empty)))
        items.push_back(item)
        set_obj(&cargs[0], storage)
        set_obj(&cargs[1], <void*>zero)
        cargs[2] = (<const FFIAny*>args)[0]
        cargs[3] = (<const FFIAny*>(args + 16))[0]
        cargs[4] = (<const FFIAny*>(args + 32))[0]
        set_obj(&item, new_binding(K, var, new_call(K, <void*>obj_field(var, L.o_expr_ty), <void*>op_alloc, cargs, 5,
                                                    NULL, empty)))
        items.push_back(item)
        i = p + 1
    while i < n:
        items.push_back((<const FFIAny*>(data + 16 * i))[0])
        i += 1
    h = new_with_array(K, CTOR_DFBLOCK if dataflow else CTOR_BLOCK, NULL, NULL, items.data(), <int64_t>items.size(),
                       NULL, NULL, b"a block")
    return <size_t>h, n_storages
