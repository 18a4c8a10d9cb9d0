"""Import an ONNX model (``onnx.ModelProto``) as a high-level Relax :class:`~memcore_py.ir.IRModule`.

Design
------
:func:`from_onnx` produces the module TVM 0.27's ``tvm.relax.frontend.onnx.from_onnx``
produces for the same model with ``keep_params_in_input=True`` (same ops, attributes,
binding order and names), for the operators :mod:`._onnx_ops` converts; only the ``onnx``
package is needed, imported when the function is called. Steps:

1. checks: a ``ModelProto`` of IR version >= 3, names that are UTF-8 text (ONNX requires it,
   but protobuf parses a model whose names are not and hands such a name over as
   ``bytes``), nodes of the default (``ai.onnx``) domain or TVM's contrib ops of the
   ``com.microsoft`` domain (:data:`~._onnx_ops.CONTRIB_OPS`), every ``op_type`` with a
   converter; all the ops without one are listed in one
   :class:`~memcore_py.errors.UnsupportedOperatorError` (op type -> node names) before
   anything is built;
2. ``onnx.shape_inference.infer_shapes`` runs on a weight-free copy of the graph (large or
   floating-point initializers declared as typed inputs: serializing the weights for it
   would cost more than the rest of the import), with ``shape_dict`` replacing the shapes of
   the named graph inputs (a name the graph does not have is an error). What it would abort
   the process on instead of raising (a negative dimension, a ``Split`` with more outputs
   than ``num_outputs``) is refused first (:func:`_check_before_inference`); its failure, e.g.
   on inconsistent shapes, is a :class:`~memcore_py.errors.FrontendError`. A graph input
   that still has no shape (not even a rank) is an error naming every such input. Node
   outputs are typed by the converters, as TVM types them, whatever inference left (the
   outputs of contrib nodes, a ``Reshape`` whose target ONNX cannot follow, unused running
   statistics of a ``BatchNormalization``); one still without a shape after its converter is
   an error naming it (memory planning needs the size of every tensor). Graph outputs that
   are graph inputs or initializers are left out of the inference (declared without a
   shape, they would leave every output unshaped);
3. parameters: the graph inputs that are not initializers, in graph order (names made
   valid identifiers as TVM makes them: ``.`` -> ``_``, a leading non-letter prefixed with
   ``input_``), a ``dim_param`` dimension an int64 :class:`~memcore_py.ir.prim.PrimVar` of
   that name (one variable per name); then, with ``keep_params_as_input=True``, one
   parameter per initializer (the name without an ``onnx::`` prefix). The attribute
   ``num_input`` is the number of graph inputs. With ``keep_params_as_input=False``
   initializers are constants;
4. one dataflow block: each node's converter builds its value; the value is normalized
   (its nested calls bound) but bound itself only when a later node uses it (TVM's order;
   :class:`~._onnx_context.OnnxContext`); a converter that TVM writes returning a
   ``relax.Tuple`` (``BatchNormalization``, ``LayerNormalization``, ...) binds its calls at
   the node, used or not, as TVM's normalizer does. The graph outputs are bound with
   ``R.output`` (several outputs: a tuple, each call in it bound once however many outputs
   or ``Identity`` aliases name it; a graph input, initializer or shape value as it is).

Differences from TVM (tests/oracle/test_onnx_oracle.py checks each): TVM's ``params``
attribute (the initializer arrays) is left out (:func:`onnx_params` returns them); ``Clip``
becomes ``R.clip`` (TVM writes TE kernels); an ``Expand`` shape given as an initializer is
read at import (TVM reads it at run time, leaving the result's shape unknown); memcore
converts ``Range``, ``Trilu`` and ``Expand``/``Reshape`` on symbolic shapes computed by
``Shape``, where TVM 0.27 fails, and unrolls ``LSTM``, which TVM does not convert. A
training-mode ``BatchNormalization`` whose running statistics are used is refused (TVM
computes them with the momentum reversed).
"""
from __future__ import annotations

from ..errors import FrontendDependencyError, FrontendError, IRError, UnsupportedOperatorError
from ..ir._util import gc_paused
from ..ir.expr import PrimValue, ShapeExpr, Tuple, Var
from ..ir.prim import PrimVar
from ..ir.types import TensorType
from ._dim_bounds import dim_bound_range
from ._onnx_context import OnnxContext, node_label, onnx_dtype
from ._onnx_ops import CONTRIB_DOMAIN, CONTRIB_OPS, CONVERTERS

__all__ = ["from_onnx", "require_onnx", "load_onnx", "onnx_params", "unsupported_onnx_operators"]

_MIN_IR_VERSION = 3


def require_onnx():
    """The ``onnx`` module, or a :class:`~memcore_py.errors.FrontendDependencyError` naming the
    ``onnx`` extra when it is not installed."""
    try:
        import onnx
        import onnx.shape_inference  # noqa: F401
    except ImportError as exc:
        raise FrontendDependencyError('importing an ONNX model needs the onnx package: install the onnx extra with '
                                      'pip install "memcore[onnx]" (or pip install onnx)') from exc
    return onnx


def load_onnx(path: str):
    """``onnx.load(path)``, its failures (missing, truncated or not a model) as a
    :class:`~memcore_py.errors.FrontendError` naming ``path``."""
    import os

    onnx = require_onnx()
    if not os.path.isfile(path):
        raise FrontendError(f"cannot read {path!r}: no such file")
    try:
        model = onnx.load(path)
    except Exception as exc:  # noqa: BLE001 - protobuf raises DecodeError, onnx ValueError/OSError
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise FrontendError(f"{path}: not a readable ONNX model: {type(exc).__name__}"
                            f"{': ' + first[:200] if first else ''}") from exc
    if not model.graph.node and not model.graph.output:
        raise FrontendError(f"{path}: not an ONNX model (no graph: the file is empty, truncated or of another kind)")
    return model


def from_onnx(model, *, shape_dict: dict | None = None, keep_params_as_input: bool = True,
              dim_bounds: dict | None = None):
    """The high-level Relax module of an ONNX model, as TVM 0.27's ONNX importer builds it.

    Parameters
    ----------
    model : onnx.ModelProto
        The model (``onnx.load(path)``); shapes are inferred here
        (``onnx.shape_inference.infer_shapes``), so inference need not have run.
    shape_dict : dict, optional
        Graph input name -> shape (ints; a str is a symbolic dimension of that name),
        replacing the model's input shape before inference.
    keep_params_as_input : bool
        Initializers become parameters after the graph inputs (default; memory planning wants
        the weights as inputs); False makes them constants.
    dim_bounds : dict, optional
        Symbolic dimension name -> ``(lower, upper)`` (``upper`` None: unbounded), written as
        the function attributes ``tir_var_lower_bound`` / ``tir_var_upper_bound`` that
        ``torch.export`` ranges become in the torch importer (ONNX has no bounds of its own);
        the planner then sizes storages for the upper bound.

    Returns
    -------
    IRModule
        One function ``main`` with the attribute ``num_input``.

    Raises
    ------
    FrontendDependencyError
        onnx is not installed.
    UnsupportedOperatorError
        Node op types (or domains) without a converter; ``.ops`` maps each to its nodes.
    FrontendError
        Anything else: not a ModelProto, a name (of the graph, a node, its op type, domain,
        inputs, outputs or attributes, a value, an initializer, a ``dim_param``, an opset
        domain) or a string attribute that is not UTF-8, a negative dimension (a
        ``dim_value``, an initializer's or tensor attribute's ``dims``, an ``Expand`` shape or
        ``Split`` sizes) or a ``Split`` whose ``num_outputs`` is not its number of outputs
        (ONNX's shape inference would abort the process), shape inference failing, values
        without a shape, an unknown ``shape_dict`` input, an attribute or operand a
        converter does not accept (naming the node).

    Examples
    --------
    >>> import onnx                                                        # doctest: +SKIP
    >>> mod = from_onnx(onnx.load("resnet18.onnx"), shape_dict={"x": [1, 3, 224, 224]})  # doctest: +SKIP
    """
    onnx = require_onnx()
    if not isinstance(model, onnx.ModelProto):
        raise FrontendError(f"from_onnx expects an onnx.ModelProto; got {type(model).__name__}")
    if model.ir_version < _MIN_IR_VERSION:
        raise FrontendError(f"ONNX IR version {model.ir_version} is not supported (>= {_MIN_IR_VERSION} is)")
    graph = model.graph
    _check_utf8(model)
    _raise_unsupported(graph)
    typed = _typed_values(_inferred_graph(onnx, model, shape_dict))
    _check_shapes(graph, typed)
    ctx = OnnxContext()
    ctx.opset = _opset(model)
    ctx.used_names = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    symbols: dict = {}
    inputs = _inputs(graph, typed, symbols)
    params = _initializers(ctx, graph, keep_params_as_input)
    attrs = {"num_input": len(inputs), **_bound_attrs(dim_bounds or {}, symbols)}
    with gc_paused(), ctx.bb.function("main", inputs + params, attrs=attrs):
        with ctx.bb.dataflow():
            _bind_inputs(ctx, graph, inputs)
            _translate(ctx, graph)
            gv = ctx.bb.emit_output(_outputs(ctx, graph))
        ctx.bb.emit_func_output(gv)
    return ctx.bb.get()


def onnx_params(model) -> dict:
    """The initializer arrays TVM attaches as the ``params`` attribute: parameter name (the
    initializer's, without an ``onnx::`` prefix) -> numpy array, in graph order."""
    onnx = require_onnx()
    from onnx import numpy_helper

    if not isinstance(model, onnx.ModelProto):
        raise FrontendError(f"onnx_params expects an onnx.ModelProto; got {type(model).__name__}")
    return {t.name.removeprefix("onnx::"): numpy_helper.to_array(t) for t in model.graph.initializer}


def unsupported_onnx_operators(model) -> dict:
    """``{op_type: (node names...)}`` of the nodes of ``model`` without a converter (an op
    of another domain is keyed ``domain::op_type``)."""
    require_onnx()
    return _missing(model.graph)


# ------------------------------------------------------------------------------------ checks
def _check_utf8(model) -> None:
    """Refuse a string field the importer reads that is not UTF-8 text.

    ONNX's ``string`` fields must hold UTF-8, but protobuf parses a model whose fields do
    not (``onnx.load`` accepts it) and returns such a field as ``bytes``, which would reach
    dict keys, messages and ``onnx.shape_inference``. Checked: the graph name, the opset
    domains, the names and ``dim_param`` dimensions of the graph inputs, outputs and value
    infos, the initializer names, and each node's name, op type, domain, input and output
    names and attribute names. Documentation strings and metadata are not read, so not
    checked.

    Raises
    ------
    FrontendError
        Naming the field and showing its bytes.
    """
    graph = model.graph
    _utf8(graph.name, "graph name")
    for i, entry in enumerate(model.opset_import):
        _utf8(entry.domain, "opset_import #{} domain", i)
    for kind, infos in (("graph input", graph.input), ("graph output", graph.output),
                        ("value_info", graph.value_info)):
        for i, vi in enumerate(infos):
            _utf8(vi.name, "{} #{} name", kind, i)
            if vi.type.HasField("tensor_type"):
                for k, d in enumerate(vi.type.tensor_type.shape.dim):
                    _utf8(d.dim_param, "{} {!r}: dimension {} dim_param", kind, vi.name, k)
    for i, t in enumerate(graph.initializer):
        _utf8(t.name, "initializer #{} name", i)
    for i, node in enumerate(graph.node):
        _utf8(node.name, "node #{} name", i)
        _utf8(node.op_type, "node #{} op_type", i)
        _utf8(node.domain, "node #{} domain", i)
        for j, name in enumerate(node.input):
            _utf8(name, "node #{} input {}", i, j)
        for j, name in enumerate(node.output):
            _utf8(name, "node #{} output {}", i, j)
        for j, a in enumerate(node.attribute):
            _utf8(a.name, "node #{} attribute {} name", i, j)


def _utf8(value, where: str, *args) -> None:
    """``value``, a protobuf string field, must have been UTF-8 (then it is a ``str``);
    ``where.format(*args)`` names it (formatted only for the message)."""
    if isinstance(value, bytes):
        raise FrontendError(f"the ONNX {where.format(*args)} is not valid UTF-8: {value[:80]!r} (ONNX "
                            "strings must be UTF-8)")


def _domain(node) -> str:
    """The node's domain, ``""`` for the default (``ai.onnx``) one."""
    return node.domain if node.domain not in ("", "ai.onnx") else ""


def _missing(graph) -> dict:
    out: dict = {}
    for i, node in enumerate(graph.node):
        domain = _domain(node)
        converted = node.op_type in CONTRIB_OPS if domain == CONTRIB_DOMAIN else \
            not domain and node.op_type in CONVERTERS and node.op_type not in CONTRIB_OPS
        if not converted:
            key = f"{domain}::{node.op_type}" if domain else node.op_type
            out.setdefault(key, []).append(node.name or f"#{i}")
    return {k: tuple(v) for k, v in out.items()}


def _raise_unsupported(graph) -> None:
    missing = _missing(graph)
    if missing:
        listed = "; ".join(f"{op} (nodes {', '.join(names)})" for op, names in missing.items())
        raise UnsupportedOperatorError(
            f"the ONNX graph uses {len(missing)} operator(s) memcore's importer cannot convert: {listed}", missing)


def _opset(model) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return 1


#: Initializers kept with their data for shape inference: integer ones of at most this many
#: elements (the shape operands it folds). The others are given to it as typed graph inputs.
_INFERENCE_DATA_LIMIT = 4096
_INT_TYPES = {2, 3, 4, 5, 6, 7, 12, 13}


def _inferred_graph(onnx, model, shape_dict):
    """The graph of a weight-free copy of ``model`` after ``onnx.shape_inference``: large or
    floating-point initializers become typed graph inputs (serializing the weights for the
    inference would cost more than the whole import), ``shape_dict`` replaces input shapes."""
    graph = model.graph
    light = onnx.GraphProto(name=graph.name)
    light.node.extend(graph.node)
    light.input.extend(graph.input)
    # an output that is a graph input or an initializer needs no inference, and ONNX's
    # inference leaves every output unshaped when one of those is declared without a shape
    sources = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    light.output.extend(o for o in graph.output if o.name not in sources)
    light.value_info.extend(graph.value_info)
    declared = {i.name for i in graph.input}
    for t in graph.initializer:
        size = 1
        for d in t.dims:
            size *= d
        if t.data_type in _INT_TYPES and size <= _INFERENCE_DATA_LIMIT:
            light.initializer.append(t)
        elif t.name not in declared:
            light.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    if shape_dict:
        _override_inputs(light, shape_dict)
    _check_before_inference(graph, light)
    proto = onnx.ModelProto(ir_version=model.ir_version, graph=light)
    proto.opset_import.extend(model.opset_import)
    proto.functions.extend(model.functions)
    try:
        return onnx.shape_inference.infer_shapes(proto, strict_mode=True).graph
    except Exception as exc:  # noqa: BLE001 - onnx raises InferenceError, ValueError, ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FrontendError(f"ONNX shape inference failed: {first[:300]}") from exc


def _check_before_inference(graph, light) -> None:
    """Refuse what ``onnx.shape_inference.infer_shapes`` would abort the process on.

    ONNX's C++ shape inference trusts a few values it does not check: a negative dimension
    reaching ``Slice``'s inference fails an assertion (``std::clamp``), and a ``Split`` with
    more outputs than ``num_outputs`` indexes past a vector. Either kills the Python process
    (SIGABRT), so nothing can be caught afterwards; ONNX forbids both. ``light`` is the graph
    inference is given (:func:`_inferred_graph`: after ``shape_dict``, its initializers the
    small integer ones), ``graph`` the model's. Refused, each naming the value or node:

    - a negative ``dim_value`` in the type of a graph input, output or value info (in a
      tensor, sparse tensor, sequence, optional or map type);
    - negative ``dims`` of an initializer, or of a tensor attribute (``Constant``'s
      ``value``, dense or sparse);
    - a negative entry in the constants inference turns into dimensions without checking
      their sign: an ``Expand`` shape and ``Split`` sizes (an initializer, a ``Constant``
      output or the ``split`` attribute; a ``-1`` in an ``Expand`` shape computed at import
      time, which inference does not see, still keeps the input's dimension, as in TVM);
    - a ``Split`` whose ``num_outputs`` is not its number of outputs.

    Inference checks the other attributes and operands the converted ops read (axes, perms,
    pads, strides, kernel shapes, ranks, reshape targets) and raises, which
    :func:`_inferred_graph` reports as a :class:`~memcore_py.errors.FrontendError`.
    """
    for t in graph.initializer:
        _check_tensor_dims(t, f"initializer {t.name!r}")
    for kind, infos in (("graph input", light.input), ("graph output", light.output),
                        ("value_info", light.value_info)):
        for vi in infos:
            for k, d in _type_dims(vi.type):
                if d.HasField("dim_value") and d.dim_value < 0:
                    raise FrontendError(f"{kind} {vi.name!r}: dimension {k} has dim_value {d.dim_value}; a "
                                        "dimension must be >= 0")
    constants = {t.name: t for t in light.initializer}
    for node in light.node:
        for a in node.attribute:
            where = f"node {node_label(node)}: attribute {a.name!r}"
            for t in ([a.t] if a.HasField("t") else []) + list(a.tensors):
                _check_tensor_dims(t, where)
            for sp in ([a.sparse_tensor] if a.HasField("sparse_tensor") else []) + list(a.sparse_tensors):
                _check_tensor_dims(sp, where)
                _check_tensor_dims(sp.values, where + " values")
                _check_tensor_dims(sp.indices, where + " indices")
        if node.op_type == "Constant" and node.output:
            constants[node.output[0]] = node
        elif node.op_type == "Expand" and len(node.input) > 1:
            _check_not_negative(node, f"the shape (input 1, {node.input[1]!r})",
                                _constant_ints(constants.get(node.input[1])))
        elif node.op_type == "Split":
            attrs = {a.name: a for a in node.attribute}
            if "num_outputs" in attrs and attrs["num_outputs"].HasField("i") \
                    and attrs["num_outputs"].i != len(node.output):
                raise FrontendError(f"node {node_label(node)}: num_outputs must be its number of outputs, "
                                    f"{len(node.output)}; got {attrs['num_outputs'].i}")
            if "split" in attrs:
                _check_not_negative(node, "attribute 'split'", list(attrs["split"].ints))
            if len(node.input) > 1:
                _check_not_negative(node, f"the split sizes (input 1, {node.input[1]!r})",
                                    _constant_ints(constants.get(node.input[1])))


def _type_dims(type_proto):
    """``(k, dim)`` of the tensor shape a TypeProto holds, through sequence, optional and map
    types (the last level's ``k``)."""
    kind = type_proto.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        yield from enumerate(getattr(type_proto, kind).shape.dim)
    elif kind in ("sequence_type", "optional_type"):
        yield from _type_dims(getattr(type_proto, kind).elem_type)
    elif kind == "map_type":
        yield from _type_dims(type_proto.map_type.value_type)


def _check_tensor_dims(tensor, where: str) -> None:
    """A TensorProto's (or SparseTensorProto's) ``dims`` must be >= 0."""
    if any(d < 0 for d in tensor.dims):
        raise FrontendError(f"{where}: dims must be >= 0; got {list(tensor.dims)}")


def _constant_ints(source) -> list | None:
    """The integers shape inference reads from ``source``: a small integer initializer
    (TensorProto) or a ``Constant`` node (``value``, ``value_ints``, ``value_int``); None
    when there is none or its data cannot be read (inference then reports that itself)."""
    from onnx import numpy_helper

    if source is None:
        return None
    if hasattr(source, "op_type"):
        attrs = {a.name: a for a in source.attribute}
        if "value_ints" in attrs:
            return list(attrs["value_ints"].ints)
        if "value_int" in attrs:
            return [attrs["value_int"].i]
        if "value" not in attrs or not attrs["value"].HasField("t"):
            return None
        source = attrs["value"].t
    if source.data_location == source.EXTERNAL:  # not read by inference either
        return None
    try:
        values = numpy_helper.to_array(source)
    except (ValueError, KeyError, TypeError):  # bad raw data or element type: inference's own typed error
        return None
    return [int(v) for v in values.reshape(-1)] if values.dtype.kind in "iu" else None


def _check_not_negative(node, what: str, values) -> None:
    bad = next((k for k, v in enumerate(values or ()) if v < 0), None)
    if bad is not None:
        raise FrontendError(f"node {node_label(node)}: {what} must be >= 0 in every entry; got {values[bad]} at "
                            f"entry {bad}")


def _override_inputs(graph, shape_dict: dict) -> None:
    init = {t.name for t in graph.initializer}
    by_name = {i.name: i for i in graph.input if i.name not in init}
    unknown = sorted(set(shape_dict) - set(by_name))
    if unknown:
        raise FrontendError(f"shape_dict names {', '.join(map(repr, unknown))}, which the graph does not have as "
                            f"inputs (it has: {', '.join(map(repr, by_name)) or 'none'})")
    for name, dims in shape_dict.items():
        tensor_type = by_name[name].type.tensor_type
        tensor_type.shape.Clear()
        tensor_type.shape.SetInParent()
        for d in dims:
            dim = tensor_type.shape.dim.add()
            if isinstance(d, str):
                dim.dim_param = d
            elif isinstance(d, int) and not isinstance(d, bool) and d >= 0:
                dim.dim_value = d
            else:
                raise FrontendError(f"shape_dict[{name!r}]: a dimension must be a non-negative int or a name; "
                                    f"got {d!r}")
    del graph.value_info[:]  # stale inferred shapes would contradict the new ones


def _typed_values(graph) -> dict:
    """Value name -> its inferred ``tensor_type``, or the string ``"container"`` for a
    sequence or optional value (a Relax tuple or the optional's tensor; its tensors are
    typed by the converters)."""
    out = {}
    for vi in (*graph.input, *graph.value_info, *graph.output):
        if vi.type.HasField("tensor_type"):
            if not _has_shape(vi.type.tensor_type) and _has_shape(out.get(vi.name)):
                continue  # a repeated output declared without a shape
            out[vi.name] = vi.type.tensor_type
        elif vi.type.WhichOneof("value") in ("sequence_type", "optional_type"):
            out[vi.name] = "container"
    return out


def _check_shapes(graph, typed: dict) -> None:
    """Every graph input must be a tensor with a shape after inference.

    The node outputs are not checked here: the converters type every value themselves (the
    op table's type rules, as TVM's importer types them), where ONNX's inference leaves
    some without a shape (the TorchScript exporter's ``nn.MultiheadAttention`` head split, a
    ``Reshape`` whose target is sliced from a ``Shape``; the outputs of contrib nodes; the
    unused running statistics of a ``BatchNormalization`` below opset 14). A value still
    without a shape after its converter is refused by :func:`_translate`."""
    init = {t.name for t in graph.initializer}
    missing = []
    for vi in graph.input:
        if vi.name not in init and typed.get(vi.name) == "container":
            raise FrontendError(f"graph input {vi.name!r} is a sequence or optional; graph inputs must be tensors")
        if vi.name not in init and not _has_shape(typed.get(vi.name)):
            missing.append(f"graph input {vi.name!r}")
    if missing:
        raise FrontendError(f"{len(missing)} value(s) have no shape after ONNX shape inference: "
                            f"{'; '.join(missing[:20])}{' ...' if len(missing) > 20 else ''}; "
                            "give the input shapes (shape_dict) or export the model with shapes")


def _has_shape(tensor_type) -> bool:
    return tensor_type is not None and tensor_type != "container" and tensor_type.HasField("shape")


# ------------------------------------------------------------------------------------ inputs
def _sanitize(name: str, taken: set) -> str:
    """TVM's ``_sanitize_name`` for graph inputs."""
    base = name.replace(".", "_") if name else "empty_"
    if not (base[0].isalpha() or base[0] == "_"):
        base = "input_" + base
    out, k = base, 0
    while out in taken:
        k += 1
        out = f"{base}_{k}"
    taken.add(out)
    return out


def _inputs(graph, typed: dict, symbols: dict) -> list:
    init = {t.name for t in graph.initializer}
    taken: set = set()
    out = []
    for vi in graph.input:
        if vi.name in init:
            continue
        tensor_type = typed[vi.name]
        where = f"graph input {vi.name!r}"
        dims = []
        for k, d in enumerate(tensor_type.shape.dim):
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param.isidentifier():
                dims.append(symbols.setdefault(d.dim_param, PrimVar(d.dim_param, "int64")))
            elif d.HasField("dim_param"):
                raise FrontendError(f"{where}: dimension {k} is {d.dim_param!r}; a symbolic dimension must be a "
                                    "name (give the shape with shape_dict)")
            else:
                raise FrontendError(f"{where}: dimension {k} has neither a size nor a name; give the shape with "
                                    "shape_dict")
        var = Var(_sanitize(vi.name, taken), TensorType(dims, onnx_dtype(tensor_type.elem_type, where)))
        out.append(var)
    return out


def _bound_attrs(bounds: dict, symbols: dict) -> dict:
    unknown = sorted(set(bounds) - set(symbols))
    if unknown:
        raise FrontendError(f"dim_bounds names {', '.join(map(repr, unknown))}, which no graph input has as a "
                            f"symbolic dimension (they have: {', '.join(map(repr, symbols)) or 'none'})")
    lower, upper = {}, {}
    for name, bound in bounds.items():
        lo, hi = dim_bound_range(name, bound)
        lower[name] = lo
        if hi is not None:
            upper[name] = hi
    out = {"tir_var_lower_bound": lower} if lower else {}
    if upper:
        out["tir_var_upper_bound"] = upper
    return out


def _bind_inputs(ctx, graph, inputs) -> None:
    init = {t.name for t in graph.initializer}
    names = [vi.name for vi in graph.input if vi.name not in init]
    for name, var in zip(names, inputs):
        ctx.env[name] = var


def _initializers(ctx, graph, keep_params_as_input: bool) -> list:
    """Parameter Vars of the initializers (or, without ``keep_params_as_input``, their
    constants); their data is read only where needed (:meth:`OnnxContext.known_array`)."""
    params = []
    for tensor in graph.initializer:
        if not tensor.name.strip():
            raise FrontendError("an initializer has no name")
        dtype = onnx_dtype(tensor.data_type, f"initializer {tensor.name!r}")
        ctx.initializers[tensor.name] = tensor
        if keep_params_as_input:
            var = Var(tensor.name.removeprefix("onnx::"), TensorType([int(d) for d in tensor.dims], dtype))
            params.append(var)
            ctx.env[tensor.name] = var
        else:
            ctx.env[tensor.name] = ctx.const(ctx.initializer_array(tensor.name), dtype)
    return params


# ------------------------------------------------------------------------------------ graph
def _translate(ctx, graph) -> None:
    bb = ctx.bb
    for node in graph.node:
        ctx.node = node
        for name in node.input:
            if name and name not in ctx.env:
                raise ctx.error(f"input {name!r} is not a graph input, initializer or earlier node's output "
                                "(the graph is not topologically sorted, or the value is missing)")
        try:
            value = CONVERTERS[node.op_type](ctx)
            values = value if isinstance(value, list) else [value]
            if len(values) < len([o for o in node.output if o]):
                used = [o for o in node.output[len(values):] if o]
                _check_unused(ctx, graph, node, used)
            for name, v in zip(node.output, values):
                if name:
                    ctx.env[name] = v = bb.normalize_anf(v) if not isinstance(v, Tuple) else v
                    if isinstance(v.ty, TensorType) and v.ty.shape is None:
                        raise ctx.error(f"output {name!r} has no shape (neither ONNX's shape inference nor the "
                                        "conversion gives one; memory planning needs it): give the input shapes "
                                        "(shape_dict) or export the model with static shapes")
        except FrontendError:
            raise
        except (IRError, KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise ctx.error(f"cannot convert: {type(exc).__name__}: {exc}") from exc
    ctx.node = None


def _check_unused(ctx, graph, node, names) -> None:
    used = {i for n in graph.node for i in n.input} | {o.name for o in graph.output}
    bad = [n for n in names if n in used]
    if bad:
        raise ctx.error(f"outputs {', '.join(map(repr, bad))} are used but not supported (only the first "
                        f"output(s) of {node.op_type} are)")


def _outputs(ctx, graph):
    values = []
    for out in graph.output:
        if out.name not in ctx.env:
            raise FrontendError(f"graph output {out.name!r} is not produced by any node")
        value = ctx.env[out.name]
        if not ctx.is_tensor(value) and not ctx.is_tuple(value) and not isinstance(value, (ShapeExpr, PrimValue)):
            raise FrontendError(f"graph output {out.name!r} is a {type(value).__name__} computed at import time; "
                                "outputs must be tensors")
        values.append(value)
    if not values:
        raise FrontendError("the ONNX graph has no outputs")
    if len(values) == 1:  # TVM's ``emit_output(value)``: a call bound already is its variable
        return ctx.bound_already(values[0])
    # TVM normalizes the tuple: each call object is bound once, in order, however many
    # outputs (or ``Identity`` aliases) refer to it
    return Tuple([ctx.bound(v) for v in values])
