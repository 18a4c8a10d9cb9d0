"""Argument and attribute schemas of operators: what a call of an op is made of, and how each
attribute value is represented, checked and printed.

Design
------
An op registered with a schema (every high-level Relax op, see :mod:`memcore_py.ir.ops`)
declares

- its positional Relax arguments, :class:`Arg` (name, kind, default): ``"expr"`` (any Relax
  expression), ``"shape"`` (a ``ShapeExpr``; a written list/tuple of dims becomes one),
  ``"tuple"`` (a Relax ``Tuple``; a written list/tuple becomes one), ``"prim"`` (a
  ``PrimValue``; a written number or symbolic expression becomes one). A default is
  :data:`REQUIRED`, :data:`ABSENT` (an optional trailing argument that is simply left out, as
  ``strided_slice``'s ``strides``) or a Python value converted like a written one;
- its attributes, :class:`Attr` (name, kind, default), in the order TVM 0.27 prints them (the
  field order of the op's ``Attrs`` node); ``Op.attr_names`` is that order;
- its keyword/positional order as the TVMScript wrapper takes them (``signature``; TVM's
  Python signature, which may interleave optional arguments and attributes, e.g.
  ``R.nn.pad(data, pad_width, pad_mode, pad_value)``).

Attribute values (the representation the parser produces and the printer, the type rules and
the TVM bridge read; ``Call.attrs`` maps name -> value):

==============  ================================================  ==========================
kind            value                                             TVM field / printed as
==============  ================================================  ==========================
``int``         Python ``int``                                    ``int`` / ``3``
``int?``        ``int`` or None                                   ``Optional<Integer>``
``ints``        tuple of ``int``                                  ``Array<Integer>`` / ``[1, 1]``
``ints?``       tuple of ``int`` or None                          ``Optional<Array<Integer>>``
``float``       Python ``float``                                  ``double`` / ``1.0000000000000001e-05``
``bool``        Python ``bool``                                   ``bool`` / ``True``
``str``         ``str``                                           ``String`` / ``"NCHW"``
``str?``        ``str`` or None                                   ``Optional<String>``
``dtype``       ``str`` (``"float32"``)                           ``DataType`` / ``"float32"``
``dtype?``      ``str`` or None (None: TVM's void / unset dtype)  ``DataType`` / ``None``
``fimm?``       float32 :class:`FloatImm` or None                 ``Optional<FloatImm>`` / ``T.float32(0.5)``
``fimms``       tuple of float32 :class:`FloatImm`                ``Array<FloatImm>``
``int|ints``    ``int`` or tuple of ``int``                       ``split``'s indices_or_sections
==============  ================================================  ==========================

Written values are converted as TVM's Python wrappers convert them: an ``int`` where a list
is expected becomes ``(v,)`` or, where the attribute has an ``expand`` rule (conv and pool
``strides``, ``padding`` ...), the list TVM builds (``padding=1`` -> ``(1, 1, 1, 1)`` for a 2-D
op; a 2-D padding of 2 values -> 4). An ``int`` is accepted for a float; a bool is never an
int. Defaults may be *derived* from the other values (``out_layout`` defaults to
``data_layout``): such a default is a callable ``f(attrs, args) -> value``.

Every problem is an :class:`~memcore_py.errors.IRError` naming the op and the attribute; the
parser turns it into a ParseError at the binding.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from ..errors import IRError
from .prim import FloatImm, IntImm

__all__ = [
    "Arg", "Attr", "Schema", "REQUIRED", "ABSENT", "ATTR_KINDS", "ARG_KINDS",
    "convert_attr", "complete_attrs", "format_float_attr",
]


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


#: Default of an argument or attribute that must be given.
REQUIRED = _Marker("REQUIRED")
#: Default of an optional trailing argument that is left out of the call when not given.
ABSENT = _Marker("ABSENT")

ATTR_KINDS = frozenset({"int", "int?", "ints", "ints?", "float", "bool", "str", "str?", "dtype", "dtype?",
                        "fimm?", "fimms", "int|ints"})
ARG_KINDS = frozenset({"expr", "shape", "tuple", "prim"})


class Arg(NamedTuple):
    """A positional Relax argument: ``name``, ``kind`` (:data:`ARG_KINDS`), ``default``
    (:data:`REQUIRED`, :data:`ABSENT` or a value written as in TVMScript, e.g. ``0``)."""

    name: str
    kind: str = "expr"
    default: object = REQUIRED


class Attr(NamedTuple):
    """An attribute: ``name``, ``kind`` (:data:`ATTR_KINDS`), ``default`` (a value of the kind,
    :data:`REQUIRED`, or a callable ``f(attrs, args)`` deriving it from the other values),
    ``expand`` (None, or ``("repeat", n)`` / ``("pad", n)``: how TVM's wrapper widens a
    single int or short list to the n-D form)."""

    name: str
    kind: str
    default: object = REQUIRED
    expand: tuple | None = None


class Schema(NamedTuple):
    """The arguments, attributes and wrapper signature of an op; ``prepare`` is an optional
    ``f(bound: dict) -> None`` that rewrites the written values by name before conversion
    (``R.arange(5)`` means ``arange(0, 5, 1)``)."""

    args: tuple
    attrs: tuple
    signature: tuple
    prepare: object = None


def make_schema(args=(), attrs=(), signature=None, prepare=None) -> Schema:
    """A checked :class:`Schema`; ``signature`` defaults to the args then the attrs."""
    args = tuple(a if isinstance(a, Arg) else Arg(*a) if isinstance(a, tuple) else Arg(a) for a in args)
    attrs = tuple(a if isinstance(a, Attr) else Attr(*a) for a in attrs)
    for a in args:
        if a.kind not in ARG_KINDS:
            raise IRError(f"argument {a.name!r}: unknown kind {a.kind!r}")
    for a in attrs:
        if a.kind not in ATTR_KINDS:
            raise IRError(f"attribute {a.name!r}: unknown kind {a.kind!r}")
    names = [a.name for a in args] + [a.name for a in attrs]
    if len(set(names)) != len(names):
        raise IRError(f"duplicate argument/attribute names in {names}")
    if signature is None:
        signature = tuple(names)
    signature = tuple(signature)
    if sorted(signature) != sorted(names):
        raise IRError(f"signature {signature} must name exactly the arguments and attributes {names}")
    return Schema(args, attrs, signature, prepare)


# ---------------------------------------------------------------------------- values
def _is_int(v) -> bool:
    return type(v) is int or (type(v) is IntImm and v.dtype != "bool")


def _int(v):
    return v.value if type(v) is IntImm else v


def _ints(op, a, v):
    if _is_int(v):
        v = (_int(v),)
    if not isinstance(v, (tuple, list)) or not all(_is_int(x) for x in v):
        raise IRError(f"{op}: attribute {a.name!r} must be a list of ints; got {v!r}")
    v = tuple(_int(x) for x in v)
    if a.expand is not None:
        how, n = a.expand
        if how == "repeat" and len(v) == 1 and n > 1:
            v = v * n
        elif how == "pad":
            if len(v) == 1:
                v = v * (2 * n)
            elif len(v) == n and n > 1:
                v = v + v
    return v


def _fimm(op, a, v):
    if type(v) is FloatImm:
        return v
    if type(v) in (int, float):
        return FloatImm(float(v), "float32")
    raise IRError(f"{op}: attribute {a.name!r} must be a float; got {v!r}")


def convert_attr(op: str, a: Attr, v):
    """The attribute value ``v`` (as the parser read it) in the representation of ``a.kind``
    (module table); :class:`IRError` naming ``op`` and the attribute if it does not fit."""
    k = a.kind
    if k.endswith("?") and v is None:
        return None
    if k in ("int", "int?"):
        if _is_int(v):
            return _int(v)
        raise IRError(f"{op}: attribute {a.name!r} must be an int; got {v!r}")
    if k in ("ints", "ints?"):
        return _ints(op, a, v)
    if k == "int|ints":
        if _is_int(v):
            return _int(v)
        return _ints(op, a, v)
    if k == "float":
        if type(v) in (int, float):
            return float(v)
        if type(v) is FloatImm:
            return v.value
        raise IRError(f"{op}: attribute {a.name!r} must be a float; got {v!r}")
    if k == "bool":
        if type(v) is bool:
            return v
        raise IRError(f"{op}: attribute {a.name!r} must be True or False; got {v!r}")
    if k in ("str", "str?"):
        if type(v) is str:
            return v
        raise IRError(f"{op}: attribute {a.name!r} must be a string; got {v!r}")
    if k in ("dtype", "dtype?"):
        if type(v) is str and v:
            return v
        raise IRError(f"{op}: attribute {a.name!r} must be a dtype string (\"float32\"); got {v!r}")
    if k == "fimm?":
        return _fimm(op, a, v)
    if k == "fimms":
        if type(v) in (int, float, FloatImm):
            v = (v,)
        if not isinstance(v, (tuple, list)):
            raise IRError(f"{op}: attribute {a.name!r} must be a list of floats; got {v!r}")
        return tuple(_fimm(op, a, x) for x in v)
    raise IRError(f"{op}: attribute {a.name!r} has unknown kind {k!r}")


def complete_attrs(op: str, schema: Schema, attrs: dict, args) -> dict:
    """``attrs`` with every attribute of ``schema`` present, in schema order: missing ones get
    their default (derived defaults computed from the others and ``args``). Names outside the
    schema and missing required attributes are :class:`IRError`."""
    names = {a.name for a in schema.attrs}
    for k in attrs:
        if k not in names:
            known = ", ".join(a.name for a in schema.attrs) or "none"
            raise IRError(f"{op} has no attribute {k!r} (its attributes: {known})")
    out = {}
    derived = []
    for a in schema.attrs:
        if a.name in attrs:
            out[a.name] = attrs[a.name]
        elif a.default is REQUIRED:
            raise IRError(f"{op} needs the attribute {a.name!r}")
        elif callable(a.default):
            out[a.name] = None
            derived.append(a)
        else:
            out[a.name] = a.default
    for a in derived:
        out[a.name] = a.default(out, args)
    return out


def format_float_attr(v: float) -> str:
    """A ``double`` attribute as TVM 0.27 prints it: 17 significant digits
    (``1.0000000000000001e-05``), always with a ``.`` or exponent; non-finite values as
    ``float("inf")``."""
    if not math.isfinite(v):
        if math.isnan(v):
            return 'float("nan")'
        return 'float("inf")' if v > 0 else 'float("-inf")'
    text = "%.17g" % v
    if "." not in text and "e" not in text and "n" not in text:
        text += ".0"
    return text
