"""TVM's canonical simplification of index arithmetic (``arith::CanonicalSimplifier``), ported
for the expressions shape arithmetic builds.

Why
---
TVM resolves a ``-1`` in ``relax.op.reshape`` at construction (``ConvertNewShapeToExpr`` in
``src/relax/op/tensor/manipulate.cc``) as ``analyzer.Simplify(floordiv(old_prod, new_prod))``
with a fresh ``arith::Analyzer`` (no variable bounds). ``view(1, s, -1, 32)`` of a
``(1, s, 256)`` tensor is thus ``s * 256 // (s * 32)`` simplified to ``8``; the importers
and type rules must write the same dim, or the module differs from TVM's and a planner bounds
the unsimplified quotient by the variables' intervals.

What is ported
--------------
``Analyzer::Simplify`` (``src/arith/analyzer.cc``) runs canonical simplification, then
rewrite simplification, then canonical simplification again. This module ports the
canonical simplifier of ``src/arith/canonical_simplify.cc`` for integer index expressions
(``int32``/``int64``) made of literals, variables, ``+``, ``-``, ``*``, ``//`` (floor) and
``%`` (floor), and two rules of the rewrite simplifier (:func:`_rewrite_simplify`):

- the normal forms ``SplitExpr`` (``((index % upper) // lower) * scale``) and ``SumExpr``
  (``sum(args) + base``), with TVM's merging (``AddToSelf``, ``SimplifySplitExprs``), order
  of terms and ``Normalize`` back to an expression;
- ``VisitExpr_`` of ``Add``, ``Sub``, ``Mul`` (``MulAndNormalize`` of
  ``product_normal_form.h`` for symbolic products), ``FloorDiv`` and ``FloorMod``: division
  and remainder by a positive constant (``SeparateDivisibleParts``, ``SplitDivConst``,
  ``SplitModConst``) and by a symbolic divisor (``ProdDivSimplify``: common factors of two
  products cancel and constant factors divide by their gcd, so ``s * 256 // (s * 32)`` is
  ``8`` and ``a * s * 256 // (s * 512)`` is ``a // 2``);
- TVM's operator constant folding (``TryConstFold``, :mod:`memcore_py.ir.prim_arith`'s
  ``fold_*``) wherever TVM builds with operators;
- the rewrite simplifier's first two remainder rules (``VisitExpr_(const FloorModNode*)`` of
  ``src/arith/rewrite_simplify.cc``): ``floormod(x * c1, c2)`` reduces ``c1`` modulo ``c2``
  (``s * 6 % 4`` becomes ``s * 2 % 4``, which the last canonical pass writes ``s % 2 * 2``),
  and ``floormod(x * c1 + y, c2)`` is ``floormod(x, c2 // c1) * c1 + y`` when ``c1`` divides
  ``c2`` and ``y // c1`` is provably ``0`` (``(s * 2 + 1) % 4`` is ``s % 2 * 2 + 1``).

Not ported (documented limits): the other pattern rules of the rewrite simplifier (among
them its floor-division rules, ``(s * 2 + 1) // 4`` is ``s // 2`` for TVM; its rules for
remainders of a difference or by a negative divisor; ``a * b + b`` is ``(a + 1) * b``), and
any other node kind (``min``, ``max``, ``select``, casts, comparisons, truncated division).
:func:`simplify` raises :class:`UnsupportedSimplify` on an expression with such a node, so a
caller keeps TVM's unsimplified constructor output rather than guess. Inside the canonical
rules, TVM's proofs (``CanProveGreaterEqual``, ``TryCompare``) use the constant bound of the expression
(:func:`~memcore_py.ir.prim_arith.const_int_bound`) under the caller's variable bounds
(none for a reshape), as TVM's do for a fresh analyzer; the transitive-inequality and
product-and-sum comparisons of ``TryCompare`` are not ported (they need recorded
constraints, which a fresh analyzer does not have).

Measured against TVM 0.27.0.post1 (``tests/oracle/test_dynamic_shape_arith_oracle.py``): on
generated quotients of dim products, the expressions a reshape ``-1`` builds, and on
generated remainders ``(x * c1) % c2`` and ``(x * c1 + c3) % c2`` (positive divisors, under
no, non-negative and finite variable bounds), :func:`simplify` writes TVM's tree every time.
It differs where an unported rewrite rule fires (the floor divisions and remainders listed
above), and :func:`canonical_simplify` alone matches ``Analyzer.canonical_simplify`` except
on remainders of a term with a negative scale and a divisor (``a // 2 * -1 % 3``, which TVM
leaves as it is).
"""
from __future__ import annotations

import math

from ..errors import IRError
from .prim import Add, FloorDiv, FloorMod, IntImm, Mul, PrimExpr, PrimVar, Sub, prim_equal
from .prim_arith import (
    EMPTY_BOUNDS,
    POS_INF,
    VarBounds,
    const_int_bound,
    fold_add,
    fold_floordiv,
    fold_floormod,
    fold_mul,
    fold_sub,
)

__all__ = ["UnsupportedSimplify", "canonical_simplify", "simplify", "is_simplifiable"]

_TRUNC, _FLOOR = 0, 1  # TVM's DivMode: kTruncDiv, kFloorDiv
_INDEX_DTYPES = ("int32", "int64")


class UnsupportedSimplify(IRError):
    """The expression has a node the ported canonical simplifier does not handle."""


class _Split:
    """TVM ``SplitExprNode``: ``((index % upper_factor) // lower_factor) * scale``."""

    __slots__ = ("index", "lower_factor", "upper_factor", "scale", "div_mode", "dtype")

    def __init__(self, index, dtype, lower_factor=1, upper_factor=POS_INF, scale=1, div_mode=_TRUNC):
        self.index = index
        self.dtype = dtype
        self.lower_factor = lower_factor
        self.upper_factor = upper_factor
        self.scale = scale
        self.div_mode = div_mode

    def copy(self):
        return _Split(self.index, self.dtype, self.lower_factor, self.upper_factor, self.scale, self.div_mode)

    def normalize_with_scale(self, sscale):
        if self.scale == 0:
            return IntImm(0, self.dtype)
        res = self.index
        if self.upper_factor != POS_INF:
            res = _mod_impl(res, IntImm(self.upper_factor, self.dtype), self.div_mode)
        if self.lower_factor != 1:
            res = _div_impl(res, IntImm(self.lower_factor, self.dtype), self.div_mode)
        sscale *= self.scale
        if sscale != 1:
            res = fold_mul(res, IntImm(sscale, self.dtype))
        return res

    def normalize(self):
        return self.normalize_with_scale(1)

    def index_equal(self, other):
        return self.index is other.index or prim_equal(self.index, other.index)

    def div_mode_compatible_to(self, mode):
        return self.div_mode == mode or (self.lower_factor == 1 and self.upper_factor == POS_INF)


class _Sum:
    """TVM ``SumExprNode``: ``sum(args) + base``; ``args`` keep equal indices together, each
    run ordered by descending ``lower_factor``."""

    __slots__ = ("args", "base", "dtype")

    def __init__(self, dtype, args=None, base=0):
        self.dtype = dtype
        self.args = args if args is not None else []
        self.base = base

    def copy(self):
        return _Sum(self.dtype, [a.copy() for a in self.args], self.base)

    def is_zero(self):
        return self.base == 0 and not self.args

    def divide_by(self, scale):
        assert self.base % scale == 0
        self.base //= scale
        for a in self.args:
            assert a.scale % scale == 0
            a.scale //= scale

    def mul_to_self(self, scale):
        self.base *= scale
        for a in self.args:
            a.scale *= scale

    def add_const(self, value):
        self.base += value

    def add_split(self, other, scale):
        if other.scale == 0:
            return
        other = other.copy()
        args = self.args
        start = 0
        while start < len(args) and not args[start].index_equal(other):
            start += 1
        for j in range(start, len(args)):
            if not args[j].index_equal(other) or other.lower_factor > args[j].lower_factor:
                other.scale *= scale
                args.insert(j, other)
                return
            if (other.lower_factor == args[j].lower_factor and other.upper_factor == args[j].upper_factor
                    and other.div_mode_compatible_to(args[j].div_mode)):
                args[j].scale += other.scale * scale
                return
        other.scale *= scale
        args.append(other)

    def add_sum(self, other, scale):
        for a in other.args:
            self.add_split(a, scale)
        self.add_const(other.base * scale)

    def normalize(self):
        if not self.args:
            return IntImm(self.base, self.dtype)
        return _normalize_sum(self.dtype, _simplify_split_exprs([a.copy() for a in self.args]), self.base)


def _simplify_split_exprs(args):
    """TVM ``SumExprNode::SimplifySplitExprs``: merge terms of one index, then order by
    descending scale, lower factor, upper factor and division mode (stable)."""
    for i in range(len(args)):
        if args[i].scale == 0:
            continue
        for j in range(i + 1, len(args)):
            lhs, rhs = args[i], args[j]
            if not lhs.index_equal(rhs):
                break
            if lhs.upper_factor < rhs.lower_factor:
                break
            if (lhs.upper_factor == rhs.upper_factor and lhs.lower_factor == rhs.lower_factor
                    and lhs.div_mode_compatible_to(rhs.div_mode)):
                rhs.scale += lhs.scale
                lhs.scale = 0
            elif (lhs.lower_factor == rhs.upper_factor and rhs.scale != 0 and lhs.scale % rhs.scale == 0
                  and lhs.lower_factor == _cdiv(lhs.scale, rhs.scale) * rhs.lower_factor
                  and lhs.div_mode_compatible_to(rhs.div_mode)):
                # (x // (c*s)) * s + (x % (c*s)) // c == x // c
                rhs.upper_factor = lhs.upper_factor
                lhs.scale = 0
                break
    args.sort(key=lambda a: (-a.scale, -a.lower_factor, -a.upper_factor, -a.div_mode))
    return args


def _cdiv(a, b):
    """C++ ``/`` on int64 (truncating)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _normalize_sum(dtype, args, base):
    """TVM ``SumExprNode::Normalize_``: positive terms, a positive base, then the negative
    terms and a negative base subtracted."""
    is_min_value = base == -(1 << (int(dtype[3:]) - 1))
    res = IntImm(0, dtype)
    for a in args:
        if a.scale > 0:
            res = fold_add(res, a.normalize())
    if base > 0 or is_min_value:
        res = fold_add(res, IntImm(base, dtype))
    for a in args:
        if a.scale < 0:
            res = fold_sub(res, a.normalize_with_scale(-1))
    if base < 0 and not is_min_value:
        res = fold_sub(res, IntImm(-base, dtype))
    return res


def _mod_impl(a, b, mode):
    if mode != _FLOOR:
        raise UnsupportedSimplify("truncated remainder is not supported by memcore's simplifier")
    return fold_floormod(a, b)


def _div_impl(a, b, mode):
    if mode != _FLOOR:
        raise UnsupportedSimplify("truncated division is not supported by memcore's simplifier")
    return fold_floordiv(a, b)


def _imm(e):
    return e.value if type(e) is IntImm else None


def _normalize(e):
    return e.normalize() if isinstance(e, (_Split, _Sum)) else e


def _try_const_fold(kind, a, b):
    """TVM ``TryConstFold<Add|Sub|Mul|FloorDiv|FloorMod>`` on possibly canonical operands."""
    ca, cb = _imm(a), _imm(b)
    dt = a.dtype
    if kind is Add:
        if ca is not None and cb is not None:
            return IntImm(ca + cb, dt)
        if ca == 0:
            return b
        if cb == 0:
            return a
    elif kind is Sub:
        if ca is not None and cb is not None:
            return IntImm(ca - cb, dt)
        if cb == 0:
            return a
    elif kind is Mul:
        if ca is not None and cb is not None:
            return IntImm(ca * cb, dt)
        if ca is not None:
            if ca == 1:
                return b
            if ca == 0:
                return a
        if cb is not None:
            if cb == 1:
                return a
            if cb == 0:
                return b
    else:
        if cb == 0:
            raise IRError("division by zero in a shape expression")
        if ca is not None and cb is not None:
            return IntImm(ca // cb if kind is FloorDiv else ca % cb, dt)
        if ca == 0:
            return a
        if cb == 1:
            return a if kind is FloorDiv else IntImm(0, dt)
    return None


class _Canonical:
    """``CanonicalSimplifier::Impl`` for the supported node kinds."""

    def __init__(self, bounds: VarBounds):
        self.bounds = bounds

    # -- entry points (VisitExpr normalizes, CanonicalMutate does not)
    def visit(self, e):
        return _normalize(self.mutate(e))

    def mutate(self, e):
        t = type(e)
        if t is IntImm or t is PrimVar:
            return e
        if e.dtype not in _INDEX_DTYPES:
            raise UnsupportedSimplify(f"canonical simplification of {e!r}: dtype {e.dtype} is not an index type")
        if t is Add or t is Sub:
            return self._add_sub(e, 1 if t is Add else -1)
        if t is Mul:
            return self._mul(e)
        if t is FloorDiv:
            return self._floordiv(e)
        if t is FloorMod:
            return self._floormod(e)
        raise UnsupportedSimplify(f"canonical simplification of {type(e).__name__} is not supported: {e!r}")

    # -- helpers of the Impl
    def _cbound(self, e):
        return const_int_bound(e, self.bounds)

    def _can_prove_ge(self, e, lower):
        c = _imm(e)
        if c is not None:
            return c >= lower
        return self._cbound(e)[0] >= lower

    def _less_than(self, e, val):
        """``TryCompare(e, val) == kLT`` on an already canonical ``e``."""
        c = _imm(e)
        if c is not None:
            return c < val
        return self._cbound(e)[1] < val

    @staticmethod
    def _to_split(e):
        if isinstance(e, _Split):
            return e
        if isinstance(e, _Sum):
            if e.base == 0 and len(e.args) == 1:
                return e.args[0]
            e = e.normalize()
        return _Split(e, e.dtype)

    def _to_sum(self, e):
        if isinstance(e, _Sum):
            return e.copy()
        if type(e) is IntImm:
            return _Sum(e.dtype, base=e.value)
        return _Sum(e.dtype, [self._to_split(e).copy()])

    def _convert_div_mode(self, s, mode):
        if s.div_mode == mode:
            return s
        if s.div_mode_compatible_to(mode):
            s = s.copy()
            s.div_mode = mode
            return s
        s = self._to_split(s.normalize()).copy()
        s.div_mode = mode
        return s

    @staticmethod
    def _separate_divisible_parts(psum, coeff):
        divisible, non_divisible = _Sum(psum.dtype), _Sum(psum.dtype)
        if psum.base % coeff == 0:
            divisible.base = psum.base
        else:
            non_divisible.base = psum.base
        for a in psum.args:
            (divisible if a.scale % coeff == 0 else non_divisible).args.append(a.copy())
        return divisible, non_divisible

    def _split_div_const(self, lhs, cval, mode):
        lhs = self._convert_div_mode(lhs, mode).copy()
        if lhs.scale % cval == 0:
            lhs.scale //= cval
            return lhs
        if cval % lhs.scale == 0:
            scaled = cval // lhs.scale
            if lhs.upper_factor == POS_INF or lhs.upper_factor % (lhs.lower_factor * scaled) == 0:
                lhs.scale = 1
                lhs.lower_factor *= scaled
                return lhs
            if 0 < lhs.upper_factor <= lhs.lower_factor * scaled:
                # ``(x % c1) // c2`` is 0 when ``c2 >= c1``; TVM 0.27.0.post1 leaves a negative
                # upper factor (a remainder of a negatively scaled index) to the branch below
                # (measured: ``(s * -1) % 3 // 2`` is ``s % -3 // -2`` there)
                return self._to_split(IntImm(0, lhs.dtype))
            lhs.index = _mod_impl(lhs.index, IntImm(lhs.upper_factor, lhs.dtype), mode)
            lhs.upper_factor = POS_INF
            lhs.scale = 1
            lhs.lower_factor *= scaled
            return lhs
        lhs = self._to_split(lhs.normalize()).copy()
        lhs.lower_factor *= cval
        lhs.div_mode = mode
        return lhs

    def _split_mod_const(self, lhs, cval, mode):
        lhs = self._convert_div_mode(lhs, mode).copy()
        if lhs.scale % cval == 0:
            lhs.scale = 0
            return lhs
        if cval % lhs.scale == 0:
            scaled = cval // lhs.scale
            new_upper = lhs.lower_factor * scaled
            if lhs.upper_factor == POS_INF or lhs.upper_factor % new_upper == 0:
                if new_upper < lhs.upper_factor and lhs.upper_factor != POS_INF:
                    updated = self._to_split(self.visit(_mod_impl(lhs.index, IntImm(new_upper, lhs.dtype), mode)))
                    if lhs.lower_factor != 1:
                        ret = self._split_div_const(updated, lhs.lower_factor, mode).copy()
                        ret.scale *= lhs.scale
                        return ret
                    updated = updated.copy()
                    updated.scale *= lhs.scale
                    return updated
                lhs.upper_factor = new_upper
                return lhs
            if new_upper % lhs.upper_factor == 0:
                return lhs
        lhs = self._to_split(lhs.normalize()).copy()
        lhs.div_mode = mode
        lhs.upper_factor = cval
        return lhs

    @staticmethod
    def _prod_div_simplify(lhs, rhs):
        """TVM ``ProdDivSimplify``: ``(new_lhs, new_rhs, common_scale)`` after cancelling the
        factors two products share and the gcd of their constant factors, or None."""
        if type(rhs) is IntImm:
            return None
        lhs_prods = []
        lhs_cscale = rhs_cscale = 1
        for v in _unpack_mul(lhs):
            if type(v) is IntImm:
                lhs_cscale *= v.value
            else:
                lhs_prods.append(v)
        new_rhs = IntImm(1, rhs.dtype)
        common = IntImm(1, rhs.dtype)
        eliminated = 0
        for v in _unpack_mul(rhs):
            if type(v) is IntImm:
                rhs_cscale *= v.value
                continue
            for i, p in enumerate(lhs_prods):
                if p is not None and prim_equal(v, p):
                    lhs_prods[i] = None
                    eliminated += 1
                    common = fold_mul(common, v)
                    break
            else:
                new_rhs = fold_mul(new_rhs, v)
        g = math.gcd(lhs_cscale, rhs_cscale)  # TVM ZeroAwareGCD
        if g == 0:
            g = 1
        lhs_cscale = _cdiv(lhs_cscale, g)
        rhs_cscale = _cdiv(rhs_cscale, g)
        if eliminated == 0 and g == 1:
            return None
        new_lhs = IntImm(1, lhs.dtype)
        for p in lhs_prods:
            if p is not None:
                new_lhs = fold_mul(new_lhs, p)
        return (fold_mul(new_lhs, IntImm(lhs_cscale, lhs.dtype)), fold_mul(new_rhs, IntImm(rhs_cscale, rhs.dtype)),
                fold_mul(common, IntImm(g, rhs.dtype)))

    # -- VisitExpr_ of the node kinds
    def _add_sub(self, op, sign):
        a, b = self.mutate(op.a), self.mutate(op.b)
        folded = _try_const_fold(Add if sign == 1 else Sub, a, b)
        if folded is not None:
            return folded
        ret = self._to_sum(a)
        if type(b) is IntImm:
            ret.add_const(sign * b.value)
        elif isinstance(b, _Sum):
            ret.add_sum(b, sign)
        else:
            ret.add_split(self._to_split(b), sign)
        return ret

    def _mul(self, op):
        a, b = self.mutate(op.a), self.mutate(op.b)
        folded = _try_const_fold(Mul, a, b)
        if folded is not None:
            return folded
        if type(a) is IntImm:
            a, b = b, a
        if type(b) is IntImm:
            if isinstance(a, _Sum):
                ret = a.copy()
                ret.mul_to_self(b.value)
                return ret
            ret = self._to_split(a).copy()
            ret.scale *= b.value
            return ret
        return _mul_and_normalize(_normalize(a), _normalize(b))

    def _div_sum_by_const(self, psum, cval):
        """The constant-divisor floordiv of a ``SumExpr`` (shared by the two places TVM does it)."""
        lhs, extra = self._separate_divisible_parts(psum, cval)
        lhs.divide_by(cval)
        if extra.is_zero():
            return lhs
        temp = extra.normalize()
        if type(temp) is IntImm:
            lhs.add_const(temp.value // cval)
        elif not (self._less_than(temp, cval) and self._can_prove_ge(temp, 0)):
            lhs.add_split(self._split_div_const(self._to_split(temp), cval, _FLOOR), 1)
        return lhs

    def _floordiv(self, op):
        a, b = self.mutate(op.a), self.mutate(op.b)
        folded = _try_const_fold(FloorDiv, a, b)
        if folded is not None:
            return folded
        cval = _imm(b)
        if cval is not None and cval > 0:
            if isinstance(a, _Sum):
                return self._div_sum_by_const(a, cval)
            lo, hi = self._cbound(_normalize(a))
            if lo >= 0 and hi < cval:
                return IntImm(0, a.dtype)
            # floordiv(floormod(index, m*n), n) = floormod(floordiv(index, n), m)
            if (isinstance(a, _Split) and a.lower_factor == 1 and a.scale == 1 and a.upper_factor != POS_INF
                    and a.upper_factor % cval == 0 and a.div_mode_compatible_to(_FLOOR)):
                raw = self.mutate(a.index)
                if isinstance(raw, _Sum):
                    lhs, _extra = self._separate_divisible_parts(raw, cval)
                    if not lhs.is_zero():
                        div_result = self._div_sum_by_const(raw, cval).normalize()
                        return self.visit(fold_floormod(div_result, IntImm(a.upper_factor // cval, a.dtype)))
            return self._split_div_const(self._to_split(a), cval, _FLOOR)
        a, b = _normalize(a), _normalize(b)
        r = self._prod_div_simplify(a, b)
        if r is not None:
            return fold_floordiv(r[0], r[1])
        return FloorDiv(a, b)

    def _floormod(self, op):
        a, b = self.mutate(op.a), self.mutate(op.b)
        folded = _try_const_fold(FloorMod, a, b)
        if folded is not None:
            return folded
        cval = _imm(b)
        if cval is not None and cval > 0:
            if isinstance(a, _Sum):
                _lhs, extra = self._separate_divisible_parts(a, cval)
                temp = extra.normalize()
                if type(temp) is IntImm:
                    return fold_floormod(temp, b)
                if self._less_than(temp, cval) and self._can_prove_ge(temp, 0):
                    return temp
                extra.base = extra.base % cval
                return self._split_mod_const(self._to_split(extra), cval, _FLOOR)
            lo, hi = self._cbound(_normalize(a))
            if lo >= 0 and hi < cval:
                return a
            return self._split_mod_const(self._to_split(a), cval, _FLOOR)
        a, b = _normalize(a), _normalize(b)
        r = self._prod_div_simplify(a, b)
        if r is not None:
            return fold_mul(fold_floormod(r[0], r[1]), r[2])
        return FloorMod(a, b)


def _unpack_mul(e):
    """TVM ``UnpackReduction<MulNode>``: the leaves of a tree of ``*``, left to right."""
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        if type(x) is Mul:
            stack.append(x.b)
            stack.append(x.a)
        else:
            out.append(x)
    return out


def _mul_and_normalize(lhs, rhs):
    """TVM ``MulAndNormalize``: the symbolic factors of both products left to right, then
    the product of their constant factors."""
    cscale = 1
    res = IntImm(1, lhs.dtype)
    for v in _unpack_mul(lhs) + _unpack_mul(rhs):
        if type(v) is IntImm:
            cscale *= v.value
        else:
            res = fold_mul(res, v)
    if cscale != 1:
        res = fold_mul(res, IntImm(cscale, res.dtype))
    return res


def canonical_simplify(expr: PrimExpr, bounds: VarBounds = EMPTY_BOUNDS) -> PrimExpr:
    """TVM ``Analyzer::canonical_simplify`` of an integer index expression (see the module
    docstring for the node kinds supported).

    Raises
    ------
    UnsupportedSimplify
        ``expr`` has a node kind the port does not handle.
    """
    return _Canonical(bounds).visit(expr)


_FOLD = {Add: fold_add, Sub: fold_sub, Mul: fold_mul, FloorDiv: fold_floordiv, FloorMod: fold_floormod}


def _rewrite_simplify(e, bounds):
    """The rules of TVM ``RewriteSimplifier`` that the port has, applied bottom-up as TVM's
    ``VisitExpr_`` does: operands first, a node whose operands changed rebuilt with constant
    folding (``TryConstFold``), then the node's rules. Both rules are the first two index
    rules of ``VisitExpr_(const FloorModNode*)`` in ``src/arith/rewrite_simplify.cc``, in
    TVM's order (the first one that matches returns):

    1. ``floormod(x * c1, c2) -> floormod(x * floormod(c1, c2), c2)`` if ``c2 != 0``: the
       constant factor is reduced modulo the divisor, ``s * 6 % 4`` is ``s * 2 % 4`` (and the
       canonical pass after it writes ``s % 2 * 2``). No sign condition on ``x``: the identity
       holds for every integer.
    2. ``floormod(x * c1 + y, c2) -> floormod(x, c2 // c1) * c1 + y`` if ``c1 > 0``,
       ``c2 > 0``, ``c2 % c1 == 0`` and ``y // c1`` is provably ``0``: ``(s * 2 + 1) % 4`` is
       ``s % 2 * 2 + 1``. TVM proves ``y // c1 == 0`` by its rewritten constant bound
       (``TryCompare``); the port uses the constant bound of ``y // c1`` under ``bounds``, so
       it applies the rule only where TVM does.

    TVM runs its rewriter at most twice; both rules give a tree they leave as it is, so one
    pass writes the same tree.
    """
    t = type(e)
    if t is IntImm or t is PrimVar:
        return e
    a, b = _rewrite_simplify(e.a, bounds), _rewrite_simplify(e.b, bounds)
    if a is not e.a or b is not e.b:
        e = _FOLD[t](a, b)
        if type(e) is not t:
            return e
    if t is not FloorMod or type(b) is not IntImm:
        return e
    c2 = b.value
    if type(a) is Mul and type(a.b) is IntImm and c2 != 0:
        return fold_floormod(fold_mul(a.a, fold_floormod(a.b, b)), b)
    if type(a) is Add and type(a.a) is Mul and type(a.a.b) is IntImm:
        x, c1, y = a.a.a, a.a.b, a.b
        if (c1.value > 0 and c2 > 0 and c2 % c1.value == 0
                and const_int_bound(fold_floordiv(y, c1), bounds) == (0, 0)):
            return fold_add(fold_mul(fold_floormod(x, IntImm(c2 // c1.value, b.dtype)), c1), y)
    return e


def simplify(expr: PrimExpr, bounds: VarBounds = EMPTY_BOUNDS) -> PrimExpr:
    """TVM ``Analyzer::Simplify``: canonical simplification of ``expr``, the ported rules of
    the rewrite simplifier (:func:`_rewrite_simplify`), canonical simplification again.
    Literals and variables come back unchanged.

    Raises
    ------
    UnsupportedSimplify
        ``expr`` has a node kind the port does not handle.
    """
    if type(expr) is IntImm or type(expr) is PrimVar:
        return expr
    res = canonical_simplify(expr, bounds)
    if type(res) is IntImm:
        return res
    res = _rewrite_simplify(res, bounds)
    if type(res) is IntImm:
        return res
    return canonical_simplify(res, bounds)


def is_simplifiable(expr: PrimExpr) -> bool:
    """Whether :func:`simplify` handles every node of ``expr``."""
    stack = [expr]
    while stack:
        e = stack.pop()
        t = type(e)
        if t is IntImm or t is PrimVar:
            continue
        if t not in (Add, Sub, Mul, FloorDiv, FloorMod) or e.dtype not in _INDEX_DTYPES:
            return False
        stack.extend(e.operands)
    return True
