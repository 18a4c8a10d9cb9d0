"""Pure-Python references of every memcore kernel.

Used by tests and benchmarks only: the package never falls back to these. Each function
mirrors the public kernel of the same name and the same contract, written for clarity, not
speed.
"""

import bisect

__all__ = [
    "live_intervals",
    "max_live_bytes",
    "live_profile",
    "plan_tokens",
    "verify_offsets",
]


# -------------------------------------------------------------------------------------------
# liveness (contract: memcore/liveness.py)
# -------------------------------------------------------------------------------------------


def live_intervals(def_pos, use_ptr, use_pos, is_output, n_steps):
    """Reference of :func:`memcore.live_intervals`; returns two lists."""
    start, end = [], []
    for i, d in enumerate(def_pos):
        d = int(d)
        last = d
        for k in range(int(use_ptr[i]), int(use_ptr[i + 1])):
            last = max(last, int(use_pos[k]))
        if is_output[i]:
            last = max(last, int(n_steps))
        start.append(d)
        end.append(last)
    return start, end


def _round_up(value, alignment):
    return -(-int(value) // alignment) * alignment


def max_live_bytes(start, end, size, *, alignment=1):
    """Reference of :func:`memcore.max_live_bytes`: evaluate the load at every start."""
    best = 0
    n = len(start)
    for t in {int(s) for s in start}:
        load = sum(
            _round_up(size[i], alignment) for i in range(n) if start[i] <= t <= end[i]
        )
        best = max(best, load)
    return best


def live_profile(start, end, size, n_steps, *, alignment=1):
    """Reference of :func:`memcore.live_profile`; returns a list of n_steps + 1 ints."""
    profile = [0] * (int(n_steps) + 1)
    for s, e, b in zip(start, end, size):
        for t in range(max(int(s), 0), int(e) + 1):
            profile[t] += _round_up(b, alignment)
    return profile


# -------------------------------------------------------------------------------------------
# tokens (semantics: memcore/tokens.py, spec §1.4 and §1.8)
# -------------------------------------------------------------------------------------------

_EV_REQUEST, _EV_DECREF = 0, 1


def plan_tokens(
    tok_bytes,
    tok_pool,
    tok_refs,
    ev_kind,
    ev_tok,
    *,
    tok_sym=None,
    match_range=16,
    release_zero_ref=False,
):
    """Reference of :func:`memcore.plan_tokens` with sorted lists and bisect.

    Each pool's constant free list is a list of ``(key, seq, storage)`` kept sorted, ``seq``
    being a release counter so equal keys stay in release order. Symbolic free storages are
    one list in release order, scanned for the first with the same class.

    Returns
    -------
    (storage_of, storage_bytes, storage_pool) as lists. Raises ValueError on a bad event
    sequence (the kernel raises InvalidArrayError).
    """
    n_tok = len(tok_bytes)
    sym = [-1] * n_tok if tok_sym is None else [int(x) for x in tok_sym]
    storage_of = [-1] * n_tok
    left = [0] * n_tok  # references still outstanding, per token
    storage_bytes, storage_pool, storage_sym = [], [], []
    free_const = {}  # pool -> sorted list of (key, seq, storage)
    free_sym = {}  # pool -> list of storages in release order
    seq = 0

    def release(st):
        nonlocal seq
        pool = storage_pool[st]
        if storage_sym[st] >= 0:
            free_sym.setdefault(pool, []).append(st)
        else:
            bisect.insort(free_const.setdefault(pool, []), (storage_bytes[st], seq, st))
            seq += 1

    def reuse(p):
        s, pool = int(tok_bytes[p]), int(tok_pool[p])
        if match_range == 0:
            return -1
        if sym[p] >= 0:
            entries = free_sym.get(pool, [])
            for k, st in enumerate(entries):
                if storage_sym[st] == sym[p]:
                    del entries[k]
                    return st
            return -1
        entries = free_const.get(pool, [])
        low, high = s // match_range, s * match_range
        mid = bisect.bisect_left(entries, (s, -1, -1))
        if mid < len(entries) and entries[mid][0] <= high:
            return entries.pop(mid)[2]
        if mid > 0 and entries[mid - 1][0] >= low:
            st = entries.pop(mid - 1)[2]
            storage_bytes[st] = max(storage_bytes[st], s)
            return st
        return -1

    for e, (kind, p) in enumerate(zip(ev_kind, ev_tok)):
        p = int(p)
        if kind == _EV_REQUEST:
            if storage_of[p] >= 0:
                raise ValueError(f"event {e}: token {p} requested twice")
            refs = int(tok_refs[p])
            st = -1
            if refs > 0 or release_zero_ref:
                st = reuse(p)
            if st < 0:
                st = len(storage_bytes)
                storage_bytes.append(int(tok_bytes[p]))
                storage_pool.append(int(tok_pool[p]))
                storage_sym.append(sym[p])
            storage_bytes[st] = max(storage_bytes[st], int(tok_bytes[p]))
            storage_of[p] = st
            left[p] = refs
            if refs == 0 and release_zero_ref:
                release(st)
        elif kind == _EV_DECREF:
            if storage_of[p] < 0:
                raise ValueError(f"event {e}: DECREF of token {p} never requested")
            if left[p] == 0:
                raise ValueError(f"event {e}: DECREF of token {p} whose count is 0")
            left[p] -= 1
            if left[p] == 0:
                release(storage_of[p])
        else:
            raise ValueError(f"event {e}: unknown kind {kind}")
    return storage_of, storage_bytes, storage_pool


# -------------------------------------------------------------------------------------------
# verify_offsets
# -------------------------------------------------------------------------------------------


def verify_offsets(start, end, size, offset, arena_bytes):
    """Reference of :func:`memcore.verify_offsets`: O(n^2) pairwise.

    Returns the list of every conflicting pair ``(i, j)``, ``i < j`` (out-of-arena buffers
    appear as ``(i, -1)``); empty when the plan is valid.
    """
    n = len(start)
    bad = []
    for i in range(n):
        if offset[i] < 0 or offset[i] + size[i] > arena_bytes:
            bad.append((i, -1))
    for i in range(n):
        for j in range(i + 1, n):
            if size[i] == 0 or size[j] == 0:
                continue
            if start[i] <= end[j] and start[j] <= end[i]:
                if offset[i] < offset[j] + size[j] and offset[j] < offset[i] + size[i]:
                    bad.append((i, j))
    return bad


# Offset-packing references live in their own module; re-exported here so tests and
# benchmarks find every reference in one place.
from ._reference_offsets import *  # noqa: E402,F401,F403
