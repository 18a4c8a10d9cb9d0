"""Engine offset packing (plan_offsets): speed at 1e3..1e6 buffers, quality on real models
(idealloc) and on MiniMalloc's adversarial instances.

Speed: ``random_intervals(rng, n, n)`` (n buffers over n steps, geometric lifetimes of mean
100, so about 100 live at a time; sizes uniform below 1 MiB) for ``auto`` and each
heuristic, next to ``np.argsort`` of an equal-size int64 array measured in the same run;
``extra_info`` gets ``buffers_per_second`` and the alternating kernel/argsort ratio.
Quality: every benchmark records ``arena_bytes``, ``lower_bound``, ``gap`` (relative) and
the winning ``algorithm``; the idealloc ones also the gap of every heuristic. The
MiniMalloc instances run ``auto`` and ``time_limit=10`` (one round each: the search is
the measured quantity, and under ``--benchmark-disable`` the whole file stays near two
minutes).

Run: ``python -m pytest bench/bench_engine_offsets.py --benchmark-only`` (table in
bench/README.md, "Engine: offsets").
"""

import functools
from pathlib import Path

import numpy as np
import pytest

from _engine_baselines import REFERENCE_SIZES, SIZES, argsort_input, record_ratio
from memcore import plan_offsets, read_minimalloc_csv
from memcore import _reference_offsets as ref
from memcore._workloads import random_intervals
from memcore.offsets import HEURISTICS

DATA = Path(__file__).resolve().parent / "data"

#: Gap of plain size-descending best fit (C++, O(n^2)) from data/idealloc/README.md.
IDEALLOC_GREEDY_GAP = {
    "resnet50": 0.0069,
    "pangu_2.6B": 0.0076,
    "G_1": 0.0011,
    "Y_1": 0.0047,
    "S_1": 0.0673,
}
#: Max-live lower bounds from data/minimalloc/README.md.
MINIMALLOC_LB = {
    "A": 1048576, "B": 1048576, "C": 1039360, "D": 986112, "E": 1048576, "F": 1048576,
    "G": 1048576, "H": 1048576, "I": 1048576, "J": 989184, "K": 1048576,
}


@functools.lru_cache(maxsize=None)
def sliding(n):
    """n buffers with short lifetimes sliding over n steps (about 100 live at a time)."""
    return random_intervals(np.random.default_rng(n), n, n)


@functools.lru_cache(maxsize=None)
def instance(path):
    problem = read_minimalloc_csv(path)
    return problem.start, problem.end, problem.size


def _record(benchmark, plan, n=None):
    benchmark.extra_info.update(
        arena_bytes=plan.arena_bytes,
        lower_bound=plan.lower_bound,
        gap=round(plan.gap, 6),
        algorithm=plan.algorithm,
    )
    if n is not None:
        benchmark.extra_info["n"] = n
        if not benchmark.disabled and benchmark.stats is not None:
            benchmark.extra_info["buffers_per_second"] = round(n / benchmark.stats.stats.min)


# -------------------------------------------------------------------------------------------
# Speed (group engine-plan-offsets)
# -------------------------------------------------------------------------------------------


@pytest.mark.benchmark(group="engine-plan-offsets")
@pytest.mark.parametrize("n", SIZES)
def test_auto(benchmark, n):
    start, end, size = sliding(n)
    plan = benchmark(plan_offsets, start, end, size)
    _record(benchmark, plan, n)
    record_ratio(benchmark, n, plan_offsets, start, end, size, repeat=3)


@pytest.mark.benchmark(group="engine-plan-offsets")
@pytest.mark.parametrize("n", SIZES)
def test_argsort_baseline(benchmark, n):
    benchmark(np.argsort, argsort_input(n))
    benchmark.extra_info.update(n=n)


@pytest.mark.benchmark(group="engine-plan-offsets-heuristics")
@pytest.mark.parametrize("n", [100_000, 1_000_000])
@pytest.mark.parametrize("name", HEURISTICS)
def test_heuristic(benchmark, name, n):
    start, end, size = sliding(n)
    rounds = 3 if n <= 100_000 else 1
    plan = benchmark.pedantic(
        plan_offsets, (start, end, size), {"algorithm": name}, rounds=rounds, iterations=1
    )
    _record(benchmark, plan, n)


@pytest.mark.benchmark(group="engine-plan-offsets-reference")
@pytest.mark.parametrize("n", REFERENCE_SIZES)
@pytest.mark.parametrize("impl", ["kernel", "reference"])
def test_greedy_size_vs_reference(benchmark, impl, n):
    start, end, size = sliding(n)
    if impl == "kernel":
        plan = benchmark(plan_offsets, start, end, size, algorithm="greedy_size")
        offset = plan.offset.tolist()
    else:
        offset, _ = benchmark(ref.greedy, "greedy_size", start, end, size)
    benchmark.extra_info.update(n=n)
    assert offset == ref.greedy("greedy_size", start, end, size)[0]


# -------------------------------------------------------------------------------------------
# Quality on real models (group engine-plan-offsets-idealloc)
# -------------------------------------------------------------------------------------------


@pytest.mark.benchmark(group="engine-plan-offsets-idealloc")
@pytest.mark.parametrize("name", list(IDEALLOC_GREEDY_GAP))
def test_idealloc_auto(benchmark, name):
    start, end, size = instance(DATA / "idealloc" / f"{name}.csv")
    plan = benchmark.pedantic(plan_offsets, (start, end, size), rounds=3, iterations=1)
    _record(benchmark, plan, int(start.shape[0]))
    benchmark.extra_info["greedy_size_reference_gap"] = IDEALLOC_GREEDY_GAP[name]
    if not benchmark.disabled:
        benchmark.extra_info["gap_by_heuristic"] = {
            h: round(plan_offsets(start, end, size, algorithm=h).gap, 6) for h in HEURISTICS
        }
    limit = 0.03 if name == "S_1" else 0.01  # the targets of the issue
    assert plan.gap <= limit


# -------------------------------------------------------------------------------------------
# MiniMalloc's adversarial instances (group engine-plan-offsets-minimalloc)
# -------------------------------------------------------------------------------------------


@pytest.mark.benchmark(group="engine-plan-offsets-minimalloc")
@pytest.mark.parametrize("time_limit", [None, 10.0], ids=["auto", "time_limit=10"])
@pytest.mark.parametrize("name", list(MINIMALLOC_LB))
def test_minimalloc(benchmark, name, time_limit):
    start, end, size = instance(DATA / "minimalloc" / f"{name}.1048576.csv")
    plan = benchmark.pedantic(
        plan_offsets, (start, end, size), {"time_limit": time_limit}, rounds=1, iterations=1
    )
    _record(benchmark, plan, int(start.shape[0]))
    assert plan.lower_bound == MINIMALLOC_LB[name]
