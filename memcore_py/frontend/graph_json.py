"""Read a TVM graph-executor JSON graph into a :class:`GraphModel`.

Design
------
The format (spec relay_graph_plan_memory.md §2): ``nodes`` (``"null"`` inputs and
``"tvm_op"`` calls, ``__nop`` for reshape-only), ``heads``, ``node_row_ptr`` and per-entry
``attrs`` (``shape``, ``dltype``, optional ``device_index`` and ``storage_scope``). The
reader checks the document once, naming the node or attr at fault with a
:class:`~memcore_py.planning.graph_model.GraphError` (integers must fit in int64, as the
planner's arrays hold them, and so must each entry's byte size), computes every entry's
byte size (Relay's formula; one dtype lookup per distinct dtype string) and hands flat arrays to
:meth:`GraphModel.from_arrays`, which checks the structure (inputs of earlier nodes only,
indices in range). ``storage_id`` in the file is ignored: the planner replaces it. The
document itself is kept so a plan can be written back into it unchanged but for its attrs.
"""
from __future__ import annotations

import gzip
import json
import os
import reprlib
import sys

from ..ir.prim import INT64_MAX, INT64_MIN
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
        Unreadable file, malformed JSON, JSON nested too deeply for Python's parser,
        missing or ill-typed keys and attrs, integers outside int64, inputs or heads out of
        range, a node reading itself or a later node (a cycle), unknown dtypes, symbolic or
        negative shapes (Relay refuses them), an entry of 2**63 bytes or more, wrong attr
        lengths.

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
    except RecursionError as exc:  # json's decoder recurses once per nested array or object
        raise GraphError(f"{prefix}malformed JSON: input is nested too deeply") from exc
    except ValueError as exc:  # int() refusing a literal longer than Python's digit limit
        raise GraphError(f"{prefix}malformed JSON: an integer has more than {sys.get_int_max_str_digits()} "
                         "digits") from exc
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


class _Preview(reprlib.Repr):
    """``reprlib``'s abbreviation, with integers too long for ``repr`` given by their size."""

    def repr_int(self, x, level):
        return super().repr_int(x, level) if x.bit_length() <= 128 else f"<int of {x.bit_length()} bits>"


_PREVIEW = _Preview()


def _short(v) -> str:
    """``v`` for a message, cut to 60 characters: its JSON text, or :class:`_Preview`'s
    abbreviation for an integer of more than 128 bits and for what JSON cannot write (a
    circular, too deep or non-JSON value in a document given as a dict)."""
    if isinstance(v, str):
        text = repr(v)
    elif type(v) is int and v.bit_length() > 128:
        text = _PREVIEW.repr(v)
    else:
        try:
            text = json.dumps(v)
        except (RecursionError, TypeError, ValueError):
            text = _PREVIEW.repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _int(v, what: str) -> int:
    """``v``, an int or the decimal string graph attrs write, as an int in the int64 range."""
    if isinstance(v, str):
        try:
            v = int(v)
        except ValueError:
            pass
    if isinstance(v, bool) or not isinstance(v, int):
        raise GraphError(f"{what} must be an integer; got {_short(v)}")
    return _int64(v, what)


def _int64(v: int, what: str) -> int:
    if not INT64_MIN <= v <= INT64_MAX:
        raise GraphError(f"{what} = {_short(v)} is out of the int64 range [-2**63, 2**63)")
    return v


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
            if n_out < 0:
                raise GraphError(f"{where}: attrs.num_outputs must be >= 0; got {n_out}")
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
        if not isinstance(rp, list) or [
            (_int(v, f"node_row_ptr[{k}]") if not isinstance(v, bool) else v) for k, v in enumerate(rp)
        ] != expect:
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
        if not isinstance(dtype, str):
            raise GraphError(f"{_entry_label(e, node_of, names, num_outputs)}: dltype must be a string; "
                             f"got {_short(dtype)}")
        elem = cache.get(dtype)
        if elem is None:
            elem = entry_nbytes([], dtype, _entry_label(e, node_of, names, num_outputs))
            cache[dtype] = elem
        nbytes.append(_shape_nbytes(e, shape, dtype, elem, node_of, names, num_outputs))
    if devices is not None:
        for e, d in enumerate(devices):
            if type(d) is not int:
                raise GraphError(f"attrs.device_index[{e}] must be an integer; got {_short(d)}")
            _int64(d, f"attrs.device_index[{e}]")
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


def _entry_label(e, node_of, names, num_outputs) -> str:
    n = node_of[e]
    return f"node {n} {names[n]!r} output {e - _first(num_outputs, n)} (entry {e})"


def _shape_nbytes(e, shape, dtype, elem, node_of, names, num_outputs) -> int:
    """Bytes of entry ``e``: ``elem`` bytes per element times the dims of ``shape``.

    Raises
    ------
    GraphError
        A shape that is not a list of non-negative ints, a dim or a byte size past
        ``2**63 - 1`` (the planner's sizes are int64). The product saturates at ``2**63``,
        so a long shape of large dims costs no big-integer arithmetic.
    """
    if not isinstance(shape, list):
        _bad_shape(e, shape, node_of, names, num_outputs)
    size = elem
    for d in shape:
        if type(d) is not int or d < 0:
            _bad_shape(e, shape, node_of, names, num_outputs)
        if d > INT64_MAX:
            raise GraphError(f"{_entry_label(e, node_of, names, num_outputs)}: shape dimension {_short(d)} is out of "
                             "the int64 range [-2**63, 2**63)")
        size = min(size * d, INT64_MAX + 1)
    if size > INT64_MAX:
        raise GraphError(f"{_entry_label(e, node_of, names, num_outputs)}: shape {_short(shape)} of {dtype} "
                         "is 2**63 bytes or more")
    return size


def _bad_shape(e, shape, node_of, names, num_outputs):
    where = _entry_label(e, node_of, names, num_outputs)
    entry_nbytes(shape, "float32", where)  # raises the symbolic/negative-shape message
    raise GraphError(f"{where}: shape must be a list of ints; got {_short(shape)}")
