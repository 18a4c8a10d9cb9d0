"""Prim expressions: the operator layers of an expression, PrimExpr operands, ``T.*`` calls.

Design
------
Above the atoms (:mod:`memcore_py.ir.text.parse_expr`) an expression is Python's operator
grammar: ``or`` of ``and`` of ``not`` of chained comparisons of ``+ - * // %`` (precedence
climbing). Operands become PrimExprs where an operator needs them (:meth:`_PrimExprs.as_prim`:
a literal takes the other operand's dtype; a string is a dimension string such as
``"n * 2"``, parsed in place, its names declared in a signature). The values are built by
:mod:`memcore_py.ir.text.prim_func_text` (``binary_value``, ``compare_value``,
``logical_value``, ...), the same rules as in PrimFunc text. The ``T.*`` handlers here
(``T.min``, ``T.Cast``, ``T.Select``, ...) and ``T.int64(3)`` build prim values the same way;
``T.int64()`` is a symbolic var declaration.
"""
from __future__ import annotations

from ..expr import PrimValue
from ..prim import IntImm, PrimExpr, PrimVar
from .lexer import tokenize as _tokenize
from .parse_core import _NAME_RE, _Err, _reserved_prim_message, _tok
from .parse_values import _Decl, _describe
from .prim_func_text import (
    RESERVED_NAMES,
    binary_value,
    cast_value,
    compare_value,
    dtype_literal,
    logical_value,
    min_max,
    not_value,
    number_prim,
    prim_call,
    select_value,
)


_BINOP_PREC = {"+": 1, "-": 1, "*": 2, "//": 2, "%": 2}
#: Python's comparison operators (chained as Python chains them: ``a < b < c`` is
#: ``a < b and b < c``), and the tokens after an operand that start a boolean expression.
_COMPARE_TOKENS = frozenset(("<", "<=", ">", ">=", "==", "!="))
_LOGIC_TOKENS = _COMPARE_TOKENS | {"and", "or"}
#: Keywords of boolean expressions, never symbolic variables (in dimension strings too).
_BOOL_KEYWORDS = frozenset(("and", "or", "not", "True", "False"))
_NO_OPERAND = object()


class _PrimExprs:
    """The operator layers and PrimExpr operands (a mixin of the parser)."""

    def expr(self):
        toks = self.toks
        pos = self.pos
        if pos < len(toks) and toks[pos] == "not":
            return self.logical(_NO_OPERAND)
        v = self.arith_expr()
        pos = self.pos
        if pos < len(toks) and toks[pos] in _LOGIC_TOKENS:
            return self.logical(v)
        return v

    def arith_expr(self):
        """An operand of the comparisons: a unary value and ``+ - * // %``."""
        v = self.unary()
        toks = self.toks
        pos = self.pos
        if pos < len(toks):
            prec = _BINOP_PREC.get(toks[pos])
            if prec is not None:
                return self.binary(v, 1)
        return v

    def logical(self, first):
        """``or`` of ``and`` of ``not`` of comparisons, with Python's precedence
        (:func:`~memcore_py.ir.text.prim_func_text.logical_value`); ``first`` is the first
        comparison operand when it is already read, else ``_NO_OPERAND``."""
        v = self.and_test(first)
        while self.peek() == "or":
            self.pos += 1
            v = self.bool_op("or", v, self.and_test(_NO_OPERAND), self.pos - 1)
        return v

    def and_test(self, first):
        v = self.not_test(first)
        while self.peek() == "and":
            self.pos += 1
            v = self.bool_op("and", v, self.not_test(_NO_OPERAND), self.pos - 1)
        return v

    def not_test(self, first):
        if first is _NO_OPERAND and self.peek() == "not":
            pos = self.pos
            self.pos += 1
            self.enter(pos)
            inner = self.not_test(_NO_OPERAND)
            self.depth -= 1
            return not_value(inner)
        return self.comparison(first)

    def comparison(self, first):
        a = self.arith_expr() if first is _NO_OPERAND else first
        result = None
        toks = self.toks
        while self.pos < len(toks) and toks[self.pos] in _COMPARE_TOKENS:
            pos = self.pos
            self.pos += 1
            b = self.arith_expr()
            c = compare_value(toks[pos], a, b, lambda x, other, pos=pos: self.as_prim(x, pos, other))
            result = c if result is None else self.bool_op("and", result, c, pos)
            a = b
        return a if result is None else result

    def bool_op(self, op, a, b, pos):
        try:
            return logical_value(op, a, b)
        except ValueError as e:
            raise _Err(str(e), pos) from None

    def binary(self, lhs, min_prec):
        toks = self.toks
        while True:
            pos = self.pos
            if pos >= len(toks):
                return lhs
            op = toks[pos]
            prec = _BINOP_PREC.get(op)
            if prec is None or prec < min_prec:
                return lhs
            self.pos = pos + 1
            rhs = self.unary()
            while True:
                pos = self.pos
                nxt = _BINOP_PREC.get(toks[pos]) if pos < len(toks) else None
                if nxt is None or nxt <= prec:
                    break
                rhs = self.binary(rhs, prec + 1)
            lhs = self.arith(op, lhs, rhs, pos)

    def arith(self, op, a, b, pos):
        try:
            return binary_value(op, a, b, lambda x, other, pos=pos: self.as_prim(x, pos, other))
        except ZeroDivisionError:
            raise _Err("division by zero", pos) from None

    def as_prim(self, v, pos, other=None):
        if isinstance(v, PrimExpr):
            return v
        p = number_prim(v, other)
        if p is not None:
            return p
        t = type(v)
        if t is PrimValue:
            return v.value
        if t is str:
            return self.string_prim(v, pos)
        raise _Err(f"expected a symbolic integer expression; got {_describe(v)}", pos)

    def as_dim(self, v, pos):
        """A shape dimension: an integer symbolic expression."""
        d = self.as_prim(v, pos)
        if not (d.dtype.startswith("int") or d.dtype.startswith("uint")):
            raise _Err(f"a shape dimension must be an integer; got {_describe(v)}", pos)
        return d

    def string_prim(self, s, pos):
        """A string dim (``"n * 2"``): parsed as an expression; its names are declared."""
        saved = (self.toks, self.pos, self.depth, self.seg_text, self.seg_col)
        try:
            toks = _tokenize(s)
            if not toks:
                raise _Err("empty string where a shape dimension was expected", pos)
            self.toks = toks
            self.pos = 0
            declare = self.sig_mode
            for tok in toks:
                if tok in _BOOL_KEYWORDS:
                    continue
                if _NAME_RE.match(tok) and tok not in self.scope and tok not in self.prims:
                    if declare and tok in RESERVED_NAMES:
                        raise _Err(_reserved_prim_message(tok), pos)
                    if declare or tok in self.typevars:
                        self.prims[tok] = PrimVar(tok)
                        self.used_prim = True
            try:
                v = self.expr()
                if self.pos != len(toks):
                    raise _Err(f"unexpected {_tok(toks[self.pos])} in dimension string {s!r}", None)
            except _Err as e:
                raise _Err(f"in dimension string {s!r}: {e.msg}", None) from None
        finally:
            self.toks, self.pos, _, self.seg_text, self.seg_col = saved
            self.depth = saved[2]
        if type(v) is int:
            return IntImm(v, "int64")
        if not isinstance(v, PrimExpr):
            raise _Err(f"dimension string {s!r} is not an integer expression", pos)
        return v

    def t_dtype(self, dt, args, kwargs, pos):
        if not args and not kwargs:
            return _Decl(dt)
        if len(args) != 1 or kwargs:
            raise _Err(f"T.{dt}(...) takes one value", pos)
        try:
            return dtype_literal(dt, args[0])
        except ValueError as e:
            raise _Err(f"{e}; got {_describe(args[0])}", pos) from None


# ------------------------------------------------------------------------------ handlers
def _h_min_max(name):
    def handler(p, args, kwargs, pos):
        if kwargs or len(args) != 2:
            raise _Err(f"{name} takes two values", pos)
        return min_max(name, args[0], args[1], lambda v, other: p.as_prim(v, pos, other))

    return handler


def _h_prim_call(name):
    def handler(p, args, kwargs, pos):
        if kwargs or len(args) != 2:
            raise _Err(f"{name} takes two values", pos)
        return prim_call(name, args[0], args[1], lambda v, other: p.as_prim(v, pos, other))

    return handler


def _h_not(p, args, kwargs, pos):
    if kwargs or len(args) != 1:
        raise _Err("T.Not takes one value", pos)
    return not_value(p.as_prim(args[0], pos))


def _h_cast(p, args, kwargs, pos):
    if kwargs or len(args) != 2:
        raise _Err("T.Cast takes a dtype and a value", pos)
    try:
        return cast_value(args[0], args[1], lambda v, other: p.as_prim(v, pos, other))
    except ValueError as e:
        raise _Err(str(e), pos) from None


def _h_select(name):
    def handler(p, args, kwargs, pos):
        if kwargs or len(args) != 3:
            raise _Err(f"{name} takes a condition and two values", pos)
        return select_value(name, *args, lambda v, other: p.as_prim(v, pos, other))

    return handler
