"""Place a :class:`~memcore_py.executorch.specs.SpecTable` in ExecuTorch's arenas.

Design
------
One flat problem per ``mem_id`` (one arena each): the specs that own storage, with their
lifetimes and aligned sizes, go to the engine; the result is checked by
:func:`memcore.verify_offsets` before anything is written back. Aliases (``storage_base``)
are then placed at their root's offset plus their offset inside it.

Two layouts, matching ExecuTorch's ``allow_overlapping_allocations``:

- ``"arena"`` (allowed, the default): :func:`memcore.plan_offsets` packs the owners into
  one arena at any aligned offset. ExecuTorch's Verifier requires that two specs sharing
  any byte share a ``mem_obj_id``, so an object is a connected run of bytes: the specs are
  swept by offset and a new object starts wherever no spec so far reaches.
- ``"objects"`` (not allowed): every tensor starts at the first byte of its shared object
  (what Vulkan's planner needs). Objects come from :func:`memcore.plan_tokens` on the event
  program "request at the first step, release after the last" (requests of one step before
  its releases, larger first; any free object of any size may be reused and grows to fit),
  and are laid out one after another.

``graph_module.input_mem_buffer_sizes`` (the space that control-flow submodules planned for
themselves) is kept free at the start of each arena: planned offsets start at that many
bytes rounded up to the alignment. ``extra_padding`` is added to every arena in use.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import memcore

from .errors import ExecuTorchPlanningError
from .specs import SpecTable

__all__ = ["ArenaReport", "Layout", "plan_layout"]

#: Size window of the shared-object layout: any free object may be reused.
_ANY_SIZE = 1 << 62


@dataclass(frozen=True)
class ArenaReport:
    """What one ``mem_id`` needed.

    Attributes
    ----------
    mem_id : int
    n_specs : int
        Specs in the arena (aliases included).
    reserved : int
        Bytes kept free at the start for control-flow submodules (rounded up to alignment).
    planned_bytes : int
        Bytes of the packed owners, above ``reserved``.
    lower_bound : int
        Max-live bytes of the owners (the least any plan of them needs).
    bufsize : int
        ``reserved + planned_bytes + extra_padding``: the arena's size.
    algorithm : str
        The heuristic that won (``plan_offsets``), or ``"objects"``.
    """

    mem_id: int
    n_specs: int
    reserved: int
    planned_bytes: int
    lower_bound: int
    bufsize: int
    algorithm: str


@dataclass(frozen=True)
class Layout:
    """Where every spec of a table goes.

    Attributes
    ----------
    offset : ndarray of shape (n,), dtype=int64
        Byte offset of each spec in its arena.
    mem_obj_id : ndarray of shape (n,), dtype=int64
        Shared object of each spec, numbered from 0 in each arena.
    bufsizes : list of int
        One slot per mem_id up to the highest used (slot 0, the constants, is 0).
    arenas : tuple of ArenaReport
        One per mem_id in use, ascending.
    """

    offset: np.ndarray
    mem_obj_id: np.ndarray
    bufsizes: list
    arenas: tuple


def _round_up(value, alignment):
    return -(-int(value) // alignment) * alignment


def _objects_from_bytes(offset, size):
    """Object id of each buffer: connected runs of bytes, numbered by offset; an empty
    buffer shares no byte and gets an object of its own."""
    n = len(offset)
    obj = np.empty(n, dtype=np.int64)
    current, reach = -1, -1
    for i in np.lexsort((-size, offset)).tolist():
        if size[i] == 0:
            continue
        lo, hi = int(offset[i]), int(offset[i]) + int(size[i])
        if current < 0 or lo >= reach:
            current += 1
            reach = hi
        else:
            reach = max(reach, hi)
        obj[i] = current
    empty = np.flatnonzero(size == 0)
    obj[empty] = current + 1 + np.arange(len(empty))
    return obj


def _pack_arena(start, end, size, alignment, algorithm, time_limit):
    plan = memcore.plan_offsets(start, end, size, alignment=alignment, algorithm=algorithm,
                                time_limit=time_limit)
    offset = np.array(plan.offset, dtype=np.int64)
    return offset, int(plan.arena_bytes), int(plan.lower_bound), plan.algorithm, None


def _pack_objects(start, end, size):
    n = len(start)
    idx = np.arange(n, dtype=np.int64)
    # Step 1. Events in step order: requests (larger first) before releases.
    step = np.concatenate([start, end])
    phase = np.concatenate([np.zeros(n, np.int64), np.ones(n, np.int64)])
    larger = np.concatenate([-size, np.zeros(n, np.int64)])
    tok = np.concatenate([idx, idx])
    order = np.lexsort((tok, larger, phase, step))
    ev_kind = np.where(phase[order] == 0, memcore.EV_REQUEST, memcore.EV_DECREF).astype(np.int8)
    ev_tok = np.ascontiguousarray(tok[order])
    # Step 2. One pool, one reader each; objects are storages.
    plan = memcore.plan_tokens(size, np.zeros(n, np.int64), np.ones(n, np.int64), ev_kind, ev_tok,
                               match_range=_ANY_SIZE, release_zero_ref=True)
    storage_of = np.asarray(plan.storage_of, dtype=np.int64)
    storage_bytes = np.asarray(plan.storage_bytes, dtype=np.int64)
    # Step 3. Objects one after another (their sizes are aligned: every member's is).
    object_offset = np.concatenate([[0], np.cumsum(storage_bytes)[:-1]]).astype(np.int64)
    offset = object_offset[storage_of] if n else np.zeros(0, np.int64)
    lower = int(memcore.max_live_bytes(start, end, size))
    return offset, int(storage_bytes.sum()), lower, "objects", storage_of


def plan_layout(table: SpecTable, *, alignment: int, extra_padding: int = 0, reserved=(),
                algorithm: str = "auto", time_limit=None, shared_objects: bool = False) -> Layout:
    """Plan every arena of ``table`` and place the aliases.

    Parameters
    ----------
    table : SpecTable
    alignment : int
        Every offset is a multiple of it.
    extra_padding : int, default=0
        Bytes added at the end of every arena in use.
    reserved : sequence of int, default=()
        ``reserved[m]`` bytes kept free at the start of arena ``m`` (``input_mem_buffer_sizes``).
    algorithm : str, default="auto"
        :func:`memcore.plan_offsets`'s heuristic (arena layout only).
    time_limit : float or None, default=None
        :func:`memcore.plan_offsets`'s search time (arena layout only).
    shared_objects : bool, default=False
        The ``"objects"`` layout (every tensor at its object's first byte).

    Returns
    -------
    Layout

    Raises
    ------
    ExecuTorchPlanningError
        The engine's plan failed its independent check (a bug; the message names both specs).
    """
    n = len(table.specs)
    offset = np.zeros(n, dtype=np.int64)
    obj = np.zeros(n, dtype=np.int64)
    owner = table.is_owner
    reserved = [int(r) for r in reserved]
    used = set(table.mem_id.tolist()) | {m for m, r in enumerate(reserved) if m >= 1 and r > 0}
    bufsizes = [0] * (max(used | {1}) + 1)
    arenas = []
    for m in sorted(used):
        in_arena = table.mem_id == m
        owners = np.flatnonzero(in_arena & owner)
        start = np.ascontiguousarray(table.start[owners])
        end = np.ascontiguousarray(table.end[owners])
        size = np.ascontiguousarray(table.size[owners])
        base = _round_up(reserved[m] if m < len(reserved) else 0, alignment)
        if shared_objects:
            local, packed, lower, winner, objects = _pack_objects(start, end, size)
        else:
            local, packed, lower, winner, objects = _pack_arena(start, end, size, alignment, algorithm,
                                                                time_limit)
        try:
            memcore.verify_offsets(start, end, size, local, packed)
        except memcore.PlanError as exc:
            i, j = owners[0], owners[-1]
            raise ExecuTorchPlanningError(
                f"memcore's plan of mem_id {m} failed verification ({len(owners)} specs, e.g. "
                f"{table.specs[i]!r} .. {table.specs[j]!r}): {exc}"
            ) from exc
        offset[owners] = base + local
        members = np.flatnonzero(in_arena)
        aliases = members[~owner[members]]
        offset[aliases] = offset[table.root[aliases]] + table.root_offset[aliases]
        if objects is None:
            obj[members] = _objects_from_bytes(offset[members], table.size[members])
        else:
            obj[owners] = objects
            obj[aliases] = obj[table.root[aliases]]
        bufsizes[m] = base + packed + extra_padding
        arenas.append(ArenaReport(mem_id=m, n_specs=len(members), reserved=base, planned_bytes=packed,
                                  lower_bound=lower, bufsize=bufsizes[m], algorithm=winner))
    return Layout(offset=offset, mem_obj_id=obj, bufsizes=bufsizes, arenas=tuple(arenas))
