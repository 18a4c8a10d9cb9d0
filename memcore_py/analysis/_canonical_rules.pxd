# See _canonical_rules.pyx for details. CanonicalizeBindings' planning rules (TVM
# ``CanonicalizePlanner``), declared once: what a trivial binding is and where a chain of them
# ends (inline below, for every kernel), the kernel over the binding table and its result, which
# CanonicalizeBindings (memcore IR), UnusedTrivialBindingRemover and KillAfterLastUse's rebinding
# rule read.

from libc.stdint cimport int8_t, int64_t
from libcpp.vector cimport vector

from memcore_py.analysis._binding_table cimport BindingTable, I_BINDING, X_VAR

cdef enum:
    # What the known value of a tuple binding is (CanonicalPlan.v_repack)
    REPACK_NONE = 0       # not a re-pack
    REPACK_FIELDS = 1     # (u[0], ..., u[n-1]) of one u, its arity not known to be n (a TVM table)
    REPACK_EXACT = 2      # (u[0], ..., u[n-1]) of one u of arity n: the binding's known value is u


cdef class CanonicalPlan:
    # What CanonicalizeBindings' planner finds in one function of a table (canonical_plan's
    # result). Var ids and expr ids are the table's.
    cdef BindingTable T
    cdef readonly Py_ssize_t function    # the function of the table
    cdef int64_t first, end              # its items: first .. end - 1
    cdef vector[int64_t] v_item          # var id -> the item of its binding (-1: a parameter or free)
    cdef vector[int64_t] v_known         # var id -> expr id of its known value (-1: not bound)
    cdef vector[int64_t] v_trivial       # var id -> the var id its binding rebinds (-1: not trivial)
    cdef vector[int64_t] v_const         # var id -> expr id of the constant it is bound to (-1: none)
    cdef vector[int8_t] v_repack         # var id -> REPACK_* of its binding
    cdef vector[int8_t] v_in_dataflow    # var id -> 1: bound in a dataflow block
    cdef vector[int8_t] v_outside        # var id -> 1: used outside its home dataflow block



cdef CanonicalPlan canonical_plan_of(BindingTable T, Py_ssize_t k, bint facts=*)
    # The plan of the k-th function of T (k checked by the caller); facts=False leaves out
    # rule 4 (v_in_dataflow and v_outside left empty), for a caller that reads rules 1-3 only.


cdef inline bint rebinds_exactly(BindingTable T, int64_t i, int64_t x) noexcept nogil:
    """Whether item ``i``, binding the expression ``x``, rebinds a variable exactly (rule 2, TVM's
    trivial binding): ``x`` is a variable, and ``i`` is a VarBinding or a match_cast to exactly its
    value's type (the reader's ``i_same_type``). The planner asks it of a binding's known value,
    UnusedTrivialBindingRemover (``exact_rebindings``) of its value."""
    return T.x_kind[x] == X_VAR and (T.i_kind[i] == I_BINDING or T.i_same_type[i] != 0)


cdef inline int64_t chain_end(vector[int64_t]& rebinds, int64_t v) noexcept nogil:
    """The variable ``v`` stands for (rule 5): ``v`` followed through ``rebinds`` (var id -> the
    var id its trivial binding rebinds, -1: not rebound) to the first variable not rebound, so
    that a chain of trivial bindings collapses to its first non-trivial variable."""
    while rebinds[v] >= 0:
        v = rebinds[v]
    return v
