"""Attribute values between TVM and memcore: call attributes, function and module attrs.

memcore keeps attributes as the plain Python values its TVMScript parser reads from TVM's
printed text (``memcore_py.ir.text.parse_values``'s ``_attr_value``): ``axis=[1]`` is ``(1,)``,
``indices_or_sections=2`` is ``2``, ``out_dtype="float32"`` is ``"float32"``, a dict is a
dict. This module maps TVM attribute values to that form and back, with no per-op table:

- :func:`from_tvm_value`: ``int``/``bool``/``float``/``str`` as they are (an int beyond
  int64, TVM's ``ffi.BigInt``, which TVM's text spells as metadata, is refused); an int64
  ``IntImm`` is its int (TVM prints it bare), another dtype's ``IntImm`` / ``FloatImm`` a
  memcore :class:`~memcore_py.ir.prim.IntImm` / float; a dtype its name; ``Array`` a tuple;
  ``Map`` a dict; ``None`` None. An IR node (a type, a Relax expression, a symbolic
  expression: what TVM's parser keeps of ``foo=R.Tensor((n, 3), "float32")``, ``foo=x``,
  ``foo=n + 1``, and memcore's parser reads as the same nodes) goes to the caller's ``node``
  hook, which reads it in its function's context (variables and symbolic dims by name).
  Anything else, or a node without a hook, is a
  :class:`~memcore_py.tvm._api.TVMConversionError` naming it and where it was found.
- :func:`to_tvm_value`: the inverse, giving the Python values TVM's own script parser would
  evaluate from the same text (tuples as lists), so that TVM's op constructors and
  ``DictAttrs`` normalise them exactly as when TVM parses text; memcore IR nodes go to the
  writer's ``node`` hook.

Call attributes are converted through the op table's schema
(:attr:`memcore_py.ir.op.Op.attr_names`): :func:`call_attrs_from_tvm` reads exactly those
fields of the TVM attrs object and refuses any field the schema does not name, and
:func:`call_attrs_to_tvm` rebuilds the attrs object with TVM's own constructor of the op
(``R.<op>(..., **attrs)``), which is what TVM's parser calls for the same text.
"""
from __future__ import annotations

from ..ir.expr import Expr
from ..ir.prim import FloatImm, IntImm, PrimExpr
from ..ir.types import Type
from ._api import TVMConversionError, tvm_api

__all__ = [
    "from_tvm_value",
    "to_tvm_value",
    "dict_attrs_from_tvm",
    "call_attrs_from_tvm",
    "call_attrs_to_tvm",
]


_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def from_tvm_value(v, where: str, node=None):
    """The memcore form of the TVM attribute value ``v`` (module docstring); ``node(v, where)``
    reads a value that is an IR node."""
    t = type(v)
    if t is int:
        if _INT64_MIN <= v <= _INT64_MAX:
            return v
        raise TVMConversionError(
            f"integer {v} of {where} is beyond int64: TVM holds it as an ffi.BigInt, which its text spells "
            "as metadata (metadata[\"ffi.BigInt\"][i]), and memcore does not model it")
    if t is bool or t is float or t is str or v is None:
        return v
    api = tvm_api()
    if t is api.IntImm:
        dtype = str(v.ty.dtype)
        return int(v.value) if dtype == "int64" else IntImm(int(v.value), dtype)
    if t is api.FloatImm:
        return FloatImm(float(v.value), str(v.ty.dtype))
    if isinstance(v, str):  # tvm_ffi String
        return str(v)
    if isinstance(v, api.Array):
        return tuple(from_tvm_value(x, where, node) for x in v)
    if isinstance(v, api.Map):
        return {str(k): from_tvm_value(v[k], where, node) for k in v}
    if type(v).__name__ == "dtype":  # tvm_ffi.dtype
        return str(v)
    if node is not None and isinstance(v, (api.Type, api.ir.expr.Expr)):
        return node(v, where)
    raise TVMConversionError(f"{_type_key(v)} value {v!r} of {where} is not an attribute value memcore models")


def to_tvm_value(v, where: str, node=None):
    """The Python value TVM's script parser would evaluate for memcore's value ``v``;
    ``node(v)`` writes a value that is an IR node (a type, a Relax or symbolic expression)."""
    t = type(v)
    if t is int or t is bool or t is float or t is str or v is None:
        return v
    if t is tuple or t is list:
        return [to_tvm_value(x, where, node) for x in v]
    if t is dict:
        return {k: to_tvm_value(x, where, node) for k, x in v.items()}
    if t is IntImm:
        return tvm_api().IntImm(v.dtype, v.value)
    if t is FloatImm:
        return tvm_api().FloatImm(v.dtype, v.value)
    if node is not None and isinstance(v, (PrimExpr, Type, Expr)):
        return node(v)
    if isinstance(v, PrimExpr):
        raise TVMConversionError(f"symbolic attribute value {v!r} of {where} cannot be converted to TVM")
    raise TVMConversionError(f"{type(v).__name__} value {v!r} of {where} cannot be converted to TVM")


def dict_attrs_from_tvm(attrs, where: str, node=None) -> dict:
    """A TVM ``DictAttrs`` (or None) as a dict of memcore values (``node``: see
    :func:`from_tvm_value`)."""
    if attrs is None:
        return {}
    return {str(k): from_tvm_value(x, f"attribute {str(k)!r} of {where}", node) for k, x in attrs.items()}


def _type_key(v) -> str:
    info = getattr(type(v), "__tvm_ffi_type_info__", None)
    return info.type_key if info is not None else type(v).__name__


_FIELDS: dict = {}


def _attr_fields(attrs) -> tuple:
    cls = type(attrs)
    names = _FIELDS.get(cls)
    if names is None:
        out = []
        info = getattr(cls, "__tvm_ffi_type_info__", None)
        while info is not None:
            out = [f.name for f in info.fields] + out
            info = info.parent_type_info
        names = _FIELDS[cls] = tuple(n for n in out if n != "span")
    return names


def call_attrs_from_tvm(op, attrs, where: str, node=None) -> dict:
    """The attributes of a call to the memcore op ``op`` from TVM's attrs object ``attrs``
    (``node``: see :func:`from_tvm_value`).

    Reads the fields named by ``op.attr_names`` (in that order); a field of ``attrs`` that
    the schema does not name is a :class:`TVMConversionError` (it would be dropped).
    """
    if attrs is None:
        return {}
    names = op.attr_names
    fields = _attr_fields(attrs)
    if fields == ("__dict__",):  # DictAttrs: free-form attributes, still checked against the schema
        out = dict_attrs_from_tvm(attrs, where, node)
        fields = tuple(out)
    else:
        out = None
    extra = [f for f in fields if f not in names]
    if extra:
        raise TVMConversionError(
            f"attribute {extra[0]!r} of {_type_key(attrs)} on {where} is not in memcore's schema of "
            f"{op.name} (attr_names {names!r})"
        )
    if out is not None:
        return out
    return {k: from_tvm_value(getattr(attrs, k), f"attribute {k!r} of {where}", node) for k in fields}


def _script_op(name: str):
    obj = tvm_api().script_ops
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


_EMPTY: dict = {}


def call_attrs_to_tvm(op, tvm_op, attrs: dict, args: list, where: str, node=None):
    """TVM's attrs object for a call of ``op`` with memcore ``attrs``: built by TVM's own
    constructor of the op (``R.<name>(*args, **attrs)``), as TVM's parser builds it
    (``node``: see :func:`to_tvm_value`)."""
    if not attrs:
        return None
    key = tvm_op.attrs_type_key
    kwargs = {k: to_tvm_value(v, f"attribute {k!r} of {where}", node) for k, v in attrs.items()}
    make = _script_op(op.name)
    if make is not None:
        try:
            got = getattr(make(*args, **kwargs), "attrs", None)
        except Exception:  # noqa: BLE001 - needs more than the call's args (e.g. out_ty): build the node
            got = None
        if got is not None:
            return got
    if not key:
        raise TVMConversionError(f"{op.name} takes no attributes in TVM; got {attrs!r} on {where}")
    try:
        return tvm_api().ir.make_node(str(key), **kwargs)
    except Exception as exc:  # noqa: BLE001 - TVM refused the attribute values
        raise TVMConversionError(f"TVM refused attributes {attrs!r} of {op.name} on {where}: {exc}") from exc
