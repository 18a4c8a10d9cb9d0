"""A graph-executor graph as flat arrays: what Relay's GraphPlanMemory plans.

Design
------
TVM's graph executor runs a list of *nodes* in order. A node is an input (``"null"``: a graph
input, a bound parameter or a constant) or an operator (``"tvm_op"``) with inputs and
``num_outputs`` outputs; the reshape-only operator ``__nop`` runs nothing and shares its
input's storage. Every node output is a *node entry*, numbered ``node_row_ptr[n] + k``, and
the per-entry attributes (shape, dtype, device, storage scope) are indexed by entry. The
node order is the order Relay's planner visited the graph (spec
relay_graph_plan_memory.md §2), so planning is one walk over the nodes in order.

:class:`GraphModel` holds that graph as read-only numpy arrays (CSR inputs, entry sizes
already computed), plus the source JSON document when it came from a file, so that a plan
can be written back into the same file. It is built once and validated once, by
:meth:`GraphModel.from_arrays` (vectorised checks, so a million-entry graph costs a few
numpy passes) or by :func:`make_graph` (Python lists, for tests and small graphs). Readers
(:mod:`memcore_py.frontend.graph_json`, :mod:`memcore_py.planning.graph_from_ir`) produce it;
:mod:`memcore_py.planning.graph_plan_memory` plans it.

Every user-reachable problem raises :class:`GraphError` naming the node.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import IRError
from ..ir.types import dtype_bytes

__all__ = [
    "GraphError",
    "GraphModel",
    "make_graph",
    "KIND_INPUT",
    "KIND_OP",
    "KIND_NOP",
    "DEFAULT_SCOPE",
    "NO_DEVICE",
    "entry_nbytes",
    "is_texture_scope",
]

#: Node kinds.
KIND_INPUT = 0
"""``"null"``: graph input, parameter or constant (a storage of its own, never reused)."""
KIND_OP = 1
"""``"tvm_op"``: a fused function call; each output is a token."""
KIND_NOP = 2
"""``"tvm_op"`` with ``func_name == "__nop"``: reshape-only, shares its input's storage."""

#: Scope of an entry with none given.
DEFAULT_SCOPE = "global"
#: Device of an entry with none given (Relay's device type of an unplanned expression).
NO_DEVICE = -1


class GraphError(IRError):
    """A graph (graph-executor JSON or graph-form IR) that cannot be planned.

    The message names the node (index and name) or the attribute at fault.
    """


def is_texture_scope(scope: str) -> bool:
    """Relay's ``IsTextureStorage``: the scope names a 2-D texture (``global.texture*``)."""
    return "texture" in scope


def entry_nbytes(shape, dtype: str, where: str) -> int:
    """Relay's ``TokenAllocator1D::GetMemorySize``: ``prod(shape) * ceil(bits * lanes / 8)``.

    Parameters
    ----------
    shape : sequence of int
        Constant dims, each ``>= 0``.
    dtype : str
        A TVM dtype (``float32``, ``int8``, ``float16x4``, ``bool``, ...).
    where : str
        Names the entry in error messages (``"node 3 'conv' output 0"``).

    Raises
    ------
    GraphError
        Unknown dtype, or a dim that is not a non-negative integer (Relay refuses symbolic
        shapes: "Cannot allocate memory symbolic tensor shape").
    """
    try:
        elem = dtype_bytes(dtype) if isinstance(dtype, str) else None
    except IRError:
        elem = None
    if elem is None:
        raise GraphError(f"{where}: unknown dtype {dtype!r}")
    return _shape_size(shape, where) * elem


def _shape_size(shape, where: str) -> int:
    if not isinstance(shape, (list, tuple)):
        raise GraphError(f"{where}: shape must be a list of ints; got {shape!r}")
    size = 1
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
            raise GraphError(
                f"{where}: shape {list(shape)!r} is symbolic or negative; Relay's "
                "GraphPlanMemory plans constant shapes only (\"Cannot allocate memory "
                "symbolic tensor shape\")"
            )
        size *= int(d)
    return size


def _readonly(a, dtype=np.int64):
    a = np.ascontiguousarray(a, dtype=dtype)
    if a.flags.writeable and a.base is not None:
        a = a.copy()
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class GraphModel:
    """A graph-executor graph, flat and validated (build with :meth:`from_arrays` or
    :func:`make_graph`). Arrays are read-only.

    Node ``n`` has outputs (entries) ``node_row_ptr[n] .. node_row_ptr[n+1]-1`` and inputs
    ``input_entry[input_ptr[n] .. input_ptr[n+1]-1]`` (entries of earlier nodes).
    """

    node_kind: np.ndarray = field(repr=False)
    """int8[n_nodes]: KIND_INPUT, KIND_OP or KIND_NOP."""
    node_row_ptr: np.ndarray = field(repr=False)
    """int64[n_nodes + 1]: first entry of each node (CSR over entries)."""
    input_ptr: np.ndarray = field(repr=False)
    """int64[n_nodes + 1]: first input slot of each node (CSR over ``input_entry``)."""
    input_entry: np.ndarray = field(repr=False)
    """int64[n_inputs]: the entry each input slot reads, in argument order."""
    head_entry: np.ndarray = field(repr=False)
    """int64[n_heads]: the graph outputs (entries), in order."""
    entry_bytes: np.ndarray = field(repr=False)
    """int64[n_entries]: bytes of each entry (Relay's size formula)."""
    entry_device: np.ndarray = field(repr=False)
    """int64[n_entries]: device (type) index of each entry; NO_DEVICE when not given."""
    entry_scope: np.ndarray = field(repr=False)
    """int64[n_entries]: index into ``scope_names`` of each entry's storage scope."""
    scope_names: tuple = ("global",)
    """Storage scope names (``"global"``, ``"global.texture"``, ...)."""
    node_names: list = field(default_factory=list, repr=False)
    """Name of each node (messages, reports)."""
    entry_shape: list | None = field(default=None, repr=False)
    """Shape of each entry (tuple of ints); needed for texture scopes, else may be None."""
    entry_dtype: list | None = field(default=None, repr=False)
    """dtype of each entry; needed for texture scopes, else may be None."""
    name: str = "graph"
    """A label (file or model name)."""
    has_device: bool = False
    """Whether devices were given (``device_index`` in the JSON)."""
    doc: dict | None = field(default=None, repr=False)
    """The JSON document the graph was read from (written back by ``to_graph_json``)."""

    @property
    def n_nodes(self) -> int:
        return int(self.node_kind.shape[0])

    @property
    def n_entries(self) -> int:
        return int(self.entry_bytes.shape[0])

    def node_label(self, n: int) -> str:
        """``node 3 'conv2d'`` for messages."""
        name = self.node_names[n] if n < len(self.node_names) else ""
        return f"node {n} {name!r}"

    def node_of_entry(self) -> np.ndarray:
        """int64[n_entries]: the node that produces each entry."""
        return np.repeat(np.arange(self.n_nodes, dtype=np.int64), np.diff(self.node_row_ptr))

    @property
    def has_texture(self) -> bool:
        return any(is_texture_scope(s) for s in self.scope_names)

    def __repr__(self):
        return f"GraphModel({self.name!r}, n_nodes={self.n_nodes}, n_entries={self.n_entries})"

    @classmethod
    def from_arrays(
        cls,
        node_kind,
        num_outputs,
        input_ptr,
        input_node,
        input_index,
        head_node,
        head_index,
        entry_bytes,
        *,
        entry_device=None,
        entry_scope=None,
        scope_names=(DEFAULT_SCOPE,),
        node_names=None,
        entry_shape=None,
        entry_dtype=None,
        name="graph",
        doc=None,
    ) -> "GraphModel":
        """Validate flat arrays and build a :class:`GraphModel`.

        Parameters
        ----------
        node_kind : array of shape (n_nodes,), int
            KIND_INPUT / KIND_OP / KIND_NOP per node, in execution (planning) order.
        num_outputs : array of shape (n_nodes,), int
            Outputs of each node (``>= 0``; 1 for KIND_NOP).
        input_ptr : array of shape (n_nodes + 1,), int
            CSR pointer into ``input_node`` / ``input_index``.
        input_node, input_index : arrays of shape (n_inputs,), int
            Node and output index each input slot reads (an earlier node).
        head_node, head_index : arrays of shape (n_heads,), int
            Graph outputs.
        entry_bytes : array of shape (n_entries,), int
            Bytes of each entry, ``n_entries = sum(num_outputs)``.
        entry_device : array of shape (n_entries,), int, optional
            Device index of each entry (default: NO_DEVICE everywhere).
        entry_scope : array of shape (n_entries,), int, optional
            Index into ``scope_names`` (default: 0).
        scope_names : sequence of str
            Storage scopes.
        node_names : list of str, optional
            Default ``node<i>``.
        entry_shape, entry_dtype : lists, optional
            Shapes and dtypes per entry; required when a scope is a texture scope.
        name : str
            Label of the graph.
        doc : dict, optional
            Source JSON document.

        Raises
        ------
        GraphError
            Any inconsistency, naming the first offending node: a wrong length, an input
            of a later node or of itself (a cycle: the order is not a topological one), an
            output index out of range, an input node with inputs, a ``__nop`` without
            exactly one input and one output, a negative size, a head out of range.
        """
        kind = np.ascontiguousarray(node_kind, dtype=np.int8)
        n_nodes = kind.shape[0]
        names = list(node_names) if node_names is not None else [f"node{i}" for i in range(n_nodes)]
        if len(names) != n_nodes:
            raise GraphError(f"{len(names)} node names for {n_nodes} nodes")

        def label(n):
            return f"node {int(n)} {names[int(n)]!r}"

        n_out = np.ascontiguousarray(num_outputs, dtype=np.int64)
        in_ptr = np.ascontiguousarray(input_ptr, dtype=np.int64)
        in_node = np.ascontiguousarray(input_node, dtype=np.int64)
        in_index = np.ascontiguousarray(input_index, dtype=np.int64)
        if n_out.shape != (n_nodes,) or in_ptr.shape != (n_nodes + 1,):
            raise GraphError("num_outputs / input_ptr do not match the number of nodes")
        bad = np.flatnonzero((kind < KIND_INPUT) | (kind > KIND_NOP))
        if bad.size:
            raise GraphError(f"{label(bad[0])}: unknown node kind {int(kind[bad[0]])}")
        bad = np.flatnonzero(n_out < 0)
        if bad.size:
            raise GraphError(f"{label(bad[0])}: num_outputs must be >= 0; got {int(n_out[bad[0]])}")
        if in_ptr[0] != 0 or np.any(np.diff(in_ptr) < 0) or in_ptr[-1] != in_node.shape[0] \
                or in_index.shape != in_node.shape:
            raise GraphError("input_ptr must be a CSR pointer over the input slots")
        n_in = np.diff(in_ptr)
        bad = np.flatnonzero((kind == KIND_INPUT) & (n_in > 0))
        if bad.size:
            raise GraphError(f"{label(bad[0])}: an input node (op 'null') has inputs")
        bad = np.flatnonzero((kind == KIND_NOP) & ((n_in != 1) | (n_out != 1)))
        if bad.size:
            raise GraphError(
                f"{label(bad[0])}: a reshape-only '__nop' must have one input and one output; "
                f"got {int(n_in[bad[0]])} inputs, {int(n_out[bad[0]])} outputs"
            )
        row_ptr = np.zeros(n_nodes + 1, dtype=np.int64)
        np.cumsum(n_out, out=row_ptr[1:])
        n_entries = int(row_ptr[-1])
        consumer = np.repeat(np.arange(n_nodes, dtype=np.int64), n_in)
        bad = np.flatnonzero((in_node < 0) | (in_node >= consumer))
        if bad.size:
            s = bad[0]
            c, src = consumer[s], int(in_node[s])
            why = "is not a node" if src < 0 or src >= n_nodes else (
                "is itself: a cycle" if src == c else "comes later: a cycle, or nodes not in execution order")
            raise GraphError(f"{label(c)}: input {s - int(in_ptr[c])} reads node {src}, which {why}")
        bad = np.flatnonzero((in_index < 0) | (in_index >= n_out[in_node]))
        if bad.size:
            s = bad[0]
            c = consumer[s]
            raise GraphError(
                f"{label(c)}: input {s - int(in_ptr[c])} reads output {int(in_index[s])} of "
                f"{label(in_node[s])}, which has {int(n_out[in_node[s]])} outputs"
            )
        h_node = np.ascontiguousarray(head_node, dtype=np.int64)
        h_index = np.ascontiguousarray(head_index, dtype=np.int64)
        if h_node.shape != h_index.shape or h_node.ndim != 1:
            raise GraphError("heads must be a list of [node, index, version]")
        bad = np.flatnonzero((h_node < 0) | (h_node >= n_nodes))
        if bad.size:
            raise GraphError(f"head {int(bad[0])} names node {int(h_node[bad[0]])}, out of range [0, {n_nodes})")
        bad = np.flatnonzero((h_index < 0) | (h_index >= n_out[h_node]))
        if bad.size:
            h = bad[0]
            raise GraphError(
                f"head {int(h)} reads output {int(h_index[h])} of {label(h_node[h])}, "
                f"which has {int(n_out[h_node[h]])} outputs"
            )
        nbytes = np.ascontiguousarray(entry_bytes, dtype=np.int64)
        if nbytes.shape != (n_entries,):
            raise GraphError(
                f"{nbytes.shape[0] if nbytes.ndim == 1 else nbytes.shape} entry sizes for {n_entries} entries"
            )
        bad = np.flatnonzero(nbytes < 0)
        if bad.size:
            raise GraphError(f"entry {int(bad[0])}: negative size {int(nbytes[bad[0]])}")
        if entry_device is None:
            device = np.full(n_entries, NO_DEVICE, dtype=np.int64)
            has_device = False
        else:
            device = np.ascontiguousarray(entry_device, dtype=np.int64)
            has_device = True
            if device.shape != (n_entries,):
                raise GraphError(f"device_index has {device.shape[0]} values for {n_entries} entries")
        scope_names = tuple(scope_names)
        if entry_scope is None:
            scope = np.zeros(n_entries, dtype=np.int64)
        else:
            scope = np.ascontiguousarray(entry_scope, dtype=np.int64)
            if scope.shape != (n_entries,) or (n_entries and (scope.min() < 0 or scope.max() >= len(scope_names))):
                raise GraphError(f"storage scopes must be {n_entries} indices into {list(scope_names)}")
        if any(is_texture_scope(s) for s in scope_names):
            if entry_shape is None or entry_dtype is None:
                raise GraphError("a graph with texture scopes needs the shape and dtype of every entry")
        if entry_shape is not None and len(entry_shape) != n_entries:
            raise GraphError(f"{len(entry_shape)} shapes for {n_entries} entries")
        if entry_dtype is not None and len(entry_dtype) != n_entries:
            raise GraphError(f"{len(entry_dtype)} dtypes for {n_entries} entries")
        in_entry = row_ptr[in_node] + in_index
        heads = row_ptr[h_node] + h_index
        return cls(
            node_kind=_readonly(kind, np.int8),
            node_row_ptr=_readonly(row_ptr),
            input_ptr=_readonly(in_ptr),
            input_entry=_readonly(in_entry),
            head_entry=_readonly(heads),
            entry_bytes=_readonly(nbytes),
            entry_device=_readonly(device),
            entry_scope=_readonly(scope),
            scope_names=scope_names,
            node_names=names,
            entry_shape=entry_shape,
            entry_dtype=entry_dtype,
            name=name,
            has_device=has_device,
            doc=doc,
        )


def make_graph(nodes, heads, *, name="graph", devices=None, scopes=None, doc=None) -> GraphModel:
    """Build a :class:`GraphModel` from Python lists (tests, small graphs, readers).

    Parameters
    ----------
    nodes : list of dict
        In execution order. Each has ``"kind"`` (``"input"``, ``"op"`` or ``"nop"``), optional
        ``"name"``, ``"inputs"`` (list of ``(node, index)``; default none) and ``"outputs"``
        (list of ``(shape, dtype)``, one per output).
    heads : list of (node, index)
        Graph outputs.
    name : str
        Label.
    devices : list of int, optional
        Device index per entry (in entry order).
    scopes : list of str, optional
        Storage scope per entry (default ``"global"``).
    doc : dict, optional
        Source JSON document (kept for ``to_graph_json``).

    Raises
    ------
    GraphError
        As :meth:`GraphModel.from_arrays`, plus unknown kinds, dtypes and symbolic shapes.

    Examples
    --------
    >>> g = make_graph(
    ...     [{"kind": "input", "name": "x", "outputs": [((4,), "float32")]},
    ...      {"kind": "op", "name": "exp", "inputs": [(0, 0)], "outputs": [((4,), "float32")]}],
    ...     heads=[(1, 0)])
    >>> g.n_nodes, g.n_entries, g.entry_bytes.tolist()
    (2, 2, [16, 16])
    """
    kinds = {"input": KIND_INPUT, "op": KIND_OP, "nop": KIND_NOP}
    node_kind, num_outputs, in_ptr, in_node, in_index, names = [], [], [0], [], [], []
    shapes, dtypes, nbytes = [], [], []
    for i, nd in enumerate(nodes):
        nm = str(nd.get("name", f"node{i}"))
        names.append(nm)
        k = nd.get("kind")
        if k not in kinds:
            raise GraphError(f"node {i} {nm!r}: kind must be one of {sorted(kinds)}; got {k!r}")
        node_kind.append(kinds[k])
        for j, inp in enumerate(nd.get("inputs", ())):
            try:
                src, idx = int(inp[0]), int(inp[1])
            except (TypeError, ValueError, IndexError):
                raise GraphError(f"node {i} {nm!r}: input {j} must be [node, index]; got {inp!r}") from None
            in_node.append(src)
            in_index.append(idx)
        in_ptr.append(len(in_node))
        outs = nd.get("outputs", ())
        num_outputs.append(len(outs))
        for k_out, (shape, dtype) in enumerate(outs):
            where = f"node {i} {nm!r} output {k_out}"
            nbytes.append(entry_nbytes(shape, dtype, where))
            shapes.append(tuple(int(d) for d in shape))
            dtypes.append(dtype)
    scope_names, scope_ids = [DEFAULT_SCOPE], None
    if scopes is not None:
        index = {DEFAULT_SCOPE: 0}
        scope_ids = [index.setdefault(s, len(index)) for s in scopes]
        scope_names = list(index)
    return GraphModel.from_arrays(
        node_kind, num_outputs, in_ptr, in_node, in_index,
        [int(h[0]) for h in heads], [int(h[1]) for h in heads], nbytes,
        entry_device=devices, entry_scope=scope_ids, scope_names=scope_names, node_names=names,
        entry_shape=shapes, entry_dtype=dtypes, name=name, doc=doc,
    )

