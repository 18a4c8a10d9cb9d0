"""TVM's constant-folding operators and constant integer bounds on :mod:`~memcore_py.ir.prim`
expressions: the part of TVM's ``arith`` that shape type rules need, so it sits in the IR
layer (:mod:`memcore_py.analysis.arith` builds its bound and size analyses on it and
re-exports it; :mod:`memcore_py.ir.simplify` simplifies with it).

- ``fold_add`` ... ``fold_cast``: ``tirx``'s operators (``src/tirx/op/op.cc``), which build a
  node unless ``TryConstFold`` (``src/arith/const_fold.h``) folds it.
- :func:`const_int_bound`: TVM's ``ConstIntBoundAnalyzer`` under :class:`VarBounds`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .prim import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Cast,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    Or,
    PrimExpr,
    PrimVar,
    Select,
    Sub,
    eval_atom,
    int_range,
)

__all__ = [
    "POS_INF",
    "NEG_INF",
    "VarBounds",
    "EMPTY_BOUNDS",
    "fold_add",
    "fold_sub",
    "fold_mul",
    "fold_floordiv",
    "fold_floormod",
    "fold_min",
    "fold_max",
    "fold_logical",
    "fold_cast",
    "const_int_bound",
]

#: TVM's ``ConstIntBound::kPosInf`` / ``kNegInf`` (note: -kPosInf, not INT64_MIN).
POS_INF = 2**63 - 1
NEG_INF = -POS_INF


# --------------------------------------------------------------------------------------
# Variable bounds (read from function attributes by memcore_py.analysis.arith.read_var_bounds)
# --------------------------------------------------------------------------------------
@dataclass
class VarBounds:
    """Known ranges of one function's TIR vars, by name.

    ``ranges`` holds vars bound to a finite range ``[lo, hi]`` (they had an upper bound);
    ``non_negative`` holds vars only known to be ``>= 0`` (a lower bound ``>= 0`` without an
    upper bound, or listed in ``tir_non_negative_var``).
    """

    ranges: dict = field(default_factory=dict)
    """name -> (lo, hi), inclusive ints; also TVM's ``dom_map`` for :func:`int_set`."""
    non_negative: set = field(default_factory=set)
    """names with constant bound ``[0, POS_INF]``."""

    def var_bound(self, name):
        r = self.ranges.get(name)
        if r is not None:
            return r
        if name in self.non_negative:
            return (0, POS_INF)
        return (NEG_INF, POS_INF)

    def __bool__(self):
        return bool(self.ranges or self.non_negative)


EMPTY_BOUNDS = VarBounds()


# --------------------------------------------------------------------------------------
# Constant-folding builders (TVM's operator overloads / TryConstFold)
# --------------------------------------------------------------------------------------
def _c(e):
    return e.value if type(e) is IntImm else None


def fold_add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    ca, cb = _c(a), _c(b)
    if ca is not None and cb is not None:
        return IntImm(ca + cb, a.dtype)
    if ca == 0:
        return b
    if cb == 0:
        return a
    return Add(a, b)


def fold_sub(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    ca, cb = _c(a), _c(b)
    if ca is not None and cb is not None:
        return IntImm(ca - cb, a.dtype)
    if cb == 0:
        return a
    return Sub(a, b)


def fold_mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    ca, cb = _c(a), _c(b)
    if ca is not None and cb is not None:
        return IntImm(ca * cb, a.dtype)
    if ca == 1:
        return b
    if cb == 1:
        return a
    if ca == 0:
        return a
    if cb == 0:
        return b
    return Mul(a, b)


def fold_floordiv(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    ca, cb = _c(a), _c(b)
    if ca is not None and cb is not None and cb != 0:
        return IntImm(ca // cb, a.dtype)
    if ca == 0:
        return a
    if cb == 1:
        return a
    return FloorDiv(a, b)


def fold_floormod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    ca, cb = _c(a), _c(b)
    if ca is not None and cb is not None and cb != 0:
        return IntImm(ca % cb, a.dtype)
    if ca == 0:
        return a
    if cb == 1:
        return IntImm(0, a.dtype)
    return FloorMod(a, b)


def fold_min(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    ca, cb = _c(a), _c(b)
    if ca is not None and cb is not None:
        return IntImm(min(ca, cb), a.dtype)
    if a is b:
        return a
    return Min(a, b)


def fold_max(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    ca, cb = _c(a), _c(b)
    if ca is not None and cb is not None:
        return IntImm(max(ca, cb), a.dtype)
    if a is b:
        return a
    return Max(a, b)


_CMP_FOLD = {LT: lambda x, y: x < y, LE: lambda x, y: x <= y, GT: lambda x, y: x > y,
             GE: lambda x, y: x >= y, EQ: lambda x, y: x == y, NE: lambda x, y: x != y}


def fold_logical(t: type, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``t(a, b)`` for a comparison class, :class:`And` or :class:`Or`, folded as TVM's
    ``TryConstFold``: a comparison of two integer literals is a bool literal; an ``and``/``or``
    with a literal operand is decided by it or is the other operand."""
    ca, cb = _c(a), _c(b)
    if t is And or t is Or:
        if ca is not None:
            return (b if ca else a) if t is And else (a if ca else b)
        if cb is not None:
            return (a if cb else b) if t is And else (b if cb else a)
        return t(a, b)
    if ca is not None and cb is not None:
        return IntImm(int(_CMP_FOLD[t](ca, cb)), "bool")
    return t(a, b)


def fold_cast(dtype: str, v: PrimExpr) -> PrimExpr:
    """TVM's ``cast(dtype, v)``: ``v`` itself when it has that dtype, an integer literal
    converted (:func:`~memcore_py.ir.prim.eval_atom`), else a :class:`Cast`."""
    if v.dtype == dtype:
        return v
    if type(v) is IntImm:
        c = eval_atom("cast:" + dtype, (v.value,))
        if c is not None:
            return IntImm(c, dtype)
    return Cast(dtype, v)


# --------------------------------------------------------------------------------------
# Constant integer bounds (TVM ConstIntBoundAnalyzer)
# --------------------------------------------------------------------------------------
def _is_inf(x):
    return x == POS_INF or x == NEG_INF


def _sat(x):
    if x >= POS_INF:
        return POS_INF
    if x <= NEG_INF:
        return NEG_INF
    return x


def _inf_add(x, y):
    if x == POS_INF or x == NEG_INF:
        return x
    if y == POS_INF or y == NEG_INF:
        return y
    return _sat(x + y)


def _inf_neg(x):
    return -x  # symmetric: -POS_INF == NEG_INF


def _inf_mul(x, y):
    if not _is_inf(x) and not _is_inf(y):
        return _sat(x * y)
    if x == 0 or y == 0:
        return 0
    return POS_INF if (x > 0) == (y > 0) else NEG_INF


def _inf_floordiv(x, y):
    if x == POS_INF:
        return POS_INF if y > 0 else NEG_INF
    if x == NEG_INF:
        return NEG_INF if y > 0 else POS_INF
    return x // y  # as TVM: a finite x over an infinite end divides by +-(2**63 - 1)


def _boundary(a, b, op):
    vals = (op(a[0], b[0]), op(a[0], b[1]), op(a[1], b[0]), op(a[1], b[1]))
    return (min(vals), max(vals))


def _div_bound(a, b):
    if b[0] == 0:
        b = (1, b[1])
    if b[1] == 0:
        b = (b[0], -1)
    if b[0] <= 0 <= b[1]:
        neg = _boundary(a, (b[0], -1), _inf_floordiv) if b[0] < 0 else None
        pos = _boundary(a, (1, b[1]), _inf_floordiv) if b[1] > 0 else None
        parts = [p for p in (neg, pos) if p is not None]
        if not parts:
            return (NEG_INF, POS_INF)
        return (min(p[0] for p in parts), max(p[1] for p in parts))
    return _boundary(a, b, _inf_floordiv)


def _modular(e, memo):
    """TVM ``ModularSet``: ``(coeff, base)`` with ``e == coeff * x + base`` for some int x
    (coeff 0: the constant ``base``; coeff 1, base 0: nothing known)."""
    key = id(e)
    hit = memo.get(key)
    if hit is not None:
        return hit
    t = type(e)
    if t is IntImm:
        r = (0, e.value)
    elif t is Add or t is Sub:
        c1, b1 = _modular(e.a, memo)
        c2, b2 = _modular(e.b, memo)
        c = math.gcd(c1, c2)
        r = (c, (b1 + b2) if t is Add else (b1 - b2))
    elif t is Mul:
        c1, b1 = _modular(e.a, memo)
        c2, b2 = _modular(e.b, memo)
        r = (math.gcd(math.gcd(c1 * c2, c1 * b2), c2 * b1), b1 * b2)
    elif t is FloorDiv and type(e.b) is IntImm and e.b.value > 0:
        c1, b1 = _modular(e.a, memo)
        d = e.b.value
        r = (c1 // d, b1 // d) if c1 % d == 0 else (1, 0)
    elif t is FloorMod and type(e.b) is IntImm and e.b.value > 0:
        c1, b1 = _modular(e.a, memo)
        d = e.b.value
        g = math.gcd(c1, d)
        r = (g, b1) if g else (0, b1 % d)
    else:
        r = (1, 0)
    c, b = r
    if c:
        r = (abs(c), b % abs(c))
    memo[key] = r
    return r


def _mod_bound(a, b):
    if b[0] > 0:
        b_max_cap = _inf_add(b[1], -1)
        if a[0] >= 0:
            if a[1] < b[0]:
                return a
            return (0, min(a[1], b_max_cap))
        return (0, b_max_cap)
    b_min_cap = _inf_add(b[0], 1)
    b_max_cap = _inf_add(b[1], -1)
    return (min(0, b_min_cap), max(0, b_max_cap))


def const_int_bound(expr: PrimExpr, bounds: VarBounds = EMPTY_BOUNDS):
    """The constant interval ``(lo, hi)`` of ``expr`` (TVM ``Analyzer::const_int_bound``).

    Unbounded ends are :data:`NEG_INF` / :data:`POS_INF`; arithmetic saturates at them.
    TVM's rules for the conditional nodes: a :class:`~memcore_py.ir.prim.Select` is the union
    of its branches' bounds (the condition is not used); a :class:`~memcore_py.ir.prim.Cast`
    its operand's bound clamped to the target dtype's range; comparisons, ``and``/``or``/``not``
    ``[0, 1]``; an :class:`~memcore_py.ir.prim.IfThenElse` (a call for TVM) the whole range of
    its dtype, whatever its branches.
    """
    memo = {}

    def visit(e):
        key = id(e)
        hit = memo.get(key)
        if hit is not None:
            return hit
        t = type(e)
        if t is IntImm:
            r = (e.value, e.value)
        elif t is PrimVar:
            r = bounds.var_bound(e.name)
        elif t is Add:
            a, b = visit(e.a), visit(e.b)
            r = (_inf_add(a[0], b[0]), _inf_add(a[1], b[1]))
        elif t is Sub:
            a, b = visit(e.a), visit(e.b)
            r = (_inf_add(a[0], _inf_neg(b[1])), _inf_add(a[1], _inf_neg(b[0])))
        elif t is Mul:
            r = _boundary(visit(e.a), visit(e.b), _inf_mul)
        elif t is FloorDiv:
            r = _div_bound(visit(e.a), visit(e.b))
        elif t is FloorMod:
            r = _mod_bound(visit(e.a), visit(e.b))
            if type(e.b) is IntImm and e.b.value > 0:
                # ModularSet: a = coeff * x + base, so a % d is base mod g + g * j, g = gcd
                d = e.b.value
                coeff, base = _modular(e.a, {})
                g = math.gcd(coeff, d)
                lo_m = base % g if g else base % d
                hi_m = (d - 1) - ((d - 1 - base) % g) if g else base % d
                r = (max(r[0], lo_m), min(r[1], hi_m))
        elif t is Min:
            a, b = visit(e.a), visit(e.b)
            r = (min(a[0], b[0]), min(a[1], b[1]))
        elif t is Max:
            a, b = visit(e.a), visit(e.b)
            r = (max(a[0], b[0]), max(a[1], b[1]))
        elif t is Select:
            a, b = visit(e.true_value), visit(e.false_value)
            r = (min(a[0], b[0]), max(a[1], b[1]))
        elif t is Cast:
            a, b = visit(e.value), _everything(e.dtype)
            r = (max(a[0], b[0]), min(a[1], b[1]))
        else:  # comparisons, and/or/not (bool), if_then_else (a call): everything of the dtype
            r = _everything(e.dtype)
        memo[key] = r
        return r

    return visit(expr)


def _everything(dtype: str):
    """TVM's ``ConstIntBound`` ``Everything(dtype)``: the range of an integer or bool dtype
    (:func:`~memcore_py.ir.prim.int_range`), its 64-bit ends the infinities; else
    ``(NEG_INF, POS_INF)``."""
    r = int_range(dtype)
    if r is None:
        return (NEG_INF, POS_INF)
    return (max(r[0], NEG_INF), min(r[1], POS_INF))
