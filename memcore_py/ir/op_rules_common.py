"""Helpers shared by the type rules of :mod:`memcore_py.ir.ops` and its ``op_rules_*``
sibling modules: argument checks, attribute reading, axis normalisation, constant folding of
dims and numpy broadcasting over possibly symbolic dims. No op is registered here."""
from __future__ import annotations

from ..errors import IRError
from .expr import Expr, PrimValue, ShapeExpr
from .prim import (
    INT64_MAX, INT64_MIN, Add, BinaryOp, FloorDiv, IntImm, Mul, Sub, prim_equal, prove_equal, simplify_const,
)
from .types import ShapeType, TensorType, Type

__all__ = [
    "tensor_arg", "int_attr", "int_list", "norm_axis", "static", "broadcast", "fmt_shape", "shape_values",
    "product", "dim_add", "dim_sub", "dim_mul", "dim_floordiv", "dim_ceildiv", "simplify_dim",
]


def _tensor(t, opname, i=0) -> TensorType:
    if not isinstance(t, TensorType):
        raise IRError(f"{opname} expects a tensor as argument {i}; got {t!r}")
    return t


def _int_attr(call, key, default=None):
    v = call.attrs.get(key, default)
    if isinstance(v, IntImm):
        return v.value
    if isinstance(v, PrimValue):
        return _int_attr_value(v.value)
    return v


def _int_attr_value(v):
    return v.value if isinstance(v, IntImm) else v


def _int_list(v):
    if v is None:
        return None
    if isinstance(v, (int, IntImm)):
        return [_int_attr_value(v)]
    return [_int_attr_value(x) for x in v]


def _norm_axis(axis, ndim, opname):
    if not -ndim <= axis < max(ndim, 1):
        raise IRError(f"{opname}: axis {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def _dims_equal(a, b) -> bool:
    return prove_equal(a, b)


def _static(d):
    """The int value of the dim ``d`` if it is constant, else None (:func:`simplify_const`,
    its literal case read here: most dims are literals)."""
    return d.value if type(d) is IntImm else simplify_const(d)


def _broadcast(opname, a: TensorType, b: TensorType):
    if a.ndim == -1 or b.ndim == -1:
        return None, -1
    if a.shape is None or b.shape is None:
        return None, max(a.ndim, b.ndim)
    out = []
    sa, sb = a.shape, b.shape
    na, nb = len(sa), len(sb)
    for i in range(1, max(na, nb) + 1):  # from the last dim
        if i > na:
            out.append(sb[-i])
            continue
        x = sa[-i]
        if i > nb:
            out.append(x)
            continue
        y = sb[-i]
        if x is y:  # every case below keeps it
            out.append(x)
            continue
        sx, sy = _static(x), _static(y)
        if sx == 1:
            out.append(y)
        elif sy == 1:
            out.append(x)
        elif sx is not None and sy is not None:
            if sx != sy:
                raise IRError(
                    f"{opname}: shapes {_fmt_shape(a.shape)} and {_fmt_shape(b.shape)} cannot be broadcast "
                    f"(dim {sx} vs {sy})"
                )
            out.append(x)
        elif _dims_equal(x, y):
            out.append(x)
        else:
            return None, max(a.ndim, b.ndim)  # not provable: rank only (as TVM)
    return tuple(reversed(out)), len(out)


def _fmt_shape(shape):
    return "(" + ", ".join(repr(_static(d)) if _static(d) is not None else repr(d) for d in shape) + ")"


def _shape_values(e: Expr, t: Type, opname: str):
    if isinstance(e, ShapeExpr):
        return e.values
    if isinstance(t, ShapeType) and t.values is not None:
        return t.values
    if isinstance(t, ShapeType):
        return None
    raise IRError(f"{opname} expects a shape (R.shape([...]) or a Shape value); got {t!r}")


def _product_parts(dims):
    """``(constant, symbolic dims)`` of a product of ``dims``: the product of the dims that are
    constant (:func:`_static`), and the others in order."""
    const = 1
    syms = []
    for d in dims:
        s = _static(d)
        if s is not None:
            const *= s
        else:
            syms.append(d)
    return const, syms


def _product(dims):
    const, syms = _product_parts(dims)
    if not syms:
        return IntImm(const)
    sym = syms[0]
    for d in syms[1:]:
        sym = Mul(sym, d)
    return sym if const == 1 else Mul(sym, IntImm(const))


def _static_product(dims):
    """``_static(_product(dims))`` without building the product: the constant element count
    of ``dims``, or None.

    The canonical forms are polynomials with integer coefficients over the atoms, where a
    product of non-constant polynomials is never constant (degrees add), so the product is
    constant exactly when every dim is, or when a constant dim is 0 (then it is 0). A
    constant part outside int64 raises the :class:`IRError` of the ``IntImm`` that
    :func:`_product` would make of it."""
    const, syms = _product_parts(dims)
    if not INT64_MIN <= const <= INT64_MAX:
        IntImm(const)  # raises
    return None if syms and const != 0 else const


def dim_add(a, b):
    """``a + b`` over dims, folded when both are constant (``x + 0`` is ``x``)."""
    sa, sb = _static(a), _static(b)
    if sa is not None and sb is not None:
        return IntImm(sa + sb)
    if sb == 0:
        return a
    if sa == 0:
        return b
    return Add(a, b)


def dim_sub(a, b):
    """``a - b`` over dims, folded when both are constant."""
    sa, sb = _static(a), _static(b)
    if sa is not None and sb is not None:
        return IntImm(sa - sb)
    if sb == 0:
        return a
    return Sub(a, b)


def dim_mul(a, b):
    """``a * b`` over dims, folded when both are constant (``x * 1`` is ``x``)."""
    sa, sb = _static(a), _static(b)
    if sa is not None and sb is not None:
        return IntImm(sa * sb)
    if sb == 1:
        return a
    if sa == 1:
        return b
    return Mul(a, b)


def dim_floordiv(a, b):
    """``a // b`` over dims, folded when both are constant (``x // 1`` is ``x``)."""
    sa, sb = _static(a), _static(b)
    if sa is not None and sb is not None:
        if sb == 0:
            raise IRError("division by zero in a shape")
        return IntImm(sa // sb)
    if sb == 1:
        return a
    return FloorDiv(a, b)


def dim_ceildiv(a, b):
    """``ceil(a / b)`` over dims: ``(a + b - 1) // b``, folded when constant."""
    sa, sb = _static(a), _static(b)
    if sa is not None and sb is not None:
        return IntImm(-(-sa // sb))
    if sb == 1:
        return a
    return FloorDiv(dim_add(a, dim_sub(b, IntImm(1))), b)


def _linear_terms(e, coef, terms):
    """Add ``coef * e`` to ``terms`` (a list of [term, coefficient]; the key ``None`` holds
    the constant), looking through ``+``, ``-`` and multiplication by a constant."""
    t = type(e)
    if t is IntImm:
        terms[0][1] += coef * e.value
    elif t is Add:
        _linear_terms(e.a, coef, terms)
        _linear_terms(e.b, coef, terms)
    elif t is Sub:
        _linear_terms(e.a, coef, terms)
        _linear_terms(e.b, -coef, terms)
    elif t is Mul and type(e.b) is IntImm:
        _linear_terms(e.a, coef * e.b.value, terms)
    elif t is Mul and type(e.a) is IntImm:
        _linear_terms(e.b, coef * e.a.value, terms)
    else:
        if isinstance(e, BinaryOp):
            e = type(e)(simplify_dim(e.a), simplify_dim(e.b))
            if type(e) is FloorDiv and _static(e.b) == 1:
                _linear_terms(e.a, coef, terms)
                return
        for item in terms[1:]:
            if prim_equal(item[0], e):
                item[1] += coef
                return
        terms.append([e, coef])


def simplify_dim(e):
    """A symbolic dim written as TVM's simplifier writes the common cases: a constant folds to
    an ``IntImm``; a sum of terms collects equal terms and constants (``h + 2 - 3 + 1`` is
    ``h``, ``n + n`` is ``n * 2``), terms in first-occurrence order, the constant last
    (``h - 1``); operands of ``//``, ``min`` ... are simplified in place."""
    if type(e) is IntImm or not isinstance(e, BinaryOp):
        return e
    c = _static(e)
    if c is not None:
        return IntImm(c)
    terms = [[None, 0]]
    _linear_terms(e, 1, terms)
    out = None
    for term, coef in terms[1:]:
        if coef == 0:
            continue
        piece = term if abs(coef) == 1 else Mul(term, IntImm(abs(coef)))
        if out is None:
            out = piece if coef > 0 else Mul(term, IntImm(coef))
        else:
            out = Add(out, piece) if coef > 0 else Sub(out, piece)
    const = terms[0][1]
    if out is None:
        return IntImm(const)
    if const > 0:
        out = Add(out, IntImm(const))
    elif const < 0:
        out = Sub(out, IntImm(-const))
    return out


tensor_arg = _tensor
int_attr = _int_attr
int_list = _int_list
norm_axis = _norm_axis
static = _static
broadcast = _broadcast
fmt_shape = _fmt_shape
shape_values = _shape_values
product = _product
