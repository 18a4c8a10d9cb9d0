# The type indices and field offsets of the TVM classes the compiled reader reads (see
# _ffi_reader.pyx, ``Layout``), and the reads of dtypes and constant dims, declared here so
# that other compiled walks over TVM objects (memcore_py/tvm/_kill_writer.pyx,
# _spbm_extract.pyx, _lower_extract.pyx) read through the same checked layout; the structural
# key of a dim (``intern_dim``, an inline function so that this one definition is the one every
# cimporting module compiles; C++); and the records the reader's functions return to Python.
cimport cython
from libc.stdint cimport int32_t, int64_t, uint32_t
from libcpp.vector cimport vector

from memcore_py.ir._const_fold cimport storage_bytes
from memcore_py.tvm._ffi_abi cimport K_INT, any_obj, any_type, obj_field, obj_type


cdef class Layout:
    cdef readonly bint ok
    cdef readonly object failure  # None, or the self-check that failed (``Layout._self_check``)
    cdef int32_t t_var, t_dfvar, t_binding, t_call, t_shape_expr, t_tensor_type, t_shape_type
    cdef int32_t t_int_imm, t_generic_const, t_string_imm, t_tuple_type
    cdef Py_ssize_t o_expr_ty, o_var_name, o_b_var, o_b_value
    cdef Py_ssize_t o_call_op, o_call_args, o_call_attrs, o_call_ty_args
    cdef Py_ssize_t o_shape_values, o_imm_value, o_const_value, o_str_value, o_tt_shape, o_tt_dtype, o_tt_vdevice, o_tt_ndim
    cdef Py_ssize_t o_st_values, o_st_ndim, o_tuple_fields
    cdef int32_t t_dict_attrs, t_global_var, t_function, t_prim_func, t_any_type
    cdef int32_t t_func_type, t_prim_type, t_op, t_extern_func, t_type_missing
    cdef int32_t t_if, t_seq, t_tuple, t_tuple_get_item, t_match_cast, t_block, t_dfblock
    cdef Py_ssize_t o_func_body, o_tuple_expr_fields, o_tgi_tuple, o_mc_value, o_seq_blocks, o_seq_body, o_block_bindings
    cdef Py_ssize_t o_attrs_dict, o_func_attrs, o_mod_attrs, o_mod_infos, o_mod_functions, o_gv_name
    cdef Py_ssize_t o_tgi_index, o_pt_dtype, o_extern_symbol, o_func_params, o_func_ret_ty, o_func_is_pure
    cdef Py_ssize_t o_if_cond, o_if_then, o_if_else
    cdef Py_ssize_t o_ft_params, o_ft_ret
    cdef int32_t t_bin[7]          # type indices of the binary PrimExprs, in BINARY_PRIM_NODES' order
    cdef Py_ssize_t o_bin_a, o_bin_b  # their operands (one offset for all seven, checked)


# The records the reader's functions return to Python (read-only attributes, read by name;
# addresses held as Python ints, made once when the record is), made in C through ``__new__``
# (no argument parsing); BlockCalls and FlatFunction, which lower_alloc_extract also makes from
# a binding table's read, take their fields positionally.
@cython.final
cdef class FunctionEntry:
    """One entry of a module's function map (``module_functions``)."""
    cdef readonly object kind           # 1 a Relax ``Function``, 0 a ``PrimFunc``, -1 anything else
    cdef readonly str name              # the GlobalVar's name
    cdef readonly object gvar           # address of the ``GlobalVar``
    cdef readonly object func           # address of the function


@cython.final
cdef class BlockCalls:
    """One block of a flat function body and where the calls of one op are in it
    (``flat_function_calls``)."""
    cdef readonly object block          # address of the block (0 when read through a binding table)
    cdef readonly object is_dataflow    # whether it is a ``DataflowBlock``
    cdef readonly object bindings       # address of its bindings ``Array``
    cdef readonly list positions        # positions (ints, ascending) of the bindings calling the op


@cython.final
cdef class FlatFunction:
    """A Relax function's body with the calls of one op per block (``flat_function_calls``)."""
    cdef readonly object seq            # address of the body ``SeqExpr``
    cdef readonly object blocks         # address of the body's blocks ``Array``
    cdef readonly list block_calls      # a BlockCalls per block of the body, in order


@cython.final
cdef class CallArguments:
    """The arguments of one call bound in a block (``call_arguments``)."""
    cdef readonly object binding        # address of the ``VarBinding``
    cdef readonly list args             # addresses of the call's arguments
    cdef readonly object tuple_fields   # addresses of the fields of the second argument (a list) when it is
                                        # a ``Tuple``, else None
    cdef readonly list constant_fields  # those of tuple_fields that are tensor constants (else [])


cdef object read_string(const char* any)
cdef object dtype_name(int64_t packed)
cdef int64_t exact_alloc(Layout L, const char* var, const char* call, int64_t* dtype, const char** dims,
                         const char** ty_dims) noexcept


cdef enum:
    # DLDataType type codes (dlpack.h)
    DL_INT = 0
    DL_UINT = 1
    DL_FLOAT = 2
    DL_BFLOAT = 4
    DL_BOOL = 6


cdef inline int64_t packed_dtype(const char* p) noexcept:
    """The DLDataType at ``p`` (code, bits, lanes: 4 bytes) as one integer."""
    return (<const uint32_t*>p)[0]


cdef inline int64_t element_bytes(int64_t packed) noexcept:
    """Bytes per element (``storage_bytes``, ``memcore_py/ir/_const_fold.pxd``) of a dtype the
    compiled walks size themselves (int, uint or float of 8 to 64 bits, bfloat16, bool; one
    lane), or -1."""
    cdef int64_t code = packed & 0xFF, bits = (packed >> 8) & 0xFF, lanes = packed >> 16
    if lanes != 1:
        return -1
    if code == DL_BOOL:
        if bits != 8:
            return -1
    elif code == DL_BFLOAT:
        if bits != 16:
            return -1
    elif code != DL_INT and code != DL_UINT and code != DL_FLOAT:
        return -1
    elif bits != 8 and bits != 16 and bits != 32 and bits != 64:
        return -1
    return storage_bytes(bits, lanes)


cdef inline int64_t const_dim(Layout L, const char* any) noexcept:
    """The value of a dim given as an ``IntImm`` in a ``TVMFFIAny`` (negative when it is
    one), or -1 when it is not an integer."""
    cdef const char* v
    if any_type(any) != L.t_int_imm:
        return -1
    v = any_obj(any) + L.o_imm_value
    if any_type(v) != K_INT:
        return -1
    return (<const int64_t*>(v + 8))[0]


cdef inline bint intern_dim(Layout L, const char* e, vector[int64_t]& key, int depth,
                            vector[size_t]* var_order=NULL) noexcept:
    """Append the structure of the PrimExpr ``e`` to ``key``: an ``IntImm`` as (0, value, its
    type's address), a variable as (1, its address), a binary node (``BINARY_PRIM_NODES``) as
    (2 + its index, operands); equal keys, structurally equal expressions of the same
    variables. With ``var_order``, no address of an object enters the key (it may outlive
    them): a variable is (1, its index in ``var_order``, where it is appended at its first
    occurrence), an ``IntImm``'s type its packed dtype; equal keys, structurally equal
    expressions of variables in the same order of first occurrence (the caller tells those
    apart, by name for instance). False for anything else, or deeper than any shape
    arithmetic."""
    cdef int32_t ti
    cdef const char* val
    cdef int k
    cdef size_t j
    if e == NULL or depth > 64:
        return False
    ti = obj_type(e)
    if ti == L.t_int_imm:
        val = e + L.o_imm_value
        if any_type(val) != K_INT:
            return False
        key.push_back(0)
        key.push_back((<const int64_t*>(val + 8))[0])
        if var_order == NULL:
            key.push_back(<int64_t><size_t>obj_field(e, L.o_expr_ty))
            return True
        val = obj_field(e, L.o_expr_ty)
        if val == NULL or obj_type(val) != L.t_prim_type:
            return False
        key.push_back(packed_dtype(val + L.o_pt_dtype))
        return True
    if ti == L.t_var:
        key.push_back(1)
        if var_order == NULL:
            key.push_back(<int64_t><size_t>e)
            return True
        for j in range(var_order.size()):
            if var_order[0][j] == <size_t>e:
                key.push_back(<int64_t>j)
                return True
        key.push_back(<int64_t>var_order.size())
        var_order.push_back(<size_t>e)
        return True
    for k in range(7):
        if ti == L.t_bin[k]:
            key.push_back(2 + k)
            return (intern_dim(L, obj_field(e, L.o_bin_a), key, depth + 1, var_order)
                    and intern_dim(L, obj_field(e, L.o_bin_b), key, depth + 1, var_order))
    return False
