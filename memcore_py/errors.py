"""Errors of the Python layer.

All derive from :class:`memcore.MemcoreError` (the engine's base), so one ``except`` catches
everything memcore raises on purpose. Where a builtin category fits, it is inherited too.
"""
from memcore._errors import MemcoreError

__all__ = [
    "MemcoreError",
    "IRError",
    "WellFormedError",
    "ParseError",
    "PassError",
    "PlanningError",
    "FrontendError",
    "UnsupportedOperatorError",
    "InputNotImplementedError",
    "FrontendDependencyError",
]


class IRError(MemcoreError, ValueError):
    """Malformed or unsupported IR given to an IR API (builder, printer, analysis)."""


class WellFormedError(IRError):
    """``well_formed`` found a violation; the message names function, block and binding."""


class ParseError(IRError):
    """TVMScript text could not be read.

    Attributes
    ----------
    line, column : int
        1-based position of the offending token.
    source_line : str
        The offending line of the source text.
    """

    def __init__(self, message, line=0, column=0, source_line=""):
        self.msg = message
        self.line = line
        self.column = column
        self.source_line = source_line
        text = f"{message} (line {line}, column {column})"
        if source_line:
            caret = " " * max(column - 1, 0) + "^"
            text += f"\n    {source_line}\n    {caret}"
        super().__init__(text)


class PassError(MemcoreError):
    """A pass's preconditions failed, or a pass failed inside a pipeline (``__cause__`` set)."""


class PlanningError(MemcoreError):
    """A memory plan could not be made for a well-formed input."""


class FrontendError(IRError):
    """A model from another framework could not be imported (``memcore_py.frontend``): an
    input, argument or output the importer cannot represent; the message names it and the
    graph node where it occurs."""


class UnsupportedOperatorError(FrontendError):
    """The graph uses operators the importer has no converter for; all of them are listed at
    once.

    Attributes
    ----------
    ops : dict of str to tuple of str
        Operator name (``"aten.cumsum.default"``) -> names of the graph nodes calling it, in
        graph order.
    """

    def __init__(self, message, ops=None):
        self.ops = dict(ops or {})
        super().__init__(message)


class InputNotImplementedError(FrontendError, NotImplementedError):
    """An input format memcore recognises but cannot read yet (``.onnx`` models)."""


class FrontendDependencyError(MemcoreError, ImportError):
    """An importer needs an optional package that is not installed (``torch`` for
    :func:`memcore_py.frontend.exported_program.from_exported_program`)."""
