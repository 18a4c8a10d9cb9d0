"""Sweeps (``memcore_py.sweep.plan_many``): many variants in one call, serial and on a process
pool, against the loop a user writes by hand, and with the result cache.

Workload: the shipped real models (static: their modes only) and the dynamic-sequence texts of
BERT-base, GPT-2 and the Llama decoder (``bench_small_and_dynamic.dynamic_text``, unbounded
``n``) at sequence lengths 1, 2, 3, ..., each in TVM mode and arena mode: :data:`N_VARIANTS`
variants with ``--benchmark-only`` (10,000), :data:`SMOKE_VARIANTS` under
``--benchmark-disable``.

- ``test_sweep_serial`` / ``test_sweep_process``: ``plan_many`` with ``executor="serial"`` and
  ``"process"`` (``jobs=2``, the machine's cores); the pooled results are checked identical to
  the serial ones of the same run. ``extra_info``: variants per second, the pool's speed-up,
  the pool's fixed cost (a one-variant sweep on the pool: starting a worker) and the scaling
  estimated for N cores from per-batch timings: the batches ``plan_many`` cuts for N workers,
  each timed alone on a fresh worker, scheduled longest first on N workers;
  ``T_N = fixed + makespan``, speed-up ``T_serial / T_N``, efficiency ``T_serial / (N * T_N)``.
- ``test_hand_written_loop``: the baseline, what a sweep replaces: per variant, parse the model,
  lower it, plan it in its mode and read the report at ``bind`` (``memcore plan``'s path), on
  :data:`LOOP_VARIANTS` variants; ``extra_info`` gives its time per variant.
- ``test_sweep_cache``: the same sweep with a cache: cold (plans and stores; best of two, each
  on a new file) and warm (every variant a hit; best of three);
  ``extra_info["warm_speedup"]`` = cold / warm.

Run: ``python -m pytest bench/bench_sweep.py --benchmark-only`` (table in bench/README.md,
"Sweeps").
"""
from __future__ import annotations

import time

import pytest

from bench_small_and_dynamic import dynamic_text
from memcore_py.examples.models import list_models
from memcore_py.sweep import Variant, plan_many

#: Variants of a full run, and of the smoke run (``--benchmark-disable``).
N_VARIANTS = 10_000
SMOKE_VARIANTS = 300
#: Variants of the hand-written loop (its time per variant is what is compared).
LOOP_VARIANTS = 60
DYNAMIC = ("bert_base", "gpt2_small", "llama_small")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """``(static model names, dynamic model paths)``."""
    root = tmp_path_factory.mktemp("sweep_models")
    paths = []
    for name in DYNAMIC:
        path = root / f"{name}_dyn.py"
        path.write_text(dynamic_text(name))
        paths.append(str(path))
    return list_models(), paths


def _variants(models, n: int) -> list:
    static, dynamic = models
    out = [Variant(m, mode=mode) for m in static for mode in ("tvm", "arena")]
    seq = 1
    while len(out) < n:
        for path in dynamic:
            for mode in ("tvm", "arena"):
                out.append(Variant(path, bind={"n": seq}, mode=mode))
        seq += 1
    return out[:n]


def _count(request) -> int:
    return SMOKE_VARIANTS if request.config.getoption("benchmark_disable") else N_VARIANTS


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


_SERIAL: dict = {}


def _serial(variants):
    key = len(variants)
    if key not in _SERIAL:
        _SERIAL[key] = _timed(lambda: plan_many(variants, executor="serial"))
    return _SERIAL[key]


def test_sweep_serial(benchmark, request, models):
    variants = _variants(models, _count(request))
    results, seconds = _serial(variants)
    assert not [r.error for r in results if r.error]
    benchmark.extra_info.update(n_variants=len(variants), serial_seconds=seconds,
                                variants_per_second=len(variants) / seconds)
    benchmark.pedantic(lambda: plan_many(variants[:200], executor="serial"), rounds=1, iterations=1)


def _batch_seconds(variants, jobs: int) -> list:
    """The wall time of each batch ``plan_many`` cuts for ``jobs`` workers, each planned alone
    by a fresh worker (what one pool worker does with it)."""
    from memcore_py.sweep.executors import batches
    from memcore_py.sweep.variant import model_source
    from memcore_py.sweep.worker import plan_batch

    sources: dict = {}
    items = []
    for k, v in enumerate(variants):
        key = v.model if isinstance(v.model, str) else id(v.model)
        source = sources.get(key) or sources.setdefault(key, model_source(v.model))
        items.append((k, source, v.options()))
    out = []
    for batch in batches(items, jobs):
        out.append(_timed(lambda batch=batch: plan_batch(batch))[1])
    return out


def _makespan(seconds: list, workers: int) -> float:
    """Longest-processing-time-first schedule of the batch times on ``workers`` workers."""
    loads = [0.0] * workers
    for s in sorted(seconds, reverse=True):
        i = loads.index(min(loads))
        loads[i] += s
    return max(loads)


def test_sweep_process(benchmark, request, models):
    variants = _variants(models, _count(request))
    serial, serial_s = _serial(variants)
    pooled, pooled_s = _timed(lambda: plan_many(variants, executor="process", jobs=2))
    assert all(a.same_plan(b) for a, b in zip(serial, pooled)) and len(pooled) == len(serial)
    _, fixed = _timed(lambda: plan_many(variants[:1], executor="process", jobs=1))
    estimate = {}
    for n in (2, 4, 8, 16):
        t_n = fixed + _makespan(_batch_seconds(variants, n), n)
        estimate[n] = {"seconds": t_n, "speedup": serial_s / t_n, "efficiency": serial_s / (n * t_n)}
    benchmark.extra_info.update(
        n_variants=len(variants), serial_seconds=serial_s, pool_seconds=pooled_s, pool_speedup=serial_s / pooled_s,
        pool_fixed_seconds=fixed, identical_to_serial=True, scaling_estimate=estimate)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def test_hand_written_loop(benchmark, models):
    """The baseline: one full read-lower-plan-report per variant (``memcore plan``'s path)."""
    from memcore_py.ir.text.parser import parse
    from memcore_py.planning.report import build_report
    from memcore_py.transform import CallTIRRewrite, LowerForPlanning, RemovePurityChecking, Sequential, ToNonDataflow
    from memcore_py.transform.lower_for_planning import has_high_level_calls
    from memcore_py.transform.static_plan_block_memory import plan_block_memory

    variants = [v for v in _variants(models, 10 + LOOP_VARIANTS) if v.bind][:LOOP_VARIANTS]

    def loop():
        out = []
        for v in variants:
            with open(v.model, encoding="utf-8") as fh:
                mod = parse(fh.read())
            if has_high_level_calls(mod):
                mod = Sequential([LowerForPlanning(), ToNonDataflow(), RemovePurityChecking(), CallTIRRewrite()])(mod)
            plan = (plan_block_memory(mod, "tvm", lower_bound=True) if v.mode == "tvm"
                    else plan_block_memory(mod, "arena", time_limit=None))
            out.append(build_report(mod, plan, plan, bind=v.bind))
        return out

    _, seconds = _timed(loop)
    swept, swept_s = _timed(lambda: plan_many(variants, executor="serial"))
    assert not [r.error for r in swept if r.error]
    benchmark.extra_info.update(n_variants=len(variants), loop_seconds_per_variant=seconds / len(variants),
                                sweep_seconds_per_variant=swept_s / len(variants), sweep_speedup=seconds / swept_s)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def test_sweep_cache(benchmark, request, models, tmp_path):
    variants = _variants(models, _count(request))
    cold_s = warm_s = float("inf")
    for k in range(2):  # best of two cold runs (each on a new cache file), three warm ones
        cache = tmp_path / f"sweep{k}.sqlite"
        cold, seconds = _timed(lambda cache=cache: plan_many(variants, executor="serial", cache=cache))
        cold_s = min(cold_s, seconds)
    for _ in range(3):
        warm, seconds = _timed(lambda: plan_many(variants, executor="serial", cache=cache))
        warm_s = min(warm_s, seconds)
    assert all(r.cached for r in warm) and all(a.same_plan(b) for a, b in zip(cold, warm))
    benchmark.extra_info.update(n_variants=len(variants), cold_seconds=cold_s, warm_seconds=warm_s,
                                warm_speedup=cold_s / warm_s, warm_ms_per_variant=warm_s / len(variants) * 1e3)
    benchmark.pedantic(lambda: plan_many(variants, executor="serial", cache=cache), rounds=3, iterations=1)
