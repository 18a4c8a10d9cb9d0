# See _kill_rules.pyx for details. KillAfterLastUse's kill-kind rule, declared once: every
# walk (the general path's collect_last_usage through _kill_rules.kill_kind, the compiled flat
# walk over memcore's IR, the compiled walk over TVM's objects) reads a variable's binding and
# type into the codes below and asks kill_kind_of; none of them restates the rule.

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
