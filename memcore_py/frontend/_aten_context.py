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

A model repeats its layers, so most calls of an import are a call made before on arguments
of the same types: :meth:`AtenContext.call` remembers, for the import, the type the rule gave
each (op, attributes, argument types, literal arguments) and hands the same type object out
again instead of running the rule again (a type rule is a function of those; see
:meth:`AtenContext.call_type`). Types are immutable and shared freely: the inputs' types and
the rules' results are one object per distinct tensor type (:meth:`AtenContext.shared_type`),
so a layer's calls find its predecessor's when argument types are compared by identity and
literal arguments (a shape, a scalar, a tuple of them) by value.

A reshape's ``-1`` is stored resolved (the inferred dimension), as TVM's reshape constructor
stores it. Constants follow ``relax.const``: a Python scalar becomes a rank-0 array of the given dtype
(without one, Python ints become int32 and floats float32).
"""
from __future__ import annotations

from math import copysign

import numpy as np

from ..errors import FrontendError, IRError
from ..ir.builder import BlockBuilder
from ..ir.construct import new_call, new_shape_expr, new_tuple
from ..ir.expr import Call, Constant, DataflowVar, Expr, PrimValue, ShapeExpr, Tuple, TupleGetItem, Var
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
        self._fx_node = torch.fx.Node if torch is not None else ()  # () : no FX node (ONNX's importer)
        self._ops: dict = {}
        """Op name (``"add"``) -> (its :class:`~memcore_py.ir.op.Op`, its schema's arguments,
        whether the schema has attributes, whether its attributes can be remembered: no
        default derived from the arguments)."""
        self._attrs: dict = {}
        """(op, the attributes as written) -> the op table's converted, complete attributes
        (:meth:`_converted_attrs`)."""
        self._int_imms: dict = {}
        """int -> its int64 :class:`~memcore_py.ir.prim.IntImm`, one per value (IntImms are
        immutable and compared by value, so dims and scalars share them)."""
        self._types: dict = {}
        """(op, attribute values, argument keys) -> the type its rule gave (:meth:`call_type`)."""
        self._tensor_types: dict = {}
        """(dtype, vdevice, dims) -> the one TensorType of that value (:meth:`shared_type`)."""

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
        if type(arg) is int:
            return arg
        if isinstance(arg, self._fx_node):
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
        entry = self._ops.get(name)
        if entry is None:
            op = get_op("relax." + name)
            attr_specs = op.schema.attrs
            entry = self._ops[name] = (op, op.schema.args, bool(attr_specs),
                                       not any(callable(a.default) for a in attr_specs))
        op, specs, has_attrs, fixed_attrs = entry
        n = len(args)
        if n > len(specs):
            raise IRError(f"relax.{name} takes at most {len(specs)} arguments; got {n}")
        exprs = []
        for i, spec in enumerate(specs):
            v = args[i] if i < n else spec.default
            if isinstance(v, Expr):  # every argument kind takes an expression as it is
                exprs.append(v)
                continue
            if v is ABSENT:
                break
            if v is REQUIRED:
                raise IRError(f"relax.{name} needs the argument {spec.name!r}")
            exprs.append(self._as_arg(spec.kind, v))
        if attrs or has_attrs:  # else none to convert or complete
            attrs = self._converted_attrs(op, attrs, exprs) if fixed_attrs else op.convert_attrs(attrs, exprs)
        exprs = tuple(exprs)  # all Relax expressions (_as_arg): the unchecked constructor fits
        ty = self.call_type(op, exprs, attrs)
        if name == "reshape" and _has_minus_one(exprs[1]) and ty.shape is not None:
            # TVM's reshape constructor (ConvertNewShapeToExpr) stores the -1 resolved, as the
            # type rule resolves it
            exprs = (exprs[0], ShapeExpr(list(ty.shape)))
            ty = self.call_type(op, exprs, attrs)
        return new_call(op, exprs, attrs, (), ty)

    def _converted_attrs(self, op, attrs: dict, exprs: list) -> dict:
        """``op.convert_attrs(attrs, exprs)`` of an op without derived defaults, one dict per
        distinct written attributes in the import (attribute dicts are never changed, so
        calls share them). Remembered only for values of exact types whose conversion
        depends on their value alone: ints, strings, bools, None, floats (not nan) and lists
        or tuples of ints (``True == 1`` and ``-0.0 == 0.0`` must not meet in a key)."""
        key = [op]
        for k, v in attrs.items():
            t = type(v)
            if t is int or t is str or t is bool or v is None:
                key.append((k, t, v))
            elif t is float and v == v:  # the sign tells -0.0 from 0.0; a nan is not remembered
                key.append((k, t, v, copysign(1.0, v)))
            elif (t is list or t is tuple) and all(type(x) is int for x in v):
                key.append((k, t, *v))
            else:
                return op.convert_attrs(attrs, exprs)
        key = tuple(key)
        out = self._attrs.get(key)
        if out is None:
            out = self._attrs[key] = op.convert_attrs(attrs, exprs)
        return out

    def call_type(self, op, exprs: tuple, attrs: dict):
        """The type :func:`~memcore_py.ir.infer.infer_type` gives the call ``op(*exprs)``
        with ``attrs``, the rule run once per import for each distinct call: a type rule
        reads the op, the attribute values (converted, so one representation per attribute;
        compared by ``==``: no type depends on the sign of a float attribute's zero), the
        arguments' types and the values of literal arguments (a ``ShapeExpr``, ``PrimValue``
        or ``Tuple`` of those), which make the key (:func:`_literal_key`). A call whose rule
        fails is not remembered (each raises)."""
        vars_ = _TYPED_BY_VAR
        key = (op, *attrs.values(), *[e.ty if type(e) in vars_ else _literal_key(e) for e in exprs])
        try:
            ty = self._types.get(key)
        except TypeError:  # an attribute value that is no key (a list): the rule itself
            return infer_type(new_call(op, exprs, attrs), self.bb)
        if ty is None:
            ty = self._types[key] = self.shared_type(infer_type(new_call(op, exprs, attrs), self.bb))
        return ty

    def _as_arg(self, kind: str, v):
        """The Relax argument of kind ``kind`` written as ``v`` (not an expression): a list of
        dims as a ``ShapeExpr``, a list of scalars as a ``Tuple``, a scalar as a ``PrimValue``."""
        if kind == "shape":
            return new_shape_expr(tuple([self._dim(d) for d in v]))  # PrimExprs (_dim)
        if kind == "tuple":
            fields = tuple([self._scalar(x) for x in v])  # expressions
            types = [f.ty for f in fields]
            return new_tuple(fields, TupleType(types)) if None not in types else Tuple(fields)
        if kind == "expr":
            raise IRError(f"expected a Relax expression; got {_describe(v)}")
        return self._scalar(v)  # "prim"

    def _dim(self, d):
        """A shape dimension as a PrimExpr (an int as its shared IntImm)."""
        if type(d) is int:
            imm = self._int_imms.get(d)
            if imm is None:
                imm = self._int_imms[d] = IntImm(d)
            return imm
        return _dim(d)

    def _scalar(self, v):
        """A scalar argument as a ``PrimValue`` (an int of the shared IntImm); expressions as
        they are."""
        if type(v) is int:
            return PrimValue(self._dim(v))
        return _scalar_or_expr(v)

    def tensor_type(self, shape, dtype: str) -> TensorType:
        """``TensorType(shape, dtype)`` as :meth:`shared_type` shares it (``shape``: ints and
        PrimExprs)."""
        key = (dtype, None, *[d if type(d) is int else _dim_key(d) for d in shape])  # shared_type's key
        ty = self._tensor_types.get(key)
        if ty is None:
            ty = self._tensor_types[key] = TensorType(shape, dtype)
        return ty

    def shared_type(self, ty):
        """The first tensor type of the import equal to ``ty`` (same dtype, vdevice and dims,
        constant dims by value, symbolic ones by identity), else ``ty`` itself, so that equal
        types are one object and :meth:`call_type` knows the calls on them for equal."""
        if type(ty) is not TensorType:
            return ty
        shape = ty.shape
        if shape is None:
            key = (ty.dtype, ty.vdevice, None, ty.ndim)
        else:
            key = (ty.dtype, ty.vdevice, *[_dim_key(d) for d in shape])
        return self._tensor_types.setdefault(key, ty)

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
        if dtype is None:
            arr = np.asarray(value)
            dtype = {np.dtype("int64"): "int32", np.dtype("float64"): "float32"}.get(arr.dtype, str(arr.dtype))
        arr = np.asarray(value, dtype=dtype)
        return Constant(arr, TensorType(tuple(int(d) for d in arr.shape), dtype))

    def is_tensor(self, v) -> bool:
        """Whether ``v`` is a tensor-typed Relax expression."""
        return isinstance(v, Expr) and isinstance(v.ty, TensorType)

    def is_tuple(self, v) -> bool:
        """Whether ``v`` is a tuple-typed Relax expression."""
        return isinstance(v, Expr) and isinstance(v.ty, TupleType)


#: The argument classes whose value a type rule reads only through their type.
_TYPED_BY_VAR = frozenset({Var, DataflowVar})


def _literal_key(e):
    """The part of :meth:`AtenContext.call_type`'s key for one argument: a variable's type
    (by identity); the values of a literal shape, scalar or tuple; any other expression
    itself (by identity)."""
    cls = type(e)
    if cls in _TYPED_BY_VAR:
        return e.ty
    if cls is ShapeExpr:
        return (ShapeExpr, *[d.value if type(d) is IntImm and d.dtype == "int64" else _dim_key(d) for d in e.values])
    if cls is PrimValue:
        return (PrimValue, _dim_key(e.value))
    if cls is Tuple:
        return (Tuple, *[_literal_key(f) for f in e.fields])
    return e


def _dim_key(d):
    """An int64 constant as its value, other constants with their dtype, anything else (a
    symbolic dim, a float) itself."""
    if type(d) is IntImm:
        return d.value if d.dtype == "int64" else (d.value, d.dtype)
    return d


def _has_minus_one(shape) -> bool:
    if type(shape) is ShapeExpr:
        for d in shape.values:
            if type(d) is IntImm and d.value == -1:
                return True
    return False


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
