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


def _best(fn, args, kwargs):
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def record_ratio(benchmark, n, fn, *args, repeat=7, **kwargs):
    """Store ``fn(*args, **kwargs)`` time over ``np.argsort`` time (n int64) in extra_info.

    The two are timed alternately, ``repeat`` times each, and the best of each is kept: on
    a shared machine the load drifts during a benchmark session, and alternating exposes
    both to the same load. Skipped under ``--benchmark-disable`` (a smoke run).
    """
    if benchmark.disabled:
        return
    data = argsort_input(n)
    kernel = base = float("inf")
    for _ in range(repeat):
        kernel = min(kernel, _best(fn, args, kwargs))
        base = min(base, _best(np.argsort, (data,), {}))
    benchmark.extra_info.update(
        kernel_seconds=kernel, argsort_seconds=base, ratio_to_argsort=round(kernel / base, 3)
    )
