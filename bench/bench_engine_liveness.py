"""Engine liveness kernels: live_intervals and max_live_bytes, 1e3..1e6 values.

Each group holds the kernel at every size, ``np.argsort`` of an equal-size int64 array (the
practical floor for anything that sorts, measured in the same run) and the pure-Python
reference at small sizes. ``extra_info`` records the sizes, the lower bound, the same-run
argsort time and the kernel/argsort ratio.

Run: ``python -m pytest bench/bench_engine_liveness.py --benchmark-only`` (table in
bench/README.md, "Engine: liveness and tokens").
"""

import functools

import numpy as np
import pytest

from _engine_baselines import REFERENCE_SIZES, SIZES, argsort_input, record_ratio
from memcore import _reference as ref
from memcore import live_intervals, max_live_bytes
from memcore._workloads import random_liveness


@functools.lru_cache(maxsize=None)
def liveness_workload(n):
    """n values over n steps, 0..3 uses each, 10% outputs; plus their intervals and sizes."""
    rng = np.random.default_rng(n)
    args = random_liveness(rng, n, n, max_uses=3, p_output=0.1)
    start, end = live_intervals(*args, n)
    size = rng.integers(1, 1 << 20, n, dtype=np.int64)
    return args, start, end, size


@pytest.mark.benchmark(group="engine-live-intervals")
@pytest.mark.parametrize("n", SIZES)
def test_live_intervals(benchmark, n):
    args, _, _, _ = liveness_workload(n)
    start, end = benchmark(live_intervals, *args, n)
    benchmark.extra_info.update(n=n, n_steps=n, n_uses=int(args[2].shape[0]))
    record_ratio(benchmark, n, live_intervals, *args, n)
    assert start.shape == (n,)


@pytest.mark.benchmark(group="engine-live-intervals")
@pytest.mark.parametrize("n", REFERENCE_SIZES)
def test_live_intervals_reference(benchmark, n):
    args, start, end, _ = liveness_workload(n)
    got = benchmark(ref.live_intervals, *args, n)
    benchmark.extra_info.update(n=n)
    assert got[1] == end.tolist()


@pytest.mark.benchmark(group="engine-live-intervals")
@pytest.mark.parametrize("n", SIZES)
def test_live_intervals_argsort_baseline(benchmark, n):
    benchmark(np.argsort, argsort_input(n))
    benchmark.extra_info.update(n=n)


@pytest.mark.benchmark(group="engine-max-live-bytes")
@pytest.mark.parametrize("n", SIZES)
def test_max_live_bytes(benchmark, n):
    # Steps 0..n: the difference-array path.
    _, start, end, size = liveness_workload(n)
    peak = benchmark(max_live_bytes, start, end, size)
    benchmark.extra_info.update(n=n, n_steps=n, lower_bound=peak, path="difference array")
    record_ratio(benchmark, n, max_live_bytes, start, end, size)


@pytest.mark.benchmark(group="engine-max-live-bytes")
@pytest.mark.parametrize("n", SIZES)
def test_max_live_bytes_sparse_steps(benchmark, n):
    # The same intervals with steps scaled by 1e6 (up to 1e12): the sort-and-sweep path.
    _, start, end, size = liveness_workload(n)
    sparse_start, sparse_end = start * 10**6, end * 10**6
    peak = benchmark(max_live_bytes, sparse_start, sparse_end, size)
    benchmark.extra_info.update(n=n, n_steps=n * 10**6, lower_bound=peak, path="sort")
    record_ratio(benchmark, n, max_live_bytes, sparse_start, sparse_end, size)
    assert peak == max_live_bytes(start, end, size)


@pytest.mark.benchmark(group="engine-max-live-bytes")
@pytest.mark.parametrize("n", REFERENCE_SIZES)
def test_max_live_bytes_reference(benchmark, n):
    _, start, end, size = liveness_workload(n)
    peak = benchmark(ref.max_live_bytes, start, end, size)
    benchmark.extra_info.update(n=n, lower_bound=peak)
    assert peak == max_live_bytes(start, end, size)


@pytest.mark.benchmark(group="engine-max-live-bytes")
@pytest.mark.parametrize("n", SIZES)
def test_max_live_bytes_argsort_baseline(benchmark, n):
    benchmark(np.argsort, argsort_input(n))
    benchmark.extra_info.update(n=n)
