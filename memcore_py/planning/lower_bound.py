"""The max-live lower bound of a token program, per (function, storage scope, device) pool.

Tensors of different functions, scopes or devices can never share bytes, so the bound of a
program is the sum over those pools of :func:`memcore.max_live_bytes` of the pool's
constant-size tokens (their lifetimes ``[tok_start, tok_end]`` inclusive). This is the one
place the bound is computed: arena packing, the plan totals and the reports all use it.
"""
from __future__ import annotations

from operator import attrgetter

import numpy as np

import memcore  # the engine's kernels load on first use

from ..analysis.arith import SizePolynomial
from ..analysis.storage_tokens import TokenProgram

#: The pool of a token for the bound: tensors of different functions, scopes or devices
#: never share bytes.
_POOL_KEY = attrgetter("func", "scope", "device")

__all__ = ["max_live_by_pool", "pool_groups", "pool_lower_bounds", "function_lower_bounds",
           "function_lower_bounds_at"]


def max_live_by_pool(start, end, size, pool_keys) -> dict:
    """``{key: max-live bytes}`` of the tensors of each pool (tensors that can never share
    bytes with another pool's). ``start``, ``end``, ``size``: int64 arrays of one length;
    ``pool_keys``: the pool key of each tensor (any hashables)."""
    members: dict = {}
    for i, key in enumerate(pool_keys):
        members.setdefault(key, []).append(i)
    out = {}
    for key, idx in members.items():
        idx = np.asarray(idx, dtype=np.int64)
        out[key] = int(memcore.max_live_bytes(start[idx], end[idx], size[idx]))
    return out


def pool_groups(program: TokenProgram, *, one_pool: bool = False) -> list:
    """Constant-size tokens grouped by (function, scope, device).

    ``one_pool``: the caller knows that every TokenInfo of ``program`` has the same
    (function, scope, device) (e.g. from :meth:`TokenProgram.pools`), so it is not checked.

    Returns
    -------
    list of (key, ndarray of int64)
        ``key = (function index, scope, device)`` in order of first use, with the token ids
        of the group in program order. Groups without a constant-size token are left out.
    """
    infos = program.infos
    if one_pool or len(infos) == 1 or len(set(map(_POOL_KEY, infos))) <= 1:
        # one pool (the common case), or no token: no grouping needed
        toks = np.flatnonzero(program.tok_const >= 0) if program.has_symbolic else np.arange(program.tok_const.shape[0])
        return [(_POOL_KEY(infos[0]), toks)] if toks.shape[0] else []
    group, keys = program.group_ids(_POOL_KEY)
    toks = np.flatnonzero(program.tok_const >= 0) if program.has_symbolic else np.arange(program.n_tok)
    g = group[toks]
    order = np.argsort(g, kind="stable")
    bounds = np.searchsorted(g[order], np.arange(len(keys) + 1))
    out = []
    for k, key in enumerate(keys):
        idx = toks[order[bounds[k]:bounds[k + 1]]]
        if idx.shape[0]:
            out.append((key, idx))
    return out


def pool_lower_bounds(program: TokenProgram, groups: list | None = None) -> dict:
    """``{(function index, scope, device): max-live bytes}`` of the constant-size tokens
    (``groups``: :func:`pool_groups`'s result, when already computed)."""
    out = {}
    n_tok = program.tok_const.shape[0]
    for key, idx in pool_groups(program) if groups is None else groups:
        # int64 arrays of the analysis, start <= end, constant sizes >= 0: no re-validation
        if idx.shape[0] == n_tok:  # every token (idx is 0..n_tok-1): no gathering
            out[key] = memcore.max_live_bytes(program.tok_start, program.tok_end, program.tok_const, check=False)
        else:
            out[key] = memcore.max_live_bytes(program.tok_start[idx], program.tok_end[idx], program.tok_const[idx],
                                              check=False)
    return out


def function_lower_bounds(program: TokenProgram, pool_bounds: dict | None = None) -> dict:
    """Function name -> sum of its pools' bounds; None for a function with a symbolic-size
    token (its bound is not a constant). Every analysed function is a key. ``pool_bounds``:
    :func:`pool_lower_bounds`'s result, when already computed."""
    names = program.function_names
    totals = [0] * len(names)
    for (f, _scope, _dev), b in (pool_lower_bounds(program) if pool_bounds is None else pool_bounds).items():
        totals[f] += b
    if program.has_symbolic:
        for f in np.unique(program.tok_func[program.tok_const < 0]).tolist():
            totals[f] = None
    if len(totals) == 1:  # one function (the common case)
        return {names[0]: totals[0]}
    return {name: totals[f] for f, name in enumerate(names)}


def function_lower_bounds_at(program: TokenProgram, values: dict) -> dict:
    """:func:`function_lower_bounds` with the symbolic sizes evaluated at ``values`` (shape
    variable name -> int): function name -> the max-live bytes of all its planned tensors
    (symbolic ones included) at those values, None for a function with a size that still
    depends on an unbound variable."""
    sizes = program.tok_const.copy()
    infos, tok_info = program.infos, program.tok_info
    at: dict = {}
    unresolved: set = set()
    for t in np.flatnonzero(sizes < 0).tolist():
        i = int(tok_info[t])
        v = at.get(i, -1)
        if v == -1:
            v = at[i] = SizePolynomial([infos[i].nbytes]).bind(values).value
        if v is None or v < 0:
            unresolved.add(int(program.tok_func[t]))
            v = 0
        sizes[t] = v
    group, keys = program.group_ids(_POOL_KEY)
    totals: dict = {f: 0 for f in range(len(program.function_names))}
    for key, b in max_live_by_pool(
        program.tok_start, program.tok_end, sizes, [keys[g] for g in group.tolist()]
    ).items():
        totals[key[0]] += b
    return {program.function_names[f]: (None if f in unresolved else b) for f, b in totals.items()}
