"""Parser values: what an expression evaluates to before it is converted where used.

Design
------
The expression evaluator (:mod:`memcore_py.ir.text.parse_expr`) yields IR nodes, PrimExprs,
types, plain Python values (numbers, strings, lists, tuples, dicts) and a few
parser-internal kinds, defined here: a dotted name used without a call (``R.Tensor``), a
half-written metadata reference, a ``T.int64()`` declaration, an ``R.match_cast`` pair and the
module class name. Each is valid only in some places; :func:`_describe` names any value in an
error message, :func:`_attr_value` turns a value into an attribute value (refusing the
internal kinds), and :func:`_no_more` refuses the keyword arguments a handler left unread.
"""
from __future__ import annotations

from ..expr import Constant, Expr, GlobalVar, Var
from ..prim import PrimExpr
from ..types import TensorType, Type
from .parse_core import _Err
from .prim_func_text import type_spelled_bare


class _Bare:
    """A dotted name used without a call (``R.Tensor``, ``T.int64``)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class _MetaRoot:
    __slots__ = ()


class _MetaKey:
    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key


class _MatchCastPair:
    __slots__ = ("value", "ty")

    def __init__(self, value, ty):
        self.value = value
        self.ty = ty


class _Decl:
    """``T.int64()``: a symbolic var declaration (only valid as a whole statement value)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


class _ClsRef:
    __slots__ = ()


_META_ROOT = _MetaRoot()
_CLS = _ClsRef()


def _describe(v) -> str:
    if isinstance(v, (Var, GlobalVar)):
        return f"{type(v).__name__} {v.name!r}"
    if isinstance(v, Expr):
        return type(v).__name__
    if isinstance(v, Type):
        return f"the type {type(v).__name__}"
    if isinstance(v, PrimExpr):
        return f"the symbolic expression {v!r}"
    if type(v) is _Bare:
        return v.name
    if v is _META_ROOT or type(v) is _MetaKey:
        return "an incomplete metadata reference"
    if type(v) is _Decl:
        return f"T.{v.dtype}() (a declaration)"
    if type(v) is _MatchCastPair:
        return "R.match_cast(...) (only valid as a whole binding value)"
    return f"{type(v).__name__} {v!r}"


#: Parser-internal values (a bare name, a half-written reference, ...): never attribute values.
_INTERNAL_VALUES = (_Bare, _MetaRoot, _MetaKey, _Decl, _MatchCastPair, _ClsRef)


#: The metadata key of an integer beyond int64 in TVM's text (not an array: refused).
_META_BIG_INT = "ffi.BigInt"


def _attr_value(v):
    """Attribute values: lists become tuples (recursively); other values as parsed. A value
    that is not an IR value (``foo=R.Any``: a bare name, which TVM's parser keeps as the
    Python function of that name) is refused here, and so is a type that is printed as a
    bare name (``foo=R.Tensor()`` prints ``foo=R.Tensor``), so that what parses can be
    printed and read back (:func:`~memcore_py.ir.text.prim_func_text.type_spelled_bare`)."""
    t = type(v)
    if t is list or t is tuple:
        return tuple(_attr_value(x) for x in v)
    if t is dict:
        return {k: _attr_value(x) for k, x in v.items()}
    if isinstance(v, _INTERNAL_VALUES) or v is _META_ROOT:
        raise _Err(f"{_describe(v)} is not an attribute value", None)
    if isinstance(v, Type) and type_spelled_bare(v):
        raise _Err(f"the type {v!r} is not an attribute value (TVMScript spells it as a bare name, which reads "
                   "back as a function)", None)
    return v


def _constant(arr):
    return Constant(arr, TensorType(tuple(int(d) for d in arr.shape), str(arr.dtype)))


def _no_more(kwargs, tok, pos):
    if kwargs:
        raise _Err(f"{tok}: unexpected keyword argument {next(iter(kwargs))!r}", pos)


def _bound_args(args, kwargs, names, tok, pos, ignored=()):
    """The values of the parameters ``names`` of ``tok`` from its call's ``args`` and
    ``kwargs``, as Python binds them (a keyword first, then the positional arguments in order
    for the parameters still unset; None for one not given), and the positional arguments
    left over. A keyword not in ``names`` or ``ignored`` is an error."""
    kwargs = dict(kwargs)
    values = [kwargs.pop(n, None) for n in names]
    for n in ignored:
        kwargs.pop(n, None)
    _no_more(kwargs, tok, pos)
    args = list(args)
    for i in range(len(values)):
        if args and values[i] is None:
            values[i] = args.pop(0)
    return values, args
