# cython: language_level=3
"""Flatness of a function: the rule, once, for the walks over either object model.

Design
------
A Relax function is *flat* (the normal form the compiled binding loops of LowerAllocTensor,
AttachAttrLayoutFreeBuffers and DeadCodeElimination rewrite in one pass) when no binding value
and not the result opens a scope (``If``, ``SeqExpr``, a nested ``Function``) or holds a call
inside its top-level call, tuple or get-item; a call's tuple argument holds no tuple either,
and the result is not a call.

:func:`flat_step` states that rule over node classes (:data:`FLAT_CALL` ...): asked for a node
of a class under a *holder* (what the node is: a binding's value, the result, an argument of
a call, ...), it says "flat", "not flat", or the holder its children are asked under. The
walks (``memcore_py.transform._flat_walks.flat_node`` over memcore's IR,
``memcore_py.tvm._ffi_reader.flat_node`` over TVM's objects) only classify a node and list its
children (a call's arguments, a tuple's fields, a get-item's tuple); they decide nothing.
"""

# Node classes, as the walks classify a node.
cdef enum:
    FLAT_LEAF = 0       # anything else: a variable, a constant, a shape, a GlobalVar, ...
    FLAT_CALL = 1       # a Call
    FLAT_TUPLE = 2      # a Tuple
    FLAT_GET_ITEM = 3   # a TupleGetItem
    FLAT_SCOPE = 4      # an If, a SeqExpr or a Function

# Answers of flat_step that are not a holder.
cdef enum:
    STEP_NOT_FLAT = -1  # the function is not flat
    STEP_FLAT = 0       # flat here; the node's children are not looked at

# Holders: what the node asked about is (a positive answer of flat_step: ask each child so).
cdef enum:
    HOLD_BINDING = 1        # a binding's value
    HOLD_RESULT = 2         # the function's result
    HOLD_CALL_ARG = 3       # an argument of a binding's (or result's) call
    HOLD_TUPLE_FIELD = 4    # a field of a binding's (or result's) tuple
    HOLD_GET_ITEM = 5       # the tuple of a binding's (or result's) get-item
    HOLD_ARG_FIELD = 6      # a field of a tuple argument of a call


cdef inline int flat_step(int holder, int node) noexcept nogil:
    """The flatness rule for one node of class ``node`` held as ``holder`` (module docstring):
    ``STEP_NOT_FLAT``, ``STEP_FLAT``, or the holder (> 0) to ask each of its children under."""
    if node == FLAT_SCOPE:
        return STEP_NOT_FLAT
    if holder == HOLD_BINDING or holder == HOLD_RESULT:
        if node == FLAT_CALL:
            return STEP_NOT_FLAT if holder == HOLD_RESULT else HOLD_CALL_ARG
        if node == FLAT_TUPLE:
            return HOLD_TUPLE_FIELD
        if node == FLAT_GET_ITEM:
            return HOLD_GET_ITEM
        return STEP_FLAT
    if node == FLAT_CALL:
        return STEP_NOT_FLAT    # a call inside a call, a tuple or a get-item
    if node == FLAT_TUPLE:
        if holder == HOLD_CALL_ARG:
            return HOLD_ARG_FIELD
        if holder == HOLD_ARG_FIELD:
            return STEP_NOT_FLAT  # a tuple inside a call's tuple argument
    return STEP_FLAT
