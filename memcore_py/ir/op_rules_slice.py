"""The extent of one sliced axis of ``relax.strided_slice``, as TVM 0.27 infers it.

Design
------
TVM's rule (``InferStructInfoStridedSlice`` with ``topi::GetLength``) computes, per sliced
axis of extent ``D`` with begin ``b``, end ``e`` and a constant stride ``k``:

- ``assume_inbound=True``: ``ceildiv(e - b, k)``;
- otherwise each index is canonicalised, ``i -> min(max(i', lo), hi)`` with
  ``i' = i`` for a constant ``i >= 0`` and ``if_then_else(i < 0, i + D, i)`` else,
  ``(lo, hi) = (0, D)`` for ``k > 0`` and ``(-1, D - 1)`` for ``k < 0``; the extent is
  ``ceildiv(e' - b', k)`` (``ceildiv(b' - e', -k)`` for ``k < 0``),

then simplified by the block builder's analyzer, which knows every symbolic shape
variable is non-negative. This module reproduces that result for what importers write,
in the form TVM's simplifier prints (checked against TVM by
``tests/memcore_py/ir/test_strided_slice_extent.py``):

- a sign is known when the expression is a polynomial over the (non-negative) shape
  variables whose coefficients all have one sign (``n``, ``n + 1``, ``2``; ``-3``);
- ``min(x, D)`` is ``x`` when ``D - x`` is provably non-negative, ``D`` when ``x - D`` is,
  else ``T.min(x, D)`` (operands kept in that order, as TVM prints ``T.min(n, 64)`` and
  ``T.min(4, n)``); ``max(x, 0)`` is ``x`` for a non-negative ``x``;
- the difference ``D - min(x, D)`` is ``T.max(D - x, 0)``; ``x - 0`` is ``x``; other
  differences are ``e' - b'`` with constants folded (``T.min(n, 64) - 2``);
- ``ceildiv(L, k)`` is ``(L + k - 1) // k``.

Where TVM's simplifier would keep an ``if_then_else`` (an index whose sign is unknown, such
as ``n - 1``) or the stride is negative and an operand symbolic, :func:`slice_extent`
returns None and the rule gives the rank only.
"""
from __future__ import annotations

from .op_rules_common import dim_ceildiv, dim_sub, simplify_dim, static
from .prim import Add, FloorDiv, IntImm, Max, Min, Sub, canonical, prim_equal

__all__ = ["slice_extent", "provably_nonneg"]


def _frozen_sign(frozen) -> int:
    """1 if the canonical form is provably >= 0 (shape variables being >= 0), -1 if provably
    <= 0, 0 if unknown."""
    if not frozen:
        return 1
    signs = set()
    for mono, coeff in frozen:
        if any(atom[0] != "v" for atom in mono):
            return 0
        signs.add(1 if coeff > 0 else -1)
    return signs.pop() if len(signs) == 1 else 0


def provably_nonneg(e) -> bool:
    """Whether ``e`` is >= 0 for all non-negative values of its variables (a polynomial over
    the variables with non-negative coefficients)."""
    return _frozen_sign(canonical(e)) == 1


def _provably_le(a, b) -> bool:
    return provably_nonneg(dim_sub(b, a))


def _min(x, d):
    sx, sd = static(x), static(d)
    if sx is not None and sd is not None:
        return IntImm(min(sx, sd))
    if _provably_le(x, d):
        return x
    if _provably_le(d, x):
        return d
    return Min(x, d)


def _canonical_index(i, dim):
    """``min(max(i', 0), D)`` for a positive stride, or None if TVM's ``if_then_else`` stays."""
    si = static(i)
    if si is not None and si < 0:
        shifted = simplify_dim(dim_sub(dim, IntImm(-si))) if static(dim) is None else IntImm(static(dim) + si)
        sv = static(shifted)
        if sv is not None:
            return IntImm(min(max(sv, 0), static(dim)))
        clamped = shifted if provably_nonneg(shifted) else Max(shifted, IntImm(0))
        return _min(clamped, dim)
    if _frozen_sign(canonical(i)) != 1:
        return None
    return _min(i, dim)


def _minus(dim, x):
    """``dim - x`` as TVM writes it: ``n - 2``, ``64 - n``, ``60 - n`` for ``64 - (n + 4)``."""
    sd = static(dim)
    if sd is None:
        return simplify_dim(Sub(dim, x))
    x = simplify_dim(x)
    if type(x) in (Add, Sub) and type(x.b) is IntImm:
        c = x.b.value if type(x) is Add else -x.b.value
        return Sub(IntImm(sd - c), x.a)
    return Sub(dim, x)


def _ceildiv(length, stride: int):
    """``ceildiv(length, stride)``: ``(length + stride - 1) // stride`` with the constant
    folded into ``length``'s terms, placed before a subtracted symbolic term (TVM's
    ``(T.min(n, 64) + 1 - T.min(1, n)) // 2``)."""
    if stride == 1 or static(length) is not None:
        return dim_ceildiv(length, IntImm(stride))
    if type(length) is Sub and static(length.b) is None:
        top = Sub(simplify_dim(Add(length.a, IntImm(stride - 1))), length.b)
    else:
        top = simplify_dim(Add(length, IntImm(stride - 1)))
    return FloorDiv(top, IntImm(stride))


def _difference(end, begin, dim):
    if static(begin) == 0:
        return end
    if type(begin) is Min and prim_equal(begin.b, dim) and prim_equal(end, dim):
        return Max(_minus(dim, begin.a), IntImm(0))
    se, sb = static(end), static(begin)
    if se is not None and sb is not None:
        return IntImm(se - sb)
    return dim_sub(end, begin)


def slice_extent(dim, begin, end, stride: int, inbound: bool):
    """The extent of ``dim[begin:end:stride]`` as TVM infers it (module docstring), or None
    where TVM's result is not expressed here.

    Parameters
    ----------
    dim, begin, end : PrimExpr
        The axis extent and the slice bounds (``IntImm`` or symbolic).
    stride : int
        The constant, non-zero stride.
    inbound : bool
        The call's ``assume_inbound`` attribute.
    """
    sd, sb, se = static(dim), static(begin), static(end)
    if sd is not None and sb is not None and se is not None:
        return IntImm(len(range(sd)[slice(sb, se, stride)]))
    if inbound:
        return dim_ceildiv(simplify_dim(dim_sub(end, begin)), IntImm(stride)) if stride > 0 else None
    if stride < 0:
        return None
    b = _canonical_index(begin, dim)
    e = _canonical_index(end, dim)
    if b is None or e is None:
        return None
    return _ceildiv(_difference(e, b, dim), stride)
