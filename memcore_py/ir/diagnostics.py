"""Error messages that point at IR: one description of a binding, one pass-error shape.

Every pass and analysis that rejects a binding names it the same way, ``<pass>: <what>; in
function '<name>', binding <var> = <value as printed>`` (STYLE.md: messages about IR print the
offending binding).
"""
from __future__ import annotations

from ..errors import PassError
from .expr import MatchCast
from .text.printer import format_expr

__all__ = ["describe_binding", "binding_error"]


def describe_binding(binding) -> str:
    """``'y = R.add(x, x)'``-style one-line description of a binding for error messages
    (always ``<var name> = <value>``, also for a void binding the printer would hide)."""
    try:
        value = format_expr(binding.value)
    except Exception:  # noqa: BLE001 - an unprintable value (malformed IR) is shown by repr
        value = repr(binding.value)
    if type(binding) is MatchCast:
        value = f"R.match_cast({value}, ...)"
    return f"{binding.var.name} = {value}"


def binding_error(pass_name: str, func_name: str, binding, what: str) -> PassError:
    """A :class:`PassError` naming the pass, the function and the offending binding."""
    return PassError(f"{pass_name}: {what}; in function {func_name!r}, binding {describe_binding(binding)}")
