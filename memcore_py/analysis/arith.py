"""Integer analysis of symbolic shapes and sizes, as TVM's ``arith::Analyzer`` does it for
memory planning.

StaticPlanBlockMemory (spec §1.2, §1.6) needs four things from TVM's arithmetic analyzer, and
this module ports exactly those, with TVM's expression shapes:

- :func:`const_int_bound` — the constant interval of an expression under var ranges
  (``ConstIntBoundAnalyzer``; unbounded ends are :data:`POS_INF` / :data:`NEG_INF`). It and
  TVM's constant-folding operators (``fold_add`` ...) live in :mod:`memcore_py.ir.prim_arith`,
  so that type rules can use them (reshape's ``-1``, :mod:`memcore_py.ir.simplify`), and are
  re-exported here with :class:`VarBounds`.
- :func:`int_set` — a *symbolic* interval (``IntervalSetEvaluator``): bounded vars are
  replaced by their range, unbounded vars stay as points, and the result is built with TVM's
  constant-folding operators, so ``2*(batch*vocab*4)+4194304`` with ``batch <= 32`` becomes
  ``32 * vocab * 4 * 2 + 4194304``, exactly the tree TVM prints.
- :func:`upper_bound_shape` (TVM ``GetUpperBoundShape``), :func:`tensor_bytes` (the
  ``StorageToken`` size: ``const_coeff * (d_i * d_j * ...)``) and :func:`dynamic_output_bytes`
  (``ub[0] * ub[1] * ... * elem``, the "Case 2" storage of ``relax.memory_plan_dynamic_func_output``).
- :func:`size_class_key` — when two symbolic sizes count as equal for storage reuse
  (TVM ``CanProveEqual``, see its docstring for the emulated subset).

Variables are identified by name within one function (TVM binds bounds by the name of the
signature's TIR vars). Bounds come from :func:`read_var_bounds`, which reads the function
attributes ``tir_var_upper_bound``, ``tir_var_lower_bound`` and ``tir_non_negative_var``.
"""
from __future__ import annotations

import itertools

from .._compiled import load_compiled
from ..errors import PassError
from ..ir.expr import Function, PrimValue
from ..ir.prim import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Cast,
    FloorDiv,
    FloorMod,
    IntImm,
    Min,
    Mul,
    Or,
    PrimExpr,
    PrimVar,
    Select,
    Sub,
    canonical,
    eval_atom,
    free_prim_vars,
)
from ..ir.prim_arith import (  # noqa: F401 - re-exported: TVM's folding operators and constant bounds
    EMPTY_BOUNDS,
    NEG_INF,
    POS_INF,
    VarBounds,
    _c,
    _everything,
    const_int_bound,
    fold_add,
    fold_cast,
    fold_floordiv,
    fold_floormod,
    fold_logical,
    fold_max,
    fold_min,
    fold_mul,
    fold_sub,
    modular_set,
)
from ..ir.types import FuncType, PrimType, ShapeType, TensorType, TupleType, dtype_bytes

__all__ = [
    "ATTR_TIR_VAR_UPPER_BOUND",
    "ATTR_TIR_VAR_LOWER_BOUND",
    "ATTR_TIR_NON_NEGATIVE_VAR",
    "POS_INF",
    "NEG_INF",
    "VarBounds",
    "read_var_bounds",
    "bounds_from_attrs",
    "signature_vars",
    "const_int_bound",
    "int_set",
    "upper_bound_dim",
    "upper_bound_shape",
    "tensor_bytes",
    "dynamic_output_bytes",
    "size_class_key",
    "size_struct_key",
    "SizePolynomial",
    "fold_add",
    "fold_sub",
    "fold_mul",
    "fold_floordiv",
    "fold_floormod",
    "fold_min",
    "fold_max",
]

#: Function attribute: ``{"n": 128}``, upper bounds of signature TIR vars (inclusive).
ATTR_TIR_VAR_UPPER_BOUND = "tir_var_upper_bound"
#: Function attribute: ``{"n": 1}``, lower bounds of signature TIR vars (inclusive).
ATTR_TIR_VAR_LOWER_BOUND = "tir_var_lower_bound"
#: Function attribute: ``["n", ...]``, signature TIR vars known to be >= 0.
ATTR_TIR_NON_NEGATIVE_VAR = "tir_non_negative_var"


def _collect_type_vars(ty, out):
    if ty is None:
        return
    if isinstance(ty, TensorType):
        for d in ty.shape or ():
            free_prim_vars(d, out)
    elif isinstance(ty, ShapeType):
        for d in ty.values or ():
            free_prim_vars(d, out)
    elif isinstance(ty, PrimType):
        if ty.value is not None:
            free_prim_vars(ty.value, out)
    elif isinstance(ty, TupleType):
        for f in ty.fields:
            _collect_type_vars(f, out)
    elif isinstance(ty, FuncType):
        for p in ty.params or ():
            _collect_type_vars(p, out)
        _collect_type_vars(ty.ret, out)


def signature_vars(func: Function) -> dict:
    """Names -> :class:`PrimVar` of the TIR vars in the function's signature type (parameter
    types and return type; TVM ``TIRVarsInStructInfo(GetStructInfo(func))``)."""
    out = {}
    for p in func.params:
        _collect_type_vars(p.ty, out)
    ret = func.ret_ty if func.ret_ty is not None else func.body.ty
    _collect_type_vars(ret, out)
    return out


def _attr_int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, IntImm):
        return value.value
    if isinstance(value, PrimValue) and isinstance(value.value, IntImm):
        return value.value.value
    try:
        import numpy as np

        if isinstance(value, np.integer):
            return int(value)
    except ImportError:  # pragma: no cover
        pass
    return None


def _read_int_map(func_name, attrs, key):
    raw = attrs.get(key)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise PassError(
            f"function {func_name!r}: attribute {key!r} must be a dict of str -> int; "
            f"got {type(raw).__name__} {raw!r}"
        )
    out = {}
    for name, value in raw.items():
        v = _attr_int(value)
        if not isinstance(name, str) or v is None:
            raise PassError(
                f"function {func_name!r}: attribute {key!r} must be a dict of str -> int; "
                f"got entry {name!r}: {value!r} ({type(value).__name__})"
            )
        out[name] = v
    return out


def read_var_bounds(func: Function, func_name: str = "?") -> VarBounds:
    """Read the TIR var range attributes of ``func`` (TVM ``SetTIRVarRangeConstraints``).

    Only vars of the function signature are bound, matched by name. A var with an upper
    bound gets the range ``[lower (default 0), upper]``; a var with only a lower bound
    ``>= 0``, or listed in ``tir_non_negative_var``, is only marked non-negative.

    Raises
    ------
    PassError
        An attribute of the wrong type, e.g. ``{"n": [4]}``.
    """
    return bounds_from_attrs(func.attrs, signature_vars(func), func_name)


def bounds_from_attrs(attrs: dict, names, func_name: str = "?") -> VarBounds:
    """The :class:`VarBounds` a function's ``attrs`` give the TIR vars ``names`` of its
    signature (:func:`read_var_bounds`' rule, for a caller that lists the names itself: the
    TVM bridge asks TVM's ``TIRVarsInStructInfo``).

    Raises
    ------
    PassError
        An attribute of the wrong type.
    """
    upper = _read_int_map(func_name, attrs, ATTR_TIR_VAR_UPPER_BOUND)
    lower = _read_int_map(func_name, attrs, ATTR_TIR_VAR_LOWER_BOUND)
    nonneg_raw = attrs.get(ATTR_TIR_NON_NEGATIVE_VAR)
    nonneg = set()
    if nonneg_raw is not None:
        if not isinstance(nonneg_raw, (list, tuple)) or not all(isinstance(s, str) for s in nonneg_raw):
            raise PassError(
                f"function {func_name!r}: attribute {ATTR_TIR_NON_NEGATIVE_VAR!r} must be a list of str; "
                f"got {nonneg_raw!r}"
            )
        nonneg = set(nonneg_raw)
    if not (upper or lower or nonneg):
        return EMPTY_BOUNDS
    bounds = VarBounds()
    for name in names:
        if name in upper or name in lower:
            lo = lower.get(name, 0 if name in upper else NEG_INF)
            if name in upper:
                bounds.ranges[name] = (lo, upper[name])
            elif lo >= 0:
                bounds.non_negative.add(name)
        elif name in nonneg:
            bounds.non_negative.add(name)
    return bounds


# --------------------------------------------------------------------------------------
# Symbolic intervals (TVM IntervalSetEvaluator, Combine<Op>)
# --------------------------------------------------------------------------------------
class _Inf:
    """TVM's ``pos_inf()`` / ``neg_inf()`` symbolic limits."""

    __slots__ = ("sign",)

    def __init__(self, sign):
        self.sign = sign

    def __repr__(self):
        return "+inf" if self.sign > 0 else "-inf"


PINF = _Inf(1)
NINF = _Inf(-1)


class UnsupportedBound(Exception):
    """TVM would express this bound with ``T.Select`` (a product with a var of unknown sign)."""


#: name of the marker vars standing for TVM's ``T.Select`` bounds inside :func:`int_set`
_SELECT_MARK = "<select>"
_select_ids = itertools.count()


def _imax(a, b):
    if a is PINF:
        return a
    if a is NINF:
        return b
    if b is PINF:
        return b
    if b is NINF:
        return a
    return fold_max(a, b)


def _imin(a, b):
    if a is NINF:
        return a
    if a is PINF:
        return b
    if b is NINF:
        return b
    if b is PINF:
        return a
    return fold_min(a, b)


def _point(e):
    return (e, e)


def _is_point(s):
    return s[0] is s[1]


#: TVM's logical ops of ``Combine``: a set of both points folds, any other set is ``[0, 1]``
_LOGICAL = frozenset((LT, LE, GT, GE, EQ, NE, And, Or))


def _combine(t, a, b, bounds):
    if t in _LOGICAL:
        if _is_point(a) and _is_point(b):
            return _point(fold_logical(t, a[0], b[0]))
        return (IntImm(0, "bool"), IntImm(1, "bool"))
    if _is_point(a) and _is_point(b):
        x, y = a[0], b[0]
        if t is Add:
            return _point(fold_add(x, y))
        if t is Sub:
            return _point(fold_sub(x, y))
        if t is Mul:
            return _point(fold_mul(x, y))
        if t is FloorDiv:
            return _point(fold_floordiv(x, y))
        if t is FloorMod:
            return _point(fold_floormod(x, y))
        if t is Min:
            return _point(fold_min(x, y))
        return _point(fold_max(x, y))
    if t is Add:
        lo = fold_add(a[0], b[0]) if a[0] is not NINF and b[0] is not NINF else NINF
        hi = fold_add(a[1], b[1]) if a[1] is not PINF and b[1] is not PINF else PINF
        return (lo, hi)
    if t is Sub:
        lo = fold_sub(a[0], b[1]) if a[0] is not NINF and b[1] is not PINF else NINF
        hi = fold_sub(a[1], b[0]) if a[1] is not PINF and b[0] is not NINF else PINF
        return (lo, hi)
    if t is Mul:
        if _is_point(a):
            a, b = b, a
        if _is_point(b):
            d = b[0]
            if _c(d) == 0:
                return b
            if _c(d) == 1:
                return a
            lo_d, hi_d = _sign_bound(d, bounds)
            if lo_d >= 0:
                lo = fold_mul(a[0], d) if a[0] is not NINF else NINF
                hi = fold_mul(a[1], d) if a[1] is not PINF else PINF
                return (lo, hi)
            if hi_d <= -1:
                lo = fold_mul(a[1], d) if a[1] is not PINF else NINF
                hi = fold_mul(a[0], d) if a[0] is not NINF else PINF
                return (lo, hi)
            if a[0] is not NINF and a[1] is not PINF:
                # TVM: Select(d >= 0, ...) bounds. Carried as opaque markers; the caller
                # rejects a final bound that still contains one.
                k = next(_select_ids)
                return (PrimVar(f"{_SELECT_MARK}lo{k}"), PrimVar(f"{_SELECT_MARK}hi{k}"))
        return (NINF, PINF)
    if t is FloorDiv:
        if _is_point(b):
            d = b[0]
            if _c(d) == 0:
                raise PassError("division by zero in a shape expression")
            if _sign_bound(d, bounds)[0] >= 0:
                lo = fold_floordiv(a[0], d) if a[0] is not NINF else NINF
                hi = fold_floordiv(a[1], d) if a[1] is not PINF else PINF
                return (lo, hi)
        return (NINF, PINF)
    if t is FloorMod:
        if _is_point(b):
            d = b[0]
            if _c(d) == 0:
                raise PassError("modulo by zero in a shape expression")
            if _sign_bound(d, bounds)[0] >= 0:
                if _c(d) is not None:
                    qmax = fold_floordiv(a[1], d) if a[1] is not PINF else PINF
                    qmin = fold_floordiv(a[0], d) if a[0] is not NINF else NINF
                    if isinstance(qmax, PrimExpr) and isinstance(qmin, PrimExpr) and _prove_equal_simple(qmax, qmin):
                        return (fold_sub(a[0], fold_mul(d, qmin)), fold_sub(a[1], fold_mul(d, qmin)))
                return (IntImm(0, d.dtype), fold_sub(d, IntImm(1, d.dtype)))
        return (NINF, PINF)
    if t is Min:
        return (_imin(a[0], b[0]), _imin(a[1], b[1]))
    return (_imax(a[0], b[0]), _imax(a[1], b[1]))


#: atom kinds of truth values (``prim.ATOM_KINDS``)
_BOOL_ATOMS = frozenset(("lt", "le", "eq", "ne", "and", "or", "not"))


def _poly_bound(frozen, bounds):
    """Constant bound of a canonical polynomial (``prim.canonical``'s frozen form): the sum of
    its monomials, each its coefficient times its atoms, bounded by the compiled kernel of
    :func:`const_int_bound` (``_int_bound.bound_of``)."""
    ib = load_compiled("memcore_py.ir._int_bound")
    nodes = []

    def emit(kind, a=-1, b=-1, v0=0, v1=0):
        nodes.append((kind, a, b, v0, v1))
        return len(nodes) - 1

    def poly(frozen):
        total = emit(ib.IMM)
        for mono, coeff in frozen:
            term = emit(ib.IMM, v0=coeff)
            for atom in mono:
                term = emit(ib.MUL, term, factor(atom))
            total = emit(ib.ADD, total, term)
        return total

    def factor(atom):
        kind = atom[0]
        if kind == "v":
            lo, hi = bounds.var_bound(atom[1])
            return emit(ib.VAR, v0=lo, v1=hi)
        if kind in _BOOL_ATOMS:
            return emit(ib.EVERYTHING, v0=0, v1=1)
        if kind == "if_then_else":  # a call for TVM: no bound
            return emit(ib.EVERYTHING, v0=NEG_INF, v1=POS_INF)
        if kind == "select":
            return emit(ib.SELECT, poly(atom[2]), poly(atom[3]))
        if kind.startswith("cast:"):
            lo, hi = _everything(kind[5:])
            return emit(ib.CAST, poly(atom[1]), v0=lo, v1=hi)
        op = {"min": ib.MIN, "max": ib.MAX, "floordiv": ib.FLOORDIV}.get(kind, ib.FLOORMOD)
        a = poly(atom[1])
        return emit(op, a, poly(atom[2]))

    poly(frozen)
    return ib.bound_of(nodes)


def _sign_bound(expr, bounds):
    """Bound used for TVM's ``CanProveGreaterEqual(expr, 0)`` / ``<= -1`` inside
    :func:`int_set`: TVM simplifies first, so ``n - n`` counts as 0. The tighter of the plain
    constant bound and the bound of the canonical form."""
    lo, hi = const_int_bound(expr, bounds)
    try:
        plo, phi = _poly_bound(canonical(expr), bounds)
    except Exception:  # noqa: BLE001 - opaque nodes
        return lo, hi
    return max(lo, plo), min(hi, phi)


def _prove_equal_simple(a, b):
    if a is b:
        return True
    try:
        return canonical(a) == canonical(b)
    except Exception:  # noqa: BLE001 - opaque nodes: not provable
        return False


def int_set(expr: PrimExpr, bounds: VarBounds = EMPTY_BOUNDS):
    """Symbolic interval ``(lo, hi)`` of ``expr`` (TVM ``Analyzer::int_set(expr, dom_map)``).

    Vars with a range in ``bounds.ranges`` become ``[IntImm(lo), IntImm(hi)]``; other vars
    stay points. Ends are :class:`PrimExpr` or the limits ``NINF`` / ``PINF``. A sub-expression
    whose operands evaluate to themselves is returned as the same node (TVM ``MatchPoint``).
    As TVM's ``IntervalSetEvaluator``: a ``Select`` is the union of its branches' sets
    (``T.max(false_max, true_max)``, even for points); a ``Cast`` casts its operand's ends;
    a comparison or ``and``/``or`` of two points is that node (folded on literals), else
    ``[0, 1]``; ``not`` and ``if_then_else`` are unbounded.

    Raises
    ------
    UnsupportedBound
        Where TVM would build a ``T.Select`` (bounded var times a var of unknown sign).
    """
    ranges = bounds.ranges

    def ev(e):
        t = type(e)
        if t is IntImm:
            return _point(e)
        if t is PrimVar:
            r = ranges.get(e.name)
            if r is None:
                return _point(e)
            lo, hi = r
            if lo == hi:
                return _point(IntImm(lo, e.dtype))
            return (IntImm(lo, e.dtype), IntImm(hi, e.dtype))
        if t is Select:  # TVM: Union(false set, true set), no point shortcut
            tv, fv = ev(e.true_value), ev(e.false_value)
            return (_imin(fv[0], tv[0]), _imax(fv[1], tv[1]))
        if t is Cast:
            v = ev(e.value)
            if _is_point(v):
                return _point(fold_cast(e.dtype, v[0]))
            return (fold_cast(e.dtype, v[0]) if v[0] is not NINF else NINF,
                    fold_cast(e.dtype, v[1]) if v[1] is not PINF else PINF)
        if isinstance(e, BinaryOp):
            a, b = ev(e.a), ev(e.b)
            if _is_point(a) and a[0] is e.a and _is_point(b) and b[0] is e.b:
                return _point(e)
            if t is FloorMod and type(e.b) is IntImm and e.b.value > 0:
                coeff, base = modular_set(e.a)
                if coeff % e.b.value == 0:  # a multiple of the divisor plus a constant
                    v = base % e.b.value
                    return (IntImm(v, e.dtype), IntImm(v, e.dtype))  # an interval, not a point
            return _combine(t, a, b, bounds)
        return (NINF, PINF)

    lo, hi = ev(expr)
    for end in (lo, hi):
        if isinstance(end, PrimExpr) and any(n.startswith(_SELECT_MARK) for n in free_prim_vars(end)):
            raise UnsupportedBound()
    return lo, hi


# --------------------------------------------------------------------------------------
# Shapes and sizes
# --------------------------------------------------------------------------------------
def upper_bound_dim(dim, bounds: VarBounds = EMPTY_BOUNDS):
    """The upper bound of one dim (TVM ``GetUpperBoundShape``, per dim): an ``IntImm`` dim, or
    a variable without bounds, itself; else its finite constant bound as an ``IntImm``, or
    its symbolic :func:`int_set` maximum if it has one, or the dim itself. Without any bounds
    a composite dim can still have a constant bound (``T.min(n, 64)``: 64; a cast to
    ``int32``: its range) or a new symbolic one (``T.Select(c, n, 3)``: ``T.max(3, n)``), as
    in TVM.

    Raises
    ------
    UnsupportedBound
        The bound would need ``T.Select``.
    """
    t = type(dim)
    if t is IntImm or (t is PrimVar and not bounds):
        return dim
    hi = const_int_bound(dim, bounds)[1]
    if hi != POS_INF:
        return IntImm(hi, dim.dtype)
    s = int_set(dim, bounds)
    return s[1] if s[1] is not PINF else dim


def upper_bound_shape(shape, bounds: VarBounds = EMPTY_BOUNDS):
    """Upper-bound each dim independently (TVM ``GetUpperBoundShape``): :func:`upper_bound_dim`
    of every dim."""
    if not bounds and all(type(d) is IntImm or type(d) is PrimVar for d in shape):
        # No bounds: a literal or a variable is its own upper bound.
        return tuple(shape)
    return tuple([upper_bound_dim(d, bounds) for d in shape])


def tensor_bytes(ub_shape, dtype: str):
    """Bytes of a storage token (TVM ``StorageToken``): ``int64(elem * prod(const dims)) *
    (d_i * d_j * ...)`` over the non-constant dims in order, with TVM's constant folding.

    Returns ``(bytes_expr, const_bytes)``; ``const_bytes`` is the int value when the size is
    constant, else -1. The constant ``elem * prod(const dims)`` is the fold kernel's
    (:func:`memcore_py.ir._const_fold.product_fold`, as the native sizer computes it).

    Raises
    ------
    OverflowError
        That constant exceeds int64 (:func:`tensor_size_problem` reports it first).
    """
    consts = []
    sym = None
    for d in ub_shape:
        if type(d) is IntImm:
            consts.append(d.value)
        else:
            sym = d if sym is None else fold_mul(sym, d)
    coeff = load_compiled("memcore_py.ir._const_fold").product_fold_plan(dtype_bytes(dtype), consts)[0]
    if sym is None:
        return IntImm(coeff), coeff
    out = fold_mul(IntImm(coeff), sym)
    if type(out) is IntImm:  # 0 * n
        return out, out.value
    return out, -1


def dynamic_output_bytes(ub_shape, dtype: str) -> PrimExpr:
    """Storage size of a "Case 2" allocation (``relax.memory_plan_dynamic_func_output``):
    ``ub[0] * ub[1] * ... * elem`` folded left to right (``20 * m * 4``)."""
    out = ub_shape[0]
    for d in ub_shape[1:]:
        out = fold_mul(out, d)
    return fold_mul(out, IntImm(dtype_bytes(dtype)))


# --------------------------------------------------------------------------------------
# Equality of symbolic sizes (TVM CanProveEqual, emulated)
# --------------------------------------------------------------------------------------
def _identity_key(e):
    """The key of a node :func:`_struct_key` does not read: the node itself, by identity."""
    return ("?", id(e))


def _struct_key(e, unknown=_identity_key):
    """The structure of ``e``: literals by value, variables by name, binary nodes by class
    and operands; any other node is ``unknown(node)`` (None there makes the whole None)."""
    t = type(e)
    if t is IntImm:
        return e.value
    if t is PrimVar:
        return e.name
    if isinstance(e, BinaryOp):
        a = _struct_key(e.a, unknown)
        b = _struct_key(e.b, unknown) if a is not None else None
        return None if b is None else (t.__name__, a, b)
    return unknown(e)


def _factor_key(e):
    """Key of one non-constant factor of a product."""
    if type(e) is Mul:
        # A product in operand position: TVM does not reorder inside it.
        return ("prod", _struct_key(e))
    try:
        return ("poly", canonical(e))
    except Exception:  # noqa: BLE001
        return ("struct", _struct_key(e))


def _split_product(e, coeff, factors, spine):
    """Flatten ``e`` into constant coefficient and factors (left spine of Mul)."""
    if type(e) is Mul:
        ca, cb = _c(e.a), _c(e.b)
        if ca is not None:
            return _split_product(e.b, coeff * ca, factors, spine)
        if cb is not None:
            return _split_product(e.a, coeff * cb, factors, spine)
        if spine:
            coeff = _split_product(e.a, coeff, factors, True)
            return _split_product(e.b, coeff, factors, False)
        # operand position: pull nothing out of a non-constant product
        factors.append(e)
        return coeff
    factors.append(e)
    return coeff


def size_struct_key(size: PrimExpr):
    """A hashable key of the structure of ``size`` (variables by name, literals by value,
    binary nodes by class): sizes of equal keys have equal :func:`size_class_key`, which reads
    nothing else of them. None when ``size`` holds a node that is none of those."""
    return _struct_key(size, _no_key)


def _no_key(_e):
    return None


def size_class_key(size: PrimExpr):
    """A hashable key such that two symbolic sizes get equal keys exactly when TVM's
    ``CanProveEqual`` proves them equal (for the sizes StaticPlanBlockMemory builds).

    TVM's simplifier is complete for linear sizes (one symbolic dim: ``8 * n`` equals
    ``4 * (2 * n)``, ``4 * (n + 1)`` equals ``4 * n + 4``) but treats products of symbolic
    dims as ordered factor lists in which only the first two factors commute
    (``4 * (m * n)`` equals ``4 * (n * m)``; ``n * m * k`` does not equal ``k * m * n``).
    The key follows that: constant coefficient, first two factors sorted, the rest in
    order; a product in operand position is an ordered atom. Measured on TVM 0.27.0.post1;
    see DIFFERENCES.md for the limits of this emulation.
    """
    factors = []
    coeff = _split_product(size, 1, factors, True)
    if len(factors) <= 1:
        return ("lin", canonical(size))
    keys = [_factor_key(f) for f in factors]
    first = tuple(sorted(keys[:2], key=repr))
    return ("prod", coeff, first, tuple(keys[2:]))


# --------------------------------------------------------------------------------------
# Symbolic byte totals (reports): a sum of sizes as a polynomial, printed and evaluated
# --------------------------------------------------------------------------------------
class SizePolynomial:
    """A sum of byte sizes in canonical polynomial form (:func:`memcore_py.ir.prim.canonical`):
    what a report prints for a symbolic total (``3072*n + 1536``) and evaluates at given
    shape-variable values.

    Parameters
    ----------
    exprs : iterable of PrimExpr or int
        The sizes to add up.
    """

    __slots__ = ("terms",)

    def __init__(self, exprs=()):
        terms: dict = {}
        for e in exprs:
            for mono, c in canonical(e):
                v = terms.get(mono, 0) + c
                if v:
                    terms[mono] = v
                else:
                    terms.pop(mono, None)
        self.terms = terms

    @classmethod
    def _of(cls, terms):
        out = cls()
        out.terms = terms
        return out

    @property
    def value(self) -> int | None:
        """The int value when the polynomial is constant, else None."""
        if not self.terms:
            return 0
        if len(self.terms) == 1 and () in self.terms:
            return self.terms[()]
        return None

    def variables(self) -> set:
        """Names of the shape variables it depends on."""
        out: set = set()
        for mono in self.terms:
            for f in mono:
                _factor_vars(f, out)
        return out

    def bind(self, values: dict) -> "SizePolynomial":
        """The polynomial with the variables named in ``values`` (name -> int) replaced by
        their values; the others stay symbolic."""
        terms: dict = {}
        for mono, c in self.terms.items():
            for rest, k in _bind_monomial(mono, values):
                v = terms.get(rest, 0) + c * k
                if v:
                    terms[rest] = v
                else:
                    terms.pop(rest, None)
        return SizePolynomial._of(terms)

    def __str__(self):
        return _poly_text(self.terms)

    def __repr__(self):
        return f"SizePolynomial({str(self)!r})"


def _factor_vars(f, out):
    if f[0] == "v":
        out.add(f[1])
        return
    for side in f[1:]:
        for mono, _coeff in side:
            for g in mono:
                _factor_vars(g, out)


def _bind_factor(f, values):
    """``(int, None)`` when factor ``f`` evaluates under ``values``, else ``(None, f')``."""
    if f[0] == "v":
        v = values.get(f[1])
        return (v, None) if v is not None else (None, f)
    kind = f[0]
    sides = [SizePolynomial._of(dict(side)).bind(values) for side in f[1:]]
    vals = [side.value for side in sides]
    if all(v is not None for v in vals):
        r = eval_atom(kind, vals)
        if r is not None:
            return r, None
    return None, (kind, *[tuple(sorted(side.terms.items())) for side in sides])


def _bind_monomial(mono, values):
    """``[(remaining monomial, coefficient)]`` of one monomial under ``values``."""
    coeff = 1
    rest = []
    for f in mono:
        v, g = _bind_factor(f, values)
        if g is None:
            coeff *= v
        else:
            rest.append(g)
    return [(tuple(sorted(rest)), coeff)] if coeff else []


def _factor_text(f) -> str:
    if f[0] == "v":
        return f[1]
    return f"{f[0]}(" + ", ".join(_poly_text(dict(side)) for side in f[1:]) + ")"


def _poly_text(terms: dict) -> str:
    if not terms:
        return "0"
    # highest degree first, the constant last
    items = sorted(terms.items(), key=lambda kv: (-len(kv[0]), [_factor_text(f) for f in kv[0]]))
    out = []
    for mono, c in items:
        body = "*".join(_factor_text(f) for f in mono)
        mag = abs(c)
        text = str(mag) if not body else (body if mag == 1 else f"{mag}*{body}")
        if not out:
            out.append(text if c > 0 else f"-{text}")
        else:
            out.append(f"+ {text}" if c > 0 else f"- {text}")
    return " ".join(out)
