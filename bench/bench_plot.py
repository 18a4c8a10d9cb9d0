"""Memory timeline plots (memcore_py.planning.plot) rendered to PNG: 50k tensors in < 5 s.

Workloads, built once per session and outside the timed call (the plot is the measured
quantity, not planning):

- ``flat-50k``: ``memcore._workloads.random_intervals(rng, 50_000, 50_000)`` packed by
  :func:`memcore.plan_offsets`, drawn by :func:`plot_offsets` (rasterised: 50k > MAX_ARTISTS);
- ``chain-50k``: ``chain_module(50_000)`` (150k bindings, 49,999 planned tensors) in both
  modes, :func:`plot_plan` of its timelines (two rasterised panels);
- ``minimalloc-A``: MiniMalloc's instance A (bench/data/minimalloc), packed and drawn;
- ``resnet50``: the shipped ResNet-50, both modes, one path per tensor (the README picture).

Each timed call builds the Figure and writes a PNG (Agg, 120 dpi) to a temporary file;
``extra_info`` records the tensor count, the PNG size, the plan's bytes and its lower bound.

Run: ``python -m pytest bench/bench_plot.py --benchmark-only``.
"""

import functools
from pathlib import Path

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import memcore  # noqa: E402
from memcore._workloads import random_intervals  # noqa: E402
from memcore_py.examples.models import load_model  # noqa: E402
from memcore_py.planning.peak_report import timelines  # noqa: E402
from memcore_py.planning.plot import plot_offsets, plot_plan  # noqa: E402
from memcore_py.testing.memory_programs import chain_module  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
N = 50_000


@functools.lru_cache(maxsize=None)
def flat(n):
    start, end, size = random_intervals(np.random.default_rng(n), n, n)
    plan = memcore.plan_offsets(start, end, size)
    return start, end, size, plan


@functools.lru_cache(maxsize=None)
def minimalloc_a():
    (path,) = sorted((DATA / "minimalloc").glob("A.*.csv"))
    p = memcore.read_minimalloc_csv(str(path))
    return p.start, p.end, p.size, memcore.plan_offsets(p.start, p.end, p.size)


@functools.lru_cache(maxsize=None)
def chain_timelines(n):
    return timelines(chain_module(n), time_limit=None)


FLAT = {"flat-50k": lambda: flat(N), "minimalloc-A": minimalloc_a}


@pytest.mark.benchmark(group="plot")
@pytest.mark.parametrize("workload", list(FLAT))
def test_flat_png(benchmark, tmp_path, workload):
    start, end, size, plan = FLAT[workload]()
    out = tmp_path / "flat.png"
    benchmark.pedantic(plot_offsets, args=(start, end, size, plan.offset),
                       kwargs={"arena_bytes": plan.arena_bytes, "out": out}, rounds=3, iterations=1)
    benchmark.extra_info.update(
        tensors=int(len(start)), png_bytes=out.stat().st_size,
        arena_bytes=int(plan.arena_bytes), lower_bound=int(plan.lower_bound),
    )


@pytest.mark.benchmark(group="plot")
def test_chain_50k_both_modes_png(benchmark, tmp_path):
    tls = chain_timelines(N)
    out = tmp_path / "chain.png"
    benchmark.pedantic(plot_plan, args=(tls,), kwargs={"out": out}, rounds=3, iterations=1)
    (tl,) = tls
    benchmark.extra_info.update(
        tensors=tl.n_tensors, steps=tl.n_steps, png_bytes=out.stat().st_size, lower_bound=tl.lower_bound,
        tvm_bytes=tl.placements["tvm"].total_bytes, arena_bytes=tl.placements["arena"].total_bytes,
    )


@pytest.mark.benchmark(group="plot")
def test_resnet50_png(benchmark, tmp_path):
    tls = timelines(load_model("resnet50"))
    out = tmp_path / "resnet50.png"
    benchmark.pedantic(plot_plan, args=(tls,), kwargs={"out": out}, rounds=3, iterations=1)
    (tl,) = tls
    benchmark.extra_info.update(tensors=tl.n_tensors, png_bytes=out.stat().st_size, lower_bound=tl.lower_bound)


@pytest.mark.benchmark(group="plot")
def test_flat_50k_one_artist_per_tensor_baseline(benchmark, tmp_path):
    """Baseline, same run: the same 50k-tensor plot drawn with one polygon per tensor (the
    vector path ``plot_offsets`` takes below ``max_artists``), which the rasterised default
    replaces at this size."""
    start, end, size, plan = flat(N)
    out = tmp_path / "flat-vector.png"
    benchmark.pedantic(plot_offsets, args=(start, end, size, plan.offset),
                       kwargs={"arena_bytes": plan.arena_bytes, "out": out, "max_artists": 10 * N},
                       rounds=1, iterations=1)
    benchmark.extra_info.update(tensors=int(len(start)), png_bytes=out.stat().st_size, baseline="vector")
