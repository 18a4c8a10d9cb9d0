# See _kill_rules.pyx for details. KillAfterLastUse's rules, declared once: the kill-kind rule
# (kill_kind_of over the codes below, which readers produce) and the rule kernel over the
# binding table (kill_rules in _kill_rules.pyx, whose result is a KillEdits).

from libc.stdint cimport int8_t, int64_t
from libcpp.vector cimport vector

cdef enum:
    # What a reader saw of a variable's type (reading, not a rule).
    TY_TENSOR = 0     # a tensor (TensorType)
    TY_TUPLE = 1      # a tuple with at least one field
    TY_UNIT = 2       # R.Tuple(): a DPS call's result, or a kill's
    TY_SHAPE = 3      # a shape (ShapeType)
    TY_PRIM = 4       # a prim value (PrimType)
    TY_FUNC = 5       # a function (FuncType)
    TY_OBJECT = 6     # any other type: R.Object, a packed call's result, ...
    TY_UNTYPED = 7    # no type at all (memcore IR only: a variable read without a type)

cdef enum:
    # What a reader saw of the binding that defines the variable (reading, not a rule).
    DEF_PLAIN = 0        # any other binding
    DEF_STORAGE = 1      # v = <op whose kill_role is "storage"> (memory./vm.alloc_storage)
    DEF_NO_REGISTER = 2  # v = <op whose kill_role is "no_register"> (R.null_value())
    DEF_CONSTANT = 3     # v = <Constant> (a VarBinding, not a match_cast)

cdef enum:
    # The kill kinds, in the order kills after one binding are emitted.
    KILL_NONE = -1       # never killed: no VM register
    KILL_TENSOR = 0      # R.memory.kill_tensor
    KILL_STORAGE = 1     # R.memory.kill_storage
    KILL_OBJECT = 2      # R.vm.kill_object


cpdef int memcore_type_code(object ty) noexcept
    # The TY_* code of a memcore type (the reader of memcore's IR; None: untyped).


cdef inline int tuple_type_code(Py_ssize_t n_fields) noexcept nogil:
    """The ``TY_*`` code of a tuple type of ``n_fields`` fields, for every reader: ``R.Tuple()``
    is a unit (no VM register: never killed, ``kill_kind_of``), any other tuple an object."""
    return TY_TUPLE if n_fields > 0 else TY_UNIT


cdef inline signed char kill_kind_of(int definition, int ty) noexcept nogil:
    """The kill a variable gets after its last use (TVM ``CollectLastUsage``): a storage
    object ``kill_storage``; no kill for what holds no VM register (a constant, a null value,
    a shape, a prim value, a function, ``R.Tuple()``); a tensor ``kill_tensor``; any other
    register object (a non-empty tuple, ``R.Object``, an untyped value) ``kill_object``."""
    if definition == DEF_STORAGE:
        return KILL_STORAGE
    if definition == DEF_NO_REGISTER or definition == DEF_CONSTANT:
        return KILL_NONE
    if ty == TY_TENSOR:
        return KILL_TENSOR
    if ty == TY_UNIT or ty == TY_SHAPE or ty == TY_PRIM or ty == TY_FUNC:
        return KILL_NONE
    return KILL_OBJECT


cdef enum:
    # What becomes of a binding (KillEdits.s_action)
    EDIT_KEEP = 0       # kept as it is
    EDIT_DROP = 1       # a rebinding y = x, removed (y's uses read what subst says)
    EDIT_REWRITE = 2    # kept, its value rebuilt with the substituted variables (or constants) read


cdef class KillEdits:
    # What KillAfterLastUse changes in one function (kill_rules' result; see _kill_rules.pyx).
    # Addresses are of the reader's objects (memcore IR or TVM), borrowed from its module. A
    # *slot* is a binding of one of the function's blocks: slot = blk_first[block] + position.
    cdef vector[int64_t] blk_first  # block id -> its first slot (-1: a block of another function)
    cdef vector[int64_t] blk_n      # block id -> its number of slots (-1 or 0: none)
    cdef vector[int8_t] s_action    # slot -> EDIT_*
    cdef vector[int64_t] s_item     # slot -> its item in the table
    cdef vector[int64_t] s_kill     # slot -> its first kill (the kills right after it: s_nkill of them)
    cdef vector[int64_t] s_nkill
    cdef vector[int64_t] d_kill     # block id -> its first deferred kill (right after the block), -1 none
    cdef vector[int64_t] d_nkill
    cdef vector[int8_t] k_kind      # kill -> its kind (KILL_TENSOR, KILL_STORAGE, KILL_OBJECT); the
    cdef vector[size_t] k_target    # kill -> the killed variable's address; the k-th is named kill_name(k)
    cdef vector[int64_t] v_sub      # var id -> the var id it stands for (-1: itself)
    cdef vector[int8_t] v_const     # var id -> 1: bound to a tensor constant, its uses read the constant
    cdef vector[size_t] v_ref       # var id -> the variable's address (the table's, for subst and constants)
    cdef public Py_ssize_t n_kills
    cdef public Py_ssize_t n_dropped
    cdef public Py_ssize_t n_rewritten
    cdef public bint needs_canonical  # CanonicalizeBindings would change more than the rebindings y = x
    cdef public bint unknown_type     # a variable that may be killed has a type the reader did not know
    cdef public bint has_match_cast   # the function has a match_cast
    cdef public Py_ssize_t error_item # item of a malformed kill call (-1: none); error_code 1: not one
    cdef public int error_code        # argument (error_n of them), 2: the argument is not a variable
    cdef public Py_ssize_t error_n
    cdef public size_t error_ref      # that kill binding's address
    cdef public dict last_use         # only when asked (report=True): var address -> address of the
                                      # binding of its last use in its own scope (0: the scope's result)
    cdef public set killed            # only when asked: addresses of the variables explicit kills name

    cdef int64_t slot(self, Py_ssize_t block, Py_ssize_t pos) except -1


cpdef str kill_name(Py_ssize_t k)
    # The name of a function's k-th kill variable (``_``, ``_1``, ...: NameTable().fresh("_")).
