"""Real models: StaticPlanBlockMemory (both modes) and KillAfterLastUse, against Apache TVM's
passes on the same modules in the same run.

Workloads are the shipped models (``memcore_py.examples.models``), parsed once per session;
when ``tvm`` is installed the same text is parsed by TVM once per session too, and TVM's
passes are benchmarked beside ours (same group, same module). Every benchmark records quality
and size in ``extra_info``: bindings, planned tensors, storages and bytes of both modes, the
max-live lower bound, TVM's own bytes, and the time per binding.

Run: ``pytest bench/bench_real_models.py --benchmark-only`` (results: bench/README.md,
"Real models").
"""
import time

import pytest

from memcore_py.examples.models import list_models, model_text, tvm_oracle
from memcore_py.planning.check import collect_planned_tensors
from _helpers import tvm_from_source

MODELS = list_models()


def _tvm():
    try:
        import tvm
        from tvm import relax  # noqa: F401
    except ImportError:
        return None
    return tvm


@pytest.fixture(scope="session")
def workloads():
    """name -> dict of our parsed module (and planned/lowered forms), TVM's, and the facts."""
    import memcore_py
    from memcore_py.transform import LowerAllocTensor, StaticPlanBlockMemory

    tvm = _tvm()
    out = {}
    for name in MODELS:
        text = model_text(name)
        mod = memcore_py.parse(text)
        tvm_planned = StaticPlanBlockMemory(mode="tvm")(mod)
        arena_planned = StaticPlanBlockMemory(mode="arena")(mod)
        w = {
            "mod": mod,
            "lowered": LowerAllocTensor()(tvm_planned),
            "tvm_plan": collect_planned_tensors(tvm_planned["main"], "main"),
            "arena_plan": collect_planned_tensors(arena_planned["main"], "main"),
            "oracle": tvm_oracle(name)["functions"]["main"],
        }
        if tvm is not None:
            from tvm import relax

            tmod = tvm_from_source(text)
            w["tvm_mod"] = tmod
            w["tvm_lowered"] = relax.transform.LowerAllocTensor()(relax.transform.StaticPlanBlockMemory()(tmod))
        out[name] = w
    return out


def _facts(w) -> dict:
    tvm_plan, arena_plan = w["tvm_plan"], w["arena_plan"]
    return {
        "n_bindings": w["oracle"]["n_bindings"],
        "n_planned": tvm_plan.n_planned,
        "tvm_mode_storages": len(tvm_plan.storages),
        "tvm_mode_bytes": tvm_plan.total_bytes,
        "arena_storages": len(arena_plan.storages),
        "arena_bytes": arena_plan.total_bytes,
        "lower_bound": arena_plan.lower_bound(),
        "tvm_0_27_bytes": w["oracle"]["total_bytes"],
    }


def _min_seconds(fn, arg, repeat=5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(arg)
        best = min(best, time.perf_counter() - t0)
    return best


def _record(benchmark, w, ours_fn=None, tvm_fn=None, tvm_arg=None):
    """extra_info: facts, our µs/binding, and (ours only) TVM's µs/binding measured now."""
    info = _facts(w)
    n = info["n_bindings"]
    stats = getattr(benchmark, "stats", None)
    mean = getattr(getattr(stats, "stats", None), "mean", None)
    if mean:
        info["us_per_binding"] = mean / n * 1e6
    if tvm_fn is not None and tvm_arg is not None:
        tvm_s = _min_seconds(tvm_fn, tvm_arg)
        info["tvm_us_per_binding"] = tvm_s / n * 1e6
        if mean:
            ours_s = min(stats.stats.min, mean)
            info["speedup_vs_tvm"] = tvm_s / ours_s
    benchmark.extra_info.update(info)


@pytest.mark.benchmark(group="real-models-spbm")
@pytest.mark.parametrize("mode", ["tvm", "arena", "arena-search"])
@pytest.mark.parametrize("name", MODELS)
def test_memcore_spbm(benchmark, workloads, name, mode):
    """``arena-search``: arena mode with ``time_limit=1.0`` (the offset search stops at the
    lower bound, which it reaches on every shipped model)."""
    from memcore_py.transform import StaticPlanBlockMemory

    w = workloads[name]
    if mode == "arena-search":
        spbm = StaticPlanBlockMemory(mode="arena", time_limit=1.0)
    else:
        spbm = StaticPlanBlockMemory(mode=mode)
    out = benchmark(spbm, w["mod"])
    tvm = _tvm()
    tvm_fn = tvm.relax.transform.StaticPlanBlockMemory() if tvm is not None else None
    _record(benchmark, w, tvm_fn=tvm_fn, tvm_arg=w.get("tvm_mod"))
    benchmark.extra_info["bytes_this_mode"] = collect_planned_tensors(out["main"], "main").total_bytes


@pytest.mark.benchmark(group="real-models-spbm")
@pytest.mark.parametrize("name", MODELS)
def test_tvm_spbm(benchmark, workloads, name):
    tvm = _tvm()
    if tvm is None:
        pytest.skip("apache-tvm not installed")
    w = workloads[name]
    benchmark(tvm.relax.transform.StaticPlanBlockMemory(), w["tvm_mod"])
    _record(benchmark, w)


@pytest.mark.benchmark(group="real-models-kill-after-last-use")
@pytest.mark.parametrize("name", MODELS)
def test_memcore_kill_after_last_use(benchmark, workloads, name):
    from memcore_py.transform import KillAfterLastUse

    w = workloads[name]
    benchmark(KillAfterLastUse(), w["lowered"])
    tvm = _tvm()
    tvm_fn = tvm.relax.transform.KillAfterLastUse() if tvm is not None else None
    _record(benchmark, w, tvm_fn=tvm_fn, tvm_arg=w.get("tvm_lowered"))


@pytest.mark.benchmark(group="real-models-kill-after-last-use")
@pytest.mark.parametrize("name", MODELS)
def test_tvm_kill_after_last_use(benchmark, workloads, name):
    tvm = _tvm()
    if tvm is None:
        pytest.skip("apache-tvm not installed")
    w = workloads[name]
    benchmark(tvm.relax.transform.KillAfterLastUse(), w["tvm_lowered"])
    _record(benchmark, w)
