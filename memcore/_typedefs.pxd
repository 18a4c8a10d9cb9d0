# See memcore/liveness.py for the flat-array contract. One place for C types.
#
# Steps are binding positions 0..n_steps-1 of one planning unit (a block). A value has
# start = defining step (-1 = defined before the block) and end = last step reading it,
# inclusive (n_steps = live after the block; an unused value has end == start).
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t

ctypedef int64_t idx_t      # every index, position, size and offset: int64
ctypedef uint8_t flag_t     # boolean flags stored in arrays (is_output)
ctypedef int8_t kind_t      # event kinds of the token event program

# Event kinds of the token event program (mirrored by memcore.tokens.EV_REQUEST / EV_DECREF).
cdef enum:
    EV_REQUEST = 0
    EV_DECREF = 1
