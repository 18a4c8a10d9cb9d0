"""TVM's constant-folding operators and constant integer bounds on :mod:`~memcore_py.ir.prim`
expressions: the part of TVM's ``arith`` that shape type rules need, so it sits in the IR
layer (:mod:`memcore_py.analysis.arith` builds its bound and size analyses on it and
re-exports it; :mod:`memcore_py.ir.simplify` simplifies with it).

- ``fold_add`` ... ``fold_cast``: ``tirx``'s operators (``src/tirx/op/op.cc``), which build a
  node unless ``TryConstFold`` (``src/arith/const_fold.h``) folds it.
- :func:`const_int_bound`: TVM's ``ConstIntBoundAnalyzer`` under :class:`VarBounds`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .._compiled import load_compiled
from ..errors import IRError
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
    "modular_set",
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
    """``a * b`` as TIR builds it: folded by ``TryConstFold<Mul>``, whose one statement is
    :func:`memcore_py.ir._const_fold.product_fold_plan` (two constants multiply, a constant
    ``1`` is dropped, a constant ``0`` absorbs); a constant result has ``a``'s dtype.

    Raises
    ------
    IRError
        Two constants whose product, or a constant that, exceeds int64.
    """
    try:
        head, tail = load_compiled("memcore_py.ir._const_fold").product_fold_plan(1, [_c(a), _c(b)])
    except OverflowError as exc:
        raise IRError(f"constant folding {a!r} * {b!r}: {exc}") from None
    factors = (a, b)
    out = factors[head[0]] if type(head) is tuple else IntImm(head, a.dtype)
    for i in tail:
        out = Mul(out, factors[i])
    return out


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
def const_int_bound(expr: PrimExpr, bounds: VarBounds = EMPTY_BOUNDS):
    """The constant interval ``(lo, hi)`` of ``expr`` (TVM ``Analyzer::const_int_bound``).

    Unbounded ends are :data:`NEG_INF` / :data:`POS_INF`; arithmetic saturates at them.
    TVM's rules for the conditional nodes: a :class:`~memcore_py.ir.prim.Select` is the union
    of its branches' bounds (the condition is not used); a :class:`~memcore_py.ir.prim.Cast`
    its operand's bound clamped to the target dtype's range; comparisons, ``and``/``or``/``not``
    ``[0, 1]``; an :class:`~memcore_py.ir.prim.IfThenElse` (a call for TVM) the whole range of
    its dtype, whatever its branches. The rules live in the compiled kernel
    ``memcore_py/ir/_int_bound.pyx``, which the TVM bridge's sizing calls too.
    """
    return load_compiled("memcore_py.ir._int_bound").const_int_bound(expr, bounds.var_bound, _everything)


def modular_set(expr: PrimExpr):
    """TVM ``ModularSet``: ``(coeff, base)`` with ``expr == coeff * x + base`` for some integer
    ``x`` (coeff 0: the constant ``base``; ``(1, 0)``: nothing known), by the kernel of
    :func:`const_int_bound`."""
    return load_compiled("memcore_py.ir._int_bound").modular_set(expr)


def _everything(dtype: str):
    """TVM's ``ConstIntBound`` ``Everything(dtype)``: the range of an integer or bool dtype
    (:func:`~memcore_py.ir.prim.int_range`), its 64-bit ends the infinities; else
    ``(NEG_INF, POS_INF)``."""
    r = int_range(dtype)
    if r is None:
        return (NEG_INF, POS_INF)
    return (max(r[0], NEG_INF), min(r[1], POS_INF))
