"""PrimFunc text as a module: read, write and edit the TVMScript of a TIR function.

Design
------
memcore keeps a TIR function as a signature plus opaque text
(:class:`~memcore_py.ir.PrimFunc`: ``params``, ``attrs``, ``private``, ``text``). Everything
the code base does with that text is here, as functions of the text and the node:

- **read**: :func:`read_prim_func` gives the name and the node of a PrimFunc text (the
  parser hands it every ``@T.prim_func`` it meets); :func:`parse_attr_dict` reads a
  ``T.func_attr`` dict;
- **write**: :func:`signature_only_text` writes a PrimFunc without body text (``text`` None),
  which :func:`read_prim_func` reads back as signature-only;
- **edit**: :func:`synced_text` makes the decorator's ``private=`` and the ``T.func_attr``
  line of a text agree with new values, :func:`with_attrs` returns a PrimFunc with new attrs
  and its text already synced, :func:`renamed_text` copies a text under a new name;
- **compare**: :func:`normalized_text` (structural equality and the builder's fingerprint);
- **names**: :func:`signature_typevars`, the free names of a signature the printer declares
  as module ``TypeVar`` lines.

Text form (what is read and written)::

    @T.prim_func(private=True, s_tir=True)          keywords: private, s_tir, check_well_formed
    def add(A: T.Buffer((T.int64(2), "n * 2"), "float32"), n: T.int64, h: T.handle):
        T.func_attr({"tirx.noalias": True})         among the first 8 body lines; optional
        <body>                                      never read

The text of a PrimFunc read from a module is its lines from the decorator to the last body
line, dedented, ending with one newline. A signature-only PrimFunc is written as its
signature, its ``T.func_attr`` line (when it has attrs) and ``T.evaluate(0)``; a text that is
exactly that form reads back as signature-only (``text`` None), so printing and parsing
round-trip both kinds.

Layering
--------
This module imports neither the printer nor the parser; both use it (the printer for
PrimFuncs and for the spelling below, the parser for every PrimFunc it reads), so neither
needs the other. The few expressions a PrimFunc text holds that memcore evaluates (decorator
keywords, parameter annotations, the ``T.func_attr`` dict) are read with Python's own parser
(:mod:`ast`): TVMScript is Python syntax, and TVM's parser reads it the same way. They are
evaluated with the TIR rules of TVMScript, which differ from Relax text: an int literal in a
shape is ``int32`` (``T.int64(2)`` is int64), a float literal ``float32``, and an int next
to a symbolic expression takes that expression's dtype.

Two groups of helpers live here because PrimFunc text needs them and both the printer and
the parser use them too, so each rule has one implementation:

- the *value rules* of TVMScript expressions (:func:`number_prim`, :func:`negated`,
  :func:`binary_value`, :func:`min_max`, the conditions :func:`compare_value`,
  :func:`logical_value`, :func:`not_value`, :func:`prim_call`, :func:`cast_value`,
  :func:`select_value`, and :func:`dtype_literal`, :func:`float_value`,
  :func:`parameter_spans`), which the Relax parser applies with its own dtypes of bare
  literals (``int64``/``float64``);
- the *spelling* of PrimExprs and attribute values (:func:`format_prim`,
  :func:`format_attr_value`, :func:`format_attr_dict`, :func:`str_literal`,
  :func:`float_literal`, :func:`identifier`), which the printer uses for Relax text. Values
  outside it (types, Relax expressions) are written by a ``value_text`` hook the printer
  passes; a PrimFunc attribute must not hold one.

Errors: reading raises :class:`~memcore_py.errors.ParseError` with a 1-based line and column
in the given text (the parser moves them to the module's line and column); writing a node
the text form cannot express raises :class:`~memcore_py.errors.IRError`.

Performance
-----------
Bodies are never read: a PrimFunc costs its signature and the first body lines. A
signature is split at its top-level commas (tokens of :mod:`memcore_py.ir.text.lexer`), and each
decorator line, parameter annotation and ``T.func_attr`` line that reads no names is
evaluated once per process (bounded caches; PrimExprs are immutable and shared, attr dicts
are copied per use). Anything unusual, including every error, is read again from the ast of
the whole signature, which locates errors at their token.
"""
from __future__ import annotations

import ast
import json
import math
import operator
import re
import warnings

import numpy as np

from ...errors import IRError, ParseError
from .lexer import string_value, strip_comment, tokenize
from ..expr import PrimFunc, PrimFuncParam
from ..memo import MEMO
from ..module import VDevice
from ..types import FuncType, ObjectType, PrimType, TensorType, TupleType
from ..prim import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Cast,
    CmpOp,
    FloatImm,
    FloorDiv,
    FloorMod,
    IfThenElse,
    IntImm,
    Max,
    Min,
    Mul,
    Not,
    Or,
    PrimExpr,
    PrimVar,
    Select,
    Sub,
)

__all__ = [
    "DTYPE_NAMES",
    "RESERVED_NAMES",
    "read_prim_func",
    "parse_attr_dict",
    "signature_only_text",
    "synced_text",
    "with_attrs",
    "renamed_text",
    "normalized_text",
    "signature_typevars",
    "parameter_spans",
    "number_prim",
    "negated",
    "binary_value",
    "compare_value",
    "logical_value",
    "not_value",
    "cast_value",
    "select_value",
    "PRIM_CALLS",
    "prim_call",
    "min_max",
    "dtype_literal",
    "float_value",
    "format_prim",
    "format_attr_value",
    "format_attr_dict",
    "str_literal",
    "float_literal",
    "identifier",
    "type_spelled_bare",
]

#: Names the printed text itself uses (module aliases, the header's names, Python keywords):
#: the printer renames a Relax var so named, the parser refuses a symbolic var so named.
RESERVED_NAMES = frozenset(
    {
        "R", "T", "I", "cls", "metadata", "TypeVar", "float", "Axis", "tvm", "tir", "relax", "ir",
        "Tx", "tirx",
        # Python keywords and constants
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise",
        "return", "try", "while", "with", "yield", "print",
    }
)

#: The dtypes TVMScript writes as ``T.<dtype>`` (``T.int64``, ``T.float32(1.5)``, ``T.handle``).
DTYPE_NAMES = frozenset(
    {
        "bool", "int4", "uint4", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
        "uint64", "float8_e4m3fn", "float8_e5m2", "float16", "bfloat16", "float32", "float64",
        "handle",
    }
)

#: Keywords ``@T.prim_func(...)`` accepts (all bool).
_DECORATOR_KEYWORDS = ("private", "s_tir", "check_well_formed")
#: How many body lines are searched for ``T.func_attr`` (TVM prints it first).
_ATTR_SEARCH_LINES = 8

_INDENT = "    "
_DEF_RE = re.compile(r"\bdef\s+([A-Za-z_][A-Za-z_0-9]*)\s*\(")
_DEF_LINE_RE = re.compile(r"[ \t]*def[ \t]+([A-Za-z_][A-Za-z_0-9]*)[ \t]*\(")
_PRIVATE_KW = re.compile(r"\bprivate\s*=\s*(True|False)\s*,?\s*")  # \b, not \s*: linear
_DECL_LINE_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\s*=\s*T\.[a-z0-9_]+\(\)$")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")
_BAD_CHARS = re.compile(r"[^A-Za-z_0-9]")


# ------------------------------------------------------------------------------ value rules
# What a TVMScript expression means, shared with the Relax parser so that a literal or an
# operator means the same in a PrimFunc signature and in Relax text. The dtype of a bare
# literal is the caller's (``int32``/``float32`` in TIR, ``int64``/``float64`` in Relax).
_PRIM_BINARY = {"+": Add, "-": Sub, "*": Mul, "//": FloorDiv, "%": FloorMod}
_NUMBER_BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}


def number_prim(v, other=None, int_dtype: str = "int64", float_dtype: str = "float64"):
    """A plain number as a literal PrimExpr, or None when ``v`` is not an int, bool or float.

    An int or float next to a PrimExpr ``other`` takes ``other``'s dtype, else ``int_dtype`` /
    ``float_dtype``; a bool is ``IntImm(0 or 1, "bool")``.
    """
    t = type(v)
    if t is int:
        return IntImm(v, other.dtype if isinstance(other, PrimExpr) else int_dtype)
    if t is bool:
        return IntImm(int(v), "bool")
    if t is float:
        return FloatImm(v, other.dtype if isinstance(other, PrimExpr) else float_dtype)
    return None


def negated(v):
    """``-v`` for a number or a PrimExpr (a literal keeps its dtype, another expression is
    ``0 - v``); None when ``v`` cannot be negated."""
    t = type(v)
    if t is int or t is float:
        return -v
    if t is IntImm:
        return IntImm(-v.value, v.dtype)
    if t is FloatImm:
        return FloatImm(-v.value, v.dtype)
    if isinstance(v, PrimExpr):
        return Sub(IntImm(0, v.dtype), v)
    return None


def binary_value(op: str, a, b, as_prim):
    """``a <op> b`` for ``op`` in ``+ - * // %``.

    Two plain numbers are folded (``ZeroDivisionError`` for ``//`` or ``%`` by zero);
    otherwise both sides become PrimExprs through ``as_prim(x, other)`` (the caller's
    conversion, so that a number takes the other side's dtype) and the result is a node.
    """
    if type(a) in (int, float) and type(b) in (int, float):
        return _NUMBER_BINARY[op](a, b)
    a = as_prim(a, b)
    b = as_prim(b, a)
    return _PRIM_BINARY[op](a, b)


_PRIM_COMPARE = {"<": LT, "<=": LE, ">": GT, ">=": GE, "==": EQ, "!=": NE}
_NUMBER_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
                   "!=": operator.ne}


def compare_value(op: str, a, b, as_prim):
    """``a <op> b`` for ``op`` in ``< <= > >= == !=``: two plain numbers compare to a Python
    bool; otherwise both sides become PrimExprs as in :func:`binary_value` and the result is a
    comparison node (TVMScript's ``_auto_broadcast`` comparisons, unfolded)."""
    if type(a) in (int, float, bool) and type(b) in (int, float, bool):
        return _NUMBER_COMPARE[op](a, b)
    a = as_prim(a, b)
    b = as_prim(b, a)
    return _PRIM_COMPARE[op](a, b)


def _bool_operand(v):
    return IntImm(int(v), "bool") if type(v) is bool else v


def logical_value(op: str, a, b):
    """``a and b`` / ``a or b`` (``op``) as TVMScript evaluates it: a Python bool on the left
    that decides the result is the result; two plain values follow Python; otherwise an
    :class:`~memcore_py.ir.prim.And` / :class:`~memcore_py.ir.prim.Or` node (a bool becomes
    ``T.bool``).

    Raises
    ------
    ValueError
        An operand that is neither a bool expression nor a bool.
    """
    if type(a) is bool and (a if op == "or" else not a):
        return a
    if not isinstance(a, PrimExpr) and not isinstance(b, PrimExpr):
        return (a and b) if op == "and" else (a or b)
    a, b = _bool_operand(a), _bool_operand(b)
    for v in (a, b):
        if not isinstance(v, PrimExpr):
            raise ValueError(f"'{op}' takes bool expressions; got {type(v).__name__} {v!r}")
    return And(a, b) if op == "and" else Or(a, b)


def not_value(a):
    """``not a``: a :class:`~memcore_py.ir.prim.Not` node of a PrimExpr, else Python's ``not``."""
    if isinstance(a, PrimExpr):
        return Not(a)
    return not a


def cast_value(dtype, v, as_prim):
    """``T.Cast(dtype, v)``: a :class:`~memcore_py.ir.prim.Cast` of ``as_prim(v, None)``.

    Raises
    ------
    ValueError
        ``dtype`` is not a string.
    """
    if type(dtype) is not str:
        raise ValueError(f"T.Cast takes a dtype string first; got {type(dtype).__name__} {dtype!r}")
    return Cast(dtype, as_prim(v, None))


def select_value(name: str, c, t, f, as_prim):
    """``T.Select(c, t, f)`` or ``T.if_then_else(c, t, f)`` (``name``): the node as written
    (no folding of a constant condition); a bool condition becomes ``T.bool``, the branches
    are converted as the operands of :func:`binary_value`."""
    c = as_prim(c, None)
    tv = as_prim(t, f if isinstance(f, PrimExpr) else None)
    fv = as_prim(f, tv)
    return (Select if name == "T.Select" else IfThenElse)(c, tv, fv)


#: The TVMScript functions of the conditional nodes with two operands (``T.LT(1, 2)`` is
#: how TVM prints a comparison its folding would rewrite): name -> node class.
PRIM_CALLS = {"T.LT": LT, "T.LE": LE, "T.GT": GT, "T.GE": GE, "T.EQ": EQ, "T.NE": NE, "T.And": And, "T.Or": Or}


def prim_call(name: str, x, y, as_prim):
    """``T.LT(x, y)`` ... ``T.Or(x, y)`` (``name`` in :data:`PRIM_CALLS`): the node as written,
    operands as in :func:`binary_value` (a bool is ``T.bool``)."""
    a = as_prim(x, y if isinstance(y, PrimExpr) else None)
    b = as_prim(y, a)
    return PRIM_CALLS[name](a, b)


def min_max(name: str, x, y, as_prim):
    """``T.min(x, y)`` or ``T.max(x, y)`` (``name``); operands as in :func:`binary_value`."""
    a = as_prim(x, y if isinstance(y, PrimExpr) else None)
    b = as_prim(y, a)
    return Min(a, b) if name == "T.min" else Max(a, b)


def dtype_literal(dtype: str, v):
    """The value of ``T.<dtype>(v)``: a FloatImm for float dtypes (also from ``"inf"``,
    ``"-inf"``, ``"nan"``), ``IntImm(0 or 1, "bool")`` for bool, an IntImm for integer
    dtypes (from an int, a bool or an IntImm).

    Raises
    ------
    ValueError
        ``v`` does not fit; the message says what ``T.<dtype>`` takes (callers add what they
        got and where).
    """
    t = type(v)
    if dtype.startswith("float") or dtype == "bfloat16":
        if t is int or t is float or (t is str and v in ("inf", "-inf", "nan")):
            return FloatImm(float(v), dtype)
        raise ValueError(f"T.{dtype}(...) takes a number")
    if dtype == "bool":
        if t is bool or t is int:
            return IntImm(int(bool(v)), "bool")
        raise ValueError("T.bool(...) takes True or False")
    if dtype == "handle":
        raise ValueError("T.handle(...) is not a value")
    if t is int or t is bool:
        return IntImm(int(v), dtype)
    if t is IntImm:
        return IntImm(v.value, dtype)
    raise ValueError(f"T.{dtype}(...) takes an integer literal")


def float_value(args, kwargs) -> float:
    """The value of ``float(...)`` called with ``args`` and ``kwargs``.

    Raises
    ------
    ValueError
        Not one number or numeric string.
    """
    if len(args) != 1 or kwargs or not isinstance(args[0], (str, int, float)):
        raise ValueError("float(...) takes one number or string")
    try:
        return float(args[0])
    except ValueError:
        raise ValueError(f"float({args[0]!r}) is not a number") from None


# ------------------------------------------------------------------------------ spelling
def type_spelled_bare(ty) -> bool:
    """Whether TVMScript spells the type ``ty`` as a bare name, as TVM's printer and
    :func:`memcore_py.ir.text.printer.format_type` do: ``R.Tensor`` (no shape, dtype, ndim or
    vdevice), ``R.Tuple`` (no fields), ``R.Any``, ``R.Callable`` (no parameter types), a
    prim type ``T.int64``. As a call attribute's value such a name reads back as the Python
    function of that name (TVM's parser keeps the function), not as the type: memcore's
    parser refuses such a value, and :func:`memcore_py.tvm.from_tvm` refuses the type."""
    t = type(ty)
    if t is TensorType:
        return ty.shape is None and not ty.dtype and ty.ndim == -1 and not ty.vdevice
    if t is TupleType:
        return not ty.fields
    if t is FuncType:
        return ty.params is None
    return t is ObjectType or t is PrimType


def str_literal(s: str) -> str:
    """A double-quoted TVMScript string literal: JSON escapes (ASCII text), except that a
    character beyond U+FFFF is written ``\\Uhhhhhhhh``, not as JSON's surrogate pair, which
    TVM's parser (Python's) would read as two unencodable surrogates. Python, so TVM, and
    memcore's parser read the literal back as ``s``."""
    text = json.dumps(s)
    if not _ASTRAL.search(s):
        return text
    return '"' + "".join(f"\\U{ord(c):08x}" if ord(c) > 0xFFFF else json.dumps(c)[1:-1] for c in s) + '"'


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def float_literal(v: float) -> str:
    """A float literal; non-finite values as ``float("inf")`` (TVM's ``"inf"`` does not parse)."""
    if math.isfinite(v):
        return repr(float(v))
    if math.isnan(v):
        return 'float("nan")'
    return 'float("inf")' if v > 0 else 'float("-inf")'


def identifier(name: str) -> str:
    """``name`` made a valid identifier (``a.b`` -> ``a_b``; empty -> ``v``; ``1x`` -> ``v1x``)."""
    if _IDENT_RE.match(name):
        return name
    name = _BAD_CHARS.sub("_", name)
    if not name:
        return "v"
    if name[0].isdigit():
        name = "v" + name
    return name


#: Precedence of the infix forms, TVM's printer's scale (Python's): ``or`` 3, ``and`` 4,
#: ``not`` 5, comparisons 6, ``+ -`` 11, ``* // %`` 12; a call, name or literal is 15.
_PREC = {Or: 3, And: 4, LT: 6, LE: 6, GT: 6, GE: 6, EQ: 6, NE: 6, Add: 11, Sub: 11, Mul: 12, FloorDiv: 12,
         FloorMod: 12}
_NOT_PREC = 5
_ATOM_PREC = 15
_INFIX = {Add: " + ", Sub: " - ", Mul: " * ", FloorDiv: " // ", FloorMod: " % ", LT: " < ", LE: " <= ",
          GT: " > ", GE: " >= ", EQ: " == ", NE: " != ", And: " and ", Or: " or "}


def format_prim(e: PrimExpr, tir: bool = False, rename=None) -> str:
    """TVMScript text of a symbolic expression.

    Parameters
    ----------
    e : PrimExpr
    tir : bool, default False
        TIR spelling (PrimFunc signatures): int64 literals are ``T.int64(2)`` and int32 ones
        bare. In Relax text (the default) int64 literals are bare and others ``T.int32(2)``,
        except as an operand whose dtype the parser takes from the other operand
        (``T.Cast("int32", n) < 3``), and bool literals there are ``True``/``False``, as TVM
        prints them.
    rename : dict, optional
        PrimVar name -> printed name.

    Returns
    -------
    str
        With the fewest parentheses that keep the tree (``(a + b) * c``, ``a - (b - c)``,
        ``not (a and b)``), as TVM's printer places them. A comparison, ``and``, ``or`` or
        ``not`` that TVM's constant folding would rewrite (``T.LT(1, 2)``, ``T.And(c, True)``,
        ``T.Not(True)``) is written as a call, as TVM writes it; ``T.Cast("int64", x)``,
        ``T.Select(c, a, b)`` and ``T.if_then_else(c, a, b)`` always are.

    Raises
    ------
    IRError
        ``e`` is not a PrimExpr memcore knows.
    """
    return _format(e, tir, rename, None)[0]


#: ``sibling`` of an operand that no other operand gives a dtype (a cast's): a bool literal
#: there is ``True``/``False``, another literal keeps its ``T.<dtype>(...)`` unless int64
_OPERAND = IntImm(0, "bool")


def _literal(e, tir: bool, sibling) -> str:
    """An ``IntImm`` or ``FloatImm``; ``sibling`` is the operand whose dtype the parser gives a
    bare literal next to it (None at the top of an expression, :data:`_OPERAND` for an operand
    without one)."""
    dt = e.dtype
    if type(e) is FloatImm:
        return f"T.{dt}({float_literal(e.value)})"
    if tir:
        if dt == "int64":
            return f"T.int64({e.value})"
        if dt == "int32":
            return str(e.value)
    elif dt == "int64":
        return str(e.value)
    if dt == "bool":
        if sibling is None or tir:
            return f"T.bool({bool(e.value)})"
        return "True" if e.value else "False"
    if not tir and sibling is not None and type(sibling) is not IntImm and sibling.dtype == dt:
        return str(e.value)
    return f"T.{dt}({e.value})"


def _format(e, tir, rename, sibling):
    """``(text, precedence)`` of ``e`` (:func:`format_prim`); ``sibling`` as in :func:`_literal`."""
    t = type(e)
    if t is IntImm or t is FloatImm:
        return _literal(e, tir, sibling), _ATOM_PREC
    if t is PrimVar:
        return (rename.get(e.name, e.name) if rename else e.name), _ATOM_PREC
    prec = _PREC.get(t)
    if prec is not None:
        a, b = e.a, e.b
        sa, pa = _format(a, tir, rename, b)
        sb, pb = _format(b, tir, rename, a)
        if not _infix_kept(t, a, b):
            return f"{e.name}({sa}, {sb})", _ATOM_PREC
        if pa < prec:
            sa = f"({sa})"
        if pb <= prec:
            sb = f"({sb})"
        return sa + _INFIX[t] + sb, prec
    if t is Min or t is Max:
        return f"{e.symbol}({_format(e.a, tir, rename, e.b)[0]}, {_format(e.b, tir, rename, e.a)[0]})", _ATOM_PREC
    if t is Not:
        sa, pa = _format(e.a, tir, rename, _OPERAND)
        if type(e.a) is IntImm and not tir:  # TVM's ``not`` of a bare literal is the call
            return f"T.Not({sa})", _ATOM_PREC
        return "not " + (f"({sa})" if pa < _NOT_PREC else sa), _NOT_PREC
    if t is Cast:
        return f'T.Cast("{e.dtype}", {_format(e.value, tir, rename, _OPERAND)[0]})', _ATOM_PREC
    if t is Select or t is IfThenElse:
        c, tv, fv = e.condition, e.true_value, e.false_value
        parts = (_format(c, tir, rename, _OPERAND)[0], _format(tv, tir, rename, fv)[0],
                 _format(fv, tir, rename, tv)[0])
        return f"{e.name}({', '.join(parts)})", _ATOM_PREC
    raise IRError(f"cannot write PrimExpr {e!r} as TVMScript")


def _infix_kept(t, a, b) -> bool:
    """TVM prints a comparison, ``and`` or ``or`` infix unless its operator function would fold
    it (``TryConstFold``): a comparison of two literals; ``and``/``or`` with a literal."""
    if t is And or t is Or:
        return type(a) is not IntImm and type(b) is not IntImm
    if issubclass(t, CmpOp):
        ta, tb = type(a), type(b)
        return not ((ta is IntImm and tb is IntImm) or (ta is FloatImm and tb is FloatImm))
    return True


def format_attr_value(v, value_text=None) -> str:
    """TVMScript text of one attribute value.

    Parameters
    ----------
    v : bool, int, float, str, None, list, tuple, dict, PrimExpr, numpy scalar or VDevice
        Lists and tuples are written as lists, an ``IntImm`` as ``T.int64(128)`` (so it reads
        back as an IntImm, not as a Python int), other PrimExprs in Relax spelling.
    value_text : callable, optional
        ``value_text(v) -> str or None`` for values outside that list (the printer writes
        types and Relax expressions with it); None means "not writable".

    Raises
    ------
    IRError
        A value neither this function nor ``value_text`` can write.
    """
    t = type(v)
    if t is bool:
        return "True" if v else "False"
    if t is int:
        return str(v)
    if t is float:
        return float_literal(v)
    if t is str:
        return str_literal(v)
    if v is None:
        return "None"
    if t is list or t is tuple:
        return "[" + ", ".join(format_attr_value(x, value_text) for x in v) + "]"
    if t is dict:
        return format_attr_dict(v, value_text)
    if isinstance(v, PrimExpr):
        if t is IntImm:
            return f"T.{v.dtype}({bool(v.value) if v.dtype == 'bool' else v.value})"
        return format_prim(v)
    if isinstance(v, VDevice):
        return f"I.vdevice({format_attr_value(v.target, value_text)}, {v.vdevice_id}, {str_literal(v.memory_scope)})"
    if isinstance(v, np.generic):
        return format_attr_value(v.item(), value_text)
    text = value_text(v) if value_text is not None else None
    if text is None:
        raise IRError(f"unsupported attribute value {v!r} of type {t.__name__}")
    return text


def format_attr_dict(attrs: dict, value_text=None, skip=()) -> str:
    """``{"key": value, ...}`` with the keys sorted (as TVM prints them) and ``skip`` left out;
    values as in :func:`format_attr_value`."""
    items = []
    for k in sorted(attrs, key=str):
        if k in skip:
            continue
        items.append(f"{str_literal(str(k))}: {format_attr_value(attrs[k], value_text)}")
    return "{" + ", ".join(items) + "}"


# ------------------------------------------------------------------------------ text layout
def _is_blank(line: str) -> bool:
    s = line.strip()
    return not s or s[0] == "#"


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


_DEPTH_CHANGE = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def _bracket_depth(toks) -> int:
    """Change of bracket depth over a line's tokens."""
    return sum([_DEPTH_CHANGE.get(tok, 0) for tok in toks])


def _signature_end(lines, d: int, tokens: bool = True):
    """``(index of the last line, tokens)`` of the ``def`` signature starting at line ``d``
    (it ends where the brackets opened on it close); the index is None if they never do.
    With ``tokens=False`` the tokens may be None (a one-line signature is then checked by
    counting brackets outside its strings, without tokenizing)."""
    line = lines[d]
    if not tokens and "'" not in line and "#" not in line and "\\" not in line:
        # one-line signature whose strings (dtypes, string dims) hold no bracket: count them
        parts = line.split('"')
        if len(parts) % 2 == 1 and not any(c in parts[i] for i in range(1, len(parts), 2) for c in "()[]{}"):
            code = "".join(parts[0::2])
            opened = code.count("(") + code.count("[") + code.count("{")
            closed = code.count(")") + code.count("]") + code.count("}")
            if opened == closed and opened:
                return d, None
    depth = 0
    toks = []
    for k in range(d, len(lines)):
        line_toks = tokenize(strip_comment(lines[k]))
        toks += line_toks
        depth += _bracket_depth(line_toks)
        if depth <= 0:
            return k, toks
    return None, toks


def parameter_spans(toks):
    """The parameters of a ``def`` line's tokens (``def name ( a : T , b : U ) ... :``).

    Returns
    -------
    spans : list of (int, int)
        ``(start, end)`` token ranges of the parameters (split at commas outside brackets).
    close : int or None
        Index of the ``)`` that closes the parameter list; None if it is never closed.
    """
    spans = []
    depth = 0
    start = 3
    for i in range(3, len(toks)):
        change = _DEPTH_CHANGE.get(toks[i])
        if change == -1 and depth == 0:
            if start < i:
                spans.append((start, i))
            return spans, i
        if change is not None:
            depth += change
        elif toks[i] == "," and depth == 0:
            spans.append((start, i))
            start = i + 1
    return spans, None


def _body_lines(lines, start: int, limit: int) -> list:
    """Indices of the first ``limit`` non-blank, non-comment lines from ``start``."""
    out = []
    for k in range(start, len(lines)):
        if not _is_blank(lines[k]):
            out.append(k)
            if len(out) == limit:
                break
    return out


def _text_error(msg, lines, k, col=None) -> ParseError:
    """A ParseError at line index ``k`` of ``lines`` (column: first non-blank, if not given)."""
    if not 0 <= k < len(lines):
        return ParseError(msg, max(k + 1, 1), 1, "")
    line = lines[k]
    return ParseError(msg, k + 1, col if col is not None else _indent_of(line) + 1, line)


def _locate(lines):
    """``(decorator lines, def line, signature end, signature tokens)`` of a PrimFunc text."""
    i = 0
    n = len(lines)
    while i < n and _is_blank(lines[i]):
        i += 1
    if i == n:
        raise ParseError("the PrimFunc text is empty", 1, 1, lines[0] if lines else "")
    if not lines[i].lstrip().startswith("@"):
        raise _text_error("a PrimFunc text must start with its @T.prim_func decorator", lines, i)
    decorators = [i]
    j = i + 1
    while j < n and (_is_blank(lines[j]) or lines[j].lstrip().startswith("@")):
        if not _is_blank(lines[j]):
            decorators.append(j)
        j += 1
    if j == n or _DEF_LINE_RE.match(lines[j]) is None:
        raise _text_error("expected 'def name(...):' after the decorator", lines, j if j < n else i)
    end, toks = _signature_end(lines, j)
    if end is None:
        raise _text_error("unbalanced brackets in the function signature", lines, j)
    return decorators, j, end, toks


# ------------------------------------------------------------------------------ reading
class _Fail(Exception):
    """Internal: a reading error; ``args`` are the message and the ast node it is at."""


def _ast_parse(source: str, mode: str = "exec"):
    """``ast.parse`` without its SyntaxWarnings (odd text is reported as ParseError or not at
    all, never as a warning); a string literal with ``\\xhh`` escapes is read as the Relax
    part of the text reads it (:func:`_read_byte_escapes`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(source, mode=mode)
    if "\\x" in source:
        _read_byte_escapes(tree, source)
    return tree


def _read_byte_escapes(tree, source: str) -> None:
    """Give each plain string literal of ``tree`` written with ``\\xhh`` escapes the lexer's
    value (:func:`~memcore_py.ir.text.lexer.string_value`: a run of them is the UTF-8 bytes TVM's
    printer writes for non-ASCII text) instead of Python's (their code points)."""
    for node in ast.walk(tree):
        if type(node) is ast.Constant and type(node.value) is str:
            seg = ast.get_source_segment(source, node)
            if seg and "\\x" in seg and tokenize(seg) == [seg]:
                node.value = string_value(seg)


def _dotted(node):
    """``"T.Buffer"`` for the ast of a (dotted) name, else None."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _scalar_dtype_name(name):
    """``"int64"`` for ``"T.int64"`` (a scalar parameter's annotation), else None."""
    if name is not None and name.startswith("T.") and name[2:] in DTYPE_NAMES:
        return name[2:]
    return None


def _scalar_dtype(node):
    """:func:`_scalar_dtype_name` of the ast of a dotted name."""
    return _scalar_dtype_name(_dotted(node))


def _describe(v) -> str:
    if isinstance(v, PrimExpr):
        return f"the symbolic expression {v!r}"
    return f"{type(v).__name__} {v!r}"


_AST_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
_AST_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class _Reader:
    """Evaluates the ast of a decorator, a parameter annotation or an attr dict with TIR
    rules (see the module docstring).

    ``prims`` maps names to the function's symbolic vars: scalar parameters, names in string
    dims, and (``typevars``) module TypeVars, one PrimVar per name. ``typevars`` None accepts
    every free name as a symbolic var. ``declare``: string dims declare their names
    (signature mode, as TVM's parser does).
    """

    __slots__ = ("typevars", "prims", "declare", "used_names")

    def __init__(self, typevars):
        self.typevars = typevars
        self.prims = {}
        self.declare = False
        #: Set when a name was read: the value depends on the function, it is not cached.
        self.used_names = False

    def value(self, node):
        t = type(node)
        if t is ast.Constant:
            v = node.value
            if v is None or type(v) in (bool, int, float, str):
                return v
            raise _Fail(f"unsupported literal {ast.unparse(node)}", node)
        if t is ast.Name:
            return self.name(node.id, node)
        if t is ast.Attribute:
            if _scalar_dtype(node) is not None:
                raise _Fail(f"{ast.unparse(node)} is a type; a value is expected here", node)
            raise _Fail(f"unknown name {ast.unparse(node)!r}", node)
        if t is ast.UnaryOp:
            v = self.value(node.operand)
            if type(node.op) is ast.UAdd:
                return v
            if type(node.op) is ast.USub:
                out = negated(v)
                if out is None:
                    raise _Fail(f"cannot negate {_describe(v)}", node)
                return out
            if type(node.op) is ast.Not:
                return self.node(not_value, node, v)
            raise _Fail(f"unsupported operator in {ast.unparse(node)!r}", node)
        if t is ast.Compare:
            return self.compare(node)
        if t is ast.BoolOp:
            op = "and" if type(node.op) is ast.And else "or"
            v = self.value(node.values[0])
            for rhs in node.values[1:]:
                v = self.node(logical_value, node, op, v, self.value(rhs))
            return v
        if t is ast.BinOp:
            op = _AST_BINARY.get(type(node.op))
            if op is None:
                raise _Fail(f"unsupported operator in {ast.unparse(node)!r}", node)
            a, b = self.value(node.left), self.value(node.right)
            try:
                return binary_value(op, a, b, lambda x, other: self.prim(x, node, other))
            except ZeroDivisionError:
                raise _Fail("division by zero", node) from None
        if t is ast.Tuple or t is ast.List:
            return tuple([self.value(e) for e in node.elts])
        if t is ast.Dict:
            out = {}
            for k, v in zip(node.keys, node.values):
                if k is None:
                    raise _Fail("'**' in a dict is not supported", v)
                key = self.value(k)
                if not isinstance(key, (str, int)):
                    raise _Fail(f"dictionary keys must be strings or ints; got {_describe(key)}", k)
                out[key] = self.value(v)
            return out
        if t is ast.Call:
            return self.call(node)
        raise _Fail(f"unsupported expression {ast.unparse(node)!r}", node)

    def compare(self, node):
        """A comparison, chained as Python chains it (``a < b < c``: ``a < b and b < c``)."""
        a = self.value(node.left)
        result = None
        for op, right in zip(node.ops, node.comparators):
            sym = _AST_COMPARE.get(type(op))
            if sym is None:
                raise _Fail(f"unsupported operator in {ast.unparse(node)!r}", node)
            b = self.value(right)
            c = self.node(compare_value, node, sym, a, b, lambda x, other: self.prim(x, node, other))
            result = c if result is None else self.node(logical_value, node, "and", result, c)
            a = b
        return result

    @staticmethod
    def node(rule, node, *args):
        """``rule(*args)`` (a value rule), its errors located at ``node``."""
        try:
            return rule(*args)
        except (ValueError, IRError) as e:
            raise _Fail(str(e), node) from None

    def name(self, name, node):
        self.used_names = True
        v = self.prims.get(name)
        if v is not None:
            return v
        if self.typevars is None or name in self.typevars:
            v = self.prims[name] = PrimVar(name)
            return v
        raise _Fail(f"undefined variable {name!r}", node)

    def prim(self, v, node, other=None):
        """``v`` as a PrimExpr; a plain number takes ``other``'s dtype when that is one."""
        if isinstance(v, PrimExpr):
            return v
        p = number_prim(v, other, "int32", "float32")
        if p is not None:
            return p
        if type(v) is str:
            return self.string_prim(v, node)
        raise _Fail(f"expected a symbolic integer expression; got {_describe(v)}", node)

    def dim(self, v, node):
        d = self.prim(v, node)
        if d.dtype.startswith(("int", "uint")):
            return d
        raise _Fail(f"a shape dimension must be an integer; got {_describe(v)}", node)

    def string_prim(self, s, node):
        """A string dim (``"n * 2"``): read as an expression; in a signature its names are
        declared."""
        try:
            tree = _ast_parse(s.strip(), mode="eval")
        except (SyntaxError, ValueError):
            raise _Fail(f"dimension string {s!r} is not an expression", node) from None
        for sub in _free_names(tree.body):
            if sub not in self.prims and (self.declare or (self.typevars is not None and sub in self.typevars)):
                self.prims[sub] = PrimVar(sub)
        try:
            v = self.value(tree.body)
        except _Fail as e:
            raise _Fail(f"in dimension string {s!r}: {e.args[0]}", node) from None
        if type(v) is int:
            return IntImm(v, "int32")
        if not isinstance(v, PrimExpr):
            raise _Fail(f"dimension string {s!r} is not an integer expression", node)
        return v

    def call(self, node):
        name = _dotted(node.func)
        if name is None:
            raise _Fail(f"unsupported call of {ast.unparse(node.func)!r}", node)
        if any(type(a) is ast.Starred for a in node.args) or any(k.arg is None for k in node.keywords):
            raise _Fail(f"{name}: '*' and '**' arguments are not supported", node)
        if name == "T.min" or name == "T.max":
            if node.keywords or len(node.args) != 2:
                raise _Fail(f"{name} takes two values", node)
            x, y = self.value(node.args[0]), self.value(node.args[1])
            return min_max(name, x, y, lambda v, other: self.prim(v, node, other))
        conv = lambda v, other: self.prim(v, node, other)  # noqa: E731
        if name in PRIM_CALLS or name in ("T.Not", "T.Cast", "T.Select", "T.if_then_else"):
            if node.keywords:
                raise _Fail(f"{name} takes no keyword arguments", node)
            args = [self.value(a) for a in node.args]
            n_args = {"T.Not": 1, "T.Cast": 2, "T.Select": 3, "T.if_then_else": 3}.get(name, 2)
            if len(args) != n_args:
                raise _Fail(f"{name} takes {n_args} values", node)
            if name == "T.Not":
                return self.node(not_value, node, self.prim(args[0], node))
            if name == "T.Cast":
                return self.node(cast_value, node, args[0], args[1], conv)
            if n_args == 3:
                return self.node(select_value, node, name, *args, conv)
            return self.node(prim_call, node, name, *args, conv)
        if name == "float":
            try:
                return float_value([self.value(a) for a in node.args], node.keywords)
            except ValueError as e:
                raise _Fail(str(e), node) from None
        if name.startswith("T.") and name[2:] in DTYPE_NAMES:
            return self.literal(name[2:], node)
        if name == "T.Buffer":
            raise _Fail("T.Buffer(...) is only valid as a parameter annotation", node)
        raise _Fail(f"unknown function {name!r}", node)

    def literal(self, dt, node):
        """``T.int64(4)``, ``T.float32(1.5)``, ``T.bool(True)``."""
        if not node.args and not node.keywords:
            raise _Fail(f"T.{dt}() declares a variable; a value is expected here", node)
        if len(node.args) != 1 or node.keywords:
            raise _Fail(f"T.{dt}(...) takes one value", node)
        v = self.value(node.args[0])
        try:
            return dtype_literal(dt, v)
        except ValueError as e:
            raise _Fail(f"{e}; got {_describe(v)}", node) from None

    # ---------------------------------------------------------------- signature parts
    def decorator(self, dec):
        """``private`` of a ``@T.prim_func`` / ``@T.prim_func(...)`` decorator expression."""
        call = dec if type(dec) is ast.Call else None
        if _dotted(call.func if call is not None else dec) != "T.prim_func":
            raise _Fail(f"unsupported decorator @{ast.unparse(dec)}; expected @T.prim_func", dec)
        kwargs = {}
        if call is not None:
            if call.args:
                raise _Fail("decorator arguments must be keywords", call.args[0])
            for kw in call.keywords:
                if kw.arg not in _DECORATOR_KEYWORDS:
                    raise _Fail(f"unsupported decorator argument {kw.arg!r}", kw.value)
                v = self.value(kw.value)
                if type(v) is not bool:
                    raise _Fail(f"decorator argument {kw.arg!r} must be True or False", kw.value)
                kwargs[kw.arg] = v
        return kwargs.get("private", False)

    def params(self, fn):
        a = fn.args
        extra = a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg or a.defaults
        if extra:
            raise _Fail("PrimFunc parameters must be written 'name: type' (no defaults, '*' or '/')", fn)
        out = []
        seen = set()
        self.declare = True
        try:
            for arg in a.args:
                if arg.annotation is None:
                    raise _Fail(f"parameter {arg.arg!r} must be written 'name: type'", arg)
                if arg.arg in seen:
                    raise _Fail(f"duplicate parameter name {arg.arg!r}", arg)
                seen.add(arg.arg)
                out.append(self.param(arg.arg, arg.annotation))
        finally:
            self.declare = False
        return out

    def param(self, name, ann):
        if type(ann) is ast.Call and _dotted(ann.func) == "T.Buffer":
            dims, dtype = self.buffer(ann)
            return PrimFuncParam(name, dtype, dims)
        dtype = _scalar_dtype(ann)
        if dtype is not None:
            return self.scalar_param(name, dtype)
        raise _Fail(f"unsupported PrimFunc parameter type {ast.unparse(ann)}", ann)

    def scalar_param(self, name, dtype):
        """``name: T.<dtype>``; the parameter is a symbolic var of the signature (but a
        ``T.handle`` is not)."""
        if dtype != "handle" and name not in self.prims:
            self.prims[name] = PrimVar(name, dtype)
        return PrimFuncParam(name, dtype, None)

    def buffer(self, node):
        """``T.Buffer(shape, dtype, ...)``: (dims, dtype); other keywords are not kept."""
        if any(type(a) is ast.Starred for a in node.args) or any(k.arg is None for k in node.keywords):
            raise _Fail("T.Buffer: '*' and '**' arguments are not supported", node)
        args = [self.value(a) for a in node.args]
        kwargs = {k.arg: self.value(k.value) for k in node.keywords}
        shape = kwargs.pop("shape", None)
        dtype = kwargs.pop("dtype", None)
        if args and shape is None:
            shape = args.pop(0)
        if args and dtype is None:
            dtype = args.pop(0)
        if shape is None:
            raise _Fail("T.Buffer needs a shape", node)
        if not isinstance(shape, tuple):
            shape = (shape,)
        dims = tuple([self.dim(d, node) for d in shape])
        if dtype is None:
            dtype = "float32"
        if type(dtype) is not str:
            raise _Fail(f"T.Buffer: dtype must be a string; got {_describe(dtype)}", node)
        return dims, dtype

    def attr_call(self, node):
        """The dict of ``T.func_attr({...})``."""
        if type(node) is not ast.Call or _dotted(node.func) != "T.func_attr":
            raise _Fail("expected T.func_attr({...})", node)
        if node.keywords or len(node.args) != 1:
            raise _Fail("T.func_attr(...) takes one dict", node)
        v = self.value(node.args[0])
        if type(v) is not dict:
            raise _Fail("T.func_attr(...) takes a dict", node)
        return v


def _free_names(node) -> list:
    """Undotted names read in an expression (``n`` in ``n * T.int64(2)``), in order."""
    out = []
    stack = [node]
    while stack:
        x = stack.pop()
        if type(x) is ast.Name:
            out.append(x.id)
        elif type(x) is ast.Attribute:
            continue
        elif type(x) is ast.Call:
            stack.extend(reversed(x.args))
            stack.extend(reversed([k.value for k in x.keywords]))
        else:
            stack.extend(reversed(list(ast.iter_child_nodes(x))))
    return out


def _char_column(line: str, byte_offset: int) -> int:
    """1-based column of an ast ``col_offset`` (UTF-8 bytes) in ``line``."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", "replace")) + 1


def _parse(source, lines, k0, col0, mode="exec"):
    """``ast.parse(source)``; a syntax error becomes a ParseError in ``lines`` (the
    source's first line is line ``k0``, shifted by ``col0`` columns)."""
    try:
        return _ast_parse(source, mode=mode)
    except SyntaxError as e:
        k = k0 + (e.lineno or 1) - 1
        src = source.split("\n")
        row = src[(e.lineno or 1) - 1] if 0 < (e.lineno or 1) <= len(src) else ""
        col = max(e.offset or 1, 1) + (col0 if (e.lineno or 1) == 1 else 0)
        col = min(col, len(row) + col0 + 1)
        raise _text_error(f"invalid syntax: {e.msg}", lines, k, col) from None
    except ValueError as e:  # null bytes
        raise _text_error(f"invalid text: {e}", lines, k0) from None


def _located(fail: _Fail, lines, k0, col0, source) -> ParseError:
    """A reading error at its node, in ``lines`` (see :func:`_parse`)."""
    msg, node = fail.args
    lineno = getattr(node, "lineno", None)
    if lineno is None:
        return _text_error(msg, lines, k0)
    src = source.split("\n")
    row = src[lineno - 1] if lineno <= len(src) else ""
    col = _char_column(row, node.col_offset) + (col0 if lineno == 1 else 0)
    return _text_error(msg, lines, k0 + lineno - 1, col)


def _attr_line(lines, body):
    """``(index, logical text)`` of the ``T.func_attr(...)`` line among the first body lines
    (continuation lines joined), or None."""
    for k in body:
        text = strip_comment(lines[k].strip()).rstrip()
        if not text.startswith("T.func_attr("):
            continue
        depth = _bracket_depth(tokenize(text))
        j = k + 1
        while depth > 0 and j < len(lines):
            nxt = strip_comment(lines[j].strip()).rstrip()
            j += 1
            if nxt:
                text += " " + nxt
                depth += _bracket_depth(tokenize(nxt))
        return k, text
    return None


# Caches of what does not depend on the function (no names read): decorator lines ->
# private, parameter annotations -> (dtype, dims), T.func_attr lines -> attrs. PrimExprs are
# immutable and shared, as the parser shares types; attr dicts are copied per use. Memo
# tables (memcore_py.ir.memo).
_TEXT_PARTS = MEMO.group("ir.text.prim_func_text.parts", 3)
_DECORATOR_CACHE, _ANNOTATION_CACHE, _ATTR_CACHE = _TEXT_PARTS.tables


def _cache_put(cache: dict, key, value):
    """``cache[key] = value`` for one of the ``_TEXT_PARTS`` tables, under the memo policy."""
    _TEXT_PARTS.trim()
    cache[key] = value


def _fresh(v):
    """A copy of an attr value that shares nothing mutable with ``v``."""
    t = type(v)
    if t is dict:
        return {k: _fresh(x) for k, x in v.items()}
    if t is tuple:
        return tuple([_fresh(x) for x in v])
    return v


class _Fallback(Exception):
    """Internal: the fast reading of a signature gives up; the exact reading decides."""


def _fast_signature(reader, lines, decorators, toks):
    """``(name, private, params)`` from the signature tokens, with the decorator and each
    annotation read once per distinct text. Raises :class:`_Fallback` on anything unusual,
    including every error (the exact reading locates it)."""
    if len(decorators) != 1:
        raise _Fallback
    dec_text = strip_comment(lines[decorators[0]].strip()).rstrip()
    private = _DECORATOR_CACHE.get(dec_text)
    if private is None:
        try:
            node = _ast_parse(dec_text[1:].strip(), mode="eval").body
            private = reader.decorator(node)
        except (SyntaxError, ValueError, _Fail):
            raise _Fallback from None
        if not reader.used_names:
            _cache_put(_DECORATOR_CACHE, dec_text, private)
    if len(toks) < 4 or toks[2] != "(":
        raise _Fallback
    spans, close = parameter_spans(toks)
    if close is None or toks[-1] != ":":
        raise _Fallback
    params = []
    seen = set()
    reader.declare = True
    for a, b in spans:
        name = toks[a]
        if b - a < 3 or toks[a + 1] != ":" or not _IDENT_RE.match(name) or name in seen:
            raise _Fallback
        seen.add(name)
        if b - a == 3:
            dtype = _scalar_dtype_name(toks[a + 2])
            if dtype is not None:
                params.append(reader.scalar_param(name, dtype))
                continue
        key = " ".join(toks[a + 2: b])
        hit = _ANNOTATION_CACHE.get(key)
        if hit is None:
            reader.used_names = False
            try:
                node = _ast_parse(key, mode="eval").body
                if type(node) is not ast.Call or _dotted(node.func) != "T.Buffer":
                    raise _Fallback
                dims, dtype = reader.buffer(node)
            except (SyntaxError, ValueError, _Fail):
                raise _Fallback from None
            hit = (dtype, dims)
            if not reader.used_names:
                _cache_put(_ANNOTATION_CACHE, key, hit)
        params.append(PrimFuncParam(name, hit[0], hit[1]))
    reader.declare = False
    return toks[1], private, params


def _exact_signature(reader, lines, end):
    """``(name, private, params)`` read from the ast of the whole signature; errors are
    ParseErrors at their token."""
    d_indent = ""
    for line in lines[: end + 1]:
        if line.lstrip().startswith("def "):
            d_indent = line[: _indent_of(line)]
            break
    source = "\n".join(lines[: end + 1]) + "\n" + d_indent + " pass"
    fn = _parse(source, lines, 0, 0).body[0]
    try:
        if len(fn.decorator_list) != 1:
            raise _Fail("a PrimFunc has exactly one decorator, @T.prim_func", fn.decorator_list[-1])
        private = reader.decorator(fn.decorator_list[0])
        params = reader.params(fn)
    except _Fail as e:
        raise _located(e, lines, 0, 0, source) from None
    return fn.name, private, params


def _read_attrs(reader, lines, body):
    """The dict of the ``T.func_attr`` line among ``body`` (line indices), or ``{}``."""
    found = _attr_line(lines, body)
    if found is None:
        return {}
    k, attr_text = found
    hit = _ATTR_CACHE.get(attr_text)
    if hit is not None:
        return _fresh(hit)
    col0 = _indent_of(lines[k])
    node = _parse(attr_text, lines, k, col0, mode="eval").body
    reader.used_names = False
    try:
        attrs = reader.attr_call(node)
    except _Fail as e:
        raise _located(e, lines, k, col0, attr_text) from None
    if not reader.used_names:
        _cache_put(_ATTR_CACHE, attr_text, _fresh(attrs))
    return attrs


def read_prim_func(text: str, typevars=None):
    """Read a PrimFunc from its TVMScript text.

    Parameters
    ----------
    text : str
        Dedented, from the decorator to the last body line (as :attr:`PrimFunc.text` holds
        it); leading blank and comment lines are allowed. The body is not read, except for a
        ``T.func_attr({...})`` among its first 8 lines.
    typevars : set of str, optional
        Names the signature may use without declaring them (the module's ``TypeVar`` lines);
        None accepts any free name as a symbolic var. Names in string dims (``"n * 2"``)
        are always declared by the signature itself.

    Returns
    -------
    name : str
        The name after ``def``.
    func : PrimFunc
        Its ``text`` is ``text``, or None when ``text`` is exactly
        :func:`signature_only_text` of the function (a signature-only PrimFunc).

    Raises
    ------
    ParseError
        Malformed or unsupported text, with line and column in ``text``.

    Notes
    -----
    A signature is split at its top-level commas and each decorator line and parameter
    annotation is evaluated once per distinct text (real modules repeat the same few buffer
    types); anything unusual, including every error, is read again from the ast of the
    whole signature, which reports errors at their token.

    Examples
    --------
    >>> name, f = read_prim_func('''@T.prim_func(private=True)
    ... def add(A: T.Buffer((T.int64(4),), "float32"), n: T.int64):
    ...     T.func_attr({"tirx.noalias": True})
    ...     T.evaluate(0)
    ... ''')
    >>> name, f.private, f.attrs, [p.name for p in f.params], f.text
    ('add', True, {'tirx.noalias': True}, ['A', 'n'], None)
    """
    if not isinstance(text, str):
        raise ParseError(f"a PrimFunc text must be a str; got {type(text).__name__}", 0, 0, "")
    lines = text.split("\n")
    decorators, d, end, toks = _locate(lines)
    # Step 1. Decorator and signature.
    reader = _Reader(typevars)
    try:
        name, private, params = _fast_signature(reader, lines, decorators, toks)
    except _Fallback:
        reader = _Reader(typevars)
        name, private, params = _exact_signature(reader, lines, end)
    # Step 2. The body: it must exist; only its T.func_attr line is read.
    body = _body_lines(lines, end + 1, _ATTR_SEARCH_LINES)
    if not body:
        raise _text_error(f"PrimFunc {name!r} has no body", lines, d)
    if _indent_of(lines[body[0]]) <= _indent_of(lines[d]):
        raise _text_error("expected an indented function body", lines, body[0])
    attrs = _read_attrs(reader, lines, body)
    # Step 3. A text that is exactly the written form of its signature is signature-only.
    sig_only = PrimFunc(params, attrs, text=None, private=private)
    if text.endswith("T.evaluate(0)\n"):
        try:
            if text == signature_only_text(name, sig_only):
                return name, sig_only
        except IRError:
            pass
    return name, PrimFunc(params, attrs, text=text, private=private)


def parse_attr_dict(text: str) -> dict:
    """Read a TIR attribute dict literal (the argument of ``T.func_attr``).

    Lists become tuples; ``T.int64(128)`` is an :class:`~memcore_py.ir.IntImm`; names are
    not allowed (there is no signature to declare them).

    Raises
    ------
    ParseError
        Not a dict literal of values :func:`read_prim_func` accepts in ``T.func_attr``.

    Examples
    --------
    >>> parse_attr_dict('{"tirx.noalias": True, "layout_free_buffers": [1]}')
    {'tirx.noalias': True, 'layout_free_buffers': (1,)}
    """
    lines = text.split("\n")
    stripped = text.strip()
    col0 = _indent_of(lines[0]) if lines else 0
    node = _parse(stripped, lines, 0, col0, mode="eval").body
    try:
        v = _Reader(frozenset()).value(node)
    except _Fail as e:
        raise _located(e, lines, 0, col0, stripped) from None
    if type(v) is not dict:
        raise _text_error(f"expected a dict; got {_describe(v)}", lines, 0)
    return v


# ------------------------------------------------------------------------------ writing
def _param_text(p) -> str:
    if p.shape is None:
        return f"{identifier(p.name)}: T.{p.dtype}"
    dims = []
    for d in p.shape:
        s = format_prim(d, tir=True)
        if type(d) is not IntImm and type(d) is not PrimVar:
            s = str_literal(s)
        dims.append(s)
    shape = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
    return f'{identifier(p.name)}: T.Buffer({shape}, "{p.dtype}")'


def signature_only_text(name: str, func: PrimFunc) -> str:
    """The text of ``func`` without its body text: decorator, signature, ``T.func_attr`` (if
    it has attrs) and ``T.evaluate(0)``. :func:`read_prim_func` reads it back as a
    signature-only PrimFunc (``text`` None).

    Parameters
    ----------
    name : str
        The function name (made an identifier if it is not one).
    func : PrimFunc
        ``func.text`` is not used.

    Raises
    ------
    IRError
        An attribute value or dimension that has no TVMScript spelling.

    Examples
    --------
    >>> from memcore_py.ir import PrimFunc, PrimFuncParam
    >>> f = PrimFunc([PrimFuncParam("A", "float32", (4,))], {"tirx.noalias": True}, private=True)
    >>> print(signature_only_text("add", f), end="")
    @T.prim_func(private=True)
    def add(A: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"tirx.noalias": True})
        T.evaluate(0)
    """
    out = [
        "@T.prim_func(private=True)" if func.private else "@T.prim_func",
        f"def {identifier(name)}(" + ", ".join([_param_text(p) for p in func.params]) + "):",
    ]
    if func.attrs:
        out.append(f"{_INDENT}T.func_attr({format_attr_dict(func.attrs)})")
    out.append(f"{_INDENT}T.evaluate(0)")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------ editing
def renamed_text(text: str, name: str) -> str:
    """``text`` with the name after its ``def`` replaced by ``name`` (made an identifier);
    ``text`` itself when the name is already ``name``."""
    m = _DEF_RE.search(text)
    if m is None or m.group(1) == name:
        return text
    return text[: m.start(1)] + identifier(name) + text[m.end(1):]


def synced_text(text: str, attrs: dict, private: bool) -> str:
    """``text`` with its decorator's ``private=`` and its ``T.func_attr`` line made to agree
    with ``private`` and ``attrs`` (a pass may change those; the body stays as read).

    A ``T.func_attr`` line that already states ``attrs`` (in any spelling) is kept, one that
    does not is replaced by the written form (or removed when ``attrs`` is empty), and one is
    added after the signature when the text has none; a multi-line ``T.func_attr`` is left as
    read. Unchanged text comes back as the same object.

    Examples
    --------
    >>> text = '@T.prim_func\\ndef f(A: T.Buffer((4,), "float32")):\\n    A[0] = T.float32(1)\\n'
    >>> print(synced_text(text, {"layout_free_buffers": [0]}, True), end="")
    @T.prim_func(private=True)
    def f(A: T.Buffer((4,), "float32")):
        T.func_attr({"layout_free_buffers": [0]})
        A[0] = T.float32(1)
    """
    lines = text.rstrip("\n").split("\n")
    new = _synced_lines(list(lines), attrs, private)
    if new == lines:
        return text
    return "\n".join(new) + "\n"


def _synced_lines(lines, attrs, private):
    dec = next((i for i, line in enumerate(lines) if line.lstrip().startswith("@T.prim_func")), None)
    if dec is not None:
        line = lines[dec]
        has_private = re.search(r"private\s*=\s*True", line) is not None
        if has_private != private:
            lead = line[: len(line) - len(line.lstrip())]
            inner = line.strip()[len("@T.prim_func"):].strip()
            inner = inner[1:-1] if inner.startswith("(") and inner.endswith(")") else inner
            rest = _PRIVATE_KW.sub("", inner).strip().strip(",").strip()
            args = (["private=True"] if private else []) + ([rest] if rest else [])
            lines[dec] = lead + "@T.prim_func" + (f"({', '.join(args)})" if args else "")
    d = next((i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), None)
    if d is None:
        return lines
    end = _signature_end(lines, d, tokens=False)[0]
    if end is None:
        return lines
    body = _body_lines(lines, end + 1, _ATTR_SEARCH_LINES)
    if not body:
        return lines
    body_indent = lines[body[0]][: _indent_of(lines[body[0]])]
    want = f"{body_indent}T.func_attr({format_attr_dict(attrs)})" if attrs else None
    # The line the reader takes the attrs from (the same search: _attr_line), wherever it is
    # among the first body lines, so an edit never leaves a second T.func_attr behind.
    found = _attr_line(lines, body)
    if found is not None:
        k = found[0]
        stripped = lines[k].strip()
        if stripped.count("(") != stripped.count(")"):
            return lines  # a multi-line attr dict: left as read
        if want is None:
            del lines[k]
        elif lines[k].rstrip() != want and not _states_attrs(stripped, attrs):
            lines[k] = want
        return lines
    if want is not None:
        lines.insert(end + 1, want)
    return lines


def _states_attrs(line: str, attrs: dict) -> bool:
    """Whether a ``T.func_attr({...})`` line states exactly ``attrs``."""
    for k in attrs:  # a key the line does not spell cannot be stated by it: skip the ast
        if type(k) is str and k.isidentifier() and f'"{k}"' not in line and f"'{k}'" not in line:
            return False
    try:
        return _comparable(parse_attr_dict(line[len("T.func_attr("):-1])) == _comparable(attrs)
    except (ParseError, IRError):  # unreadable: the node's attrs win
        return False


def _comparable(v):
    """``v`` with its type kept in the comparison (``1``, ``True`` and ``IntImm(1)`` differ)."""
    if isinstance(v, (list, tuple)):
        return tuple(_comparable(x) for x in v)
    if isinstance(v, dict):
        return {k: _comparable(x) for k, x in v.items()}
    if isinstance(v, IntImm):
        return ("IntImm", v.value, v.dtype)
    return (type(v).__name__, v)


def with_attrs(func: PrimFunc, attrs: dict, private: bool | None = None) -> PrimFunc:
    """A copy of ``func`` with ``attrs`` (and ``private``, default unchanged) whose text is
    ``func``'s synced to them (:func:`synced_text`), so the node and its text agree. The
    text is written when first read (:meth:`PrimFunc.lazy_text`): TVM's ``WithAttr`` copies
    only the attribute map, and a pass that attaches attributes to many copies should not
    pay for text nobody reads.

    Examples
    --------
    >>> from memcore_py.ir import PrimFunc, PrimFuncParam
    >>> f = PrimFunc([PrimFuncParam("A", "float32", (4,))], {"tirx.noalias": True}, private=True)
    >>> with_attrs(f, {**f.attrs, "layout_free_buffers": (0,)}).attrs
    {'tirx.noalias': True, 'layout_free_buffers': (0,)}
    """
    if not isinstance(func, PrimFunc):
        raise IRError(f"with_attrs takes a PrimFunc; got {type(func).__name__}")
    if not isinstance(attrs, dict):
        raise IRError(f"PrimFunc attrs must be a dict; got {type(attrs).__name__}")
    private = func.private if private is None else bool(private)
    attrs = dict(attrs)  # the text is written later: from these values, whatever the caller does

    def text_of():
        text = func.text
        return None if text is None else synced_text(text, attrs, private)  # None: signature-only

    return PrimFunc.lazy_text(func.params, attrs, private, text_of, func)


# ------------------------------------------------------------------------------ comparing
def normalized_text(text):
    """PrimFunc text for comparison: the function's name removed and every run of
    whitespace made one space (None stays None)."""
    if text is None:
        return None
    # str.split() splits at the runs of the characters \s matches (str.isspace) and drops the
    # ends: the same as substituting them and stripping, several times faster.
    return " ".join(_DEF_RE.sub("def (", text, count=1).split())


# ------------------------------------------------------------------------------ names
_SIG_SKIP = frozenset({"T", "def", "True", "False", "None", "float", "int"})


def signature_typevars(text: str) -> list:
    """Free names the signature of a PrimFunc text needs as module TypeVars.

    Scans the ``def`` line(s) up to the closing ``)``: identifiers used as values (not a
    parameter name, keyword name, attribute or the function name), and names inside string
    dims (strings nested in a shape tuple, e.g. ``T.Buffer(("n * T.int64(2)", 4), ...)``).

    Examples
    --------
    >>> signature_typevars('@T.prim_func\\ndef f(A: T.Buffer((n, "m * 2"), "float32")):\\n    T.evaluate(0)\\n')
    ['n', 'm']
    """
    m = _DEF_RE.search(text)
    if m is None:
        return []
    toks = tokenize(text[m.end():])
    names = []
    depth = 1
    n = len(toks)
    for i, tok in enumerate(toks):
        c = tok[0]
        if len(tok) == 1 and c in "([{":
            depth += 1
            continue
        if len(tok) == 1 and c in ")]}":
            depth -= 1
            if depth == 0:
                break
            continue
        if c == '"' or c == "'":
            if depth >= 3:  # a dim inside a shape tuple, not a dtype or keyword string
                for inner in tokenize(string_value(tok)):
                    if (inner[0].isalpha() or inner[0] == "_") and "." not in inner and inner not in _SIG_SKIP:
                        if inner not in names:
                            names.append(inner)
            continue
        if not (c.isalpha() or c == "_") or "." in tok or tok in _SIG_SKIP:
            continue
        nxt = toks[i + 1] if i + 1 < n else ""
        if nxt in (":", "="):
            continue
        if tok not in names:
            names.append(tok)
    return names
