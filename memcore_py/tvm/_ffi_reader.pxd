# The type indices and field offsets of the TVM classes the compiled reader reads (see
# _ffi_reader.pyx, ``Layout``), declared here so that other compiled walks over TVM objects
# (memcore_py/tvm/_kill_extract.pyx) read through the same checked layout.
from libc.stdint cimport int32_t


cdef class Layout:
    cdef readonly bint ok
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


cdef object read_string(const char* any)
