# The token rows and event list of StaticPlanBlockMemory's Init walk (see _storage_walk.pyx),
# declared here so that the scan of TVM's objects (memcore_py/tvm/_spbm_extract.pyx) records
# its tokens and events in the same rows, and the same decode makes the TokenProgram of both.
from libc.stdint cimport int64_t

from memcore_py.analysis._binding_table cimport BindingTable

cdef class TokenRecorder:
    cdef public list t_block, t_info, t_binding, t_index, infos
    cdef long long* ev       # packed events (module docstring), ev_n of ev_cap used
    cdef Py_ssize_t ev_n, ev_cap
    cdef public set discarded

    cdef Py_ssize_t _new_token(self, info, binding, Py_ssize_t bid, Py_ssize_t index, long long step) except -1
    cdef int _use(self, long long step, Py_ssize_t t) except -1
    cdef int _push(self, long long e) except -1


cdef class Sizer:
    # What the Init rule kernel asks of an object model about an allocation binding (the item
    # of a binding table): its TokenInfo, and what the token rows record as its binding.
    cdef bint started       # begin_function was called

    cdef object info(self, BindingTable T, int64_t item)
    # The TokenInfo of the allocation at ``item``, or None to decline (the TVM reader's model).
    cdef object site(self, BindingTable T, int64_t item)
