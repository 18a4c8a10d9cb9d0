"""Helpers shared by the ATen converter modules (:mod:`._aten_math`, :mod:`._aten_nn`,
:mod:`._aten_index`, :mod:`._aten_shape`, :mod:`._aten_scalar`).

Design
------
Small pieces of TVM 0.27's importer behaviour that several converters need: reading an
argument by position or keyword, a dimension as a Python int when it is static, ``tirx``
arithmetic on symbolic sizes as TVM's Python operators build it (constants folded, unit
factors and zero terms dropped), TVM's identity-shape test, and dtype names. Each converter
module keeps its own table, filled with :func:`registrar`; :mod:`._aten_ops` merges them.
"""
from __future__ import annotations

from ..ir.prim import Add, IntImm, Mul
from ._aten_context import torch_dtype_name

__all__ = ["registrar", "static_dim", "mul_folded", "add_folded", "arg", "relax_dtype", "same_dims"]


def registrar(table: dict):
    """A decorator factory ``register(*names)`` adding the decorated converter to ``table``
    under every name (a name registered twice is a programming error)."""
    def register(*names):
        def deco(fn):
            for n in names:
                if n in table:
                    raise KeyError(f"converter {n!r} registered twice")
                table[n] = fn
            return fn
        return deco
    return register


def static_dim(d):
    """``d`` as a Python int when it is a constant dim, else None."""
    if isinstance(d, bool):
        return None
    if isinstance(d, int):
        return d
    if type(d) is IntImm:
        return d.value
    return None


def _operands(a, b):
    """``a`` and ``b`` as PrimExprs, a Python int taking the other operand's dtype (as TVM's
    operators convert it)."""
    if type(a) is int:
        a = IntImm(a, b.dtype)
    if type(b) is int:
        b = IntImm(b, a.dtype)
    return a, b


def mul_folded(a, b):
    """``a * b`` as TVM's ``tirx`` multiplication builds it: constants folded, a factor 1
    dropped, else a ``Mul`` node (two Python ints: their Python product)."""
    if type(a) is int and type(b) is int:
        return a * b
    sa, sb = static_dim(a), static_dim(b)
    if sa is not None and sb is not None:
        return IntImm(sa * sb)
    if sa == 1:
        return b
    if sb == 1:
        return a
    return Mul(*_operands(a, b))


def add_folded(a, b):
    """``a + b`` as TVM's ``tirx`` addition builds it: constants folded, a term 0 dropped
    (two Python ints: their Python sum)."""
    if type(a) is int and type(b) is int:
        return a + b
    sa, sb = static_dim(a), static_dim(b)
    if sa is not None and sb is not None:
        return IntImm(sa + sb)
    if sa == 0:
        return b
    if sb == 0:
        return a
    return Add(*_operands(a, b))


def arg(node, i, key, default):
    """Positional argument ``i`` of ``node``, else keyword ``key``, else ``default``."""
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(key, default)


def relax_dtype(ctx, torch_dtype):
    """The Relax dtype of a torch dtype, errors naming the node being converted."""
    return torch_dtype_name(torch_dtype, f"node {ctx.node.name!r}" if ctx.node is not None else "")


def same_dims(shape, dims) -> bool:
    """TVM's identity-reshape test ``list(shape) == list(dims)`` (ints against IntImms by
    value, symbolic dims by identity)."""
    if len(shape) != len(dims):
        return False
    for s, d in zip(shape, dims):
        sv = s.value if type(s) is IntImm else static_dim(s)
        dv = d if type(d) is int else static_dim(d)
        if sv is not None or dv is not None:
            if sv != dv:
                return False
        elif s is not d:
            return False
    return True
