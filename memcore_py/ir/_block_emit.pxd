# The steps of BlockBuilder.emit (normal-form test, fresh name, binding) (memcore_py/ir/_block_emit.pyx), for compiled
# callers that emit many calls (memcore_py/frontend/_aten_calls.pyx).
cpdef bint is_normal_call(expr)
cpdef str sanitized_hint(hint)
cpdef str fresh_name(dict counter, hint)
cpdef object emit(bb, value, name_hint)
