"""The plan of a graph-executor graph: :class:`GraphMemoryPlan`, a :class:`MemoryPlan`.

A graph plan is a :class:`~memcore_py.planning.memory_plan.MemoryPlan` whose tokens are the
graph's node entries (token ``e`` = entry ``e``; entries a ``__nop`` aliases share their
input's storage), with the per-entry figures Relay reports beside it:

- ``storage_id``: Relay's storage id (arena mode: the Relay-exact ids are kept, and each
  entry also gets an arena and a byte offset in it);
- ``entry_device``: the device type Relay reports (that of the storage's first token);
- ``first_bytes``: the size Relay's per-expression plan reports, which is the byte size of
  the *first* tensor that created the storage (0 for a texture), and ``storage_bytes``: the
  storage's final size, the one the graph executor allocates.

:meth:`GraphMemoryPlan.to_graph_json` writes the graph back with these storage ids, the file
a graph executor loads; in arena mode it adds ``storage_arena``, ``storage_offset`` (per
entry) and ``arena_bytes`` (per arena) as ``list_int`` attrs, which a stock graph executor
skips and a runtime that packs one buffer per device reads.

What a report reads but planning does not need is derived when first read: the max-live
``lower_bound`` (the planner may pass a function that computes it; a small graph plans in a
few microseconds and its bound costs ten times that), and each storage's device and scope
(from ``storage_creator``, the entry that created it).
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

import numpy as np

from .graph_model import KIND_INPUT, KIND_NOP, GraphModel
from .memory_plan import MemoryPlan

__all__ = ["GraphMemoryPlan"]


@dataclass(eq=False)
class GraphMemoryPlan(MemoryPlan):
    """Relay's GraphPlanMemory result (and its arena variant) for a :class:`GraphModel`.

    Inherited fields (:class:`MemoryPlan`): ``mode`` (``"relay"`` or ``"arena"``),
    ``storages`` (one :class:`StoragePlan` per Relay storage id, or per arena),
    ``tok_storage`` / ``tok_offset`` (per entry: index into ``storages`` and byte offset),
    ``tvm_bytes`` (Relay's flat shared-object total), ``planned_bytes`` (this plan's flat
    bytes), ``lower_bound`` (max-live bytes of the flat tensors, summed over (device, scope)
    pools), ``function_names`` (the graph's name).

    Arrays are per entry unless named ``storage_*``.
    """

    graph: GraphModel | None = field(default=None, repr=False)
    """The planned graph."""
    storage_id: np.ndarray | None = field(default=None, repr=False)
    """int64[n_entries]: Relay's storage id of each entry."""
    entry_device: np.ndarray | None = field(default=None, repr=False)
    """int64[n_entries]: device type of each entry's storage token (Relay's ``device_types``)."""
    first_bytes: np.ndarray | None = field(default=None, repr=False)
    """int64[n_entries]: Relay's ``storage_sizes``: bytes of the storage's first tensor (0 for
    a texture)."""
    storage_bytes: np.ndarray | None = field(default=None, repr=False)
    """int64[n_entries]: final bytes of each entry's Relay storage."""
    relay_storage_bytes: np.ndarray | None = field(default=None, repr=False)
    """int64[n_relay_storages]: bytes of each Relay storage (textures: width x height x
    channel x element bytes of the final texture)."""
    storage_creator: np.ndarray | None = field(default=None, repr=False)
    """int64[n_relay_storages]: the entry that created each Relay storage (for a texture, the
    entry of the token that owns it last); its device and scope are the storage's."""
    texture_shapes: dict = field(default_factory=dict, repr=False)
    """Relay storage id -> (width, height, channel) of each texture."""
    texture_bytes: int = 0
    """Bytes of the textures (planned by Relay's 2-D rule in both modes)."""
    pinned_bytes: int = 0
    """Bytes of inputs, parameters and constants (storages no plan can share)."""
    arena_of: np.ndarray | None = field(default=None, repr=False)
    """Arena mode: int64[n_entries], the arena of each entry (-1 for a texture)."""
    arena_bytes: list | None = None
    """Arena mode: bytes of each arena (one per (device, scope) pool of flat tensors)."""
    seconds: float = 0.0
    """Wall time of planning."""

    @property
    def lower_bound(self) -> int:
        """Max-live bytes of the flat tensors, summed over (device, scope) pools (computed on
        first read when the planner passed a function)."""
        value = self._lower_bound
        if callable(value):
            value = self._lower_bound = int(value())
        return value

    @lower_bound.setter
    def lower_bound(self, value) -> None:
        self._lower_bound = value

    @property
    def relay_storage_device(self) -> np.ndarray:
        """int64[n_relay_storages]: device of each Relay storage."""
        return self.graph.entry_device[self.storage_creator]

    @property
    def relay_storage_scope(self) -> list:
        """Scope of each Relay storage."""
        names = self.graph.scope_names
        return [names[i] for i in self.graph.entry_scope[self.storage_creator].tolist()]

    @property
    def n_entries(self) -> int:
        return int(self.storage_id.shape[0])

    @property
    def n_relay_storages(self) -> int:
        return int(self.relay_storage_bytes.shape[0])

    @property
    def relay_bytes(self) -> int:
        """Relay's shared-object total: bytes of its flat storages (``TotalAllocBytes``)."""
        return self.tvm_bytes

    def summary(self) -> dict:
        """The figures a report prints, as plain Python values."""
        g = self.graph
        return {
            "name": g.name if g is not None else "graph",
            "mode": self.mode,
            "n_nodes": g.n_nodes if g is not None else None,
            "n_entries": self.n_entries,
            "n_storages": self.n_relay_storages,
            "relay_bytes": self.relay_bytes,
            "texture_bytes": self.texture_bytes,
            "pinned_bytes": self.pinned_bytes,
            "arena_bytes": None if self.arena_bytes is None else int(sum(self.arena_bytes)),
            "n_arenas": None if self.arena_bytes is None else len(self.arena_bytes),
            "lower_bound": self.lower_bound,
            "seconds": self.seconds,
        }

    def to_graph_json(self, *, indent=None) -> str:
        """The graph as graph-executor JSON text with this plan's ``storage_id``.

        The source document (when the graph was read from JSON) is copied and only its
        ``attrs`` change: ``storage_id`` (Relay-exact ids), and in arena mode the extra
        ``storage_arena``, ``storage_offset`` and ``arena_bytes`` attrs. A graph built from
        IR gets a document written from the model.
        """
        g = self.graph
        doc = copy.deepcopy(g.doc) if g is not None and g.doc is not None else _doc_from_model(g)
        attrs = doc.setdefault("attrs", {})
        attrs["storage_id"] = ["list_int", self.storage_id.tolist()]
        if self.mode == "arena" and self.arena_of is not None:
            attrs["storage_arena"] = ["list_int", self.arena_of.tolist()]
            attrs["storage_offset"] = ["list_int", self.tok_offset.tolist()]
            attrs["arena_bytes"] = ["list_int", [int(b) for b in self.arena_bytes]]
        return json.dumps(doc, indent=indent)


def _doc_from_model(g: GraphModel) -> dict:
    """A graph-executor JSON document for a graph that has none (built from IR)."""
    nodes = []
    row_ptr, in_ptr, in_entry = g.node_row_ptr, g.input_ptr, g.input_entry
    node_of = g.node_of_entry()
    for n in range(g.n_nodes):
        name = g.node_names[n]
        if g.node_kind[n] == KIND_INPUT:
            nodes.append({"op": "null", "name": name, "inputs": []})
            continue
        ins = [[int(node_of[e]), int(e - row_ptr[node_of[e]]), 0] for e in in_entry[in_ptr[n]:in_ptr[n + 1]]]
        func = "__nop" if g.node_kind[n] == KIND_NOP else name
        nodes.append({
            "op": "tvm_op", "name": name,
            "attrs": {"func_name": func, "num_inputs": str(len(ins)),
                      "num_outputs": str(int(row_ptr[n + 1] - row_ptr[n])), "flatten_data": "0"},
            "inputs": ins,
        })
    heads = [[int(node_of[e]), int(e - row_ptr[node_of[e]]), 0] for e in g.head_entry]
    attrs = {
        "shape": ["list_shape", [list(s) for s in g.entry_shape]],
        "dltype": ["list_str", list(g.entry_dtype)],
    }
    if g.has_device:
        attrs["device_index"] = ["list_int", g.entry_device.tolist()]
    if len(g.scope_names) > 1:
        attrs["storage_scope"] = ["list_str", [g.scope_names[i] for i in g.entry_scope]]
    return {
        "nodes": nodes,
        "arg_nodes": [int(n) for n in np.flatnonzero(g.node_kind == KIND_INPUT)],
        "heads": heads,
        "attrs": attrs,
        "node_row_ptr": g.node_row_ptr.tolist(),
    }
