"""Shared machinery of the lowering passes (CallTIRRewrite, ToNonDataflow,
RemovePurityChecking, LowerAllocTensor, CanonicalizeBindings, KillAfterLastUse).

The mutator base, block normalisation and type equality live in ``memcore_py.ir``
(:mod:`~memcore_py.ir.functor`, :mod:`~memcore_py.ir.types`); node construction without
validation in :mod:`memcore_py.ir.construct`; binding error messages in
:mod:`memcore_py.ir.diagnostics`. What remains here is pass-specific:
:class:`BindingTrackingMutator`, the mutator of passes that must name the binding they fail on.
"""
from __future__ import annotations

from ..errors import PassError
from ..ir.diagnostics import binding_error
from ..ir.functor import ExprMutator

__all__ = ["BindingTrackingMutator"]


class BindingTrackingMutator(ExprMutator):
    """An :class:`~memcore_py.ir.functor.ExprMutator` that keeps, while a binding's value is rewritten, the binding
    (``self._binding``) and the list its result goes to (``self._out``, so the rewrite can
    emit bindings before it); both are None outside a binding. :meth:`_fail` makes the
    :class:`PassError` of pass ``pass_name``, naming the binding when there is one."""

    pass_name = "?"

    def __init__(self):
        super().__init__()
        self._out = None
        self._binding = None

    def visit_binding(self, b, out):
        saved = self._out, self._binding
        self._out, self._binding = out, b
        try:
            value = self.visit_expr(b.value)
        finally:
            self._out, self._binding = saved
        out.append(self.rebind(b, value))

    def _fail(self, what):
        if self._binding is None:
            return PassError(f"{self.pass_name}: {what}; in function {self.func_name!r}")
        return binding_error(self.pass_name, self.func_name, self._binding, what)
