"""Relay's ``GraphPlanMemory`` on a graph-executor graph, exact, and its arena mode.

Port of TVM v0.19 ``StorageAllocator`` (src/relay/backend/graph_plan_memory.cc) with
``TokenAllocator1D`` / ``TokenAllocator2D`` (token_allocator.cc); algorithm in
spec tvm_passes.md §1.8, behaviours in relay_graph_plan_memory.md §2-3.

Design
------
Stages: the compiled walk :func:`memcore_py.planning._graph_plan.plan_relay` (flat tokens:
aliases, reference counts, live intervals and Relay's 1-D allocator in one pass over the
graph's arrays, writing the per-entry and per-storage arrays of the plan) -> the 2-D allocator (:mod:`.texture`,
texture tokens only, in Python) -> storage ids merged in creation order ->
:class:`~.graph_memory_plan.GraphMemoryPlan`. Arena mode then packs each (device, scope)
pool of flat tokens with :func:`memcore.plan_offsets`. The plan's lower bound (max-live bytes
per pool, :func:`memcore.max_live_bytes`), its per-storage scope names and its
:class:`StoragePlan` objects are built when first read: on a small graph each costs more
than planning it.

Why one compiled walk: building the event program with vectorised numpy operations (about
40 of them) and calling :func:`memcore.plan_tokens` has a fixed cost per call (numpy calls,
the engine's argument checks and bucket tables) that exceeds Relay's own run on the
relay.testing graphs (36-1,223 entries), and the walk is faster at every size measured,
large graphs included. The walk's allocator and the engine's are checked against each other
in the tests (see :mod:`memcore_py.planning._graph_plan` for why the engine's is not called).

Relay's rules as the walk applies them (nodes in order, which is Relay's visiting order):

- Every node entry is a token, except the output of a ``__nop`` (reshape-only), which *is*
  its input's token (``ReuseInputToken``). A token's reference count is the number of input
  slots reading any of its entries, plus one per graph head (heads are never freed).
- Inputs, parameters and constants (``"null"`` nodes) get fresh storage where they appear
  and one extra reference, so they are never released: Relay's ``Alloc`` with
  ``can_realloc=false``.
- An operator node: a storage for each output in order (a free one of the same (device,
  scope) pool within the ``match_range`` window, else fresh); then its 0-reference outputs
  are released (Relay requests *all* outputs first, so a later output cannot take an
  earlier one's storage); then one reference of each input slot's token is dropped in order,
  releasing storages that reach 0.
- A ``__nop`` node: one reference of its input is dropped (its own readers were counted).
- Relay keeps one free list for all devices and skips incompatible (other-device) tokens
  while scanning its window; per-pool free lists give the same picks.

:func:`relay_token_program` is the same walk written out as an event program for
:func:`memcore.plan_tokens` (``release_zero_ref=True``) and :func:`memcore.verify_tokens`:
the verification view, and the engine's plan of it equals this one (tested).

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

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import memcore
from memcore._validate import as_int_scalar

from .._compiled import load_compiled
from ..ir.prim import IntImm
from ..ir.types import dtype_bytes
from .graph_memory_plan import GraphMemoryPlan
from .graph_model import KIND_INPUT, KIND_OP, GraphError, GraphModel, is_texture_scope
from .memory_plan import StoragePlan
from .texture import Token2D, TokenAllocator2D

__all__ = ["graph_plan_memory", "relay_token_program", "RelayTokenProgram", "GRAPH_MODES"]

#: Planning modes: Relay-exact storage ids, or one arena per (device, scope) pool.
GRAPH_MODES = ("relay", "arena")


@dataclass(frozen=True, eq=False)
class RelayTokenProgram:
    """The event program of a graph under Relay's rules (arguments of :func:`memcore.plan_tokens`).

    Token ``t`` is entry ``t``; entries aliased by a ``__nop`` and texture entries are
    never requested here. Pool classes are the (device, scope) pools of operator outputs,
    numbered as first seen, then one class for inputs, parameters and constants.
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
    tok_start: np.ndarray
    """int64[n_entries]: first node step a token is live at (-1 for a pinned one)."""
    tok_end: np.ndarray
    """int64[n_entries]: last node step a token is live at, inclusive (``n_nodes`` for heads
    and pinned tokens). Aliased entries: their node, not meaningful."""


@functools.lru_cache(maxsize=64)
def _scope_tex(scope_names: tuple) -> tuple:
    """``(uint8 flag per scope, 1 for a texture scope; whether any is one)``."""
    out = np.array([is_texture_scope(s) for s in scope_names], dtype=np.uint8)
    out.setflags(write=False)
    return out, bool(out.any())


def _entry_texture(g: GraphModel, entry_tok: np.ndarray) -> np.ndarray:
    """bool per entry: its token lives in a texture scope."""
    flags, any_tex = _scope_tex(g.scope_names)
    return flags.astype(bool)[g.entry_scope[entry_tok]] if any_tex else np.zeros(g.n_entries, dtype=bool)


def _kernel_error(g: GraphModel, kernel, code: int, bad: int) -> GraphError:
    """The GraphError for a kernel code (a GraphModel not built by ``from_arrays``)."""
    names = {v: k for k, v in kernel.ERROR_CODES.items()}
    what = names[code]
    if what in ("ERR_KIND", "ERR_INPUT_WITH_INPUTS", "ERR_NOP_ARITY"):
        why = {"ERR_KIND": f"unknown node kind {int(g.node_kind[bad])}",
               "ERR_INPUT_WITH_INPUTS": "an input node (op 'null') has inputs",
               "ERR_NOP_ARITY": "a reshape-only '__nop' must have one input and one output"}[what]
        return GraphError(f"{g.node_label(bad)}: {why}")
    if what == "ERR_INPUT_ORDER":
        n = int(np.searchsorted(g.input_ptr, bad, side="right") - 1)
        return GraphError(f"{g.node_label(n)}: input {bad - int(g.input_ptr[n])} reads entry "
                          f"{int(g.input_entry[bad])}, which is not an output of an earlier node")
    if what == "ERR_HEAD":
        return GraphError(f"head {bad} names entry {int(g.head_entry[bad])}, out of range [0, {g.n_entries})")
    if what == "ERR_SCOPE":
        return GraphError(f"entry {bad}: storage scope index {int(g.entry_scope[bad])} is not one of "
                          f"{len(g.scope_names)} scopes")
    if what == "ERR_BYTES":
        return GraphError(f"entry {bad}: negative size {int(g.entry_bytes[bad])}")
    if what == "ERR_BYTES_TOTAL":
        return GraphError(f"entry {bad}: the entry sizes add up past 2**63 - 1 bytes")
    ptr = "node_row_ptr" if what == "ERR_ROW_PTR" else "input_ptr"
    return GraphError(
        f"{ptr} is not a CSR pointer over the graph's {'entries' if ptr == 'node_row_ptr' else 'input slots'} "
        f"(at node {bad})"
    )


def _walk(g: GraphModel, scope_tex: np.ndarray, match_range: int, record: bool) -> tuple:
    """Run the compiled walk on ``g`` (its results, see ``plan_relay``); raise GraphError for an
    inconsistent model."""
    kernel = load_compiled("memcore_py.planning._graph_plan")
    res = kernel.plan_relay(g.node_kind, g.node_row_ptr, g.input_ptr, g.input_entry, g.head_entry,
                            g.entry_bytes, g.entry_device, g.entry_scope, scope_tex, match_range, record)
    if res[0]:
        raise _kernel_error(g, kernel, res[0], res[1])
    return res


def _as_match_range(match_range) -> int:
    if type(match_range) is int and 0 <= match_range < 2**63:
        return match_range
    return as_int_scalar("match_range", match_range, low=0)  # raises InvalidArrayError


def relay_token_program(graph: GraphModel, *, match_range: int = 16) -> RelayTokenProgram:
    """The event program of ``graph`` under Relay's GraphPlanMemory rules.

    Parameters
    ----------
    graph : GraphModel
    match_range : int, default 16
        Only decides which pool a released 0-reader output goes back to in the walk that
        writes the program; the program itself does not depend on it.

    Returns
    -------
    RelayTokenProgram
        Ready for ``memcore.plan_tokens(..., release_zero_ref=True)`` (see the module
        docstring for the encoding).

    Raises
    ------
    GraphError
        A :class:`GraphModel` whose arrays are inconsistent (one not built by ``from_arrays``).
    """
    g = graph
    res = _walk(g, _scope_tex(g.scope_names)[0], _as_match_range(match_range), True)
    tok, start, end, tokens, n_pools = res[7], res[8], res[9], res[12], res[13]
    proto_refs, tok_refs, tok_pool, ev_kind, ev_tok = res[16]
    pinned = g.node_kind[g.node_of_entry()] == KIND_INPUT
    # pool of a never-requested entry (aliased, texture): any valid class
    pool = np.where(pinned, n_pools, np.maximum(tok_pool, 0))
    return RelayTokenProgram(
        tok_bytes=g.entry_bytes, tok_pool=pool, tok_refs=tok_refs, ev_kind=ev_kind, ev_tok=ev_tok,
        entry_tok=tok, proto_refs=proto_refs, is_texture=_entry_texture(g, tok), requested=tokens,
        pinned=pinned, tok_start=start, tok_end=end,
    )


@dataclass
class _TexturePlan:
    entry_sid: dict
    """token entry -> storage id."""
    creators: list
    """creating entry of each texture storage, ascending."""
    storages: dict
    """storage id -> (bytes, entry whose device and scope the storage has, (width, height, channel))."""
    owner_entry: dict
    """token entry -> entry whose token object it maps to (for the device)."""


def _plan_textures(g: GraphModel, tok: np.ndarray, tex: np.ndarray, proto_refs: np.ndarray,
                   flat_creators: np.ndarray) -> _TexturePlan:
    """Run Relay's 2-D allocator over the texture tokens, in node order, with the real ids.

    ``tok``: token of each entry; ``tex``: bool, the entry's token is a texture;
    ``proto_refs``: Relay's Init count of each entry; ``flat_creators``: creating entry of
    each flat storage, ascending.
    """
    alloc = TokenAllocator2D()
    row_ptr, in_ptr, in_entry = g.node_row_ptr, g.input_ptr, g.input_entry
    objs: dict = {}
    creators: list = []

    def make(e):
        where = f"{g.node_label(int(np.searchsorted(row_ptr, e, side='right') - 1))} entry {e}"
        return Token2D(int(proto_refs[e]), g.entry_dtype[e], g.scope_names[g.entry_scope[e]],
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
                t.ref_counter += int(proto_refs[row_ptr[n]])
                alloc.check_for_release(t)
                t.ref_counter -= 1
                alloc.check_for_release(t)
    storages = {}
    for sid, block in alloc.blocks.items():
        t = block.token
        _, _, channel = t.size_2d()
        nbytes = block.x * block.y * channel * dtype_bytes(t.dtype)
        storages[sid] = (nbytes, t.entry, (block.x, block.y, channel))
    return _TexturePlan(
        entry_sid={e: t.storage_id for e, t in objs.items()},
        creators=creators,
        storages=storages,
        owner_entry={e: t.entry for e, t in objs.items()},
    )


def _intervals(g: GraphModel, prog: RelayTokenProgram):
    """``(start, end)`` per token (inclusive node steps; see :class:`RelayTokenProgram`),
    for ``peak_report``."""
    return prog.tok_start, prog.tok_end


def _pools(g: GraphModel, tokens: np.ndarray, n_pools: int) -> list:
    """The flat tokens split by (device, scope): one arena (and one bound) per pool."""
    if tokens.size == 0:
        return []
    if n_pools == 1:
        return [tokens]
    dev, scope = g.entry_device[tokens], g.entry_scope[tokens]
    key = (dev - dev.min()) * len(g.scope_names) + scope
    order = np.argsort(key, kind="stable")
    bounds = np.flatnonzero(np.diff(key[order])) + 1
    return np.split(tokens[order], bounds)


def _lower_bound(g: GraphModel, start, end, tokens, n_pools) -> int:
    """Max-live bytes of the flat tokens per (device, scope) pool, summed.

    The walk's intervals and sizes are valid input of the engine's kernel (``start <= end``,
    sizes ``>= 0`` with a total the walk checked fits in int64), so it runs unchecked.
    """
    return int(sum(memcore.max_live_bytes(start[t], end[t], g.entry_bytes[t], check=False)
                   for t in _pools(g, tokens, n_pools)))


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
        (max-live bytes of the flat tensors per (device, scope) pool, summed; computed when
        first read in Relay mode), ``arena_bytes`` (arena mode).

    Raises
    ------
    GraphError
        A graph the reader let through but Relay cannot plan (texture scope or rank errors),
        or a :class:`GraphModel` whose arrays are inconsistent (not built by ``from_arrays``).
    InvalidArrayError
        ``match_range`` not an integer ``>= 0``, or a bad ``alignment``/``time_limit`` (from
        the engine).
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
    t0 = time.perf_counter()
    if mode != "relay" and mode not in GRAPH_MODES:
        raise ValueError(f"mode must be one of {GRAPH_MODES}; got {mode!r}")
    if type(graph) is not GraphModel and not isinstance(graph, GraphModel):
        from .graph_from_ir import graph_from_ir

        graph = graph_from_ir(graph)
    g = graph
    scope_tex, any_texture = _scope_tex(g.scope_names)
    (_, _, storage_id, entry_device, first_bytes, storage_bytes, tok_offset, entry_tok, start, end, st_bytes,
     st_creator, tokens, n_pools, relay_bytes, pinned_bytes, program) = _walk(
        g, scope_tex, _as_match_range(match_range), any_texture)
    texture_shapes: dict = {}
    texture_bytes = 0
    if any_texture:
        st_bytes, st_creator, texture_bytes = _merge_textures(
            g, entry_tok, program[0], storage_id, entry_device, storage_bytes, st_bytes, st_creator, texture_shapes)
    arena_of = arena_bytes = None
    if mode == "arena":
        storages, arena_of, arena_bytes, tok_offset, lower_bound = _arenas(
            g, entry_tok, start, end, tokens, n_pools, alignment, time_limit)
        tok_storage = arena_of.copy()
        planned = int(sum(arena_bytes))
    else:
        tok_storage = storage_id
        planned = relay_bytes
        storages = _RelayStorages(g, storage_id, st_bytes, st_creator)
        lower_bound = functools.partial(_lower_bound, g, start, end, tokens, n_pools)

    return GraphMemoryPlan(
        mode=mode,
        storages=storages,
        tok_storage=tok_storage,
        tok_offset=tok_offset,
        tvm_bytes=relay_bytes,
        planned_bytes=planned,
        lower_bound=lower_bound,
        function_names=[g.name],
        graph=g,
        storage_id=storage_id,
        entry_device=entry_device,
        first_bytes=first_bytes,
        storage_bytes=storage_bytes,
        relay_storage_bytes=st_bytes,
        storage_creator=st_creator,
        texture_shapes=texture_shapes,
        texture_bytes=texture_bytes,
        pinned_bytes=pinned_bytes,
        arena_of=arena_of,
        arena_bytes=arena_bytes,
        seconds=time.perf_counter() - t0,
    )


def _merge_textures(g, tok, proto_refs, storage_id, device, storage_bytes, flat_bytes, flat_creators,
                    texture_shapes):
    """Plan the texture tokens and number all storages in creation order.

    Fills the texture entries of the walk's per-entry ``storage_id``, ``device`` and
    ``storage_bytes`` and renumbers the flat ones, in place; fills ``texture_shapes``.
    Returns the per-storage bytes and creating entries of all storages and the texture bytes.
    """
    tex = _entry_texture(g, tok)
    tp = _plan_textures(g, tok, tex, proto_refs, flat_creators)
    n_flat, n_tex = flat_bytes.shape[0], len(tp.creators)
    flat_gid = np.arange(n_flat, dtype=np.int64)
    if n_tex:
        flat_gid += np.searchsorted(np.asarray(tp.creators), flat_creators)
    st_bytes = np.zeros(n_flat + n_tex, dtype=np.int64)
    st_creator = np.zeros(n_flat + n_tex, dtype=np.int64)
    st_bytes[flat_gid] = flat_bytes
    st_creator[flat_gid] = flat_creators
    flat = ~tex
    storage_id[flat] = flat_gid[storage_id[flat]]
    for sid, (nbytes, creator, shape) in tp.storages.items():
        st_bytes[sid], st_creator[sid] = nbytes, creator
        texture_shapes[sid] = shape
    for e in np.flatnonzero(tex).tolist():
        r = int(tok[e])
        storage_id[e] = tp.entry_sid[r]
        device[e] = g.entry_device[tp.owner_entry[r]]
    storage_bytes[tex] = st_bytes[storage_id[tex]]
    return st_bytes, st_creator, int(sum(nb for nb, _, _ in tp.storages.values()))


def _arenas(g, entry_tok, start, end, tokens, n_pools, alignment, time_limit):
    """Arena mode: one arena per (device, scope) pool of flat tokens, packed by plan_offsets.

    Returns ``(storages, arena_of, arena_bytes, tok_offset, lower_bound)``.
    """
    arena_of = np.full(g.n_entries, -1, dtype=np.int64)
    tok_arena = np.full(g.n_entries, -1, dtype=np.int64)
    tok_offset = np.zeros(g.n_entries, dtype=np.int64)
    arena_bytes, storages, lower_bound = [], [], 0
    for toks in _pools(g, tokens, n_pools):
        s, e, b = start[toks], end[toks], g.entry_bytes[toks]
        lower_bound += memcore.max_live_bytes(s, e, b, check=False)
        ap = memcore.plan_offsets(s, e, b, alignment=alignment, time_limit=time_limit)
        a = len(arena_bytes)
        arena_bytes.append(int(ap.arena_bytes))
        tok_arena[toks] = a
        tok_offset[toks] = ap.offset
        head = int(toks[0])
        storages.append(StoragePlan(IntImm(int(ap.arena_bytes)), "uint8", g.scope_names[g.entry_scope[head]],
                                    int(g.entry_device[head]), 0, toks.tolist()))
    arena_of[:] = tok_arena[entry_tok]  # texture entries stay -1: their tokens are in no pool
    return storages, arena_of, arena_bytes, tok_offset[entry_tok], int(lower_bound)


class _RelayStorages(Sequence):
    """One :class:`StoragePlan` per Relay storage id, its entries in program order, built on
    access (a million-entry plan should not pay for objects nobody reads)."""

    def __init__(self, g, storage_id, st_bytes, st_creator):
        self._g, self._sid, self._bytes, self._creator = g, storage_id, st_bytes, st_creator
        self._n = int(st_bytes.shape[0])
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
        g, c = self._g, int(self._creator[i])
        members = self._order[self._bounds[i]:self._bounds[i + 1]]
        dtype = g.entry_dtype[c] if g.entry_dtype is not None else ""
        return StoragePlan(IntImm(int(self._bytes[i])), dtype, g.scope_names[g.entry_scope[c]],
                           int(g.entry_device[c]), 0, members.tolist())
