# The state of StaticPlanBlockMemory's compiled Init walk (see _storage_walk.pyx), declared here
# so that the walk over TVM's objects (memcore_py/tvm/_spbm_extract.pyx) records its tokens and
# events in the same tables, and the same decode makes the TokenProgram of both.

cdef class InitWalk:
    cdef object alloc_op
    cdef type info_cls
    cdef frozenset shares_storage_ops, carriers
    cdef dict call_kind, const_info, sym_info
    cdef public dict var_tokens, size_cache
    cdef public list t_block, t_info, t_binding, t_index, infos
    cdef long long* ev       # packed events (module docstring), ev_n of ev_cap used
    cdef Py_ssize_t ev_n, ev_cap
    cdef public set discarded
    cdef public Py_ssize_t func_idx

    cdef Py_ssize_t _new_token(self, info, binding, Py_ssize_t bid, Py_ssize_t index, long long step) except -1
    cdef int _use(self, long long step, Py_ssize_t t) except -1
    cdef int _push(self, long long e) except -1
