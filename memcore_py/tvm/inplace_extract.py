"""DataflowUseInplaceCalls on a ``tvm.IRModule``: the module that has nothing to rewrite,
found without converting it.

Design
------
The pass rewrites only calls, bound in a dataflow block, of an op registered ``inplace``
(:mod:`memcore_py.transform.dataflow_use_inplace_calls`); a module without one is its own
result. Each Relax function is read into a binding table by the compiled TVM reader
(:class:`~memcore_py.tvm._table_reader.TVMReader`), its callees carrying the op table's
``CALLEE_INPLACE`` property (:func:`~memcore_py.analysis.storage_tokens.callee_flags`, the
``inplace`` registration the pass reads), and the table says where such calls are
and the pass's own question says which blocks it would search
(:func:`~memcore_py.analysis.dataflow_inplace.inplace_candidate_blocks`, the one statement of
"a call of an ``inplace`` op bound in a dataflow block"). When it names none, in any function,
the module is returned as it is; otherwise, and whenever a reader declines (a module the
compatibility gate keeps from the compiled reader, an expression it does not read), the full
conversion runs the pass. The answer is "nothing to do" or "ask the pass".
"""
from __future__ import annotations

from .._compiled import load_compiled
from ..analysis.dataflow_inplace import inplace_candidate_blocks
from . import _ffi_reader, _table_reader
from ._extraction import UNCHANGED, extern_flags, module_callees, op_flags, rewrite_functions

__all__ = ["module_without_inplace_calls"]


def module_without_inplace_calls(api, tvm_mod):
    """``tvm_mod`` itself when no Relax function of it binds a call of an ``inplace`` op in
    a dataflow block (DataflowUseInplaceCalls leaves it as it is); None when there may be one
    or the module could not be read (the full pass must run)."""
    binding_table = load_compiled("memcore_py.analysis._binding_table")
    callees = []  # the module's callee properties, made for the first function

    def unchanged(layout, _keep, name, f_addr):
        if not callees:
            callees.append(module_callees(_ffi_reader.module_functions(layout, tvm_mod.__chandle__()) or ()))
        table = binding_table.BindingTable()
        if _table_reader.TVMReader(table, layout, op_flags(api), callees[0], extern_flags).read_function(
                f_addr, name) is None:
            return None
        return None if inplace_candidate_blocks(table) else UNCHANGED

    out = rewrite_functions(api, tvm_mod, unchanged)
    return out if out is tvm_mod else None
