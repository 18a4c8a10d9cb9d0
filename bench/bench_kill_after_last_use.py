"""KillAfterLastUse on long element-wise chains: ours against Apache TVM 0.27's pass on the
same program, in the same run.

Workload: :func:`memcore_py.testing.memory_programs.chain_module` (n element-wise ops after
CallTIRRewrite, three bindings each, tensors cycling through four widths; n = 1k, 10k, 100k,
i.e. 3k / 30k / 300k bindings), planned by our StaticPlanBlockMemory (TVM-exact mode) and
lowered by our LowerAllocTensor, once per session. TVM's input is the same program built
with TVM's node constructors (its TVMScript parser is far too slow at these sizes) and run
through TVM's own StaticPlanBlockMemory and LowerAllocTensor. Only KillAfterLastUse is
timed on both sides. ``test_programs_are_the_same`` checks at 1k ops that TVM's output of
the timed pass equals ours structurally.

``extra_info``: bindings before the pass, kill calls inserted, ``kill_path`` (whether the
compiled flat path or the general one ran); for our runs (when TVM is
installed and benchmarking is on) also the best of several *alternating* calls of our pass
and TVM's (``alternating_ours_s``, ``alternating_tvm_s``, ``alternating_ratio``), the fairer
ratio on a shared machine whose load drifts during the session.

Run: ``pytest bench/bench_kill_after_last_use.py --benchmark-only`` (results: bench/README.md,
"KillAfterLastUse"). With ``--benchmark-disable`` (the CI smoke run) TVM is not run at 100k
ops (building its input and one call take about 30 s there).
"""
import pytest

from _passes_common import SIZES, WIDTH, tvm_chain_module
from _passes_common import tvm_or_none as _tvm
from memcore_py.testing.memory_programs import chain_module
from memcore_py.transform import KillAfterLastUse, LowerAllocTensor
from memcore_py.transform.kill_after_last_use import _kill_with_rebindings
from memcore_py.transform.static_plan_block_memory import static_plan_block_memory

KILL_OPS = ("relax.memory.kill_tensor", "relax.memory.kill_storage", "relax.vm.kill_object")


def _ours_input(n):
    return LowerAllocTensor()(static_plan_block_memory(chain_module(n, width=WIDTH), "tvm"))


def _tvm_chain(n_ops, width=WIDTH, dtype="float32"):
    """TVM's version of ``chain_module``, planned and lowered by TVM's own passes."""
    from tvm import relax

    mod = tvm_chain_module(n_ops, width, dtype)
    mod = relax.transform.StaticPlanBlockMemory()(mod)
    return relax.transform.LowerAllocTensor()(mod)


def _count_bindings(func):
    return sum(len(b.bindings) for b in func.body.blocks)


def _count_kills_ours(func):
    return sum(1 for blk in func.body.blocks for b in blk.bindings
               if getattr(getattr(b.value, "op", None), "name", "") in KILL_OPS)


@pytest.fixture(scope="session")
def kill_inputs():
    return {}


def _input(cache, n):
    if n not in cache:
        cache[n] = _ours_input(n)
    return cache[n]


@pytest.fixture(scope="session")
def tvm_kill_inputs():
    return None if _tvm() is None else {}


def _alternating(mod, tmod, rounds):
    """Best of ``rounds`` alternating calls of our pass and TVM's (seconds each): the fairer
    ratio on a machine whose load changes during the session."""
    import time

    from tvm import relax

    ours, theirs = KillAfterLastUse(), relax.transform.KillAfterLastUse()
    t_ours, t_tvm = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        ours(mod)
        t_ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        theirs(tmod)
        t_tvm.append(time.perf_counter() - t)
    return min(t_ours), min(t_tvm)


@pytest.mark.benchmark(group="kill-after-last-use")
@pytest.mark.parametrize("n", SIZES)
def test_kill_after_last_use_ours(benchmark, request, kill_inputs, tvm_kill_inputs, n):
    mod = _input(kill_inputs, n)
    out = benchmark(KillAfterLastUse(), mod)
    benchmark.extra_info.update(
        n_ops=n,
        n_bindings=_count_bindings(mod["main"]),
        n_kills=_count_kills_ours(out["main"]),
        kill_path=(
            "rebinding rule"
            if _kill_with_rebindings(mod["main"], "main", False) is not None
            else "CanonicalizeBindings"
        ),
    )
    if tvm_kill_inputs is not None and not request.config.getoption("benchmark_disable"):
        if n not in tvm_kill_inputs:
            tvm_kill_inputs[n] = _tvm_chain(n)
        ours_s, tvm_s = _alternating(mod, tvm_kill_inputs[n], 2 if n == SIZES[-1] else 5)
        benchmark.extra_info.update(alternating_ours_s=ours_s, alternating_tvm_s=tvm_s,
                                    alternating_ratio=tvm_s / ours_s)


@pytest.mark.benchmark(group="kill-after-last-use")
@pytest.mark.parametrize("n", SIZES)
def test_kill_after_last_use_tvm(benchmark, request, tvm_kill_inputs, n):
    if tvm_kill_inputs is None:
        pytest.skip("apache-tvm is not installed")
    if n == SIZES[-1] and request.config.getoption("benchmark_disable"):
        pytest.skip("TVM at 100k ops only when benchmarking (about 30 s with its input)")
    from tvm import relax

    if n not in tvm_kill_inputs:
        tvm_kill_inputs[n] = _tvm_chain(n)
    tmod = tvm_kill_inputs[n]
    kill = relax.transform.KillAfterLastUse()
    out = benchmark.pedantic(kill, args=(tmod,), rounds=3 if n < SIZES[-1] else 1, iterations=1)
    n_kills = sum(1 for blk in out["main"].body.blocks for b in blk.bindings
                  if isinstance(b.value, relax.Call) and getattr(b.value.op, "name", "") in KILL_OPS)
    benchmark.extra_info.update(n_ops=n, n_bindings=sum(len(b.bindings) for b in tmod["main"].body.blocks),
                                n_kills=n_kills)


def test_programs_are_the_same(kill_inputs):
    """At 1k ops, TVM's KillAfterLastUse output on its input equals ours on ours."""
    if _tvm() is None:
        pytest.skip("apache-tvm is not installed")
    import memcore_py
    from memcore_py.ir.structural import assert_structural_equal
    from tvm import relax

    n = SIZES[0]
    theirs = memcore_py.parse(relax.transform.KillAfterLastUse()(_tvm_chain(n)).script())
    ours = KillAfterLastUse()(_input(kill_inputs, n))
    assert_structural_equal(ours["main"], theirs["main"])
