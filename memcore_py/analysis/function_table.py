"""One Relax function of memcore IR read into the binding table, for the passes that read it
whole (CanonicalizeBindings, UnusedTrivialBindingRemover, DeadCodeElimination's unused
bindings, DataflowUseInplaceCalls' candidate blocks).

The reader (:class:`memcore_py.analysis._ir_reader.IRReader`) and the table
(:class:`memcore_py.analysis._binding_table.BindingTable`) are the ones every pass uses; this
module only fixes how these passes ask for them: nested scopes read, the callees' properties
the op table's (:func:`~memcore_py.analysis.storage_tokens.callee_flags`) or none (every
call's arguments read), and what the reader cannot read raised as the pass's
:class:`~memcore_py.errors.PassError`.
"""
from __future__ import annotations

from functools import partial

from .._compiled import load_compiled
from ..errors import PassError
from .storage_tokens import callee_flags

__all__ = ["read_function_table"]


def _no_callee_flags(callee) -> int:
    """No callee property: the reader reads every call's arguments."""
    return 0


def read_function_table(body, name: str, pass_name: str, with_callee_flags: bool = False):
    """The binding table of the function whose body is ``body``, and its reader.

    Parameters
    ----------
    body : SeqExpr
        The function's body.
    name : str
        The function's name, for error messages.
    pass_name : str
        The pass asking, for error messages.
    with_callee_flags : bool, default False
        Give each callee the op table's properties (``CALLEE_*``); else none.

    Returns
    -------
    (BindingTable, IRReader)
        The table (the function is its function 0) and the reader that filled it (its
        ``callees`` in id order).

    Raises
    ------
    PassError
        What the reader cannot read, naming the pass, function and binding.
    """
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    reader = load_compiled("memcore_py.analysis._ir_reader").IRReader(
        table, partial(callee_flags, frozenset()) if with_callee_flags else _no_callee_flags, PassError, pass_name,
        nested_scopes=True)
    reader.read_function(name, body)
    if table.errors[0] is not None:
        raise table.errors[0]
    return table, reader
