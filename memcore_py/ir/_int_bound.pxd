from libc.stdint cimport int32_t, int64_t
from libcpp.vector cimport vector

#: the kinds of an IntNode; the binary ones in ``BINARY_PRIM_NODES``' order, from 2
cdef enum:
    N_IMM = 0        # an integer literal: v0 its value (saturated to [NEG_INF, POS_INF])
    N_VAR = 1        # a variable: [v0, v1] its range under the caller's bounds
    N_ADD = 2
    N_SUB = 3
    N_MUL = 4
    N_FLOORDIV = 5
    N_FLOORMOD = 6
    N_MIN = 7
    N_MAX = 8
    N_SELECT = 9     # a: the true value, b: the false value (the condition is not used)
    N_CAST = 10      # a: the operand; [v0, v1] the target dtype's range
    N_EVERYTHING = 11  # any other node: [v0, v1] the range of its dtype

cdef struct IntNode:
    int32_t kind   # N_*
    int32_t a      # the first operand's index (< this node's), or -1
    int32_t b      # the second operand's index (< this node's), or -1
    int64_t v0     # N_IMM: value; N_VAR, N_CAST, N_EVERYTHING: the range's low end
    int64_t v1     # N_VAR, N_CAST, N_EVERYTHING: the range's high end

cdef int64_t saturate(object value)
cdef void bound_nodes(const IntNode* nodes, Py_ssize_t n, int64_t* lo, int64_t* hi,
                      int64_t* coeff, int64_t* base) noexcept nogil
