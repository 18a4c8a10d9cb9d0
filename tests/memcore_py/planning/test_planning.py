"""memcore_py.planning without TVM: MemoryPlan invariants, lower bounds, emission sites, bad input.

Every check recomputes what it checks independently of the planner: storage sharing with the
engine's verify_offsets, the lower bound with a plain Python sweep over the token lifetimes.
"""
import numpy as np
import pytest

import memcore
from memcore_py.analysis.storage_tokens import analyze_storage_tokens
from memcore_py.errors import PassError
from memcore_py.examples import load
from memcore_py.planning import (
    EmissionSite,
    MemoryPlan,
    emission_sites,
    function_lower_bounds,
    plan_memory,
    pool_lower_bounds,
)
from memcore_py.testing import random_lowered_module
from memcore_py.transform.static_plan_block_memory import plan_block_memory

SEEDS = range(12)


def _program(seed):
    return analyze_storage_tokens(random_lowered_module(seed, 150))


def _sweep_bound(program, idx):
    """Max over steps of the bytes of the tokens live at that step (inclusive lifetimes)."""
    best = 0
    for step in range(int(program.tok_start.min(initial=0)), int(program.tok_end.max(initial=-1)) + 1):
        live = [t for t in idx if program.tok_start[t] <= step <= program.tok_end[t]]
        best = max(best, int(sum(program.tok_const[t] for t in live)))
    return best


def _check_storages(program, plan):
    """Tokens of one storage never overlap in bytes while both are live; each fits."""
    for k, s in enumerate(plan.storages):
        idx = np.flatnonzero(plan.tok_storage == k)
        assert sorted(idx.tolist()) == s.tokens
        if s.const_bytes is None:
            continue
        memcore.verify_offsets(program.tok_start[idx], program.tok_end[idx], program.tok_const[idx],
                               plan.tok_offset[idx], s.const_bytes)


@pytest.mark.parametrize("seed", SEEDS)
def test_tvm_plan_shares_only_disjoint_lifetimes(seed):
    st = _program(seed)
    plan = plan_memory(st.program, "tvm", lower_bound=True)
    assert isinstance(plan, MemoryPlan) and plan.mode == "tvm"
    assert plan.n_tok == st.program.n_tok
    assert not plan.tok_offset.any()
    _check_storages(st.program, plan)
    assert plan.planned_bytes == plan.tvm_bytes == sum(s.const_bytes or 0 for s in plan.storages)
    assert plan.lower_bound <= plan.planned_bytes


@pytest.mark.parametrize("seed", SEEDS)
def test_arena_plan_is_valid_and_never_above_tvm_mode(seed):
    st = _program(seed)
    plan = plan_memory(st.program, "arena", time_limit=None)
    _check_storages(st.program, plan)
    assert plan.lower_bound <= plan.planned_bytes <= plan.tvm_bytes


@pytest.mark.parametrize("seed", SEEDS)
def test_lower_bounds_equal_an_independent_sweep(seed):
    program = _program(seed).program
    bounds = pool_lower_bounds(program)
    for (func, scope, device), got in bounds.items():
        idx = [t for t in range(program.n_tok) if program.tok_const[t] >= 0
               and program.infos[program.tok_info[t]].func == func
               and program.infos[program.tok_info[t]].scope == scope
               and program.infos[program.tok_info[t]].device == device]
        assert got == _sweep_bound(program, idx)
    per_function = function_lower_bounds(program)
    assert set(per_function) == set(program.function_names)
    if not (program.tok_const < 0).any():
        assert sum(per_function.values()) == sum(bounds.values())


def test_emission_sites_precede_the_first_allocation_of_each_storage():
    st = analyze_storage_tokens(load("mlp"))
    plan = plan_memory(st.program, "tvm")
    sites = emission_sites(st.sites, plan)
    assert len(sites) == plan.n_storage > 0
    for s, site in zip(plan.storages, sites):
        assert isinstance(site, EmissionSite)
        first = s.tokens[0]
        if site.is_tvm_site:
            assert (site.block, site.position) == (st.sites.tok_block[first], st.sites.tok_index[first])


def test_plan_block_memory_returns_the_plan_it_applied():
    mod = load("mlp")
    planned = plan_block_memory(mod, "tvm", lower_bound=True)
    assert planned.plan.function_lower_bounds is not None
    n_storage = sum(1 for blk in planned.module["main"].body.blocks for b in blk.bindings
                    if getattr(getattr(b.value, "op", None), "name", "") == "relax.memory.alloc_storage")
    assert n_storage == planned.plan.n_storage


def test_bad_mode_is_refused():
    program = analyze_storage_tokens(load("mlp")).program
    with pytest.raises(ValueError, match="planning mode must be one of"):
        plan_memory(program, "greedy")
    with pytest.raises(PassError, match="mode must be one of"):
        plan_block_memory(load("mlp"), "greedy")
    with pytest.raises(PassError, match="alignment must be an int >= 1"):
        plan_block_memory(load("mlp"), "arena", alignment=0)
