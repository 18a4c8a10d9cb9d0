"""RemovePurityChecking: mark pure functions ``relax.force_pure`` and unwrap pure overrides.

Port of TVM ``RemovePurityChecking`` (src/relax/transform/remove_purity_checking.cc), a
function pass, as TVM 0.27.0.post1 behaves (checked in the venv):

- every Relax function that is pure (``is_pure``; ``@R.function`` without ``pure=False``),
  top-level or nested, gets the attribute ``"relax.force_pure": True`` (set again if it
  was already there); impure functions keep their attributes;
- every ``R.call_pure_packed(f, a, b, ty_args=T)`` becomes the direct call
  ``f(a, b)`` (callee ``f``, usually an :class:`~memcore_py.ir.ExternFunc`; printed
  ``R.call_packed("f", a, b, ty_args=T)``) with the same attributes and ``ty_args`` —
  also inside impure functions;
- ``R.invoke_pure_closure(...)`` becomes ``R.invoke_closure(...)`` when those ops are
  registered.

Preconditions: none. Postconditions: no ``call_pure_packed`` remains, so later passes see
packed calls with an ExternFunc callee (StaticPlanBlockMemory treats their arguments as
uses).
"""
from __future__ import annotations

from ..ir.expr import Call, Function
from ..ir.module import IRModule
from ..ir.op import get_op, is_registered
from ..ir.functor import ExprMutator, map_functions
from .pass_infra import FunctionPass, PassContext

__all__ = ["ATTR_FORCE_PURE", "remove_purity_checking", "RemovePurityChecking"]

#: Function attribute that tells TVM's well-formedness checker not to check purity.
ATTR_FORCE_PURE = "relax.force_pure"

_CALL_PURE_PACKED = get_op("relax.call_pure_packed")


def _maybe_op(name):
    return get_op(name) if is_registered(name) else None


class _PurityRemover(ExprMutator):
    """Port of TVM ``PurityRemover``."""

    def __init__(self):
        super().__init__()
        self.invoke_pure_closure = _maybe_op("relax.invoke_pure_closure")
        self.invoke_closure = _maybe_op("relax.invoke_closure")

    def visit_function(self, func: Function) -> Function:
        attrs = func.attrs
        if func.is_pure:
            attrs = dict(attrs)
            attrs[ATTR_FORCE_PURE] = True
        body = self.visit_seq(func.body)
        if body is func.body and attrs is func.attrs:
            return func
        return Function(func.params, body, func.ret_ty, attrs, func.is_pure)

    def visit_call(self, call: Call):
        op = call.op
        if op is _CALL_PURE_PACKED:
            if not call.args:
                return self.visit_call_default(call)
            direct = Call(call.args[0], call.args[1:], call.attrs, call.ty_args, call.ty)
            return self.visit_call(direct)
        if op is not None and op is self.invoke_pure_closure and self.invoke_closure is not None:
            return self.visit_call(Call(self.invoke_closure, call.args, call.attrs, call.ty_args, call.ty))
        return self.visit_call_default(call)


def remove_purity_checking(func: Function, name: str = "?") -> Function:
    """``func`` with purity forced and pure-call wrappers removed (module docstring).
    ``name`` is only used in error messages."""
    m = _PurityRemover()
    m.func_name = name
    return m.visit_function(func)


class RemovePurityChecking(FunctionPass):
    """Function pass: :func:`remove_purity_checking` on every Relax function."""

    name = "remove-purity-checking"

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        return remove_purity_checking(func)

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda func, name: remove_purity_checking(func, name))
