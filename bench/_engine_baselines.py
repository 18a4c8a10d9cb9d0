"""Shared by bench_engine_*.py: same-run baselines (numpy argsort) and workloads.

Not a benchmark file itself (pytest collects ``bench_*.py`` only). Workloads come from the
seeded generators in ``memcore._workloads`` and are built once per session per size.
"""

import functools
import time

import numpy as np

#: Sizes every engine benchmark runs at.
SIZES = [1_000, 10_000, 100_000, 1_000_000]
#: The pure-Python references are O(n^2) or slow per element: small sizes only.
REFERENCE_SIZES = [1_000]


@functools.lru_cache(maxsize=None)
def argsort_input(n):
    """A random int64 array of n elements (the same one for every benchmark of size n)."""
    return np.random.default_rng(12345).integers(0, 2**62, n, dtype=np.int64)


def argsort_seconds(n, repeat=7):
    """Best-of-``repeat`` wall time of ``np.argsort`` on ``argsort_input(n)``, measured now.

    Measured right after each kernel benchmark (not once per session), so that load from
    other processes on a shared machine affects both numbers of a ratio alike.
    """
    data = argsort_input(n)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.argsort(data)
        best = min(best, time.perf_counter() - t0)
    return best


def record_ratio(benchmark, n):
    """Store the kernel's best time over the same-run argsort time in extra_info."""
    base = argsort_seconds(n)
    benchmark.extra_info["argsort_seconds"] = base
    if benchmark.stats is not None:  # None under --benchmark-disable
        best = benchmark.stats.stats.min
        benchmark.extra_info["ratio_to_argsort"] = round(best / base, 3)
