"""Symbolic integer expressions (TIR ``PrimExpr`` subset) used in shapes and sizes.

Design
------
A ``PrimExpr`` is a small immutable tree: literals (:class:`IntImm`, :class:`FloatImm`),
named variables (:class:`PrimVar`, printed ``n = T.int64()``) and binary nodes
(:class:`Add`, :class:`Sub`, :class:`Mul`, :class:`FloorDiv`, :class:`FloorMod`,
:class:`Min`, :class:`Max`). The tree is kept exactly as written, because TVM prints (and
compares structurally) ``4 * (m * n)`` and ``(n * m) * 4`` as different expressions.

Separately, :func:`canonical` maps an expression to a hashable *canonical form*: a polynomial
with integer coefficients over variables and opaque atoms (``floordiv``/``floormod``/
``min``/``max`` of canonical operands). Two expressions with the same canonical form are
equal for every value of their variables, so :func:`prove_equal` answers ``4 * (m * n)`` vs
``(n * m) * 4`` with ``True``. Variables are identified by name within one function (TVM
matches the ``tir_var_upper_bound`` attribute by name as well).

Arithmetic operators build trees (``n * 4`` is ``Mul(n, IntImm(4))``); ``==`` stays
identity, as for every IR node.
"""
from __future__ import annotations

from ..errors import IRError

__all__ = [
    "prim_equal",
    "substitute",
    "PrimExpr",
    "IntImm",
    "FloatImm",
    "PrimVar",
    "BinaryOp",
    "Add",
    "Sub",
    "Mul",
    "FloorDiv",
    "FloorMod",
    "Min",
    "Max",
    "const",
    "as_prim",
    "canonical",
    "prove_equal",
    "free_prim_vars",
    "simplify_const",
]

_set = object.__setattr__

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class PrimExpr:
    """Base class of symbolic scalar expressions. Immutable; compared by identity."""

    __slots__ = ("dtype",)

    def __setattr__(self, key, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    # Tree builders (never simplify: the written form is kept).
    def __add__(self, other):
        return Add(self, as_prim(other))

    def __radd__(self, other):
        return Add(as_prim(other), self)

    def __sub__(self, other):
        return Sub(self, as_prim(other))

    def __rsub__(self, other):
        return Sub(as_prim(other), self)

    def __mul__(self, other):
        return Mul(self, as_prim(other))

    def __rmul__(self, other):
        return Mul(as_prim(other), self)

    def __floordiv__(self, other):
        return FloorDiv(self, as_prim(other))

    def __rfloordiv__(self, other):
        return FloorDiv(as_prim(other), self)

    def __mod__(self, other):
        return FloorMod(self, as_prim(other))

    def __rmod__(self, other):
        return FloorMod(as_prim(other), self)

    __hash__ = object.__hash__


class IntImm(PrimExpr):
    """Integer literal. ``dtype`` is ``"int64"`` unless written otherwise (``T.int32(3)``)."""

    __slots__ = ("value",)

    def __init__(self, value: int, dtype: str = "int64"):
        value = int(value)
        if dtype == "int64" and not INT64_MIN <= value <= INT64_MAX:
            raise IRError(f"IntImm value must fit in int64; got {value}")
        _set(self, "value", value)
        _set(self, "dtype", dtype)

    def __repr__(self):
        return f"IntImm({self.value})" if self.dtype == "int64" else f"IntImm({self.value}, {self.dtype!r})"


class FloatImm(PrimExpr):
    """Floating-point literal (``T.float32(1.5)``)."""

    __slots__ = ("value",)

    def __init__(self, value: float, dtype: str = "float32"):
        if not (dtype.startswith("float") or dtype.startswith("bfloat")):
            raise IRError(f"a float literal ({value!r}) cannot have the non-float dtype {dtype!r}")
        _set(self, "value", float(value))
        _set(self, "dtype", dtype)

    def __repr__(self):
        return f"FloatImm({self.value!r}, {self.dtype!r})"


class PrimVar(PrimExpr):
    """A named symbolic scalar (TIR ``Var``), declared in TVMScript as ``n = T.int64()``."""

    __slots__ = ("name",)

    def __init__(self, name: str, dtype: str = "int64"):
        if not isinstance(name, str) or not name:
            raise IRError(f"PrimVar name must be a non-empty str; got {name!r}")
        _set(self, "name", name)
        _set(self, "dtype", dtype)

    def __repr__(self):
        return f"PrimVar({self.name!r})"


class BinaryOp(PrimExpr):
    """Base of binary nodes; ``a`` and ``b`` are :class:`PrimExpr`."""

    __slots__ = ("a", "b")
    #: TVMScript spelling: an infix operator (``"+"``) or a function name (``"T.min"``).
    symbol = ""
    infix = True
    #: Binding strength for printing with minimal parentheses (higher binds tighter).
    precedence = 0

    def __init__(self, a: PrimExpr, b: PrimExpr):
        if not isinstance(a, PrimExpr) or not isinstance(b, PrimExpr):
            raise IRError(
                f"{type(self).__name__} operands must be PrimExpr; got {type(a).__name__}, {type(b).__name__}"
            )
        _set(self, "a", a)
        _set(self, "b", b)
        _set(self, "dtype", a.dtype)

    def __repr__(self):
        return f"{type(self).__name__}({self.a!r}, {self.b!r})"


class Add(BinaryOp):
    __slots__ = ()
    symbol = "+"
    precedence = 1


class Sub(BinaryOp):
    __slots__ = ()
    symbol = "-"
    precedence = 1


class Mul(BinaryOp):
    __slots__ = ()
    symbol = "*"
    precedence = 2


class FloorDiv(BinaryOp):
    __slots__ = ()
    symbol = "//"
    precedence = 2


class FloorMod(BinaryOp):
    __slots__ = ()
    symbol = "%"
    precedence = 2


class Min(BinaryOp):
    __slots__ = ()
    symbol = "T.min"
    infix = False
    precedence = 9


class Max(BinaryOp):
    __slots__ = ()
    symbol = "T.max"
    infix = False
    precedence = 9


def const(value: int, dtype: str = "int64") -> IntImm:
    """An :class:`IntImm` literal."""
    return IntImm(value, dtype)


def as_prim(value) -> PrimExpr:
    """Coerce a Python int (or an existing :class:`PrimExpr`) to a :class:`PrimExpr`."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        raise IRError(f"a shape or size expression must be an int or PrimExpr; got bool {value!r}")
    if isinstance(value, int):
        return IntImm(value)
    try:
        import numpy as np

        if isinstance(value, np.integer):
            return IntImm(int(value))
    except ImportError:  # pragma: no cover
        pass
    raise IRError(f"a shape or size expression must be an int or PrimExpr; got {type(value).__name__} {value!r}")


# --------------------------------------------------------------------------------------
# Canonical form: polynomial over atoms.
#
# A polynomial is a dict {monomial: coeff}; a monomial is a sorted tuple of atom keys (with
# repetition for powers); the constant term has the empty monomial. Atom keys are
# ("v", name) for variables and (op, canon_a, canon_b) for opaque nonlinear nodes, where
# canon_x is the frozen canonical form of the operand. The frozen form is a sorted tuple of
# (monomial, coeff) with coeff != 0, hashable and comparable.
# --------------------------------------------------------------------------------------

_OPAQUE = {FloorDiv: "floordiv", FloorMod: "floormod", Min: "min", Max: "max"}


def _poly_add(p, q, sign=1):
    out = dict(p)
    for mono, c in q.items():
        v = out.get(mono, 0) + sign * c
        if v:
            out[mono] = v
        else:
            out.pop(mono, None)
    return out


def _poly_mul(p, q):
    out = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            mono = tuple(sorted(m1 + m2))
            v = out.get(mono, 0) + c1 * c2
            if v:
                out[mono] = v
            else:
                out.pop(mono, None)
    return out


def _freeze(p):
    return tuple(sorted(p.items()))


def _const_of(p):
    """The integer value of a constant polynomial, else None."""
    if not p:
        return 0
    if len(p) == 1 and () in p:
        return p[()]
    return None


def _floordiv(a, b):
    return a // b


def _floormod(a, b):
    return a % b


_FOLD = {FloorDiv: _floordiv, FloorMod: _floormod, Min: min, Max: max}


def _poly(expr, memo):
    key = id(expr)
    hit = memo.get(key)
    if hit is not None:
        return hit[1]
    if isinstance(expr, IntImm):
        p = {(): expr.value} if expr.value else {}
    elif isinstance(expr, PrimVar):
        p = {(("v", expr.name),): 1}
    elif isinstance(expr, Add):
        p = _poly_add(_poly(expr.a, memo), _poly(expr.b, memo))
    elif isinstance(expr, Sub):
        p = _poly_add(_poly(expr.a, memo), _poly(expr.b, memo), -1)
    elif isinstance(expr, Mul):
        p = _poly_mul(_poly(expr.a, memo), _poly(expr.b, memo))
    elif type(expr) in _OPAQUE:
        pa, pb = _poly(expr.a, memo), _poly(expr.b, memo)
        ca, cb = _const_of(pa), _const_of(pb)
        if ca is not None and cb is not None and not (type(expr) in (FloorDiv, FloorMod) and cb == 0):
            v = _FOLD[type(expr)](ca, cb)
            p = {(): v} if v else {}
        elif type(expr) is FloorDiv and cb == 1:
            p = pa
        elif type(expr) is FloorMod and cb == 1:
            p = {}
        else:
            fa, fb = _freeze(pa), _freeze(pb)
            if type(expr) in (Min, Max) and fb < fa:  # commutative
                fa, fb = fb, fa
            if type(expr) in (Min, Max) and fa == fb:
                p = pa
            else:
                p = {((_OPAQUE[type(expr)], fa, fb),): 1}
    elif isinstance(expr, FloatImm):
        raise IRError(f"canonical form is defined for integer expressions; got {expr!r}")
    else:
        raise IRError(f"canonical form: unsupported expression {expr!r}")
    memo[key] = (expr, p)  # keep expr alive so id() stays unique during this call
    return p


def canonical(expr: PrimExpr):
    """Canonical form of an integer expression (hashable, order independent).

    Parameters
    ----------
    expr : PrimExpr

    Returns
    -------
    tuple
        A sorted tuple of ``(monomial, coefficient)`` pairs. Equal canonical forms imply the
        expressions are equal for all variable values.

    Examples
    --------
    >>> m, n = PrimVar("m"), PrimVar("n")
    >>> canonical(4 * (m * n)) == canonical((n * m) * 4)
    True
    """
    return _freeze(_poly(as_prim(expr), {}))


def prove_equal(a, b) -> bool:
    """True when ``a`` and ``b`` are provably equal (same canonical form)."""
    return canonical(a) == canonical(b)


def simplify_const(expr: PrimExpr):
    """The int value of ``expr`` if it is constant after canonicalisation, else None."""
    return _const_of(_poly(as_prim(expr), {}))


def free_prim_vars(expr: PrimExpr, out: dict | None = None) -> dict:
    """Names -> :class:`PrimVar` of the variables in ``expr``, in first-occurrence order."""
    if out is None:
        out = {}
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, PrimVar):
            out.setdefault(e.name, e)
        elif isinstance(e, BinaryOp):
            stack.append(e.b)
            stack.append(e.a)
    return out


def prim_equal(a, b) -> bool:
    """Structural equality of two PrimExpr trees (variables compared by name and dtype)."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is IntImm or ta is FloatImm:
        return a.value == b.value and a.dtype == b.dtype
    if ta is PrimVar:
        return a.name == b.name and a.dtype == b.dtype
    if isinstance(a, BinaryOp):
        return prim_equal(a.a, b.a) and prim_equal(a.b, b.b)
    return False


def substitute(expr: PrimExpr, env: dict) -> PrimExpr:
    """``expr`` with the variables named in ``env`` (name -> PrimExpr) replaced: the one
    symbolic substitution of the code base (type inference of calls, CanonicalizeBindings).

    A subtree that the replacement made constant is folded to an ``IntImm`` of its dtype;
    ``expr`` itself comes back when none of its variables is in ``env``.
    """
    if not env:
        return expr
    t = type(expr)
    if t is PrimVar:
        rep = env.get(expr.name)
        return expr if rep is None else rep
    if isinstance(expr, BinaryOp):
        a, b = substitute(expr.a, env), substitute(expr.b, env)
        if a is expr.a and b is expr.b:
            return expr
        out = t(a, b)
        try:
            c = simplify_const(out)
        except Exception:  # noqa: BLE001 - a non-integer expression is left unfolded
            c = None
        return IntImm(c, out.dtype) if c is not None else out
    return expr

