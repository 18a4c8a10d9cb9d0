"""Read a TVM graph-executor JSON graph into a :class:`GraphModel`.

Design
------
The format (spec relay_graph_plan_memory.md §2): ``nodes`` (``"null"`` inputs and
``"tvm_op"`` calls, ``__nop`` for reshape-only), ``heads``, ``node_row_ptr`` and per-entry
``attrs`` (``shape``, ``dltype``, optional ``device_index`` and ``storage_scope``). The
reader checks the document once, naming the node or attr at fault with a
:class:`~memcore_py.planning.graph_model.GraphError`, computes every entry's byte size
(Relay's formula; one dtype lookup per distinct dtype string) and hands flat arrays to
:meth:`GraphModel.from_arrays`, which checks the structure (inputs of earlier nodes only,
indices in range). ``storage_id`` in the file is ignored: the planner replaces it. The
document itself is kept so a plan can be written back into it unchanged but for its attrs.
"""
from __future__ import annotations

import gzip
import json
import os

from ..planning.graph_model import (
    DEFAULT_SCOPE,
    KIND_INPUT,
    KIND_NOP,
    KIND_OP,
    GraphError,
    GraphModel,
    entry_nbytes,
)

__all__ = ["read_graph_json", "graph_from_doc"]

NOP_FUNC = "__nop"


def read_graph_json(source, *, name: str | None = None) -> GraphModel:
    """Read a graph-executor JSON graph.

    Parameters
    ----------
    source : str, os.PathLike or dict
        A path (``*.gz`` decompressed), the JSON text itself (a string starting with
        ``{``), or an already-parsed document.
    name : str, optional
        Label of the graph (default: the file name, or ``"graph"``).

    Returns
    -------
    GraphModel

    Raises
    ------
    GraphError
        Unreadable file, malformed JSON, missing or ill-typed keys and attrs, inputs or
        heads out of range, a node reading itself or a later node (a cycle), unknown
        dtypes, symbolic or negative shapes (Relay refuses them), wrong attr lengths.

    Examples
    --------
    >>> g = read_graph_json('{"nodes": [{"op": "null", "name": "x", "inputs": []}], '
    ...     '"arg_nodes": [0], "heads": [[0, 0, 0]], "node_row_ptr": [0, 1], '
    ...     '"attrs": {"shape": ["list_shape", [[2, 3]]], "dltype": ["list_str", ["float32"]]}}')
    >>> g.entry_bytes.tolist()
    [24]
    """
    if isinstance(source, dict):
        return graph_from_doc(source, name=name or "graph")
    text = None
    prefix = f"{name}: " if name else ""
    if isinstance(source, str) and source.lstrip().startswith("{"):
        text, label = source, name or "graph"
    else:
        path = os.fspath(source)
        label = name or os.path.basename(path)
        prefix = f"{path}: "
        try:
            if path.endswith(".gz"):
                with gzip.open(path, "rt", encoding="utf-8") as fh:
                    text = fh.read()
            else:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
        except (OSError, UnicodeDecodeError, EOFError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise GraphError(f"{path}: cannot read graph JSON: {reason}") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphError(f"{prefix}malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from exc
    try:
        return graph_from_doc(doc, name=label)
    except GraphError as exc:
        if not prefix:
            raise
        raise GraphError(f"{prefix}{exc}") from exc


def _attr(attrs: dict, key: str, kind: str, n: int, required: bool):
    if key not in attrs:
        if required:
            raise GraphError(f"attrs.{key} is missing (a graph-executor JSON needs shape and dltype)")
        return None
    val = attrs[key]
    if not (isinstance(val, list) and len(val) == 2 and val[0] == kind and isinstance(val[1], list)):
        raise GraphError(f"attrs.{key} must be [{kind!r}, [...]]; got {_short(val)}")
    if len(val[1]) != n:
        raise GraphError(f"attrs.{key} has {len(val[1])} values for {n} node entries")
    return val[1]


def _short(v) -> str:
    text = json.dumps(v) if not isinstance(v, str) else repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _int(v, what: str) -> int:
    if isinstance(v, bool):
        raise GraphError(f"{what} must be an integer; got {_short(v)}")
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            pass
    raise GraphError(f"{what} must be an integer; got {_short(v)}")


def graph_from_doc(doc, *, name: str = "graph") -> GraphModel:
    """A :class:`GraphModel` from a parsed graph-executor JSON document (see
    :func:`read_graph_json`)."""
    if not isinstance(doc, dict):
        raise GraphError(f"a graph-executor JSON must be an object; got {type(doc).__name__}")
    for key in ("nodes", "heads", "attrs"):
        if key not in doc:
            raise GraphError(f"graph JSON has no {key!r}")
    nodes, heads, attrs = doc["nodes"], doc["heads"], doc["attrs"]
    if not isinstance(nodes, list) or not isinstance(heads, list) or not isinstance(attrs, dict):
        raise GraphError("graph JSON 'nodes' and 'heads' must be lists and 'attrs' an object")
    kinds, num_outputs, in_ptr, in_node, in_index, names = [], [], [0], [], [], []
    for i, nd in enumerate(nodes):
        if not isinstance(nd, dict):
            raise GraphError(f"node {i} must be an object; got {_short(nd)}")
        nm = nd.get("name")
        if not isinstance(nm, str):
            raise GraphError(f"node {i} has no 'name'")
        op = nd.get("op")
        where = f"node {i} {nm!r}"
        inputs = nd.get("inputs", [])
        if not isinstance(inputs, list):
            raise GraphError(f"{where}: 'inputs' must be a list of [node, index, version]")
        if op == "null":
            kinds.append(KIND_INPUT)
            num_outputs.append(1)
        elif op == "tvm_op":
            na = nd.get("attrs")
            if not isinstance(na, dict):
                raise GraphError(f"{where}: a 'tvm_op' node needs 'attrs' (func_name, num_outputs)")
            if "func_name" not in na:
                raise GraphError(f"{where}: attrs.func_name is missing")
            if "num_outputs" not in na:
                raise GraphError(f"{where}: attrs.num_outputs is missing")
            n_out = _int(na["num_outputs"], f"{where}: attrs.num_outputs")
            if "num_inputs" in na and _int(na["num_inputs"], f"{where}: attrs.num_inputs") != len(inputs):
                raise GraphError(f"{where}: attrs.num_inputs is {na['num_inputs']} but the node has "
                                 f"{len(inputs)} inputs")
            kinds.append(KIND_NOP if na["func_name"] == NOP_FUNC else KIND_OP)
            num_outputs.append(n_out)
        else:
            raise GraphError(f"{where}: op must be 'null' or 'tvm_op'; got {_short(op)}")
        for j, inp in enumerate(inputs):
            if not (isinstance(inp, list) and len(inp) in (2, 3)):
                raise GraphError(f"{where}: input {j} must be [node, index, version]; got {_short(inp)}")
            in_node.append(_int(inp[0], f"{where}: input {j} node"))
            in_index.append(_int(inp[1], f"{where}: input {j} index"))
        in_ptr.append(len(in_node))
        names.append(nm)
    n_entries = sum(num_outputs)
    if "node_row_ptr" in doc:
        rp = doc["node_row_ptr"]
        expect = [0]
        for k in num_outputs:
            expect.append(expect[-1] + k)
        if not isinstance(rp, list) or [(_int(v, "node_row_ptr") if not isinstance(v, bool) else v) for v in rp] != expect:
            raise GraphError(f"node_row_ptr does not match the nodes' num_outputs (expected {_short(expect)})")
    head_node, head_index = [], []
    for h, hd in enumerate(heads):
        if not (isinstance(hd, list) and len(hd) in (2, 3)):
            raise GraphError(f"head {h} must be [node, index, version]; got {_short(hd)}")
        head_node.append(_int(hd[0], f"head {h} node"))
        head_index.append(_int(hd[1], f"head {h} index"))
    shapes = _attr(attrs, "shape", "list_shape", n_entries, True)
    dtypes = _attr(attrs, "dltype", "list_str", n_entries, True)
    devices = _attr(attrs, "device_index", "list_int", n_entries, False)
    scopes = _attr(attrs, "storage_scope", "list_str", n_entries, False)
    node_of = []
    for i, k in enumerate(num_outputs):
        node_of.extend([i] * k)
    nbytes = []
    cache = {}
    for e, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        elem = cache.get(dtype)
        if elem is None:
            n = node_of[e]
            where = f"node {n} {names[n]!r} output {e - _first(num_outputs, n)} (entry {e})"
            if not isinstance(dtype, str):
                raise GraphError(f"{where}: dltype must be a string; got {_short(dtype)}")
            elem = entry_nbytes([], dtype, where)
            cache[dtype] = elem
        size = elem
        if not isinstance(shape, list):
            _bad_shape(e, shape, node_of, names, num_outputs)
        for d in shape:
            if type(d) is not int or d < 0:
                _bad_shape(e, shape, node_of, names, num_outputs)
            size *= d
        nbytes.append(size)
    if devices is not None:
        for e, d in enumerate(devices):
            if type(d) is not int:
                raise GraphError(f"attrs.device_index[{e}] must be an integer; got {_short(d)}")
    scope_ids, scope_names = None, [DEFAULT_SCOPE]
    if scopes is not None:
        index = {DEFAULT_SCOPE: 0}
        scope_ids = []
        for e, s in enumerate(scopes):
            if not isinstance(s, str):
                raise GraphError(f"attrs.storage_scope[{e}] must be a string; got {_short(s)}")
            scope_ids.append(index.setdefault(s or DEFAULT_SCOPE, len(index)))
        scope_names = list(index)
    return GraphModel.from_arrays(
        kinds, num_outputs, in_ptr, in_node, in_index, head_node, head_index, nbytes,
        entry_device=devices, entry_scope=scope_ids, scope_names=scope_names, node_names=names,
        entry_shape=shapes, entry_dtype=dtypes, name=name, doc=doc,
    )


def _first(num_outputs, n) -> int:
    return sum(num_outputs[:n])


def _bad_shape(e, shape, node_of, names, num_outputs):
    n = node_of[e]
    where = f"node {n} {names[n]!r} output {e - _first(num_outputs, n)} (entry {e})"
    entry_nbytes(shape, "float32", where)  # raises the symbolic/negative-shape message
    raise GraphError(f"{where}: shape must be a list of ints; got {_short(shape)}")
