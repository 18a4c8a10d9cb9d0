"""ToNonDataflow: turn every dataflow block into an ordinary binding block.

Port of TVM ``ToNonDataflow`` (src/relax/transform/to_non_dataflow.cc), a function pass.

Rewrite
-------
Every :class:`~memcore_py.ir.DataflowBlock` (in the function body, in If branches and in
nested functions) becomes a :class:`~memcore_py.ir.BindingBlock`; every
:class:`~memcore_py.ir.DataflowVar` it binds becomes a plain :class:`~memcore_py.ir.Var`
with the same name and type, and every use follows. As in TVM (whose mutator normalizes
every SeqExpr it rebuilds), adjacent blocks of the same kind are then merged and empty
blocks dropped, so a typical function ends up with a single binding block::

    before:                                  after:
        a = R.add(x, x)                          a = R.add(x, x)
        with R.dataflow():                       b = R.add(a, a)
            b = R.add(a, a)     # DataflowVar    c = R.add(b, x)
            c = R.add(b, x)                      return c
            R.output(c)
        return c

Preconditions: none. Postconditions: no DataflowBlock and no DataflowVar remain.
Applies to every Relax function (TVM 0.27 does not skip ``Codegen`` functions either).
"""
from __future__ import annotations

from ..ir.expr import BindingBlock, DataflowBlock, DataflowVar, Function, Var
from ..ir.module import IRModule
from ..ir.functor import ExprMutator, map_functions
from .pass_infra import FunctionPass, PassContext

__all__ = ["to_non_dataflow", "ToNonDataflow"]


class _ToNonDFMutator(ExprMutator):
    """Port of TVM ``ToNonDFMutator``: DataflowVar definitions become Vars, dataflow
    blocks become binding blocks."""

    def visit_var_def(self, var):
        if type(var) is DataflowVar:
            new = Var(var.name, var.ty)
            self.var_remap[var] = new
            return new
        return var

    def visit_block(self, blk):
        if type(blk) is not DataflowBlock:
            return super().visit_block(blk)
        out = []
        saved = self.in_dataflow
        self.in_dataflow = False
        for b in blk.bindings:
            self.visit_binding(b, out)
        self.in_dataflow = saved
        return [BindingBlock(out)]


def to_non_dataflow(func: Function, name: str = "?") -> Function:
    """``func`` with all dataflow blocks and DataflowVars made ordinary (see the module
    docstring). Returns ``func`` itself when there is nothing to change. ``name`` is only
    used in error messages."""
    m = _ToNonDFMutator()
    m.func_name = name
    return m.visit_function(func)


class ToNonDataflow(FunctionPass):
    """Function pass: :func:`to_non_dataflow` on every Relax function of the module."""

    name = "to-non-dataflow"

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return to_non_dataflow(func)

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda func, name: to_non_dataflow(func, name))
