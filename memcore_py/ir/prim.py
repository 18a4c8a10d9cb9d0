"""Symbolic integer expressions (TIR ``PrimExpr`` subset) used in shapes and sizes.

Design
------
A ``PrimExpr`` is a small immutable tree: literals (:class:`IntImm`, :class:`FloatImm`),
named variables (:class:`PrimVar`, printed ``n = T.int64()``), binary nodes
(:class:`Add`, :class:`Sub`, :class:`Mul`, :class:`FloorDiv`, :class:`FloorMod`,
:class:`Min`, :class:`Max`), and the conditional nodes TVM's shape arithmetic writes
(``T.if_then_else(s < 0, s + 512, s)`` from negative-index slicing): the comparisons
(:class:`LT`, :class:`LE`, :class:`GT`, :class:`GE`, :class:`EQ`, :class:`NE`) and
:class:`And`, :class:`Or` (binary nodes of dtype ``bool``), :class:`Not`, :class:`Cast`,
:class:`Select` and :class:`IfThenElse` (TIR's ``if_then_else`` call; it has Select's value,
TVM's analyses treat it differently). The tree is kept exactly as written, because TVM prints
(and compares structurally) ``4 * (m * n)`` and ``(n * m) * 4`` as different expressions.
Every node lists its sub-expressions in ``operands`` and is rebuilt from new ones by
``with_operands``, so that walks (free variables, substitution, equality) handle every kind
the same way.

Separately, :func:`canonical` maps an expression to a hashable *canonical form*: a polynomial
with integer coefficients over variables and opaque atoms (``floordiv``/``floormod``/
``min``/``max``, comparisons, ``and``/``or``/``not``, ``cast:<dtype>`` and ``select`` of
canonical operands; :data:`ATOM_KINDS`). Two expressions with the same canonical form are
equal for every value of their variables, so :func:`prove_equal` answers ``4 * (m * n)`` vs
``(n * m) * 4`` with ``True``. An atom whose operands are all constant is folded
(:func:`eval_atom`, the one evaluation of these operators), a ``select`` on a constant
condition is its branch, and a cast that keeps every value (``int32`` to ``int64``, ``bool``
to an integer) is its operand. Variables are identified by name within one function (TVM
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
    "CmpOp",
    "LT",
    "LE",
    "GT",
    "GE",
    "EQ",
    "NE",
    "And",
    "Or",
    "Not",
    "Cast",
    "Select",
    "IfThenElse",
    "ATOM_KINDS",
    "eval_atom",
    "int_range",
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
    #: The sub-expressions, in field order (none for literals and variables).
    operands = ()

    def with_operands(self, *operands) -> "PrimExpr":
        """The same kind of node (and dtype, for a cast) over new ``operands``."""
        return self

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

    @property
    def operands(self):
        return (self.a, self.b)

    def with_operands(self, a, b):
        return type(self)(a, b)

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


def _require_bool(node: str, what: str, e: PrimExpr):
    if e.dtype != "bool":
        raise IRError(f"{node}: {what} must be a bool expression; got {e!r} of dtype {e.dtype}")


class CmpOp(BinaryOp):
    """Base of the comparisons (TIR ``LT`` ...): operands of one dtype, the result ``bool``
    (0 or 1). ``symbol`` is the infix operator; ``name`` the TVMScript function
    (``T.LT``) TVM prints when its constant folding would rewrite the node."""

    __slots__ = ()
    name = ""
    precedence = 0  # below the arithmetic, above ``not``, ``and`` and ``or``

    def __init__(self, a: PrimExpr, b: PrimExpr):
        BinaryOp.__init__(self, a, b)
        if a.dtype != b.dtype:
            raise IRError(f"{type(self).__name__} operands must have one dtype; got {a.dtype} and {b.dtype}")
        _set(self, "dtype", "bool")


class LT(CmpOp):
    __slots__ = ()
    symbol, name = "<", "T.LT"


class LE(CmpOp):
    __slots__ = ()
    symbol, name = "<=", "T.LE"


class GT(CmpOp):
    __slots__ = ()
    symbol, name = ">", "T.GT"


class GE(CmpOp):
    __slots__ = ()
    symbol, name = ">=", "T.GE"


class EQ(CmpOp):
    __slots__ = ()
    symbol, name = "==", "T.EQ"


class NE(CmpOp):
    __slots__ = ()
    symbol, name = "!=", "T.NE"


class And(BinaryOp):
    """Logical and of two ``bool`` expressions (TIR ``And``; ``a and b``)."""

    __slots__ = ()
    symbol, name = "and", "T.And"
    precedence = -2  # ``not`` is -1

    def __init__(self, a: PrimExpr, b: PrimExpr):
        BinaryOp.__init__(self, a, b)
        _require_bool("And", "operand a", a)
        _require_bool("And", "operand b", b)


class Or(BinaryOp):
    """Logical or of two ``bool`` expressions (TIR ``Or``; ``a or b``)."""

    __slots__ = ()
    symbol, name = "or", "T.Or"
    precedence = -3

    def __init__(self, a: PrimExpr, b: PrimExpr):
        BinaryOp.__init__(self, a, b)
        _require_bool("Or", "operand a", a)
        _require_bool("Or", "operand b", b)


class Not(PrimExpr):
    """Logical not of a ``bool`` expression (TIR ``Not``; ``not a``)."""

    __slots__ = ("a",)

    def __init__(self, a: PrimExpr):
        if not isinstance(a, PrimExpr):
            raise IRError(f"Not operand must be a PrimExpr; got {type(a).__name__}")
        _require_bool("Not", "its operand", a)
        _set(self, "a", a)
        _set(self, "dtype", "bool")

    @property
    def operands(self):
        return (self.a,)

    def with_operands(self, a):
        return Not(a)

    def __repr__(self):
        return f"Not({self.a!r})"


class Cast(PrimExpr):
    """``value`` converted to ``dtype`` (TIR ``Cast``; ``T.Cast("int64", value)``)."""

    __slots__ = ("value",)

    def __init__(self, dtype: str, value: PrimExpr):
        if not isinstance(dtype, str) or not dtype:
            raise IRError(f"Cast dtype must be a dtype name; got {dtype!r}")
        if not isinstance(value, PrimExpr):
            raise IRError(f"Cast value must be a PrimExpr; got {type(value).__name__}")
        _set(self, "value", value)
        _set(self, "dtype", dtype)

    @property
    def operands(self):
        return (self.value,)

    def with_operands(self, value):
        return Cast(self.dtype, value)

    def __repr__(self):
        return f"Cast({self.dtype!r}, {self.value!r})"


class Select(PrimExpr):
    """``true_value`` where ``condition`` holds, else ``false_value`` (TIR ``Select``; both
    branches are evaluated). The branches have one dtype, the node's; the condition is
    ``bool``."""

    __slots__ = ("condition", "true_value", "false_value")
    #: the TVMScript function
    name = "T.Select"

    def __init__(self, condition: PrimExpr, true_value: PrimExpr, false_value: PrimExpr):
        kind = type(self).__name__
        for e in (condition, true_value, false_value):
            if not isinstance(e, PrimExpr):
                raise IRError(f"{kind} operands must be PrimExpr; got {type(e).__name__}")
        _require_bool(kind, "the condition", condition)
        if true_value.dtype != false_value.dtype:
            raise IRError(
                f"{kind} branches must have one dtype; got {true_value.dtype} (true) and {false_value.dtype} (false)"
            )
        _set(self, "condition", condition)
        _set(self, "true_value", true_value)
        _set(self, "false_value", false_value)
        _set(self, "dtype", true_value.dtype)

    @property
    def operands(self):
        return (self.condition, self.true_value, self.false_value)

    def with_operands(self, condition, true_value, false_value):
        return type(self)(condition, true_value, false_value)

    def __repr__(self):
        return f"{type(self).__name__}({self.condition!r}, {self.true_value!r}, {self.false_value!r})"


class IfThenElse(Select):
    """TIR's ``if_then_else(condition, true_value, false_value)`` (a call of the op
    ``prim.if_then_else`` in TVM 0.27; only the taken branch is evaluated). Its value is
    :class:`Select`'s, but TVM bounds it differently (:mod:`memcore_py.analysis.arith`) and
    it is a different node, so it is a class of its own."""

    __slots__ = ()
    name = "T.if_then_else"


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
# ("v", name) for variables and (kind, canon_1, ...) for opaque nodes (ATOM_KINDS), where
# canon_i is the frozen canonical form of an operand. The frozen form is a sorted tuple of
# (monomial, coeff) with coeff != 0, hashable and comparable.
# --------------------------------------------------------------------------------------

_OPAQUE = {FloorDiv: "floordiv", FloorMod: "floormod", Min: "min", Max: "max"}

#: Opaque atom kinds of the canonical form -> their number of operands. A comparison is an
#: atom of the difference of its operands (``a < b`` is ``lt(a - b)``, ``a > b`` is
#: ``lt(b - a)``; ``eq``/``ne`` of the difference or its negation, whichever sorts first); a
#: cast's kind is ``"cast:<dtype>"``; ``select`` (:class:`Select`) and ``if_then_else``
#: (:class:`IfThenElse`: the same value, kept apart because TVM bounds them differently) take
#: the condition, the true value and the false value.
ATOM_KINDS = {"floordiv": 2, "floormod": 2, "min": 2, "max": 2, "lt": 1, "le": 1, "eq": 1, "ne": 1,
              "and": 2, "or": 2, "not": 1, "cast": 1, "select": 3, "if_then_else": 3}

#: comparison -> (atom kind, operands swapped)
_CMP_ATOM = {LT: ("lt", False), LE: ("le", False), GT: ("lt", True), GE: ("le", True), EQ: ("eq", False),
             NE: ("ne", False)}


def int_range(dtype: str):
    """``(lo, hi)``, the values of an integer or bool dtype (``int32``, ``uint8``, ``bool``),
    else None."""
    if dtype == "bool":
        return (0, 1)
    for prefix, signed in (("int", True), ("uint", False)):
        if dtype.startswith(prefix) and dtype[len(prefix):].isdigit():
            bits = int(dtype[len(prefix):])
            return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return None


def _wrap(dtype: str, v: int):
    """``v`` cast to the integer or bool ``dtype`` (two's complement; bool: ``v != 0``), or
    None for another dtype."""
    r = int_range(dtype)
    if r is None:
        return None
    if dtype == "bool":
        return int(v != 0)
    lo, hi = r
    span = hi - lo + 1
    return (v - lo) % span + lo


def _lossless_cast(src: str, dst: str) -> bool:
    """Every value of ``src`` is unchanged by a cast to ``dst`` (both integer or bool)."""
    a, b = int_range(src), int_range(dst)
    return a is not None and b is not None and b[0] <= a[0] and a[1] <= b[1]


def eval_atom(kind: str, values):
    """The value of the atom ``kind`` (:data:`ATOM_KINDS`) on int operand ``values``, with TIR's
    semantics: floor division and remainder, truth values 0 and 1, ``select`` picks by its
    first value, a cast wraps to its dtype. None where it has no value (a division by zero, a
    cast to a non-integer dtype)."""
    if kind.startswith("cast:"):
        return _wrap(kind[5:], values[0])
    fold = _ATOM_EVAL[kind]
    return fold(*values)


_ATOM_EVAL = {
    "floordiv": lambda a, b: a // b if b else None,
    "floormod": lambda a, b: a % b if b else None,
    "min": min,
    "max": max,
    "lt": lambda d: int(d < 0),
    "le": lambda d: int(d <= 0),
    "eq": lambda d: int(d == 0),
    "ne": lambda d: int(d != 0),
    "and": lambda a, b: int(bool(a) and bool(b)),
    "or": lambda a, b: int(bool(a) or bool(b)),
    "not": lambda a: int(not a),
    "select": lambda c, t, f: t if c else f,
    "if_then_else": lambda c, t, f: t if c else f,
}


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
        v = eval_atom(_OPAQUE[type(expr)], (ca, cb)) if ca is not None and cb is not None else None
        if v is not None:
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
    elif isinstance(expr, (CmpOp, And, Or, Not, Cast, Select)):
        p = _conditional_poly(expr, memo)
    elif isinstance(expr, FloatImm):
        raise IRError(f"canonical form is defined for integer expressions; got {expr!r}")
    else:
        raise IRError(f"canonical form: unsupported expression {expr!r}")
    memo[key] = (expr, p)  # keep expr alive so id() stays unique during this call
    return p


def _atom(kind, *polys):
    """The polynomial of one atom over operand polynomials, folded when they are constant."""
    consts = [_const_of(q) for q in polys]
    if all(c is not None for c in consts):
        v = eval_atom(kind, consts)
        if v is not None:
            return {(): v} if v else {}
    return {((kind, *[_freeze(q) for q in polys]),): 1}


def _conditional_poly(expr, memo):
    """Canonical polynomial of a comparison, ``and``/``or``/``not``, cast or select."""
    t = type(expr)
    if t is Not:
        return _atom("not", _poly(expr.a, memo))
    if t is Cast:
        pv = _poly(expr.value, memo)
        if _lossless_cast(expr.value.dtype, expr.dtype):
            return pv
        return _atom("cast:" + expr.dtype, pv)
    if t is Select or t is IfThenElse:
        pc = _poly(expr.condition, memo)
        c = _const_of(pc)
        pt, pf = _poly(expr.true_value, memo), _poly(expr.false_value, memo)
        if c is not None:
            return pt if c else pf
        if _freeze(pt) == _freeze(pf):
            return pt
        return _atom("select" if t is Select else "if_then_else", pc, pt, pf)
    pa, pb = _poly(expr.a, memo), _poly(expr.b, memo)
    if t is And or t is Or:
        ca, cb = _const_of(pa), _const_of(pb)
        if ca is not None or cb is not None:  # a constant operand decides or passes the other
            c, other = (ca, pb) if ca is not None else (cb, pa)
            if t is And:
                return other if c else {}
            return {(): 1} if c else other
        fa, fb = _freeze(pa), _freeze(pb)
        if fa == fb:
            return pa
        if fb < fa:  # commutative
            pa, pb = pb, pa
        return _atom("and" if t is And else "or", pa, pb)
    kind, swapped = _CMP_ATOM[t]
    d = _poly_add(pb, pa, -1) if swapped else _poly_add(pa, pb, -1)
    if kind in ("eq", "ne"):
        neg = {m: -c for m, c in d.items()}
        if _freeze(neg) < _freeze(d):
            d = neg
    return _atom(kind, d)


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
    """The int value of ``expr`` if it is constant after canonicalisation, else None.

    A literal is its value and a variable is never constant (their canonical forms are
    ``{(): value}`` and ``{var: 1}``), so these two leaves, the commonest dims, are answered
    without building the form."""
    t = type(expr)
    if t is IntImm:
        return expr.value
    if t is PrimVar:
        return None
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
        else:
            stack.extend(reversed(e.operands))
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
    ops_a = a.operands
    if not ops_a or a.dtype != b.dtype:
        return False
    return all(prim_equal(x, y) for x, y in zip(ops_a, b.operands))


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
    ops = expr.operands
    if ops:
        new = [substitute(o, env) for o in ops]
        if all(n is o for n, o in zip(new, ops)):
            return expr
        out = expr.with_operands(*new)
        try:
            c = simplify_const(out)
        except Exception:  # noqa: BLE001 - a non-integer expression is left unfolded
            c = None
        return IntImm(c, out.dtype) if c is not None else out
    return expr

