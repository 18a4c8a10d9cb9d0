# The structural key of a PrimExpr read in place from TVM's memory, for the compiled walks
# (C++) over TVM objects that share work between equal dims: an inline function, so that the
# one definition here is the one every cimporting module compiles.
from libc.stdint cimport int32_t, int64_t
from libcpp.vector cimport vector

from memcore_py.tvm._ffi_abi cimport K_INT, any_type, obj_field, obj_type
from memcore_py.tvm._ffi_reader cimport Layout


cdef inline bint intern_dim(Layout L, const char* e, vector[int64_t]& key, int depth) noexcept:
    """Append the structure of the PrimExpr ``e`` to ``key``: an ``IntImm`` as (0, value, its
    type's address), a variable as (1, its address), a binary node (``BINARY_PRIM_NODES``) as
    (2 + its index, operands); equal keys, structurally equal expressions of the same
    variables. False for anything else, or deeper than any shape arithmetic."""
    cdef int32_t ti
    cdef const char* val
    cdef int k
    if e == NULL or depth > 64:
        return False
    ti = obj_type(e)
    if ti == L.t_int_imm:
        val = e + L.o_imm_value
        if any_type(val) != K_INT:
            return False
        key.push_back(0)
        key.push_back((<const int64_t*>(val + 8))[0])
        key.push_back(<int64_t><size_t>obj_field(e, L.o_expr_ty))
        return True
    if ti == L.t_var:
        key.push_back(1)
        key.push_back(<int64_t><size_t>e)
        return True
    for k in range(7):
        if ti == L.t_bin[k]:
            key.push_back(2 + k)
            return (intern_dim(L, obj_field(e, L.o_bin_a), key, depth + 1)
                    and intern_dim(L, obj_field(e, L.o_bin_b), key, depth + 1))
    return False
