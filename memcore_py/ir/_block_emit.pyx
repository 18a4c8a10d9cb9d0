"""The steps of :meth:`~memcore_py.ir.builder.BlockBuilder.emit`: the normal-form test, the
fresh name and the binding (built by ``setup.py``; no fallback).

Design
------
:meth:`BlockBuilder.emit <memcore_py.ir.builder.BlockBuilder.emit>` is the one way a value
is bound in the open block of a builder: the value put in A-normal form, a fresh name drawn
from the builder's :class:`~memcore_py.ir.builder.NameTable`, a ``DataflowVar`` (in a
dataflow block) or ``Var`` of the value's type, the ``VarBinding`` appended to the open
block and remembered for :meth:`~memcore_py.ir.builder.BlockBuilder.lookup_binding`. This
module holds that step, :func:`emit`; the builder's method and the compiled call builder of
the importers (``memcore_py/frontend/_aten_calls.pyx``, through ``_block_emit.pxd``) call
it. It also holds :func:`is_normal_call`, the test by which a typed call whose arguments
are all leaves (and typed tuples of leaves) is known to be in A-normal form already, so the
common case skips :meth:`~memcore_py.ir.builder.BlockBuilder.normalize_anf`, and
:func:`fresh_name`, the step of :meth:`NameTable.fresh <memcore_py.ir.builder.NameTable.fresh>`
(the sequence the builder module's docstring states, TVM's ``NameSupply::FreshName``) over
the table's counters, which the method and :func:`emit` call. The variable
and the binding are written with :mod:`memcore_py.ir._nodes`, as
:func:`~memcore_py.ir.construct.new_var` and :func:`~memcore_py.ir.construct.new_binding`
build them (the name is a str and the normalized value an expression with its type: the
checks of the constructors hold).
"""
from memcore_py.ir._nodes cimport binding_node, var_node

from memcore_py.errors import IRError
from memcore_py.ir.builder import _LEAF_TYPES, NameTable
from memcore_py.ir.expr import Call, DataflowVar, Tuple

__all__ = ["emit", "fresh_name", "is_normal_call", "sanitized_hint", "LEAF_CLASSES"]

#: The exact classes of the leaves of TVM's normal form (``builder.is_leaf``'s classes and
#: the subclass ``DataflowVar``): a call whose arguments are all of these is normal already.
LEAF_CLASSES = frozenset(_LEAF_TYPES + (DataflowVar,))
cdef frozenset _LEAVES = LEAF_CLASSES
cdef object _Call = Call
cdef object _Tuple = Tuple
cdef object _NameTable = NameTable


cpdef str sanitized_hint(hint):
    """``hint`` with ``.`` written ``_`` (TVM's names have no dots).

    Raises
    ------
    IRError
        ``hint`` is no str.
    """
    if not isinstance(hint, str):
        raise IRError(f"name hint must be a str; got {type(hint).__name__} {hint!r}")
    return hint.replace(".", "_")


cpdef str fresh_name(dict counter, hint):
    """A name not handed out before by the table whose counters are ``counter`` (every name
    handed out -> the last suffix number tried for it as a hint): ``hint`` itself (``v`` when
    empty), else ``hint`` + the next free number; ``counter`` is updated.

    Raises
    ------
    IRError
        ``hint`` is no str.
    """
    cdef str name = sanitized_hint(hint) or "v"
    cdef str candidate
    cdef Py_ssize_t k
    last = counter.get(name)
    if last is None:
        counter[name] = 0
        return name
    k = last
    while True:
        k += 1
        candidate = f"{name}{k}"
        if candidate not in counter:
            counter[name] = k
            counter[candidate] = 0
            return candidate


cpdef bint is_normal_call(expr):
    """Whether ``expr`` is a typed ``Call`` whose arguments are leaves or typed tuples of
    leaves: in A-normal form already (``normalize_anf`` returns it as it is)."""
    if type(expr) is not _Call or expr.ty is None:
        return False
    for a in expr.args:
        if type(a) in _LEAVES:
            continue
        if type(a) is not _Tuple or a.ty is None:
            return False
        for f in a.fields:
            if type(f) not in _LEAVES:
                return False
    return True


cpdef object emit(bb, value, name_hint):
    """Bind ``value`` to a new variable in the open block of the builder ``bb`` and return
    the variable (:meth:`~memcore_py.ir.builder.BlockBuilder.emit`; an empty ``name_hint``
    means ``lv`` in a dataflow block, else ``gv``).

    Raises
    ------
    IRError
        No function is open, ``value`` is no expression or is a function, or a name hint
        is no str.
    """
    cdef list scopes = bb._scopes
    cdef bint dataflow
    if not scopes:
        bb._scope("emit")  # raises: emit outside a function
    scope = scopes[len(scopes) - 1]
    if type(value) is not _Call:  # a Call is an expression and no function
        value = bb._check_value(value, "emitted value")
    if not is_normal_call(value):
        value = bb.normalize_anf(value)
    dataflow = scope.is_dataflow
    table = bb.name_table
    hint = name_hint or ("lv" if dataflow else "gv")
    name = fresh_name(table._counter, hint) if type(table) is _NameTable else table.fresh(hint)
    var = var_node(dataflow, name, value.ty)
    scope.bindings.append(binding_node(var, value))
    bb._bound[var] = value
    return var
