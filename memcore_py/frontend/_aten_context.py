"""The state and emission helpers the ATen converters share (one import of a torch.export graph).

Design
------
:class:`AtenContext` holds what TVM 0.27's ``BaseFXGraphImporter`` keeps while it walks an
ExportedProgram: the :class:`~memcore_py.ir.builder.BlockBuilder` (so names come out as TVM's
``lv``, ``lv1``, ... and nested calls are put in A-normal form the way TVM's normalizer does)
and ``env``, the Relax value of every FX node (a Relax expression, a symbolic
:class:`~memcore_py.ir.prim.PrimExpr` for a ``SymInt``, a Python scalar or a list of those).

Calls are built through memcore's op table, as the TVMScript parser builds them:
:meth:`AtenContext.call` takes the op's Relax arguments in schema order and its attributes by
keyword, converts written values the way TVM's Python wrappers do (a list where a shape is
expected becomes a ``ShapeExpr``, a list where a tuple is expected a ``Tuple`` of
``PrimValue``, an int an int64 ``PrimValue`` and a float a float64 one), completes the
attributes with the schema's defaults (:meth:`~memcore_py.ir.op.Op.convert_attrs`) and infers
the call's type with the op's type rule, so struct info is never computed here. Calls are
typed eagerly because TVM's converters read the shape of values they have not emitted yet.

A reshape's ``-1`` is stored resolved (the inferred dimension), as TVM's reshape constructor
stores it. Constants follow ``relax.const``: a Python scalar becomes a rank-0 array of the given dtype
(without one, Python ints become int32 and floats float32).
"""
from __future__ import annotations

import numpy as np

from ..errors import FrontendError, IRError
from ..ir.builder import BlockBuilder
from ..ir.construct import new_call
from ..ir.expr import Call, Constant, Expr, PrimValue, ShapeExpr, Tuple, TupleGetItem
from ..ir.infer import infer_type
from ..ir.op import get_op
from ..ir.op_schema import ABSENT, REQUIRED
from ..ir.prim import FloatImm, IntImm, PrimExpr
from ..ir.types import TensorType, TupleType

__all__ = ["AtenContext", "torch_dtype_name"]

_TORCH_DTYPES = {
    "float16": "float16", "float32": "float32", "float": "float32", "float64": "float64",
    "double": "float64", "bfloat16": "bfloat16", "int8": "int8", "int16": "int16",
    "int32": "int32", "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
    "uint64": "uint64", "bool": "bool",
}


def torch_dtype_name(dtype, where: str = "") -> str:
    """The Relax dtype of a torch dtype (``torch.float32`` -> ``"float32"``); the names TVM's
    importer knows, anything else a :class:`FrontendError`."""
    text = str(dtype).lower()
    key = text[len("torch."):] if text.startswith("torch.") else text
    out = _TORCH_DTYPES.get(key)
    if out is None:
        raise FrontendError(f"{where + ': ' if where else ''}dtype {dtype} has no Relax equivalent "
                            f"(supported: {', '.join(sorted(set(_TORCH_DTYPES.values())))})")
    return out


class AtenContext:
    """Converters' shared state: ``bb`` (the builder), ``env`` (FX node -> value), ``torch``
    (the torch module) and ``node`` (the node being converted, for error messages)."""

    def __init__(self, torch):
        self.torch = torch
        self.bb = BlockBuilder()
        self.env: dict = {}
        self.node = None

    # ----------------------------------------------------------------------------- errors
    def error(self, what: str) -> FrontendError:
        """A :class:`FrontendError` naming the node being converted and its target."""
        node = self.node
        if node is None:
            return FrontendError(what)
        return FrontendError(f"node {node.name!r} ({target_name(node)}): {what}")

    # ----------------------------------------------------------------------------- values
    def value(self, arg):
        """The Relax-side value of an FX argument: nodes looked up in ``env``, lists and tuples
        element-wise, anything else (ints, floats, None, dtypes) unchanged."""
        fx_node = self.torch.fx.Node
        if isinstance(arg, fx_node):
            return self.env[arg]
        if isinstance(arg, tuple):
            return tuple(self.value(a) for a in arg)
        if isinstance(arg, list):
            return [self.value(a) for a in arg]
        return arg

    def args(self, node) -> list:
        """``node.args`` with :meth:`value` applied."""
        return [self.value(a) for a in node.args]

    def tensor(self, arg) -> Expr:
        """The value of ``arg``, which must be a tensor-typed Relax expression."""
        v = self.value(arg)
        if not (isinstance(v, Expr) and isinstance(v.ty, TensorType)):
            raise self.error(f"expected a tensor operand; got {_describe(v)}")
        return v

    def shape_of(self, expr) -> tuple:
        """The (possibly symbolic) shape of a tensor expression; a :class:`FrontendError`
        naming the node when it is unknown (memcore's type rule could not derive it)."""
        ty = expr.ty
        if not isinstance(ty, TensorType) or ty.shape is None:
            raise self.error(f"expected a tensor of known shape; got {_describe(expr)}")
        return ty.shape

    @staticmethod
    def dtype_of(expr) -> str:
        """The dtype of a tensor expression."""
        return expr.ty.dtype

    # ----------------------------------------------------------------------------- building
    def call(self, name: str, *args, **attrs) -> Call:
        """An unemitted, typed call of ``relax.<name>``: ``args`` in the op's schema order,
        ``attrs`` by name (converted and completed by the op table)."""
        op = get_op("relax." + name)
        schema = op.schema
        exprs = []
        specs = schema.args
        if len(args) > len(specs):
            raise IRError(f"relax.{name} takes at most {len(specs)} arguments; got {len(args)}")
        for i, spec in enumerate(specs):
            v = args[i] if i < len(args) else spec.default
            if v is ABSENT:
                break
            if v is REQUIRED:
                raise IRError(f"relax.{name} needs the argument {spec.name!r}")
            exprs.append(_as_arg(spec.kind, v))
        attrs = op.convert_attrs(attrs, exprs)
        exprs = tuple(exprs)  # all Relax expressions (_as_arg): the unchecked constructor fits
        ty = infer_type(new_call(op, exprs, attrs), self.bb)
        if name == "reshape" and _has_minus_one(exprs[1]) and ty.shape is not None:
            # TVM's reshape constructor (ConvertNewShapeToExpr) stores the -1 resolved, as the
            # type rule resolves it
            exprs = (exprs[0], ShapeExpr(list(ty.shape)))
            ty = infer_type(new_call(op, exprs, attrs), self.bb)
        return new_call(op, exprs, attrs, (), ty)

    def emit(self, value: Expr):
        """Bind ``value`` in the open (dataflow) block; its nested calls first."""
        return self.bb.emit(value)

    def op(self, name: str, *args, **attrs):
        """Emit ``relax.<name>(*args, **attrs)`` (see :meth:`call`)."""
        return self.bb.emit(self.call(name, *args, **attrs))

    @staticmethod
    def tuple(fields) -> Tuple:
        """A Relax tuple of ``fields`` (typed)."""
        return Tuple(list(fields))

    @staticmethod
    def item(value: Expr, index: int) -> TupleGetItem:
        """``value[index]`` of a tuple-typed expression."""
        return TupleGetItem(value, index)

    @staticmethod
    def const(value, dtype: str | None = None) -> Constant:
        """``relax.const(value, dtype)``: a Python scalar or array as a constant tensor."""
        arr = np.asarray(value)
        if dtype is None:
            dtype = {np.dtype("int64"): "int32", np.dtype("float64"): "float32"}.get(arr.dtype, str(arr.dtype))
        arr = np.asarray(value, dtype=dtype)
        return Constant(arr, TensorType(tuple(int(d) for d in arr.shape), dtype))

    def is_tensor(self, v) -> bool:
        """Whether ``v`` is a tensor-typed Relax expression."""
        return isinstance(v, Expr) and isinstance(v.ty, TensorType)

    def is_tuple(self, v) -> bool:
        """Whether ``v`` is a tuple-typed Relax expression."""
        return isinstance(v, Expr) and isinstance(v.ty, TupleType)


def _has_minus_one(shape) -> bool:
    return isinstance(shape, ShapeExpr) and any(type(d) is IntImm and d.value == -1 for d in shape.values)


def _as_arg(kind: str, v):
    if kind == "expr":
        if isinstance(v, Expr):
            return v
        raise IRError(f"expected a Relax expression; got {_describe(v)}")
    if kind == "shape":
        if isinstance(v, Expr):
            return v
        return ShapeExpr([_dim(d) for d in v])
    if kind == "tuple":
        if isinstance(v, Expr):
            return v
        return Tuple([_scalar_or_expr(x) for x in v])
    return _scalar_or_expr(v)  # "prim"


def _dim(d):
    if isinstance(d, PrimExpr):
        return d
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise IRError(f"a shape dimension must be an int or a symbolic expression; got {_describe(d)}")
    return IntImm(int(d))


def _scalar_or_expr(v):
    if isinstance(v, Expr):
        return v
    if isinstance(v, PrimExpr):
        return PrimValue(v)
    if isinstance(v, bool):
        return PrimValue(IntImm(int(v), "bool"))
    if isinstance(v, (int, np.integer)):
        return PrimValue(IntImm(int(v)))
    if isinstance(v, (float, np.floating)):
        return PrimValue(FloatImm(float(v), "float64"))
    raise IRError(f"expected a scalar or a Relax expression; got {_describe(v)}")


def _describe(v) -> str:
    if isinstance(v, Expr):
        return f"{type(v).__name__} of type {v.ty!r}"
    return f"{type(v).__name__} {v!r}"


def target_name(node) -> str:
    """The converter key of a ``call_function`` node: ``"add.Tensor"``, ``"getitem"``, ...
    (``target.__name__``, the name TVM's importer dispatches on)."""
    name = getattr(node.target, "__name__", None)
    return name if name is not None else str(node.target)
