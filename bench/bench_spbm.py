"""StaticPlanBlockMemory on long element-wise chains: ours (TVM-exact and arena mode) against
Apache TVM 0.27's pass on the same program, in the same run.

Workload (:func:`memcore_py.testing.memory_programs.chain_module`): ``main`` with n
element-wise ops after CallTIRRewrite, three bindings each (``alloc = R.builtin.alloc_tensor``,
``kernel(prev, alloc)``, ``y = alloc``), float32 tensors cycling through four widths; n = 1k,
10k, 100k (3k / 30k / 300k bindings). Our module is built directly as IR; TVM's equivalent is
built with TVM's node constructors (its TVMScript parser needs minutes for 30k bindings), from
a small parsed template, once per session. Both are the same program (checked at 1k: our
output equals TVM's, structurally).

``extra_info`` records bindings, planned tensors, storages and planned bytes of both of our
modes, TVM's own storages and bytes, and the max-live lower bound.

Run: ``pytest bench/bench_spbm.py --benchmark-only`` (results: bench/README.md,
"StaticPlanBlockMemory"). With ``--benchmark-disable`` (the CI smoke run) TVM's pass is not run
at 100k ops (about 5 s per call).
"""
import time

import pytest

from _passes_common import SIZES, WIDTH, tvm_chain_module
from _passes_common import tvm_or_none as _tvm
from memcore_py.testing.memory_programs import chain_module
from memcore_py.transform.static_plan_block_memory import plan_statistics, static_plan_block_memory

@pytest.fixture(scope="session")
def chains():
    return {n: chain_module(n, width=WIDTH) for n in SIZES}


@pytest.fixture(scope="session")
def tvm_chains():
    if _tvm() is None:
        return None
    return {}


def _tvm_module(tvm_chains, n):
    if n not in tvm_chains:
        tvm_chains[n] = tvm_chain_module(n)
    return tvm_chains[n]


def _storage_stats(out_text_module):
    """(storages, bytes) of a planned TVM module."""
    from tvm import relax

    n, total = 0, 0
    for f in out_text_module.functions.values():
        if not isinstance(f, relax.Function):
            continue
        for block in f.body.blocks:
            for b in block.bindings:
                v = b.value
                if isinstance(v, relax.Call) and getattr(v.op, "name", "") == "relax.memory.alloc_storage":
                    n += 1
                    total += int(v.args[0].values[0])
    return n, total


def _quality(benchmark, mod, n):
    tvm_stats = plan_statistics(mod, "tvm")
    arena_stats = plan_statistics(mod, "arena")
    benchmark.extra_info.update(
        n_ops=n,
        n_bindings=3 * n,
        n_planned=tvm_stats["n_planned"],
        tvm_mode_storages=tvm_stats["n_storage"],
        tvm_mode_bytes=tvm_stats["planned_bytes"],
        arena_storages=arena_stats["n_storage"],
        arena_bytes=arena_stats["planned_bytes"],
        lower_bound=arena_stats["lower_bound"],
    )


@pytest.mark.benchmark(group="static-plan-block-memory")
@pytest.mark.parametrize("n", SIZES)
def test_spbm_ours_tvm_mode(benchmark, chains, n):
    mod = chains[n]
    out = benchmark(static_plan_block_memory, mod, "tvm")
    _quality(benchmark, mod, n)
    assert out is not mod


@pytest.mark.benchmark(group="static-plan-block-memory")
@pytest.mark.parametrize("n", SIZES)
def test_spbm_ours_arena_mode(benchmark, chains, n):
    mod = chains[n]
    out = benchmark(static_plan_block_memory, mod, "arena")
    _quality(benchmark, mod, n)
    assert out is not mod


@pytest.mark.benchmark(group="static-plan-block-memory")
@pytest.mark.parametrize("n", SIZES)
def test_spbm_tvm(benchmark, request, tvm_chains, chains, n):
    if tvm_chains is None:
        pytest.skip("apache-tvm is not installed")
    if n == SIZES[-1] and request.config.getoption("benchmark_disable"):
        pytest.skip("TVM at 100k ops only when benchmarking (about 5 s per call)")
    from tvm import relax

    tmod = _tvm_module(tvm_chains, n)
    spbm = relax.transform.StaticPlanBlockMemory()
    out = benchmark.pedantic(spbm, args=(tmod,), rounds=3 if n < SIZES[-1] else 1, iterations=1)
    n_storage, total = _storage_stats(out)
    benchmark.extra_info.update(n_ops=n, n_bindings=3 * n, tvm_storages=n_storage, tvm_bytes=total)
    ours = plan_statistics(chains[n], "tvm")
    assert (n_storage, total) == (ours["n_storage"], ours["planned_bytes"])
    if not request.config.getoption("benchmark_disable"):
        benchmark.extra_info.update(_alternating(chains[n], tmod, spbm, rounds=5 if n < SIZES[-1] else 2))


def _alternating(mod, tmod, spbm, rounds):
    """Ours (TVM mode) and TVM's pass one after the other, ``rounds`` times; best wall and CPU
    (process) time of each. CPU time is the fairer ratio on a loaded machine: a long call is
    preempted more often than a short one."""
    best = {"ours_wall": 1e9, "ours_cpu": 1e9, "tvm_wall": 1e9, "tvm_cpu": 1e9}
    for _ in range(rounds):
        for name, fn, arg in (("ours", lambda m: static_plan_block_memory(m, "tvm"), mod), ("tvm", spbm, tmod)):
            w, c = time.perf_counter(), time.process_time()
            out = fn(arg)
            best[name + "_wall"] = min(best[name + "_wall"], time.perf_counter() - w)
            best[name + "_cpu"] = min(best[name + "_cpu"], time.process_time() - c)
            del out
    best["speedup_wall"] = best["tvm_wall"] / best["ours_wall"]
    best["speedup_cpu"] = best["tvm_cpu"] / best["ours_cpu"]
    return best


def test_chain_equals_tvm_output():
    """The benchmark programs are the same on both sides: our output equals TVM's at 1k ops."""
    if _tvm() is None:
        pytest.skip("apache-tvm is not installed")
    import memcore_py
    from memcore_py.ir.structural import assert_structural_equal
    from tvm import relax

    n = 1_000
    theirs = memcore_py.parse(relax.transform.StaticPlanBlockMemory()(tvm_chain_module(n)).script())
    ours = static_plan_block_memory(chain_module(n, width=WIDTH))
    assert_structural_equal(ours["main"], theirs["main"])
