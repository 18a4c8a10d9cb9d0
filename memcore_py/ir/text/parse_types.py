"""Type annotations: the type handlers, bare type names, and annotation text.

Design
------
A type is written as a call (``R.Tensor((2, n), "float32")``, ``R.Tuple(A, B)``,
``R.Shape(ndim=2)``, ``R.Prim("int64")``, ``R.Object()``, ``R.Callable(...)``,
``I.StringType()``), handled here into a :class:`~memcore_py.ir.types.Type`, or as a bare
name (``R.Tensor``, ``R.Tuple``, ``T.int64``), converted by :meth:`_Annotations.as_type`.
Types are immutable and shared: static tensor types are interned, and
:meth:`_Annotations.parse_type_text` parses each distinct annotation text once (per function
when it reads symbolic vars, since each function has its own PrimVars).
"""
from __future__ import annotations

from ...errors import IRError
from ..prim import IntImm
from ..types import VOID, FuncType, ObjectType, PrimType, ShapeType, TensorType, TupleType, Type
from .parse_core import _Err
from .parse_values import _Bare, _bound_args, _describe, _no_more
from .prim_func_text import DTYPE_NAMES


_OBJECT = ObjectType()


class _Annotations:
    """Types from bare names and from annotation text (a mixin of the parser)."""

    def as_type(self, v, pos):
        if isinstance(v, Type):
            return v
        t = type(v)
        if t is _Bare:
            name = v.name
            if name == "R.Tensor":
                return TensorType()
            if name == "R.Tuple":
                return VOID
            if name == "R.Shape":
                return ShapeType(None, -1)
            if name in ("R.Object", "R.Any"):
                return _OBJECT
            if name == "R.Callable":
                return FuncType(None, None, False)
            if name.startswith("T."):
                return PrimType(name[2:])
        if v is None:
            return VOID
        raise _Err(f"expected a type annotation; got {_describe(v)}", pos)

    def types_of(self, v, pos):
        if isinstance(v, (tuple, list)):
            return tuple(self.as_type(x, pos) for x in v)
        return (self.as_type(v, pos),)

    def parse_type_text(self, text, col):
        """A type annotation from its text (cached by text)."""
        hit = self.global_type_cache.get(text)
        if hit is not None:
            return hit
        hit = self.func_type_cache.get(text)
        if hit is not None:
            return hit
        self.set_segment(text, col)
        self.used_prim = False
        self.ann = None
        v = self.expr()
        self.at_end()
        ty = self.as_type(v, 0)
        if self.used_prim:
            self.func_type_cache[text] = ty
        else:
            self.global_type_cache[text] = ty
        return ty


# ------------------------------------------------------------------------------ handlers
#: Interned static TensorTypes (types are immutable; sharing them is the point).
_STATIC_TENSOR_TYPES = {}


def _h_tensor(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    shape = kwargs.pop("shape", None)
    dtype = kwargs.pop("dtype", None)
    vdevice = kwargs.pop("vdevice", None)
    ndim = kwargs.pop("ndim", None)
    _no_more(kwargs, "R.Tensor", pos)
    args = list(args)
    if args and type(args[0]) is str and shape is None:
        if dtype is not None:
            raise _Err("R.Tensor: dtype given twice", pos)
        dtype = args.pop(0)
    elif args:
        shape = args.pop(0) if shape is None else shape
    if args:
        if dtype is None:
            dtype = args.pop(0)
    if args:
        if vdevice is None:
            vdevice = args.pop(0)
    if args:
        if ndim is None:
            ndim = args.pop(0)
    if args:
        raise _Err("R.Tensor takes at most 4 arguments", pos)
    if dtype is not None and type(dtype) is not str:
        raise _Err(f"R.Tensor: dtype must be a string; got {_describe(dtype)}", pos)
    if dtype is not None and dtype not in DTYPE_NAMES:
        from ..types import check_dtype

        try:
            check_dtype(dtype)
        except IRError:
            raise _Err(f"R.Tensor: unknown dtype {dtype!r}", pos) from None
    if ndim is None:
        ndim = -1
    if type(ndim) is not int:
        raise _Err(f"R.Tensor: ndim must be an integer; got {_describe(ndim)}", pos)
    if vdevice is not None and type(vdevice) is not str:
        raise _Err(f"R.Tensor: vdevice must be a string; got {_describe(vdevice)}", pos)
    if shape is not None:
        if not isinstance(shape, (tuple, list)):
            raise _Err(f"R.Tensor: shape must be a tuple or list; got {_describe(shape)}", pos)
        if all(type(d) is int for d in shape):
            # static shape: interned, so annotations and ty_args share one object
            key = (tuple(shape), dtype, vdevice, ndim)
            hit = _STATIC_TENSOR_TYPES.get(key)
            if hit is None:
                if ndim not in (-1, len(shape)):
                    raise _Err(f"R.Tensor: ndim={ndim} does not match a shape of rank {len(shape)}", pos)
                hit = TensorType(tuple(IntImm(d) for d in shape), dtype or "", -1, vdevice)
                if len(_STATIC_TENSOR_TYPES) < 100000:
                    _STATIC_TENSOR_TYPES[key] = hit
            return hit
        dims = tuple(p.as_dim(d, pos) for d in shape)
        if ndim not in (-1, len(dims)):
            raise _Err(f"R.Tensor: ndim={ndim} does not match a shape of rank {len(dims)}", pos)
        return TensorType(dims, dtype or "", -1, vdevice)
    if ndim < -1:
        raise _Err(f"R.Tensor: ndim must be >= -1; got {ndim}", pos)
    return TensorType(None, dtype or "", ndim, vdevice)


def _h_tuple_type(p, args, kwargs, pos):
    _no_more(dict(kwargs), "R.Tuple", pos)
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return TupleType([p.as_type(a, pos) for a in args])


def _h_shape_type(p, args, kwargs, pos):
    (values, ndim), args = _bound_args(args, kwargs, ("values", "ndim"), "R.Shape", pos)
    if args:
        raise _Err("R.Shape takes at most 2 arguments", pos)
    if ndim is None:
        ndim = -1
    if type(ndim) is not int or ndim < -1:
        raise _Err(f"R.Shape: ndim must be an integer >= -1; got {_describe(ndim)}", pos)
    if values is not None:
        if not isinstance(values, (list, tuple)):
            raise _Err(f"R.Shape: values must be a list; got {_describe(values)}", pos)
        vals = tuple(p.as_dim(v, pos) for v in values)
        if ndim not in (-1, len(vals)):
            raise _Err(f"R.Shape: ndim={ndim} does not match {len(vals)} values", pos)
        return ShapeType(vals)
    return ShapeType(None, ndim)


def _h_prim_type(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    dtype = kwargs.pop("dtype", None)
    _no_more(kwargs, "R.Prim", pos)
    if args:
        if dtype is not None or len(args) != 1:
            raise _Err("R.Prim takes one dtype", pos)
        dtype = args[0]
    if type(dtype) is not str or dtype not in DTYPE_NAMES:
        raise _Err(f"R.Prim: unknown dtype {dtype!r}", pos)
    return PrimType(dtype)


def _h_object(p, args, kwargs, pos):
    if args or kwargs:
        raise _Err("R.Object()/R.Any() take no arguments", pos)
    return _OBJECT


def _h_callable(p, args, kwargs, pos):
    (params, ret, purity), args = _bound_args(args, kwargs, ("params", "ret", "purity"), "R.Callable", pos,
                                              ignored=("derive_func",))
    if args:
        raise _Err("R.Callable takes at most 3 arguments", pos)
    if params is not None:
        if not isinstance(params, (list, tuple)):
            params = [params]
        params = [p.as_type(x, pos) for x in params]
    ret_ty = p.as_type(ret, pos) if ret is not None else None
    if purity is None:
        purity = params is not None
    if type(purity) is not bool:
        raise _Err("R.Callable: purity must be True or False", pos)
    return FuncType(params, ret_ty, purity)


def _h_string_type(p, args, kwargs, pos):
    if args or kwargs:
        raise _Err("I.StringType() takes no arguments", pos)
    return _OBJECT
