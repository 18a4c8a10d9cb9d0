"""Relax value types (TVM's ``StructInfo``).

| memcore_py       | TVM 0.27 (Python)        | TVMScript            |
|------------------|--------------------------|----------------------|
| ObjectType       | ObjectStructInfo          | ``R.Object``         |
| TensorType       | TensorStructInfo          | ``R.Tensor((2, n), dtype="float32")`` |
| TupleType        | TupleStructInfo           | ``R.Tuple(a, b)``    |
| ShapeType        | ShapeStructInfo           | ``R.Shape([2, n])``  |
| PrimType         | PrimStructInfo            | ``R.Prim("int64")``  |
| FuncType         | FuncStructInfo            | ``R.Callable((a,), r)`` |

Types are immutable and may be shared between many expressions (the parser interns them).
``==`` is identity; use :func:`memcore_py.ir.structural_equal` to compare.
"""
from __future__ import annotations

import re

from .._compiled import load_compiled
from ..errors import IRError
from .prim import INT64_MAX, IntImm, PrimExpr, as_prim, prim_equal, prove_equal, substitute

__all__ = [
    "Type",
    "ObjectType",
    "TensorType",
    "tensor_type_of",
    "TupleType",
    "ShapeType",
    "PrimType",
    "FuncType",
    "DTYPE_BITS",
    "dtype_bytes",
    "check_dtype",
    "type_equal",
    "substitute_type",
    "type_contradiction",
    "is_base_of",
    "refine_annotation",
    "erase_prim_values",
    "tensor_size_problem",
    "type_size_problem",
    "VOID",
]

_set = object.__setattr__
_new_type = object.__new__

#: Bits per element of the named scalar dtypes (lanes are written ``float32x4``); besides
#: these, ``int<bits>``, ``uint<bits>`` and ``float<bits>`` for 1 <= bits <= 255 (TVM's
#: ``DataType`` grammar: ``uint1``, ``int3``, ``int128``). ``void`` (0 bits) is TVM's
#: explicitly spelled "no dtype": a distinct spelling from an absent dtype (``""``), kept so.
DTYPE_BITS = {
    "bool": 1,
    "int4": 4,
    "uint4": 4,
    "int8": 8,
    "uint8": 8,
    "int16": 16,
    "uint16": 16,
    "int32": 32,
    "uint32": 32,
    "int64": 64,
    "uint64": 64,
    "float4_e2m1fn": 4,
    "float6_e2m3fn": 6,
    "float6_e3m2fn": 6,
    "float8_e3m4": 8,
    "float8_e4m3": 8,
    "float8_e4m3b11fnuz": 8,
    "float8_e4m3fn": 8,
    "float8_e4m3fnuz": 8,
    "float8_e5m2": 8,
    "float8_e5m2fnuz": 8,
    "float8_e8m0fnu": 8,
    "float16": 16,
    "bfloat16": 16,
    "float32": 32,
    "float64": 64,
    "handle": 64,
    "void": 0,
}

#: ``<code><bits>`` dtypes outside :data:`DTYPE_BITS` (TVM's ``DataType`` bits are 8-bit)
_SIZED_DTYPE = re.compile(r"(?:u?int|float)([1-9][0-9]{0,2})")
#: the widest vector TVM's ``DataType`` holds (16-bit lanes)
_MAX_LANES = 65535


def _bits_lanes(dtype: str):
    """``(bits, lanes)`` of a dtype TVM's ``DataType`` grammar reads, else None."""
    bits = DTYPE_BITS.get(dtype)
    if bits is not None:
        return bits, 1
    base, lanes = dtype, 1
    head, sep, tail = dtype.rpartition("x")
    if sep and tail.isdigit() and tail.isascii() and (head in DTYPE_BITS or _SIZED_DTYPE.fullmatch(head)):
        base, lanes = head, int(tail)
        if not 1 <= lanes <= _MAX_LANES or base == "void":
            return None
    bits = DTYPE_BITS.get(base)
    if bits is None:
        m = _SIZED_DTYPE.fullmatch(base)
        if m is None or int(m.group(1)) > 255:
            return None
        bits = int(m.group(1))
    return bits, lanes


def check_dtype(dtype: str) -> str:
    """Return ``dtype`` if TVM's ``DataType`` grammar reads it, else raise :class:`IRError`:
    a name of :data:`DTYPE_BITS` or ``int|uint|float<bits>`` (1 <= bits <= 255), optionally
    with ``x<lanes>`` (1 <= lanes <= 65535; not for ``void``)."""
    if type(dtype) is str and dtype in DTYPE_BITS:  # a named scalar dtype: the grammar's first case
        return dtype
    if type(dtype) is not str or _bits_lanes(dtype) is None:
        raise IRError(
            f"dtype must be one of {sorted(DTYPE_BITS)} or int/uint/float<bits> (1..255 bits), optionally "
            f"with xN lanes; got {dtype!r}"
        )
    return dtype


def dtype_bytes(dtype: str) -> int:
    """Storage bytes per element: ``ceil(bits * lanes / 8)`` (TVM ``StorageBytes``; bool -> 1,
    void -> 0), the rule of ``memcore_py/ir/_const_fold.pxd`` (``storage_bytes``), which the
    compiled readers of TVM's dtypes share."""
    bits, lanes = _bits_lanes(check_dtype(dtype))
    return load_compiled("memcore_py.ir._const_fold").element_storage_bytes(bits, lanes)


def tensor_size_problem(shape, dtype: str) -> str | None:
    """Why no tensor of ``shape`` and ``dtype`` can exist, or None: a negative constant dim,
    or constant dims whose byte size (times ``dtype``'s bytes, 1 if unknown) exceeds int64,
    the size type of every planner and runtime. Symbolic dims are not judged."""
    if shape is None:
        return None
    n = dtype_bytes(dtype) if dtype else 1
    for k, d in enumerate(shape):
        if type(d) is IntImm:
            if d.value < 0:
                return f"dim {k} is negative ({d.value})"
            n *= d.value
    if n > INT64_MAX:
        return f"size {n} bytes does not fit in int64"
    return None


def type_size_problem(ty) -> str | None:
    """:func:`tensor_size_problem` of every tensor in ``ty`` (tuple fields included)."""
    stack = [ty]
    while stack:
        t = stack.pop()
        ct = type(t)
        if ct is TensorType:
            why = tensor_size_problem(t.shape, t.dtype)
            if why is not None:
                return f"tensor {why}"
        elif ct is TupleType:
            stack.extend(t.fields)
        elif ct is FuncType:
            if t.params:
                stack.extend(t.params)
            stack.append(t.ret)
    return None


class Type:
    """Base class of value types. Immutable; ``==`` is identity."""

    __slots__ = ()

    def __setattr__(self, key, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    __hash__ = object.__hash__


class ObjectType(Type):
    """Any runtime object (``R.Object``); storages, packed-call results."""

    __slots__ = ()

    def __repr__(self):
        return "ObjectType()"


class TensorType(Type):
    """A tensor: ``shape`` (tuple of :class:`PrimExpr`, or None if unknown), ``dtype``
    (``""`` if unknown), ``ndim`` (-1 if unknown), optional ``vdevice`` (e.g.
    ``"cuda:0"`` or ``"llvm:1"`` as written in TVMScript; None for the default)."""

    __slots__ = ("shape", "dtype", "ndim", "vdevice")

    def __init__(self, shape=None, dtype: str = "", ndim: int = -1, vdevice: str | None = None):
        if shape is not None:
            shape = tuple(shape)
            for d in shape:
                if not isinstance(d, PrimExpr):
                    shape = tuple(as_prim(d) for d in shape)
                    break
            if ndim not in (-1, len(shape)):
                raise IRError(f"TensorType ndim must match the shape; got ndim={ndim}, shape of rank {len(shape)}")
            ndim = len(shape)
        if not isinstance(ndim, int) or ndim < -1:
            raise IRError(f"TensorType ndim must be an int >= -1; got {ndim!r}")
        if dtype:
            check_dtype(dtype)
        _SET_TENSOR_SHAPE(self, shape)
        _SET_TENSOR_DTYPE(self, dtype)
        _SET_TENSOR_NDIM(self, ndim)
        _SET_TENSOR_VDEVICE(self, vdevice)

    def __repr__(self):
        return f"TensorType({self.shape!r}, {self.dtype!r})"


_SET_TENSOR_SHAPE = TensorType.shape.__set__
_SET_TENSOR_DTYPE = TensorType.dtype.__set__
_SET_TENSOR_NDIM = TensorType.ndim.__set__
_SET_TENSOR_VDEVICE = TensorType.vdevice.__set__


def tensor_type_of(shape: tuple, dtype: str, vdevice: str | None = None) -> TensorType:
    """``TensorType(shape, dtype, vdevice=vdevice)`` without its checks, for the type rules
    that build a result from parts of valid types.

    Parameters
    ----------
    shape : tuple
        A tuple of :class:`PrimExpr` (dims of existing types, ``IntImm`` literals, or
        expressions built from those), stored as it is; the rank is its length.
    dtype : str
        A dtype an existing type holds or a literal the grammar reads (``"bool"``), or ``""``.
    vdevice : str, optional
        An existing type's ``vdevice``.

    Returns
    -------
    TensorType
        Equal to what the checked constructor makes of the same values; input the caller has
        not already validated must go through :class:`TensorType` instead.
    """
    t = _new_type(TensorType)
    _SET_TENSOR_SHAPE(t, shape)
    _SET_TENSOR_DTYPE(t, dtype)
    _SET_TENSOR_NDIM(t, len(shape))
    _SET_TENSOR_VDEVICE(t, vdevice)
    return t


class TupleType(Type):
    """A tuple of values; ``fields`` is a tuple of :class:`Type`."""

    __slots__ = ("fields",)

    def __init__(self, fields=()):
        fields = tuple(fields)
        for i, f in enumerate(fields):
            if not isinstance(f, Type):
                raise IRError(f"TupleType field {i} must be a Type; got {type(f).__name__}")
        _set(self, "fields", fields)

    def __repr__(self):
        return f"TupleType({list(self.fields)!r})"


class ShapeType(Type):
    """A shape value (``R.shape([2, n])``): ``values`` (tuple of PrimExpr or None), ``ndim``."""

    __slots__ = ("values", "ndim")

    def __init__(self, values=None, ndim: int = -1):
        if values is not None:
            values = tuple(as_prim(v) for v in values)
            ndim = len(values)
        _set(self, "values", values)
        _set(self, "ndim", ndim)

    def __repr__(self):
        return f"ShapeType({self.values!r})"


class PrimType(Type):
    """A scalar value of ``dtype``; ``value`` is the known PrimExpr, if any.

    Nothing memcore reads or derives sets ``value``: TVM 0.27's ``PrimType`` has none (its
    parser refuses ``R.Prim(value=...)``, a ``PrimValue``'s type is its dtype only), so a
    value given here by a builder is kept by the type rules but not by ``to_tvm``."""

    __slots__ = ("dtype", "value")

    def __init__(self, dtype: str = "int64", value: PrimExpr | None = None):
        _set(self, "dtype", dtype)
        _set(self, "value", value)

    def __repr__(self):
        return f"PrimType({self.dtype!r})"


class FuncType(Type):
    """A function: ``params`` (tuple of Type, or None when opaque), ``ret``, ``purity``."""

    __slots__ = ("params", "ret", "purity")

    def __init__(self, params, ret: Type, purity: bool = True):
        _set(self, "params", None if params is None else tuple(params))
        _set(self, "ret", ret)
        _set(self, "purity", bool(purity))

    def __repr__(self):
        return f"FuncType({self.params!r}, {self.ret!r})"


#: The type of a call that returns nothing (``R.Tuple()``): kill ops, direct DPS calls to PrimFuncs.
VOID = TupleType(())


def _dims_equal(a, b) -> bool:
    if a is b:
        return True
    if a is None or b is None or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if not prim_equal(x, y):
            return False
    return True


def type_equal(a, b) -> bool:
    """Structural equality of two types (TVM ``StructuralEqual`` on struct info, within one
    function: symbolic variables are compared by name)."""
    if a is b:
        return True
    if a is None or b is None:
        return False
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is TensorType:
        return (a.dtype == b.dtype and a.ndim == b.ndim and a.vdevice == b.vdevice
                and _dims_equal(a.shape, b.shape))
    if ta is TupleType:
        fa, fb = a.fields, b.fields
        return len(fa) == len(fb) and all(type_equal(x, y) for x, y in zip(fa, fb))
    if ta is ObjectType:
        return True
    if ta is ShapeType:
        return a.ndim == b.ndim and _dims_equal(a.values, b.values)
    if ta is PrimType:
        if a.dtype != b.dtype:
            return False
        if a.value is None or b.value is None:
            return a.value is None and b.value is None
        return prim_equal(a.value, b.value)
    if ta is FuncType:
        if a.purity != b.purity or not type_equal(a.ret, b.ret):
            return False
        if a.params is None or b.params is None:
            return a.params is None and b.params is None
        return len(a.params) == len(b.params) and all(type_equal(x, y) for x, y in zip(a.params, b.params))
    return False


def substitute_type(ty, env: dict):
    """``ty`` with the symbolic variables named in ``env`` replaced in every dim and value
    (:func:`~memcore_py.ir.prim.substitute`); ``ty`` itself when nothing changes."""
    if ty is None or not env:
        return ty
    cls = type(ty)
    if cls is TensorType:
        if ty.shape is None:
            return ty
        shape = tuple(substitute(d, env) for d in ty.shape)
        if all(a is b for a, b in zip(shape, ty.shape)):
            return ty
        return TensorType(shape, ty.dtype, ty.ndim, ty.vdevice)
    if cls is ShapeType:
        if ty.values is None:
            return ty
        vals = tuple(substitute(d, env) for d in ty.values)
        if all(a is b for a, b in zip(vals, ty.values)):
            return ty
        return ShapeType(vals)
    if cls is PrimType:
        if ty.value is None:
            return ty
        v = substitute(ty.value, env)
        return ty if v is ty.value else PrimType(ty.dtype, v)
    if cls is TupleType:
        fields = tuple(substitute_type(f, env) for f in ty.fields)
        if all(a is b for a, b in zip(fields, ty.fields)):
            return ty
        return TupleType(fields)
    if cls is FuncType:
        params = None if ty.params is None else tuple(substitute_type(p, env) for p in ty.params)
        ret = substitute_type(ty.ret, env)
        if ret is ty.ret and (params is None or all(a is b for a, b in zip(params, ty.params))):
            return ty
        return FuncType(params, ret, ty.purity)
    return ty



_KIND = {
    ObjectType: "R.Object",
    TensorType: "a tensor",
    TupleType: "a tuple",
    ShapeType: "a shape",
    PrimType: "a prim value",
    FuncType: "a function",
}


def _dims_contradiction(base, derived, what: str):
    if len(base) != len(derived):
        return f"{what} rank {len(derived)} is not {len(base)}"
    for k, (a, b) in enumerate(zip(base, derived)):
        if type(a) is IntImm and type(b) is IntImm and a.value != b.value:
            return f"{what} dim {k} is {b.value}, not {a.value}"
    return None


def type_contradiction(base, derived) -> str | None:
    """Why a value of type ``derived`` can never have type ``base``, or None if it may.

    Apache TVM's ``StructInfoBaseCheck(base, derived) == kFailL0``: the two disagree in
    kind (a tuple is not a tensor), dtype, rank, tuple length, or a dim or prim value that is
    a different integer constant on each side. Whatever cannot be disproved statically
    (``R.Object`` on either side, an unknown dtype or rank, symbolic dims such as ``n``
    against ``4``) is accepted, as TVM's parser accepts it (``kFailL1``). Function types are
    compared by kind only.

    Parameters
    ----------
    base : Type
        The annotation (what the value is claimed to be).
    derived : Type
        The value's own type.
    """
    if base is derived or base is None or derived is None:
        return None
    tb = type(base)
    td = type(derived)
    if tb is ObjectType or td is ObjectType:
        return None
    if tb is not td:
        return f"{_KIND.get(td, td.__name__)} is not {_KIND.get(tb, tb.__name__)}"
    if tb is TensorType:
        if base.dtype and derived.dtype and base.dtype != derived.dtype:
            return f"dtype {derived.dtype} is not {base.dtype}"
        if base.ndim != -1 and derived.ndim != -1 and base.ndim != derived.ndim:
            return f"rank {derived.ndim} is not {base.ndim}"
        if base.shape is not None and derived.shape is not None:
            return _dims_contradiction(base.shape, derived.shape, "shape")
        return None
    if tb is ShapeType:
        if base.ndim != -1 and derived.ndim != -1 and base.ndim != derived.ndim:
            return f"rank {derived.ndim} is not {base.ndim}"
        if base.values is not None and derived.values is not None:
            return _dims_contradiction(base.values, derived.values, "shape value")
        return None
    if tb is PrimType:
        if base.dtype != derived.dtype:
            return f"dtype {derived.dtype} is not {base.dtype}"
        a, b = base.value, derived.value
        if type(a) is IntImm and type(b) is IntImm and a.value != b.value:
            return f"value {b.value} is not {a.value}"
        return None
    if tb is TupleType:
        if len(base.fields) != len(derived.fields):
            return f"a tuple of {len(derived.fields)} fields is not a tuple of {len(base.fields)}"
        for k, (a, b) in enumerate(zip(base.fields, derived.fields)):
            why = type_contradiction(a, b)
            if why is not None:
                return f"field {k}: {why}"
        return None
    return None


def _dims_proven_equal(base, derived) -> bool:
    if len(base) != len(derived):
        return False
    for a, b in zip(base, derived):
        if a is b:
            continue
        if type(a) is IntImm and type(b) is IntImm:
            if a.value != b.value:
                return False
        elif not prove_equal(a, b):
            return False
    return True


def is_base_of(base, derived) -> bool:
    """Whether every value of type ``derived`` is provably of type ``base`` (TVM's
    ``IsBaseOf``, its base check's ``kPass``): ``R.Object`` is the base of every type; a tensor
    or shape type is a base when what it states (dtype, rank, vdevice, each dim proven equal
    by :func:`~memcore_py.ir.prim.prove_equal`) ``derived`` states too; tuples field by field;
    prim types by dtype. Function types are compared structurally (TVM's check of those is
    best effort too).
    """
    if base is derived:
        return True
    tb = type(base)
    if tb is ObjectType:
        return True
    if base is None or derived is None or type(derived) is not tb:
        return False
    if tb is TensorType:
        if base.dtype and base.dtype != derived.dtype:
            return False
        if base.ndim != -1 and base.ndim != derived.ndim:
            return False
        if base.vdevice is not None and base.vdevice != derived.vdevice:
            return False
        if base.shape is None:
            return True
        return derived.shape is not None and _dims_proven_equal(base.shape, derived.shape)
    if tb is ShapeType:
        if base.ndim == -1:
            return True
        if base.ndim != derived.ndim:
            return False
        if base.values is None:
            return True
        return derived.values is not None and _dims_proven_equal(base.values, derived.values)
    if tb is PrimType:
        return base.dtype == derived.dtype
    if tb is TupleType:
        return len(base.fields) == len(derived.fields) and all(
            is_base_of(a, b) for a, b in zip(base.fields, derived.fields))
    return type_equal(base, derived)


def erase_prim_values(ty):
    """``ty`` without the values of its prim types (``ty`` itself when it has none): the type
    as TVM 0.27 holds it, whose ``PrimType`` has no value."""
    cls = type(ty)
    if cls is PrimType:
        return ty if ty.value is None else PrimType(ty.dtype)
    if cls is TupleType:
        fields = tuple(erase_prim_values(f) for f in ty.fields)
        return ty if all(a is b for a, b in zip(fields, ty.fields)) else TupleType(fields)
    return ty


def refine_annotation(ann, derived):
    """The type a binding annotated ``ann`` gets when its value has type ``derived``.

    ``ann`` itself, except where ``ann`` is ``derived`` with the values of its prim types
    left out: TVMScript has no spelling for a prim type's value (TVM 0.27 prints
    ``(n,)``'s type as ``R.Tuple(T.int64)``), so the printed annotation cannot say it and
    the value's own type is kept. This makes print-then-parse give back an equal module
    where a builder gave a prim type a value (the types memcore derives hold none).
    """
    if derived is None or ann is derived:
        return ann
    erased = erase_prim_values(derived)
    if erased is not derived and type_equal(ann, erased):
        return derived
    return ann
