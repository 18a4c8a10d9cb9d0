"""max_live_bytes reads C-contiguous int64 arrays through their data pointers (the memoryview
set-up cost more than the count on small inputs); other layouts still go through typed
memoryviews. Both give the brute-force peak, on spans short (difference array) and long
(sort and sweep), and a bad layout is still a ValueError."""

import numpy as np
import pytest

from memcore import max_live_bytes
from memcore._liveness import _py_max_live_bytes


def _brute_peak(start, end, size):
    if len(start) == 0:
        return 0
    steps = range(int(min(start)), int(max(end)) + 1)
    return max(sum(int(z) for s, e, z in zip(start, end, size) if s <= t <= e) for t in steps)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("n, span", [(1, 3), (4, 10), (9, 40), (6, 10**6)])
def test_peak_equals_brute_force(seed, n, span):
    rng = np.random.default_rng(seed)
    start = rng.integers(-1, span, n).astype(np.int64)
    end = start + rng.integers(0, min(span, 50), n)
    size = rng.integers(0, 1000, n).astype(np.int64)
    want = _brute_peak(start, end, size) if span < 10**6 else None
    got = max_live_bytes(start, end, size, check=False)
    assert got == max_live_bytes(start, end, size)
    if want is not None:
        assert got == want
    if n > 1:  # the memoryview path (a strided int64 view is not C-contiguous: rejected as before)
        with pytest.raises(ValueError):
            _py_max_live_bytes(np.repeat(start, 2)[::2], end, size)


def test_empty():
    e = np.empty(0, dtype=np.int64)
    assert _py_max_live_bytes(e, e, e) == 0


@pytest.mark.parametrize("bad", ["dtype", "length"])
def test_bad_layout_is_a_value_error(bad):
    start = np.array([0, 1], dtype=np.int64)
    end = np.array([1, 2], dtype=np.int64)
    size = np.array([8, 8], dtype=np.int32 if bad == "dtype" else np.int64)
    if bad == "length":
        size = size[:1].copy()
    with pytest.raises(ValueError):
        _py_max_live_bytes(start, end, size)


def test_read_only_arrays():
    arrs = [np.array(v, dtype=np.int64) for v in ([0, 1, 3], [1, 2, 4], [10, 20, 30])]
    for a in arrs:
        a.setflags(write=False)
    assert _py_max_live_bytes(*arrs) == 30
