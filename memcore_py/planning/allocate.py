"""StaticPlanBlockMemory's allocation stage: a token program in, a :class:`MemoryPlan` out.

Port of TVM ``StorageAllocator`` / ``TokenAllocator1D`` (src/relax/transform/
static_plan_block_memory.cc) over flat arrays, plus arena packing:

- **TVM mode** (:func:`tvm_plan`): the event program of a
  :class:`~memcore_py.analysis.storage_tokens.TokenProgram` runs through
  :func:`memcore.plan_tokens` (TVM's reuse rules live in the engine: fresh storage or reuse of
  a released one of the same pool within the size window ``[s/16, 16*s]``, symbolic sizes only
  among provably equal ones, 0-reference tokens never pooled). Differs from TVM in the pool
  key, which includes the device (``key_device``; see DIFFERENCES.md).
- **Arena mode** (:func:`arena_plan`): each (function, scope, device) pool of constant-size
  tokens is packed into one storage with :func:`memcore.plan_offsets` when that is no larger
  than the TVM-mode storages of the same tokens; the rest keeps its TVM-mode storages. So
  arena mode never uses more bytes than TVM mode.

No IR here: where storages are emitted is :mod:`memcore_py.planning.emission`'s job.
"""
from __future__ import annotations

from operator import attrgetter

import numpy as np

import memcore  # the engine's kernels load on first use
from memcore.offsets import pack_trusted

from ..analysis.storage_tokens import TokenProgram
from ..ir.memo import MEMO
from ..ir.prim import IntImm
from .lower_bound import function_lower_bounds, pool_groups, pool_lower_bounds
from .memory_plan import MemoryPlan, StoragePlan

__all__ = ["MODES", "plan_memory", "tvm_plan", "arena_plan", "run_token_program"]

#: The planning modes: TVM's token reuse, or offset packing into arenas.
MODES = ("tvm", "arena")


def run_token_program(program: TokenProgram, *, key_device: bool = True):
    """Run the event program through :func:`memcore.plan_tokens` (``match_range`` 16, Relax
    release policy). Returns the engine's :class:`memcore.TokenPlan`."""
    tok_pool, keys = program.pools(key_device=key_device)
    return _run_pools(program, tok_pool, len(keys))


def _run_pools(program: TokenProgram, tok_pool, n_pools: int):
    """:func:`run_token_program` with the pools already made (``tok_pool``, ``n_pools``:
    :meth:`TokenProgram.pools`'s)."""
    if program.has_symbolic:
        tok_sym = program.sym_classes(tok_pool)
        tok_bytes = np.where(program.tok_const >= 0, program.tok_const, 0)
    else:  # all constant: tok_sym's default
        tok_sym = None
        tok_bytes = program.tok_const
    # the analysis built these arrays (int64, int8 kinds, consistent lengths, pool ids dense):
    # no re-validation
    return memcore.plan_tokens(tok_bytes, tok_pool, program.tok_refs, program.ev_kind, program.ev_tok,
                               tok_sym=tok_sym, match_range=16, check=False, n_pools=n_pools)


#: Across calls: storage size (int) -> its IntImm (IR nodes are immutable, so plans share
#: them as the rewriter shares its leaf nodes). A memo table (memcore_py.ir.memo).
_BYTES_IMMS = MEMO.group("planning.allocate.bytes_imms")


#: a TokenInfo's dtype
_DTYPE = attrgetter("dtype")


def _bytes_imm(nbytes: int) -> IntImm:
    imm = _BYTES_IMMS.table.get(nbytes)
    if imm is None:
        imm = _BYTES_IMMS.put(nbytes, IntImm(nbytes))
    return imm


def _storage_sum(storages) -> int:
    return sum(s.nbytes.value for s in storages if type(s.nbytes) is IntImm)


def tvm_plan(program: TokenProgram, *, key_device: bool = True) -> MemoryPlan:
    """TVM's plan: storage sizes are the engine's (maximum requested) for constant sizes, the
    first token's expression otherwise; every offset is 0."""
    plan = run_token_program(program, key_device=key_device)
    storage_of = plan.storage_of  # int64, one entry per token (every token is requested)
    storages, total = _tvm_storages(program, storage_of, plan.storage_bytes.tolist())
    # positional: mode, storages, tok_storage, tok_offset, tvm_bytes, planned_bytes, lower_bound,
    # function_names (keywords cost more than the rest of this function on small programs)
    return MemoryPlan("tvm", storages, storage_of, np.zeros(len(storage_of), dtype=np.int64), total, total, 0,
                      program.function_names)


def _tvm_storages(program: TokenProgram, storage_of: np.ndarray, sizes: list):
    """The :class:`StoragePlan` of each storage of the engine's token plan (``storage_of``
    per token, ``sizes`` per storage) and the bytes of the constant-size ones."""
    infos, tok_info = program.infos, program.tok_info.tolist()
    storages = [None] * len(sizes)
    total = 0
    for t, k in enumerate(storage_of.tolist()):  # program order: a storage's first token first
        entry = storages[k]
        if entry is not None:
            entry.tokens.append(t)
            continue
        const_bytes, nbytes, dtype, scope, device, func, _args, _id = infos[tok_info[t]]  # a TokenInfo
        if const_bytes >= 0:
            nbytes = _BYTES_IMMS.table.get(sizes[k]) or _bytes_imm(sizes[k])
            total += sizes[k]
        storages[k] = StoragePlan(nbytes, dtype, scope, device, func, [t])
    return storages, total


def _stacked_storages(sizes, used, tok_storage, alignment, lower_bound, tvm_bytes):
    """The pool's TVM-mode storages laid end to end as one arena, when that is already optimal.

    Tokens of one TVM-mode storage have disjoint lifetimes and each fits its storage, so
    placing storage ``k`` at the sum of the aligned sizes of the storages before it is a valid
    packing. When its size equals the unaligned max-live ``lower_bound`` (every storage a
    multiple of ``alignment``, no reuse wasted), no packing can be smaller and the offset
    heuristics of :func:`memcore.plan_offsets` are skipped (on small problems they cost more
    than the planning itself). ``sizes``: bytes of each TVM-mode storage. Returns ``(offset
    per token, arena bytes)``, or None otherwise.
    """
    if tvm_bytes != lower_bound:
        return None
    base = [0] * len(sizes)  # offset of each used storage
    at = 0
    for k in used:
        size = sizes[k]
        if size % alignment:
            return None
        base[k] = at
        at += size
    offset = np.array(base, dtype=np.int64)[tok_storage]
    return offset, at


def arena_plan(program: TokenProgram, alignment: int = 64, time_limit=None) -> MemoryPlan:
    """Pack each (function, scope, device) pool into one arena where that is no larger than
    the TVM-mode storages of the same tokens (see the module docstring). The lower bound is
    always computed (the search stops at it)."""
    # TVM's plan (the engine's storages); its StoragePlans are built only if some survive
    tok_pool, keys = program.pools()
    token_plan = _run_pools(program, tok_pool, len(keys))
    tok_storage = token_plan.storage_of
    sizes = token_plan.storage_bytes.tolist()
    # one (function, scope, dtype, device) pool: one (function, scope, device) group too
    groups = pool_groups(program, one_pool=len(keys) == 1)
    bounds = pool_lower_bounds(program, groups)
    keep = [True] * len(sizes)
    arenas = []
    n_tok = program.tok_const.shape[0]
    infos = program.infos
    all_dtypes = None
    for (func, scope, device), idx in groups:
        if idx.shape[0] < 2:
            continue
        if idx.shape[0] == n_tok:
            # every token (idx is 0..n_tok-1): no gathering, and every storage is used (each
            # holds at least one token) and constant-size (no token is symbolic)
            pool_storage, start, end, size = tok_storage, program.tok_start, program.tok_end, program.tok_const
            used = range(len(sizes))
            tvm_bytes = sum(sizes)
        else:
            pool_storage = tok_storage[idx]
            start, end, size = program.tok_start[idx], program.tok_end[idx], program.tok_const[idx]
            used = sorted(set(pool_storage.tolist()))  # constant-size storages (no symbolic token)
            tvm_bytes = sum(sizes[s] for s in used)
        packed = _stacked_storages(sizes, used, pool_storage, alignment, bounds[(func, scope, device)], tvm_bytes)
        if packed is None:
            # int64 arrays of the analysis, start <= end, sizes >= 0: no re-validation
            packed = pack_trusted(start, end, size, alignment, time_limit)
        offset, arena_bytes = packed[0], packed[1]
        if arena_bytes > tvm_bytes:
            continue
        # the dtypes of the TokenInfos the pool's tokens use: those of all the (few) infos
        # when they agree, else of the infos counted among the pool's tokens
        if all_dtypes is None:
            all_dtypes = set(map(_DTYPE, infos))
        dtypes = all_dtypes
        if len(dtypes) > 1:
            used_infos = np.flatnonzero(np.bincount(program.tok_info[idx], minlength=len(infos)))
            dtypes = {infos[i].dtype for i in used_infos.tolist()}
        dtype = next(iter(dtypes)) if len(dtypes) == 1 else "uint8"
        for s in used:
            keep[s] = False
        # idx: the pool's tokens in program order (pool_groups), as StoragePlan.tokens wants
        arenas.append((StoragePlan(_bytes_imm(int(arena_bytes)), dtype, scope, device, func, idx.tolist()),
                       idx, offset))
    some_kept = any(keep)
    if program.has_symbolic or some_kept:
        storages, tvm_total = _tvm_storages(program, tok_storage, sizes)
    else:  # every storage constant and packed: no StoragePlan of TVM mode is needed
        storages, tvm_total = None, sum(sizes)
    if len(arenas) == 1 and arenas[0][1].shape[0] == n_tok and not some_kept:
        # one arena holds every token (the common case): storage 0, the packing's offsets
        final = [arenas[0][0]]
        tok_storage = np.zeros(n_tok, dtype=np.int64)
        tok_offset = arenas[0][2]  # idx is 0..n_tok-1
        if not tok_offset.flags.writeable:  # the engine's (read-only) offsets: a writable copy
            tok_offset = np.array(tok_offset, dtype=np.int64)
        planned = int(final[0].nbytes.value)  # an IntImm (_bytes_imm)
    else:
        # renumber: kept TVM storages first (creation order), then arenas
        tok_offset = np.zeros(n_tok, dtype=np.int64)
        remap = np.full(len(sizes), -1, dtype=np.int64)
        final = []
        for s, entry in enumerate(storages or ()):
            if keep[s]:
                remap[s] = len(final)
                final.append(entry)
        tok_storage = remap[tok_storage] if len(sizes) else tok_storage
        for entry, idx, offsets in arenas:
            tok_storage[idx] = len(final)
            tok_offset[idx] = offsets
            final.append(entry)
        planned = _storage_sum(final)
    # positional: mode, storages, tok_storage, tok_offset, tvm_bytes, planned_bytes, lower_bound,
    # function_names, function_lower_bounds
    return MemoryPlan("arena", final, tok_storage, tok_offset, tvm_total, planned, sum(bounds.values()),
                      program.function_names, function_lower_bounds(program, bounds))


def plan_memory(program: TokenProgram, mode: str = "tvm", *, alignment: int = 64, time_limit=None,
                key_device: bool = True, lower_bound: bool = False) -> MemoryPlan:
    """Plan the tokens of ``program`` in ``mode`` (``"tvm"`` or ``"arena"``).

    Parameters
    ----------
    program : TokenProgram
    mode : {"tvm", "arena"}
    alignment : int, default 64
        Arena mode: byte alignment of offsets.
    time_limit : float or None
        Arena mode: seconds of :func:`memcore.plan_offsets`'s anytime search per pool.
    key_device : bool, default True
        TVM mode: storages of different devices are never shared (False: TVM's pool key).
    lower_bound : bool, default False
        TVM mode: also compute :attr:`MemoryPlan.lower_bound` (arena mode always does).

    Returns
    -------
    MemoryPlan
        Each storage's ``tokens`` in program order.
    """
    if mode not in MODES:
        raise ValueError(f"planning mode must be one of {MODES}; got {mode!r}")
    if program.tok_const.shape[0] == 0:  # no token (the n_tok property costs more)
        # nothing to plan (every allocation escapes, or none): what both planners return
        # for no tokens, without running the engine
        plan = MemoryPlan(mode, [], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                          function_names=program.function_names)
        if lower_bound or mode == "arena":
            plan.function_lower_bounds = dict.fromkeys(program.function_names, 0)
        return plan
    if mode == "tvm":
        plan = tvm_plan(program, key_device=key_device)
        if lower_bound:
            bounds = pool_lower_bounds(program)
            plan.lower_bound = sum(bounds.values())
            plan.function_lower_bounds = function_lower_bounds(program, bounds)
    else:
        plan = arena_plan(program, alignment, time_limit)
    return plan
