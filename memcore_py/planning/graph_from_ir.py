"""A memcore IR function in graph form -> :class:`GraphModel` (Relay's view of it).

Design
------
*Graph form* is what the importers produce: a Relax function whose body is one dataflow
block (or plain block) of bindings whose values are calls, tuples, get-items or other vars,
returning a var or a tuple. Relay's GraphPlanMemory sees such a function as a graph:

- each parameter is an input node (one entry per tensor of its flattened type), pinned;
- a constant is an input node where it is first read (Relay's visiting order), pinned;
- each call is an operator node with one entry per tensor of its flattened result type;
  its inputs are the tensor leaves of its arguments in order (a tuple argument is
  flattened; shapes, strings, dtypes and callees carry no tokens). A call to
  ``R.reshape`` alone is a ``__nop`` node: it reuses its input's storage;
- tuples, get-items and var-to-var bindings only route entries;
- the returned value's entries are the heads.

Nodes come out in binding order, the order Relay visits an ANF graph. Anything else
(``If``, ``match_cast``, several blocks, symbolic or unknown shapes) raises
:class:`GraphError` naming the binding: Relay's planner has no answer for it.

Devices: a tensor type's ``vdevice`` (``"cuda:0"``) becomes the DLPack device type
(``cuda`` -> 2), plus 256 x the device id when it is not 0, so that two GPUs never share;
no vdevice -> ``NO_DEVICE``.
"""
from __future__ import annotations

from ..ir.expr import (
    Call,
    Constant,
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..ir.module import IRModule
from ..ir.op import get_op
from ..ir.prim import IntImm
from ..ir.types import TensorType, TupleType
from .graph_model import NO_DEVICE, GraphError, GraphModel, make_graph

__all__ = ["graph_from_ir", "graph_from_function", "DEVICE_TYPES"]

#: vdevice kind -> DLPack device type (the graph executor's ``device_index`` values).
DEVICE_TYPES = {"llvm": 1, "cpu": 1, "c": 1, "cuda": 2, "nvptx": 2, "opencl": 4, "vulkan": 7,
                "metal": 8, "rocm": 10, "hexagon": 16, "webgpu": 15}

_RESHAPE = get_op("relax.reshape")
_NO_TOKENS = (ShapeExpr, PrimValue, StringImm, DataTypeImm, GlobalVar, ExternFunc)


def graph_from_ir(obj) -> GraphModel:
    """:func:`graph_from_function` of a Function, or of an IRModule's only (or ``main``)
    Relax function."""
    if isinstance(obj, Function):
        return graph_from_function(obj)
    if isinstance(obj, IRModule):
        funcs = [(gv.name, f) for gv, f in obj.functions.items() if isinstance(f, Function)]
        chosen = [f for n, f in funcs if n == "main"] or ([funcs[0][1]] if len(funcs) == 1 else [])
        if not chosen:
            raise GraphError(f"the module has {len(funcs)} Relax functions and no 'main'; pass one function")
        return graph_from_function(chosen[0], name="main" if funcs and funcs[0][0] == "main" else funcs[0][0])
    raise GraphError(f"graph_plan_memory needs a GraphModel, a Relax Function or an IRModule; got {type(obj).__name__}")


def _device(vdevice) -> int:
    if vdevice is None:
        return NO_DEVICE
    kind, _, index = str(vdevice).partition(":")
    code = DEVICE_TYPES.get(kind)
    if code is None:
        raise GraphError(f"unknown vdevice {vdevice!r}; known kinds: {sorted(DEVICE_TYPES)}")
    idx = int(index) if index.isdigit() else 0
    return code + 256 * idx


def _leaves(ty, where):
    """(shape, dtype, device) per tensor of a (nested tuple) type."""
    if isinstance(ty, TensorType):
        if ty.shape is None or not ty.dtype:
            raise GraphError(f"{where}: tensor type {ty!r} has no known shape and dtype")
        dims = []
        for d in ty.shape:
            if type(d) is not IntImm:
                raise GraphError(f"{where}: shape {ty.shape!r} is symbolic; Relay's GraphPlanMemory "
                                 "plans constant shapes only")
            dims.append(d.value)
        return [(tuple(dims), ty.dtype, _device(ty.vdevice))]
    if isinstance(ty, TupleType):
        return [leaf for f in ty.fields for leaf in _leaves(f, where)]
    return []


def graph_from_function(func: Function, *, name: str = "main") -> GraphModel:
    """Relay's graph of an IR function in graph form (see the module docstring).

    Raises
    ------
    GraphError
        The function is not in graph form, or a shape is symbolic, naming the binding.
    """
    nodes: list = []
    devices: list = []
    value_of: dict = {}  # Var -> nested entries: (node, index) leaf, or list of nested

    def add_node(kind, nm, ty, inputs, where):
        leaves = _leaves(ty, where)
        nid = len(nodes)
        nodes.append({"kind": kind, "name": nm, "inputs": inputs,
                      "outputs": [(s, d) for s, d, _ in leaves]})
        devices.extend(dev for _, _, dev in leaves)
        if isinstance(ty, TensorType):
            return (nid, 0)
        counter = iter(range(len(leaves)))

        def shape_of(t):
            if isinstance(t, TupleType):
                return [shape_of(f) for f in t.fields]
            return (nid, next(counter)) if isinstance(t, TensorType) else []
        return shape_of(ty)

    def flat(v):
        if isinstance(v, tuple):
            return [v]
        return [leaf for x in v for leaf in flat(x)]

    consts = [0]

    def value(expr, where):
        if isinstance(expr, Var):
            if expr not in value_of:
                raise GraphError(f"{where}: {expr.name!r} is used before it is defined")
            return value_of[expr]
        if isinstance(expr, Constant):
            if expr not in value_of:
                value_of[expr] = add_node("input", f"const_{consts[0]}", expr.ty, [], where)
                consts[0] += 1
            return value_of[expr]
        if isinstance(expr, Tuple):
            return [value(f, where) for f in expr.fields]
        if isinstance(expr, TupleGetItem):
            t = value(expr.tuple_value, where)
            if not isinstance(t, list) or expr.index >= len(t):
                raise GraphError(f"{where}: get-item {expr.index} of a value that is not a tuple that long")
            return t[expr.index]
        if isinstance(expr, _NO_TOKENS):
            return []
        raise GraphError(f"{where}: {type(expr).__name__} is not allowed in a graph-form function")

    for p in func.params:
        value_of[p] = add_node("input", p.name, p.ty, [], f"parameter {p.name!r}")
    body = func.body
    if not isinstance(body, SeqExpr):
        raise GraphError("a graph-form function body must be a SeqExpr")
    if len(body.blocks) > 1:
        raise GraphError(f"a graph-form function has one block; this one has {len(body.blocks)}")
    for block in body.blocks:
        for i, b in enumerate(block.bindings):
            where = f"binding {i} ({b.var.name!r})"
            if not isinstance(b, VarBinding):
                raise GraphError(f"{where}: {type(b).__name__} is not allowed in a graph-form function")
            v = b.value
            if isinstance(v, Call):
                args = [leaf for a in v.args for leaf in flat(value(a, where))]
                if v.op is _RESHAPE:
                    args = flat(value(v.args[0], where))
                    if len(args) != 1:
                        raise GraphError(f"{where}: R.reshape of a value with {len(args)} tensors")
                    value_of[b.var] = add_node("nop", b.var.name, v.ty if v.ty is not None else b.var.ty, args, where)
                else:
                    ty = v.ty if v.ty is not None else b.var.ty
                    value_of[b.var] = add_node("op", b.var.name, ty, args, where)
            else:
                value_of[b.var] = value(v, where)
    heads = flat(value(body.body, "the returned value"))
    return make_graph(nodes, heads, name=name, devices=devices if any(d != NO_DEVICE for d in devices) else None)
