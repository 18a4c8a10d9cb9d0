"""KillAfterLastUse's kill-kind rule (built by ``setup.py``; no fallback).

Design
------
The rule itself is ``kill_kind_of`` in ``_kill_rules.pxd``: an inline function over two codes a
reader produces, what defines the variable (``DEF_*``) and what its type is (``TY_*``). The
compiled walks cimport it: :mod:`memcore_py.transform._kill_walk` over memcore's IR and
:mod:`memcore_py.tvm._kill_extract` over TVM's objects, each with its own reader of the codes.
This module gives the general path (:func:`memcore_py.analysis.last_usage.collect_last_usage`)
the same rule: :func:`kill_kind` reads a memcore type into its code and calls ``kill_kind_of``.
The rule is stated once, so the three paths cannot disagree on it (the empty tuple was such a
case).
"""
from memcore_py.ir.types import FuncType, PrimType, ShapeType, TensorType, TupleType

__all__ = ["kill_kind", "memcore_type_code", "DEFINITIONS"]

#: ``definition`` argument of :func:`kill_kind` -> its code.
DEFINITIONS = {"plain": DEF_PLAIN, "storage": DEF_STORAGE, "no_register": DEF_NO_REGISTER,
               "constant": DEF_CONSTANT}

cdef type TENSOR_TYPE = TensorType
cdef type TUPLE_TYPE = TupleType
cdef type SHAPE_TYPE = ShapeType
cdef type PRIM_TYPE = PrimType
cdef type FUNC_TYPE = FuncType


cpdef int memcore_type_code(ty) noexcept:
    """The ``TY_*`` code of a memcore type (``None``: untyped), as ``_kill_rules.pxd`` lists them."""
    cls = type(ty)
    if cls is TENSOR_TYPE:
        return TY_TENSOR
    if cls is TUPLE_TYPE:
        return TY_TUPLE if (<object>ty).fields else TY_UNIT
    if cls is SHAPE_TYPE:
        return TY_SHAPE
    if cls is PRIM_TYPE:
        return TY_PRIM
    if cls is FUNC_TYPE:
        return TY_FUNC
    if ty is None:
        return TY_UNTYPED
    return TY_OBJECT


def kill_kind(int definition, ty):
    """The kill kind of a variable of memcore type ``ty`` defined as ``definition``.

    Parameters
    ----------
    definition : int
        A value of :data:`DEFINITIONS`: how the variable's binding defines it.
    ty : Type or None
        The variable's type.

    Returns
    -------
    int
        0 ``kill_tensor``, 1 ``kill_storage``, 2 ``kill_object``, -1 no kill.

    Raises
    ------
    ValueError
        ``definition`` is not one of :data:`DEFINITIONS`' values.
    """
    if definition < DEF_PLAIN or definition > DEF_CONSTANT:
        raise ValueError(f"definition must be one of {sorted(DEFINITIONS.values())}; got {definition}")
    return kill_kind_of(definition, memcore_type_code(ty))
