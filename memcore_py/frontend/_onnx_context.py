"""The state the ONNX converters share while one ONNX graph is imported.

Design
------
:class:`OnnxContext` extends the torch importer's :class:`~._aten_context.AtenContext`, so
calls are built exactly as there (``call``, :meth:`~._aten_calls.CallBuilder.call`: arguments in
schema order, attributes completed and converted by memcore's op table, the type inferred,
a reshape's ``-1`` resolved; :meth:`~._aten_context.AtenContext.const` for constants). What
is ONNX-specific:

- ``env`` maps ONNX value *names* to Relax values: a variable, a constant, a
  ``ShapeExpr`` or ``PrimValue`` (shape arithmetic done at import time: ``Shape``,
  ``Gather`` of a shape, ...), or a *pending* call. TVM 0.27's ONNX importer normalizes
  each node's result without binding it; the result is bound when a later node first uses
  it as an argument (and never, when nothing uses it). :meth:`operand` does the same: the
  first use of a pending call emits it and remembers the variable, so bindings come out in
  TVM's order and with TVM's names (``lv``, ``lv1``, ...);
- ``initializers`` holds the TensorProto of every initializer and ``arrays`` the numpy
  values read so far (initializers on first use, ``Constant`` outputs), which converters
  read where ONNX passes an operand that must be constant (a reshape's shape,
  a reduction's axes, split sizes): :meth:`constant_array`. With the weights kept as
  parameters, an initializer is still a parameter variable; reading its value does not
  remove the parameter (TVM's ``get_constant`` behaves the same way);
- ``node`` (the ONNX node being converted) names errors: :meth:`error`;
- where TVM's converter calls ``bb.emit_te`` (a TOPI kernel: ``Tile``, ``Pad``), the converter
  writes the kernel's TIR text and :meth:`call_te` adds it as a private ``tirx.noalias``
  PrimFunc and binds its ``R.call_tir``, as ``emit_te`` does. TVM's ``add_func`` reuses a
  structurally equal function (buffer and variable names do not count), so ``te_funcs`` keys
  each function by what its structure depends on.
"""
from __future__ import annotations

import numpy as np

from ..errors import FrontendError
from ..ir.builder import is_leaf
from ..ir.expr import Call, Constant, Expr, PrimFunc, PrimFuncParam, PrimValue, ShapeExpr, Tuple, Var
from ..ir.op import get_op
from ..ir.prim import IntImm
from ..ir.types import TensorType
from ._aten_context import AtenContext

__all__ = ["OnnxContext", "node_label", "onnx_dtype", "is_constant"]

_ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
                9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16"}


def onnx_dtype(code: int, where: str = "") -> str:
    """The Relax dtype of an ONNX ``TensorProto`` element type code."""
    out = _ONNX_DTYPES.get(int(code))
    if out is None:
        raise FrontendError(f"{where + ': ' if where else ''}ONNX element type {code} has no Relax dtype "
                            f"(supported: {', '.join(sorted(set(_ONNX_DTYPES.values())))})")
    return out


def is_constant(value) -> bool:
    """Whether ``value`` is a constant whose data is known at import time."""
    return isinstance(value, Constant) and value.data is not None


def node_label(node) -> str:
    """``'name' (OpType)`` of an ONNX node, for messages (``#index`` when it has no name)."""
    return f"{node.name!r} ({node.op_type})" if node.name else f"unnamed {node.op_type} node"


class OnnxContext(AtenContext):
    """Converters' shared state for one ONNX graph: ``bb``, ``env`` (value name -> Relax
    value), ``arrays`` (value name -> numpy array of the constant ones), ``node``,
    ``te_funcs`` (structure key -> GlobalVar of the TOPI kernels added, :meth:`call_te`)."""

    def __init__(self):
        super().__init__(None)
        self.arrays: dict = {}
        self.initializers: dict = {}
        self._emitted: dict = {}
        self.te_funcs: dict = {}
        self.opset = 0
        #: The names of the values some node or the graph's outputs read.
        self.used_names: set = set()

    # ----------------------------------------------------------------------------- errors
    def error(self, what: str) -> FrontendError:
        """A :class:`FrontendError` naming the ONNX node being converted."""
        if self.node is None:
            return FrontendError(what)
        return FrontendError(f"node {node_label(self.node)}: {what}")

    # ----------------------------------------------------------------------------- operands
    def raw(self, i: int):
        """The value of the node's input ``i`` as stored (a pending call stays pending), or
        None for an omitted optional input."""
        names = self.node.input
        if i >= len(names) or names[i] == "":
            return None
        return self.env[names[i]]

    def operand(self, i: int):
        """The node's input ``i`` as a leaf (a pending call is emitted on its first use), or
        None for an omitted optional input."""
        value = self.raw(i)
        if value is None or is_leaf(value) or isinstance(value, Tuple):
            return value
        var = self.bound(value)
        self.env[self.node.input[i]] = var
        return var

    def bound(self, value):
        """``value`` as a leaf: a pending call is emitted, once (a value bound already, e.g.
        under another name an ``Identity`` gave it, is its variable), as TVM's normalizer
        binds a call object once whatever refers to it; a leaf or a tuple is returned as is."""
        if value is None or is_leaf(value) or isinstance(value, Tuple):
            return value
        entry = self._emitted.get(id(value))
        if entry is None:  # the value is kept with its variable, so its id is not reused
            entry = self._emitted[id(value)] = (value, self.bb.emit(value))
        return entry[1]

    def bound_already(self, value):
        """The variable ``value`` (a pending call) was bound to, else ``value`` itself."""
        entry = self._emitted.get(id(value))
        return value if entry is None else entry[1]

    def tensor_operand(self, i: int) -> Expr:
        """Input ``i``, which must be a tensor (a shape or scalar shape value known at import
        time becomes an int64 tensor: a constant when static, else ``shape_to_tensor``); a
        :class:`FrontendError` otherwise."""
        value = self.operand(i)
        if isinstance(value, PrimValue):  # a scalar shape value: a rank-0 int64 tensor
            if type(value.value) is IntImm:
                return self.const(np.asarray(value.value.value, dtype="int64"), "int64")
            return self.emit(self.call("reshape", self.call("shape_to_tensor", ShapeExpr([value.value])), []))
        if isinstance(value, ShapeExpr):
            dims = [d.value if type(d) is IntImm else None for d in value.values]
            if all(d is not None for d in dims):
                return self.const(np.asarray(dims, dtype="int64"), "int64")
            return self.emit(self.call("shape_to_tensor", value))
        if not self.is_tensor(value):
            what = "missing" if value is None else f"a {type(value).__name__}"
            raise self.error(f"input {i} must be a tensor; it is {what}")
        return value

    def has_input(self, i: int) -> bool:
        """Whether the node gives its (optional) input ``i``."""
        return i < len(self.node.input) and self.node.input[i] != ""

    def constant_array(self, i: int, what: str):
        """The numpy value of input ``i`` (an initializer or a ``Constant``), None when the
        input is omitted; a :class:`FrontendError` naming ``what`` when it is computed."""
        if not self.has_input(i):
            return None
        arr = self.known_array(i)
        if arr is not None:
            return arr
        name = self.node.input[i]
        raise self.error(f"{what} (input {i}, {name!r}) must be a constant (an initializer or a Constant "
                         "node); computed values are not supported there")

    def constant_ints(self, i: int, what: str):
        """:meth:`constant_array` of input ``i`` as a list of Python ints (None if omitted)."""
        arr = self.constant_array(i, what)
        return None if arr is None else [int(v) for v in np.asarray(arr).reshape(-1)]

    def shape_like(self, i: int):
        """Input ``i`` as a list of dims when it is known at import time (a ``ShapeExpr``, or
        a constant int64 vector), else None."""
        value = self.raw(i)
        if isinstance(value, ShapeExpr):
            return list(value.values)
        arr = self.known_array(i)
        if arr is not None and arr.ndim == 1 and arr.dtype.kind in "iu":
            return [int(v) for v in arr]
        return None

    def known_array(self, i: int):
        """The numpy value of input ``i`` when it is an initializer or a constant, else None."""
        if not self.has_input(i):
            return None
        name = self.node.input[i]
        if name in self.arrays:
            return np.asarray(self.arrays[name])
        if name in self.initializers:
            return self.initializer_array(name)
        value = self.env.get(name)
        if is_constant(value):
            return np.asarray(value.data)
        return None

    def prim_like(self, i: int):
        """Input ``i`` as one scalar (an int, or a symbolic dim held in a ``PrimValue``) when
        known at import time, else None."""
        value = self.raw(i)
        if isinstance(value, PrimValue):
            return value.value
        arr = self.known_array(i)
        if arr is not None and arr.size == 1:
            return arr.reshape(-1)[0].item()
        return None

    def initializer_array(self, name: str):
        """The numpy value of the initializer ``name``, read from its TensorProto on first use."""
        if name not in self.arrays:
            from onnx import numpy_helper

            try:
                self.arrays[name] = numpy_helper.to_array(self.initializers[name])
            except Exception as exc:  # noqa: BLE001 - external data missing, bad raw data
                raise FrontendError(f"initializer {name!r}: cannot read its data: {type(exc).__name__}: {exc}") \
                    from exc
        return self.arrays[name]

    def call_te(self, key, hint: str, text_of, xs: list, out_name: str, out_dims: list):
        """Bind ``R.call_tir(f, xs, out_ty=R.Tensor(out_dims, dtype))`` of the TOPI kernel
        TVM's ``bb.emit_te`` makes (``dtype`` the first input's): ``f`` the private
        ``tirx.noalias`` PrimFunc whose text is ``text_of(func_name)`` (parameters the inputs'
        buffers, named as the variables, then the output buffer ``out_name``), added under a
        fresh name from ``hint`` unless an earlier call made the function with the same
        ``key`` (TVM's ``add_func`` reuses a structurally equal function, whatever the
        names). The inputs must be variables and all shapes static and non-empty; a
        :class:`FrontendError` otherwise."""
        shapes = []
        for x in xs:
            if not isinstance(x, Var):
                raise self.error(f"the input must be a computed tensor or a graph input; got a {type(x).__name__} "
                                 "(TVM's TOPI kernel reads a variable)")
            shapes.append([d.value if type(d) is IntImm else None for d in self.shape_of(x)])
        if any(None in dims or 0 in dims for dims in shapes) or any(d <= 0 for d in out_dims):
            raise self.error(f"static, non-empty input and output shapes are needed (TVM writes a TOPI kernel); got "
                             f"{[list(self.shape_of(x)) for x in xs]} -> {list(out_dims)}")
        dtype = self.dtype_of(xs[0])
        gv = self.te_funcs.get(key)
        if gv is None:
            params = [PrimFuncParam(x.name, self.dtype_of(x), dims) for x, dims in zip(xs, shapes)]
            params.append(PrimFuncParam(out_name, dtype, out_dims))
            gv = self.bb.add_func(PrimFunc(params, {"tirx.noalias": True}, text_of(hint), private=True), hint)
            self.te_funcs[key] = gv
        call = Call(get_op("relax.call_tir"), (gv, Tuple(list(xs))), ty_args=(TensorType(out_dims, dtype),))
        return self.bb.emit(call)

    # ----------------------------------------------------------------------------- results
    def rank(self, value) -> int:
        """The rank of a tensor value (a :class:`FrontendError` when unknown)."""
        ty = value.ty
        if not isinstance(ty, TensorType) or ty.ndim is None or ty.ndim < 0:
            raise self.error(f"the rank of {type(value).__name__} of type {ty!r} is unknown")
        return ty.ndim

    def attr(self, name: str, default=None):
        """The node's attribute ``name`` as a Python value (bytes decoded as UTF-8: a
        :class:`FrontendError` naming the attribute when they are not), else ``default``."""
        from onnx import helper

        for a in self.node.attribute:
            if a.name == name:
                value = helper.get_attribute_value(a)
                if isinstance(value, bytes):
                    return self._attr_text(name, value)
                if isinstance(value, list):
                    return [self._attr_text(name, v) if isinstance(v, bytes) else v for v in value]
                return value
        return default

    def _attr_text(self, name: str, value: bytes) -> str:
        """A string attribute's bytes as text (ONNX stores them as UTF-8)."""
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise self.error(f"attribute {name!r} is not valid UTF-8 text: {value[:80]!r}") from None
