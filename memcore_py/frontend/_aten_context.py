"""The state and emission helpers the ATen converters share (one import of a torch.export graph).

Design
------
:class:`AtenContext` holds what TVM 0.27's ``BaseFXGraphImporter`` keeps while it walks an
ExportedProgram: the :class:`~memcore_py.ir.builder.BlockBuilder` (so names come out as TVM's
``lv``, ``lv1``, ... and nested calls are put in A-normal form the way TVM's normalizer does)
and ``env``, the Relax value of every FX node (a Relax expression, a symbolic
:class:`~memcore_py.ir.prim.PrimExpr` for a ``SymInt``, a Python scalar or a list of those).

Calls are built through memcore's op table, as the TVMScript parser builds them, by the
compiled :class:`~memcore_py.frontend._aten_calls.CallBuilder` whose methods the context
binds (``call``, ``op``, ``value``, ``args``, ``tensor_type``, ``shared_type``): the op's
Relax arguments in schema order and its attributes by keyword, written values converted the
way TVM's Python wrappers do, the attributes completed with the schema's defaults and the
call's type inferred with the op's type rule, so struct info is never computed here. Calls
are typed eagerly because TVM's converters read the shape of values they have not emitted
yet. The call builder remembers, for the import, the type the rule gave each distinct call and
one object per distinct tensor type (its module docstring says what is keyed and why).

A reshape's ``-1`` is stored resolved (the inferred dimension), as TVM's reshape constructor
stores it. Constants follow ``relax.const``: a Python scalar becomes a rank-0 array of the given dtype
(without one, Python ints become int32 and floats float32).
"""
from __future__ import annotations

import numpy as np

from .._compiled import load_compiled
from ..errors import FrontendError
from ..ir.builder import BlockBuilder
from ..ir.expr import Constant, Expr, Tuple, TupleGetItem
from ..ir.types import TensorType, TupleType

__all__ = ["AtenContext", "torch_dtype_name"]

#: The compiled call builder (:class:`AtenContext`'s ``call``, ``op``, ...).
_CALLS = "memcore_py.frontend._aten_calls"

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
    (the torch module) and ``node`` (the node being converted, for error messages).

    ``call``, ``op``, ``value``, ``args``, ``tensor_type`` and ``shared_type`` are the
    methods of the context's compiled
    :class:`~memcore_py.frontend._aten_calls.CallBuilder` (bound when the context is made):

    - ``call(name, *args, **attrs)``: an unemitted, typed call of ``relax.<name>``, ``args``
      in the op's schema order, ``attrs`` by name (converted and completed by the op table);
    - ``op(name, *args, **attrs)``: ``call`` emitted in the open block;
    - ``value(arg)``: the Relax-side value of an FX argument (nodes looked up in ``env``,
      lists and tuples element-wise, anything else unchanged); ``args(node)``: ``node.args``
      with ``value`` applied;
    - ``tensor_type(shape, dtype)``: ``TensorType(shape, dtype)``, one object per distinct
      type of the import; ``shared_type(ty)``: the import's first tensor type equal to ``ty``.
    """

    def __init__(self, torch):
        self.torch = torch
        self.bb = BlockBuilder()
        self.env: dict = {}
        self.node = None
        builder = load_compiled(_CALLS).CallBuilder(
            self.bb, self.env, torch.fx.Node if torch is not None else ())  # () : no FX node (ONNX's importer)
        self.call_builder = builder
        """The compiled call builder, which holds the import's memo (the module docstring)."""
        self.call = builder.call
        self.op = builder.op
        self.value = builder.value
        self.args = builder.args
        self.tensor_type = builder.tensor_type
        self.shared_type = builder.shared_type

    # ----------------------------------------------------------------------------- errors
    def error(self, what: str) -> FrontendError:
        """A :class:`FrontendError` naming the node being converted and its target."""
        node = self.node
        if node is None:
            return FrontendError(what)
        return FrontendError(f"node {node.name!r} ({target_name(node)}): {what}")

    # ----------------------------------------------------------------------------- values
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
    def emit(self, value: Expr):
        """Bind ``value`` in the open (dataflow) block; its nested calls first."""
        return self.bb.emit(value)

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


def _describe(v) -> str:
    """``v`` for an error message (:func:`memcore_py.frontend._aten_calls.describe`)."""
    return load_compiled(_CALLS).describe(v)


def target_name(node) -> str:
    """The converter key of a ``call_function`` node: ``"add.Tensor"``, ``"getitem"``, ...
    (``target.__name__``, the name TVM's importer dispatches on)."""
    name = getattr(node.target, "__name__", None)
    return name if name is not None else str(node.target)
