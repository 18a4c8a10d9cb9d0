# What other compiled walks over TVM objects (memcore_py/tvm/_kill_writer.pyx,
# _spbm_extract.pyx) use of the compiled writer (see _ffi_writer.pyx): the owner of what
# constructors return, the constructor call with TVM's error turned into TVMConversionError,
# and the constructors.
from libc.stdint cimport int32_t, int64_t
from libcpp.vector cimport vector

from memcore_py.tvm._ffi_abi cimport FFIAny, K_NONE, obj_type


cdef enum Ctor:
    CTOR_ARRAY
    CTOR_VAR
    CTOR_CALL
    CTOR_BINDING
    CTOR_BLOCK
    CTOR_TUPLE
    CTOR_EMPTY_ARRAY
    CTOR_SEQ
    CTOR_FUNCTION
    CTOR_MODULE
    CTOR_DFVAR
    CTOR_DFBLOCK


cdef class Keep:
    cdef vector[void*] owned
    cdef list held

    cdef inline void own(self, void* h):
        self.owned.push_back(h)


cdef void* make(void* fn, FFIAny* args, int32_t n, const char* what) except NULL
cdef void* handle(int which) noexcept
cdef int check_initialised(str caller) except -1
cdef void release(void* h) noexcept
cdef void* owned(Keep K, int ctor, FFIAny* args, int32_t n, const char* what) except NULL
cdef void* new_var(Keep K, const char* name, void* ty, bint dataflow=*) except NULL
cdef void* new_binding(Keep K, const char* var, void* value) except NULL
cdef void* new_call(Keep K, void* ty, void* op, const FFIAny* args, int64_t n, void* attrs, void* ty_args) except NULL
cdef void* new_with_array(Keep K, int ctor, void* before0, void* before1, const FFIAny* items, int64_t n,
                          void* after0, void* after1, const char* what) except NULL


cdef inline void set_obj(FFIAny* a, void* h) noexcept:
    a.small_len = 0
    if h == NULL:
        a.type_index = K_NONE
        a.value = 0
    else:
        a.type_index = obj_type(<const char*>h)
        a.value = <int64_t><size_t>h
