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

cdef dict _SEQUENCES = {}   # hint -> (its NameTable, [the names it handed out, in order])


cpdef str numbered_name(str hint, Py_ssize_t k):
    """The ``k``-th name (from 0) ``NameTable().fresh(hint)`` hands out.

    Raises
    ------
    ValueError
        ``k`` is negative.
    """
    if k < 0:
        raise ValueError(f"numbered_name: k must be >= 0; got {k}")
    seq = _SEQUENCES.get(hint)
    if seq is None:
        seq = _SEQUENCES[hint] = (NameTable(), [])
    table, names = seq
    while len(names) <= k and len(names) < NAMES_PER_HINT:
        names.append(table.fresh(hint))
    if k < len(names):
        return <str>names[k]
    table = NameTable()  # beyond the kept names: the sequence from its start
    for _ in range(k):
        table.fresh(hint)
    return table.fresh(hint)


cpdef str raw_name(str name):
    """``name`` + ``"_raw"``: the raw allocation a view named ``name`` reads."""
    return name + "_raw"
