# cython: language_level=3
"""Names of the variables memcore's passes create, once for every writer (built by
``setup.py``; no fallback).

Design
------
A pass that creates variables names them as TVM's ``NameSupply`` does for one hint:
:class:`~memcore_py.ir.builder.NameTable`'s sequence (``storage``, ``storage1``, ...; ``_``,
``_1``, ...). The writers over memcore IR and over TVM's objects ask :func:`numbered_name` for
the k-th name of a hint instead of spelling the sequence again; the sequence itself is
``NameTable.fresh``'s. :func:`raw_name` is StaticPlanBlockMemory's name of the allocation
behind a view in arena mode.
"""

from memcore_py.ir.builder import NameTable

__all__ = ["numbered_name", "raw_name", "NAMES_PER_HINT"]

#: How many names of one hint are kept once made (later ones are made on each call).
NAMES_PER_HINT = 4096

cdef dict _SEQUENCES = {}   # hint -> [its NameTable, [the names it handed out, in order], counts up]


cdef bint _counts_up(list names):
    """Whether ``names`` are ``names[0]``, ``names[0]`` + 1, ``names[0]`` + 2, ..."""
    cdef Py_ssize_t j
    for j in range(1, len(names)):
        if names[j] != f"{names[0]}{j}":
            return False
    return True


cpdef str numbered_name(str hint, Py_ssize_t k):
    """The ``k``-th name (from 0) ``NameTable().fresh(hint)`` hands out.

    The first :data:`NAMES_PER_HINT` are kept as the table hands them out. Beyond, when the
    kept ones are ``hint``, ``hint`` + 1, ``hint`` + 2, ... (the table's sequence for any hint
    it does not change), the k-th is ``hint`` + k; else the table is asked again from the start.

    Raises
    ------
    ValueError
        ``k`` is negative.
    """
    if k < 0:
        raise ValueError(f"numbered_name: k must be >= 0; got {k}")
    seq = _SEQUENCES.get(hint)
    if seq is None:
        seq = _SEQUENCES[hint] = [NameTable(), [], None]
    table, names = seq[0], seq[1]
    while len(names) <= k and len(names) < NAMES_PER_HINT:
        names.append(table.fresh(hint))
    if k < len(names):
        return <str>names[k]
    if seq[2] is None:  # whether the kept names count up from the first
        seq[2] = _counts_up(names)
    if seq[2]:
        return f"{names[0]}{k}"
    table = NameTable()
    for _ in range(k):
        table.fresh(hint)
    return table.fresh(hint)


cpdef str raw_name(str name):
    """``name`` + ``"_raw"``: the raw allocation a view named ``name`` reads."""
    return name + "_raw"
