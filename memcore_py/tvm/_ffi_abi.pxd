"""The C ABI of TVM objects (``tvm/ffi/c_api.h``) shared by the compiled reader
(:mod:`memcore_py.tvm._ffi_reader`) and writer (:mod:`memcore_py.tvm._ffi_writer`).

Only the stable C layout is written down here: the object header {u64 ref count; i32 type
index; u32 padding; deleter}, ``ffi.Array`` (header then ``TVMFFISeqCell`` {data, size, ...})
and the 16-byte ``TVMFFIAny`` {i32 type index; u32 padding or small-string length; 8-byte
value}. Field offsets of IR classes come from tvm_ffi's reflection at run time
(``_ffi_reader.Layout``)."""
from libc.stdint cimport int32_t, int64_t, uint32_t

# TVMFFIAny type indices and the object header's size (tvm/ffi/c_api.h)
cdef enum:
    K_NONE = 0
    K_INT = 1
    K_BOOL = 2
    K_DATATYPE = 5
    K_RAW_STR = 8
    K_SMALL_STR = 11
    K_OBJECT_BEGIN = 64
    K_STR = 65
    K_ERROR = 67
    K_FUNCTION = 68
    K_ARRAY = 71
    HDR_TYPE_INDEX = 8
    HDR_SIZE = 24


ctypedef struct FFIAny:
    int32_t type_index
    uint32_t small_len
    int64_t value  # the 8-byte union: an integer, or a pointer (object, C string)


cdef inline int32_t obj_type(const char* obj) noexcept nogil:
    return (<const int32_t*>(obj + HDR_TYPE_INDEX))[0]


cdef inline const char* obj_field(const char* obj, Py_ssize_t off) noexcept nogil:
    return (<const char**>(obj + off))[0]


cdef inline const char* array_data(const char* arr) noexcept nogil:
    return (<const char**>(arr + HDR_SIZE))[0]


cdef inline int64_t array_size(const char* arr) noexcept nogil:
    return (<const int64_t*>(arr + HDR_SIZE + 8))[0]


cdef inline int32_t any_type(const char* any) noexcept nogil:
    return (<const int32_t*>any)[0]


cdef inline const char* any_obj(const char* any) noexcept nogil:
    return (<const char**>(any + 8))[0]


cdef inline size_t addr(const char* p) noexcept nogil:
    return <size_t>p
