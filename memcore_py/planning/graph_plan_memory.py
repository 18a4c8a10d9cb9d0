"""Relay's ``GraphPlanMemory`` on a graph-executor graph, exact, and its arena mode.

Port of TVM v0.19 ``StorageAllocator`` (src/relay/backend/graph_plan_memory.cc) with
``TokenAllocator1D`` / ``TokenAllocator2D`` (token_allocator.cc); algorithm in
spec tvm_passes.md §1.8, behaviours in relay_graph_plan_memory.md §2-3.

Design
------
Stages: :func:`relay_token_program` (graph -> event program, vectorised) ->
:func:`memcore.plan_tokens` with ``release_zero_ref=True`` (the flat tokens) -> the 2-D
allocator (:mod:`.texture`, texture tokens only) -> storage ids merged in creation order ->
:class:`~.graph_memory_plan.GraphMemoryPlan`; arena mode then packs each (device, scope)
pool of flat tokens with :func:`memcore.plan_offsets`.

How Relay's rules become an event program (nodes in order, which is Relay's visiting order):

- Every node entry is a token, except the output of a ``__nop`` (reshape-only), which *is*
  its input's token (``ReuseInputToken``; chains resolved by pointer jumping). A token's
  reference count is the number of input slots reading any of its entries, plus one per
  graph head (heads are never freed).
- Inputs, parameters and constants (``"null"`` nodes) are requested where they appear, in a
  pool class of their own that never gets a free storage (their count never reaches 0):
  Relay's ``Alloc`` with ``can_realloc=false``, fresh storage, never reused.
- An operator node: ``EV_REQUEST`` of each output in order; then ``EV_DECREF`` of each
  input slot in order. A 0-reference output is released at once: for a single output that
  is ``release_zero_ref``; for a multi-output node Relay first requests *all* outputs and then
  releases the 0-reference ones, so those get a count of 1 and an explicit ``EV_DECREF``
  right after the node's requests (otherwise a later output could reuse an earlier one).
- A ``__nop`` node: ``EV_DECREF`` of its input (its own readers were added to the count).
- Pool class of a flat token: (device, scope). Relay keeps one free list for all dtypes
  and skips incompatible (other-device) tokens while scanning its window; per-device free
  lists give the same picks.

Storage ids: Relay numbers storages in creation order across the 1-D and 2-D allocators.
The flat plan does not depend on textures, so it runs first; each storage's creating entry
(its first token) fixes its place, and texture storages created by the 2-D allocator (which
needs the real ids: its free list iterates by id hash) are numbered in between.

Left out: Relay's per-expression map for tuples and let-bound vars (they carry the tokens
of their fields; a graph has only node entries), ``If`` (Relay refuses it), symbolic shapes
(Relay refuses them; the graph reader raises), and device checks between textures (Relay's
2-D allocator does not look at devices, and neither does this port).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import memcore

from ..ir.prim import IntImm
from ..ir.types import dtype_bytes
from .graph_memory_plan import GraphMemoryPlan
from .graph_model import KIND_INPUT, KIND_NOP, KIND_OP, GraphError, GraphModel, is_texture_scope
from .memory_plan import StoragePlan
from .texture import Token2D, TokenAllocator2D

__all__ = ["graph_plan_memory", "relay_token_program", "RelayTokenProgram", "GRAPH_MODES"]

#: Planning modes: Relay-exact storage ids, or one arena per (device, scope) pool.
GRAPH_MODES = ("relay", "arena")


@dataclass(frozen=True, eq=False)
class RelayTokenProgram:
    """The event program of a graph under Relay's rules (arguments of :func:`memcore.plan_tokens`).

    Token ``t`` is entry ``t``; entries aliased by a ``__nop`` and texture entries are
    never requested here.
    """

    tok_bytes: np.ndarray
    tok_pool: np.ndarray
    tok_refs: np.ndarray
    ev_kind: np.ndarray
    ev_tok: np.ndarray
    entry_tok: np.ndarray
    """int64[n_entries]: the token of each entry (itself, or the entry a ``__nop`` aliases)."""
    proto_refs: np.ndarray
    """int64[n_entries]: Relay's Init count of each entry (readers + heads)."""
    is_texture: np.ndarray
    """bool[n_entries]: the entry's token lives in a texture scope."""
    requested: np.ndarray
    """int64[n_req]: the flat tokens in request order (ascending)."""
    pinned: np.ndarray
    """bool[n_entries]: input/parameter/constant entries."""
    pool_device: np.ndarray
    """int64[n_pools + 1]: device of each pool class (the last one is the pinned class)."""
    pool_scope: np.ndarray
    """int64[n_pools + 1]: scope index of each pool class."""


def _resolve_aliases(graph: GraphModel) -> np.ndarray:
    """Token of each entry: itself, or (through ``__nop`` chains) the entry it aliases."""
    tok = np.arange(graph.n_entries, dtype=np.int64)
    nops = np.flatnonzero(graph.node_kind == KIND_NOP)
    if nops.size:
        out_e = graph.node_row_ptr[nops]
        tok[out_e] = graph.input_entry[graph.input_ptr[nops]]
        while True:  # pointer jumping: O(n log depth)
            nxt = tok[tok]
            if np.array_equal(nxt, tok):
                break
            tok = nxt
    return tok


def _within_rank(owner: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Rank of each item among the items of its owner (items sorted by owner)."""
    ptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return np.arange(owner.shape[0], dtype=np.int64) - ptr[owner]


def relay_token_program(graph: GraphModel) -> RelayTokenProgram:
    """Build the event program of ``graph`` under Relay's GraphPlanMemory rules.

    Parameters
    ----------
    graph : GraphModel

    Returns
    -------
    RelayTokenProgram
        Ready for ``memcore.plan_tokens(..., release_zero_ref=True)`` (see the module
        docstring for the encoding).

    Notes
    -----
    Vectorised: O(n_entries + n_inputs) numpy work, plus a ``np.unique`` over
    (device, scope) keys when there is more than one pool.
    """
    g = graph
    n_nodes, n_entries = g.n_nodes, g.n_entries
    kind = g.node_kind
    n_out = np.diff(g.node_row_ptr)
    n_in = np.diff(g.input_ptr)
    node_of = np.repeat(np.arange(n_nodes, dtype=np.int64), n_out)
    consumer = np.repeat(np.arange(n_nodes, dtype=np.int64), n_in)
    tok = _resolve_aliases(g)
    entries = np.arange(n_entries, dtype=np.int64)

    proto_refs = np.bincount(g.input_entry, minlength=n_entries).astype(np.int64)
    if g.head_entry.size:
        proto_refs += np.bincount(g.head_entry, minlength=n_entries)
    slot_tok = tok[g.input_entry]
    refs = np.bincount(slot_tok, minlength=n_entries).astype(np.int64)
    if g.head_entry.size:
        refs += np.bincount(tok[g.head_entry], minlength=n_entries)
    pinned = kind[node_of] == KIND_INPUT
    refs[pinned] += 1

    tex_scope = np.array([is_texture_scope(s) for s in g.scope_names], dtype=bool)
    is_texture = tex_scope[g.entry_scope][tok] if tex_scope.any() else np.zeros(n_entries, dtype=bool)

    # Pool classes: (device, scope) of flat tokens; the pinned class last.
    dev, scope = g.entry_device, g.entry_scope
    if n_entries == 0 or (dev.min() == dev.max() and scope.min() == scope.max()):
        pool = np.zeros(n_entries, dtype=np.int64)
        pool_device = dev[:1].astype(np.int64)
        pool_scope = scope[:1].astype(np.int64)
    else:
        n_scopes = len(g.scope_names)
        key = (dev - dev.min()) * n_scopes + scope
        uniq, pool = np.unique(key, return_inverse=True)
        pool = pool.astype(np.int64).reshape(-1)
        pool_device = uniq // n_scopes + dev.min()
        pool_scope = uniq % n_scopes
    n_pools = int(pool_device.shape[0])
    pool = np.where(pinned, n_pools, pool)
    pool_device = np.append(pool_device, -1)
    pool_scope = np.append(pool_scope, 0)

    # Events per node: requests (outputs), extra decrefs (0-ref outputs of multi-output
    # nodes), decrefs (input slots), each group in order.
    req_mask = (tok == entries) & ~is_texture
    requested = np.flatnonzero(req_mask)
    extra_mask = req_mask & (refs == 0) & (n_out[node_of] > 1)
    extra = np.flatnonzero(extra_mask)
    refs[extra] = 1
    dec_slots = np.flatnonzero(~is_texture[slot_tok]) if is_texture.any() else np.arange(slot_tok.shape[0])

    req_node = node_of[requested]
    extra_node = node_of[extra]
    dec_node = consumer[dec_slots]
    n_req = np.bincount(req_node, minlength=n_nodes)
    n_extra = np.bincount(extra_node, minlength=n_nodes)
    n_dec = np.bincount(dec_node, minlength=n_nodes)
    ev_ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(n_req + n_extra + n_dec, out=ev_ptr[1:])
    n_events = int(ev_ptr[-1])
    ev_kind = np.empty(n_events, dtype=np.int8)
    ev_tok = np.empty(n_events, dtype=np.int64)

    pos = ev_ptr[req_node] + _within_rank(req_node, n_req)
    ev_kind[pos] = memcore.EV_REQUEST
    ev_tok[pos] = requested
    pos = ev_ptr[extra_node] + n_req[extra_node] + _within_rank(extra_node, n_extra)
    ev_kind[pos] = memcore.EV_DECREF
    ev_tok[pos] = extra
    pos = ev_ptr[dec_node] + n_req[dec_node] + n_extra[dec_node] + _within_rank(dec_node, n_dec)
    ev_kind[pos] = memcore.EV_DECREF
    ev_tok[pos] = slot_tok[dec_slots]

    return RelayTokenProgram(
        tok_bytes=g.entry_bytes, tok_pool=pool, tok_refs=refs, ev_kind=ev_kind, ev_tok=ev_tok,
        entry_tok=tok, proto_refs=proto_refs, is_texture=is_texture, requested=requested,
        pinned=pinned, pool_device=pool_device, pool_scope=pool_scope,
    )


@dataclass
class _TexturePlan:
    entry_sid: dict
    """token entry -> storage id."""
    creators: list
    """creating entry of each texture storage, ascending."""
    storages: dict
    """storage id -> (bytes, device, scope name, (width, height, channel))."""
    owner_entry: dict
    """token entry -> entry whose token object it maps to (for the device)."""


def _plan_textures(g: GraphModel, prog: RelayTokenProgram, flat_creators: np.ndarray) -> _TexturePlan:
    """Run Relay's 2-D allocator over the texture tokens, in node order, with the real ids."""
    alloc = TokenAllocator2D()
    tok, tex = prog.entry_tok, prog.is_texture
    row_ptr, in_ptr, in_entry = g.node_row_ptr, g.input_ptr, g.input_entry
    objs: dict = {}
    creators: list = []
    owner: dict = {}

    def make(e):
        where = f"{g.node_label(int(np.searchsorted(row_ptr, e, side='right') - 1))} entry {e}"
        return Token2D(int(prog.proto_refs[e]), g.entry_dtype[e], g.scope_names[g.entry_scope[e]],
                       tuple(g.entry_shape[e]), where=where, entry=e)

    def new_id(e):
        sid = int(np.searchsorted(flat_creators, e)) + len(creators)
        creators.append(e)
        return sid

    slot_tex = tex[tok[in_entry]]
    nodes = np.unique(np.concatenate([
        np.searchsorted(row_ptr, np.flatnonzero(tex & (tok == np.arange(g.n_entries))), side="right") - 1,
        np.searchsorted(in_ptr, np.flatnonzero(slot_tex), side="right") - 1,
    ])).astype(np.int64)
    for n in nodes.tolist():
        k = g.node_kind[n]
        outs = [e for e in range(int(row_ptr[n]), int(row_ptr[n + 1])) if tex[e] and tok[e] == e]
        if k == KIND_INPUT:
            for e in outs:
                t = alloc.alloc(make(e), new_id(e))
                t.ref_counter += 1
                objs[e] = t
        elif k == KIND_OP:
            for e in outs:
                proto = make(e)
                t = alloc.request(proto)
                if t is None:
                    t = alloc.alloc(proto, new_id(e))
                objs[e] = t
            for e in outs:
                alloc.check_for_release(objs[e])
            for s in range(int(in_ptr[n]), int(in_ptr[n + 1])):
                r = int(tok[in_entry[s]])
                if tex[r]:
                    t = objs[r]
                    t.ref_counter -= 1
                    alloc.check_for_release(t)
        else:  # __nop on a texture: ReuseInputToken, then the call's release steps
            r = int(tok[in_entry[in_ptr[n]]])
            if tex[r]:
                t = objs[r]
                t.ref_counter += int(prog.proto_refs[row_ptr[n]])
                alloc.check_for_release(t)
                t.ref_counter -= 1
                alloc.check_for_release(t)
    storages = {}
    for sid, block in alloc.blocks.items():
        t = block.token
        _, _, channel = t.size_2d()
        nbytes = block.x * block.y * channel * dtype_bytes(t.dtype)
        storages[sid] = (nbytes, int(g.entry_device[t.entry]), t.scope, (block.x, block.y, channel))
    return _TexturePlan(
        entry_sid={e: t.storage_id for e, t in objs.items()},
        creators=creators,
        storages=storages,
        owner_entry={e: t.entry for e, t in objs.items()},
    )


def _intervals(g: GraphModel, prog: RelayTokenProgram):
    """``(start, end)`` per flat token (inclusive node steps), for the arena and the bound.

    A token lives from its defining node to the last node reading it (through aliases);
    heads and pinned tokens to ``n_nodes``; pinned tokens from -1.
    """
    node_of = g.node_of_entry()
    consumer = np.repeat(np.arange(g.n_nodes, dtype=np.int64), np.diff(g.input_ptr))
    start = node_of.copy()
    end = node_of.copy()
    np.maximum.at(end, prog.entry_tok[g.input_entry], consumer)
    if g.head_entry.size:
        end[prog.entry_tok[g.head_entry]] = g.n_nodes
    start[prog.pinned] = -1
    end[prog.pinned] = g.n_nodes
    return start, end


def graph_plan_memory(graph, *, match_range: int = 16, mode: str = "relay", alignment: int = 64,
                      time_limit=None) -> GraphMemoryPlan:
    """Plan a graph's memory with Relay's GraphPlanMemory rules (exact), or into arenas.

    Parameters
    ----------
    graph : GraphModel or memcore_py IR Function / IRModule
        A graph-executor graph (:func:`memcore_py.frontend.read_graph_json`), or an IR
        function in graph form (:func:`memcore_py.planning.graph_from_ir.graph_from_function`
        is applied; an IRModule must have one Relax function or a ``main``).
    match_range : int, default 16
        Relay's ``match_range_``: a request of s bytes may take a free storage of
        ``s // 16`` to ``s * 16`` bytes; 0 disables reuse.
    mode : {"relay", "arena"}
        ``"relay"``: Relay's storage ids. ``"arena"``: the same ids are reported, and the
        flat tensors are also packed into one arena per (device, scope) pool with
        :func:`memcore.plan_offsets` (textures keep Relay's 2-D plan).
    alignment : int, default 64
        Arena mode: byte alignment of offsets.
    time_limit : float or None
        Arena mode: seconds per pool for ``plan_offsets``' anytime search (None: heuristics).

    Returns
    -------
    GraphMemoryPlan
        Per entry: ``storage_id``, ``entry_device``, ``first_bytes``, ``storage_bytes``
        (and in arena mode ``arena_of``, ``tok_offset``); per storage:
        ``relay_storage_bytes``, ``relay_storage_device``, ``relay_storage_scope``;
        ``relay_bytes`` (flat total), ``texture_bytes``, ``pinned_bytes``, ``lower_bound``
        (max-live bytes of the flat tensors per (device, scope) pool, summed),
        ``arena_bytes`` (arena mode).

    Raises
    ------
    GraphError
        A graph the reader let through but Relay cannot plan (texture scope or rank errors).
    InvalidArrayError
        ``match_range < 0`` or a bad ``alignment``/``time_limit`` (from the engine).
    ValueError
        An unknown ``mode``.

    Examples
    --------
    >>> from memcore_py.planning.graph_model import make_graph
    >>> g = make_graph([
    ...     {"kind": "input", "name": "x", "outputs": [((10,), "float32")]},
    ...     {"kind": "op", "name": "a", "inputs": [(0, 0)], "outputs": [((10,), "float32")]},
    ...     {"kind": "op", "name": "b", "inputs": [(1, 0)], "outputs": [((10,), "float32")]},
    ...     {"kind": "op", "name": "c", "inputs": [(2, 0)], "outputs": [((10,), "float32")]}],
    ...     heads=[(3, 0)])
    >>> graph_plan_memory(g).storage_id.tolist()
    [0, 1, 2, 1]
    """
    if mode not in GRAPH_MODES:
        raise ValueError(f"mode must be one of {GRAPH_MODES}; got {mode!r}")
    if not isinstance(graph, GraphModel):
        from .graph_from_ir import graph_from_ir

        graph = graph_from_ir(graph)
    t0 = time.perf_counter()
    g = graph
    prog = relay_token_program(g)
    tp = memcore.plan_tokens(prog.tok_bytes, prog.tok_pool, prog.tok_refs, prog.ev_kind, prog.ev_tok,
                             match_range=match_range, release_zero_ref=True)
    storage_of = tp.storage_of
    # The creating (first) token of each flat storage: requests come in ascending entry order
    # and storages are numbered in creation order.
    st_req = storage_of[prog.requested]
    if st_req.size:
        prev = np.maximum.accumulate(np.concatenate(([-1], st_req[:-1])))
        flat_creators = prog.requested[st_req > prev]
    else:
        flat_creators = np.zeros(0, dtype=np.int64)
    n_flat = int(tp.storage_bytes.shape[0])

    tok = prog.entry_tok
    tex = _plan_textures(g, prog, flat_creators) if prog.is_texture.any() else None
    if tex is None or not tex.creators:
        flat_gid = np.arange(n_flat, dtype=np.int64)
        n_tex = 0
    else:
        flat_gid = np.arange(n_flat, dtype=np.int64) + np.searchsorted(np.asarray(tex.creators), flat_creators)
        n_tex = len(tex.creators)
    n_storages = n_flat + n_tex

    storage_id = np.empty(g.n_entries, dtype=np.int64)
    flat_entries = ~prog.is_texture
    storage_id[flat_entries] = flat_gid[storage_of[tok[flat_entries]]]
    creator_of_entry = np.empty(g.n_entries, dtype=np.int64)
    creator_of_entry[flat_entries] = flat_creators[storage_of[tok[flat_entries]]]
    first_bytes = np.zeros(g.n_entries, dtype=np.int64)
    first_bytes[flat_entries] = g.entry_bytes[creator_of_entry[flat_entries]]

    st_bytes = np.zeros(n_storages, dtype=np.int64)
    st_device = np.zeros(n_storages, dtype=np.int64)
    st_bytes[flat_gid] = tp.storage_bytes
    st_device[flat_gid] = g.entry_device[flat_creators]
    st_scope_idx = np.zeros(n_storages, dtype=np.int64)
    st_scope_idx[flat_gid] = g.entry_scope[flat_creators]
    st_scope = [g.scope_names[i] for i in st_scope_idx.tolist()]
    texture_shapes = {}
    if tex is not None:
        for e in np.flatnonzero(prog.is_texture).tolist():
            r = int(tok[e])
            storage_id[e] = tex.entry_sid[r]
            creator_of_entry[e] = tex.owner_entry[r]
        for sid, (nbytes, dev, scope, shape) in tex.storages.items():
            st_bytes[sid], st_device[sid] = nbytes, dev
            st_scope[sid] = scope
            texture_shapes[sid] = shape
    entry_device = g.entry_device[creator_of_entry] if g.n_entries else np.zeros(0, dtype=np.int64)
    storage_bytes = st_bytes[storage_id]

    is_tex_storage = np.zeros(n_storages, dtype=bool)
    if texture_shapes:
        is_tex_storage[list(texture_shapes)] = True
    relay_bytes = int(st_bytes[~is_tex_storage].sum(dtype=np.int64))
    texture_bytes = int(st_bytes[is_tex_storage].sum(dtype=np.int64))
    pinned_roots = prog.pinned & flat_entries
    pinned_bytes = int(g.entry_bytes[pinned_roots].sum(dtype=np.int64))

    # Lower bound (and arena mode): flat tokens per pool, live [start, end].
    start, end = _intervals(g, prog)
    flat_tok = np.flatnonzero((tok == np.arange(g.n_entries)) & flat_entries)
    per_pool = _flat_pools(g, flat_tok)
    lower_bound = 0
    arena_bytes = None
    arena_of = None
    tok_offset = np.zeros(g.n_entries, dtype=np.int64)
    arena_plans = []
    for toks in per_pool:
        if toks.size == 0:
            arena_plans.append(None)
            continue
        lower_bound += memcore.max_live_bytes(start[toks], end[toks], g.entry_bytes[toks])
        if mode == "arena":
            arena_plans.append(memcore.plan_offsets(start[toks], end[toks], g.entry_bytes[toks],
                                                    alignment=alignment, time_limit=time_limit))
    storages = []
    if mode == "arena":
        arena_of = np.full(g.n_entries, -1, dtype=np.int64)
        arena_bytes = []
        tok_arena = np.full(g.n_entries, -1, dtype=np.int64)
        for toks, ap in zip(per_pool, arena_plans):
            if ap is None:
                continue
            a = len(arena_bytes)
            arena_bytes.append(int(ap.arena_bytes))
            tok_arena[toks] = a
            tok_offset[toks] = ap.offset
            head = int(toks[0])
            storages.append(StoragePlan(IntImm(int(ap.arena_bytes)), "uint8", g.scope_names[g.entry_scope[head]],
                                        int(g.entry_device[head]), 0, toks.tolist()))
        arena_of[flat_entries] = tok_arena[tok[flat_entries]]
        tok_offset = tok_offset[tok]
        tok_storage = arena_of.copy()
        planned = int(sum(arena_bytes))
    else:
        tok_storage = storage_id
        planned = relay_bytes
        storages = _relay_storages(g, storage_id, st_bytes, st_device, st_scope, creator_of_entry, n_storages)
    seconds = time.perf_counter() - t0
    return GraphMemoryPlan(
        mode=mode,
        storages=storages,
        tok_storage=tok_storage,
        tok_offset=tok_offset,
        tvm_bytes=relay_bytes,
        planned_bytes=planned,
        lower_bound=int(lower_bound),
        function_names=[g.name],
        graph=g,
        storage_id=storage_id,
        entry_device=entry_device,
        first_bytes=first_bytes,
        storage_bytes=storage_bytes,
        relay_storage_bytes=st_bytes,
        relay_storage_device=st_device,
        relay_storage_scope=st_scope,
        texture_shapes=texture_shapes,
        texture_bytes=texture_bytes,
        pinned_bytes=pinned_bytes,
        arena_of=arena_of,
        arena_bytes=arena_bytes,
        seconds=seconds,
    )


def _flat_pools(g: GraphModel, flat_tok: np.ndarray) -> list:
    """The flat tokens split by (device, scope): one arena (and one bound) per pool."""
    if flat_tok.size == 0:
        return []
    dev, scope = g.entry_device[flat_tok], g.entry_scope[flat_tok]
    if dev.min() == dev.max() and scope.min() == scope.max():
        return [flat_tok]
    key = (dev - dev.min()) * len(g.scope_names) + scope
    order = np.argsort(key, kind="stable")
    bounds = np.flatnonzero(np.diff(key[order])) + 1
    return np.split(flat_tok[order], bounds)


def _relay_storages(g, storage_id, st_bytes, st_device, st_scope, creator_of_entry, n_storages):
    """The Relay storages as a lazy sequence of :class:`StoragePlan` (built on access: a
    million-entry plan should not pay for objects nobody reads)."""
    return _RelayStorages(g, storage_id, st_bytes, st_device, st_scope, creator_of_entry, n_storages)


class _RelayStorages(Sequence):
    """One :class:`StoragePlan` per Relay storage id, its entries in program order."""

    def __init__(self, g, storage_id, st_bytes, st_device, st_scope, creator_of_entry, n_storages):
        self._g, self._sid, self._bytes, self._device = g, storage_id, st_bytes, st_device
        self._scope, self._creator, self._n = st_scope, creator_of_entry, n_storages
        self._bounds = None

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"storage {i} out of range [0, {self._n})")
        if self._bounds is None:
            self._order = np.argsort(self._sid, kind="stable")
            self._bounds = np.searchsorted(self._sid[self._order], np.arange(self._n + 1))
        members = self._order[self._bounds[i]:self._bounds[i + 1]]
        dtypes = self._g.entry_dtype
        first = int(members[0]) if members.size else -1
        dtype = dtypes[int(self._creator[first])] if dtypes is not None and first >= 0 else ""
        return StoragePlan(IntImm(int(self._bytes[i])), dtype, self._scope[i], int(self._device[i]), 0,
                           members.tolist())
