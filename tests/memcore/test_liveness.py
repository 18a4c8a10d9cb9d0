"""memcore.liveness against memcore._reference, edge cases, and every validation branch."""

import numpy as np
import pytest

from memcore import InvalidArrayError, live_intervals, live_profile, max_live_bytes
from memcore import _reference as ref
from memcore._workloads import random_intervals, random_liveness

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def _csr(uses_per_value):
    """CSR (use_ptr, use_pos) from a list of use lists."""
    use_ptr = np.zeros(len(uses_per_value) + 1, dtype=np.int64)
    use_ptr[1:] = np.cumsum([len(u) for u in uses_per_value])
    use_pos = np.array([p for u in uses_per_value for p in u], dtype=np.int64)
    return use_ptr, use_pos


# -------------------------------------------------------------------------------------------
# live_intervals
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(25))
def test_live_intervals_matches_reference(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):  # 250 random blocks in all
        n, n_steps = int(rng.integers(0, 40)), int(rng.integers(1, 30))
        args = random_liveness(rng, n, n_steps, p_output=0.2)
        start, end = live_intervals(*args, n_steps)
        ref_start, ref_end = ref.live_intervals(*args, n_steps)
        assert start.tolist() == ref_start
        assert end.tolist() == ref_end
        assert start.dtype == end.dtype == np.int64


def test_live_intervals_sentinels():
    # x: param read at 0 and 2; y: defined at 0, unused; z: defined at 1, output;
    # w: param, unused; v: param, output, never read inside the block.
    use_ptr, use_pos = _csr([[0, 2], [], [2], [], []])
    start, end = live_intervals(
        def_pos=[-1, 0, 1, -1, -1], use_ptr=use_ptr, use_pos=use_pos,
        is_output=[0, 0, 1, 0, 1], n_steps=3,
    )
    assert start.tolist() == [-1, 0, 1, -1, -1]
    assert end.tolist() == [2, 0, 3, -1, 3]


def test_live_intervals_spec_example():
    # spec §3.3 test_liveness_analysis: x (-1,5), y (0,2), z (1,3), q (2,3), p (3,5), n (4,5)
    # with 5 bindings; x, p and n are live after the block.
    use_ptr, use_pos = _csr([[0], [1, 2], [2, 3], [3], [4], []])
    start, end = live_intervals(
        def_pos=[-1, 0, 1, 2, 3, 4], use_ptr=use_ptr, use_pos=use_pos,
        is_output=[1, 0, 0, 0, 1, 1], n_steps=5,
    )
    assert list(zip(start.tolist(), end.tolist())) == [
        (-1, 5), (0, 2), (1, 3), (2, 3), (3, 5), (4, 5)
    ]


def test_live_intervals_empty_block():
    start, end = live_intervals([], [0], [], [], 0)
    assert start.shape == end.shape == (0,)
    assert start.dtype == np.int64


def test_live_intervals_zero_steps_only_params():
    start, end = live_intervals([-1, -1], [0, 0, 0], [], [True, False], 0)
    assert start.tolist() == [-1, -1]
    assert end.tolist() == [0, -1]


def test_live_intervals_single_binding():
    start, end = live_intervals([0], [0, 0], [], [0], 1)
    assert (start.tolist(), end.tolist()) == ([0], [0])


def test_live_intervals_all_outputs():
    n_steps = 7
    start, end = live_intervals(np.arange(n_steps), np.zeros(n_steps + 1, np.int64), [],
                                np.ones(n_steps, bool), n_steps)
    assert end.tolist() == [n_steps] * n_steps


def test_live_intervals_unsorted_and_duplicate_uses():
    use_ptr, use_pos = _csr([[5, 1, 5, 3]])
    _, end = live_intervals([0], use_ptr, use_pos, [0], 6)
    assert end.tolist() == [5]


def test_live_intervals_use_at_definition_step_is_allowed():
    _, end = live_intervals([2], [0, 1], [2], [0], 3)
    assert end.tolist() == [2]


def test_live_intervals_accepts_lists_other_int_dtypes_and_readonly():
    def_pos = np.array([-1, 0], dtype=np.int32)
    use_ptr = np.array([0, 1, 2], dtype=np.uint16)
    use_pos = np.array([0, 1], dtype=np.int64)
    use_pos.setflags(write=False)
    is_output = np.array([0, 1], dtype=np.int8)
    start, end = live_intervals(def_pos, use_ptr, use_pos, is_output, np.int64(2))
    assert (start.tolist(), end.tolist()) == ([-1, 0], [0, 2])
    start2, end2 = live_intervals([-1, 0], [0, 1, 2], [0, 1], [False, True], 2)
    assert (start2.tolist(), end2.tolist()) == ([-1, 0], [0, 2])


def test_live_intervals_accepts_non_contiguous_views():
    def_pos = np.array([-1, 99, 0, 99], dtype=np.int64)[::2]
    start, end = live_intervals(def_pos, [0, 1, 2], [0, 1], [0, 0], 2)
    assert (start.tolist(), end.tolist()) == ([-1, 0], [0, 1])


def test_live_intervals_does_not_mutate_inputs():
    rng = np.random.default_rng(1)
    args = random_liveness(rng, 50, 20)
    copies = [a.copy() for a in args]
    start, _ = live_intervals(*args, 20)
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)
    start[:] = 7  # the result is a new array, not a view of def_pos
    np.testing.assert_array_equal(args[0], copies[0])


def test_live_intervals_max_fan_out():
    # One value read by every one of 300k steps (sklearn's no-stack-overflow style case).
    n_steps = 300_000
    use_pos = np.arange(n_steps, dtype=np.int64)[::-1].copy()
    start, end = live_intervals([-1, 0], [0, n_steps, n_steps], use_pos, [0, 0], n_steps)
    assert end.tolist() == [n_steps - 1, 0]


# --- validation ---------------------------------------------------------------------------


def _good():
    use_ptr, use_pos = _csr([[1, 2], [2], []])
    return dict(def_pos=[-1, 0, 1], use_ptr=use_ptr, use_pos=use_pos,
                is_output=[0, 0, 1], n_steps=3)


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(def_pos=np.array([-1.0, 0.0, 1.0])),
         r"def_pos must be C-contiguous int64; got float64 array of shape \(3,\)"),
        (dict(def_pos=np.array([True, False, True])),
         r"def_pos must be C-contiguous int64; got bool array of shape \(3,\)"),
        (dict(def_pos=np.array([-1, 0, 1], dtype=object)),
         r"def_pos must be C-contiguous int64; got object array"),
        (dict(def_pos=[[-1, 0, 1]]), r"def_pos must be a 1-D .*shape \(1, 3\)"),
        (dict(def_pos=[[-1], [0, 1]]), r"def_pos must be C-contiguous int64 array; got list"),
        (dict(use_pos=np.array([1, 2, 2 ** 63], dtype=np.uint64)),
         r"use_pos must fit in int64; got use_pos\[2\] = 9223372036854775808"),
        (dict(use_pos=np.array([1.0, 2.0, 2.0])),
         r"use_pos must be C-contiguous int64; got float64 array of shape \(3,\)"),
        (dict(is_output=[0, 2, 1]), r"is_output\[1\] = 2 must be 0 or 1"),
        (dict(is_output=[0.0, 1.0, 1.0]), r"is_output must be bool or uint8; got float64"),
        (dict(is_output=[0, 1]), r"is_output must have length 3 \(len\(def_pos\)\); got"),
        (dict(use_ptr=[0, 2, 3]),
         r"use_ptr must have length 4 \(len\(def_pos\) \+ 1\); got int64 array of shape \(3,\)"),
        (dict(use_ptr=[1, 2, 3, 3]), r"use_ptr\[0\] must be 0; got 1"),
        (dict(use_ptr=[0, 2, 3, 2]), r"use_ptr\[3\] must be len\(use_pos\) = 3; got 2"),
        (dict(use_ptr=[0, 3, 2, 3]),
         r"use_ptr must be non-decreasing; got use_ptr\[2\] = 2 < use_ptr\[1\] = 3"),
        (dict(def_pos=[-1, 0, 3]),
         r"def_pos\[2\] = 3 is out of range \[-1, 3\) \(n_steps=3\)"),
        (dict(def_pos=[-2, 0, 1]),
         r"def_pos\[0\] = -2 is out of range \[-1, 3\) \(n_steps=3\)"),
        (dict(use_pos=[1, 3, 2]),
         r"use_pos\[1\] = 3 is out of range \[0, 3\) \(n_steps=3\)"),
        (dict(def_pos=[-1, 1, 1], use_pos=[1, 2, 0]),
         r"use_pos\[2\] = 0 must not be before the definition of value 1; "
         r"got def_pos\[1\] = 1"),
        (dict(n_steps=-1), r"n_steps must be >= 0; got -1"),
        (dict(n_steps=3.0), r"n_steps must be an integer; got float 3.0"),
        (dict(n_steps=True), r"n_steps must be an integer; got bool True"),
    ],
)
def test_live_intervals_rejects(change, match):
    args = {**_good(), **change}
    with pytest.raises(InvalidArrayError, match=match):
        live_intervals(**args)


def test_live_intervals_rejects_remaining_branches():
    with pytest.raises(InvalidArrayError, match=r"n_steps must be <= 9223372036854775806; "
                                                r"got 9223372036854775807"):
        live_intervals(**{**_good(), "n_steps": INT64_MAX})
    with pytest.raises(InvalidArrayError, match=r"is_output must have length 3 "
                                                r"\(len\(def_pos\)\); got bool array"):
        live_intervals(**{**_good(), "is_output": np.array([True, False])})
    with pytest.raises(InvalidArrayError, match=r"def_pos must be C-contiguous int64; got "
                                                r"<U1 array"):
        live_intervals(**{**_good(), "def_pos": ["a", "b", "c"]})


def test_live_intervals_accepts_uint64_that_fits():
    start, end = live_intervals(np.array([0], np.uint64), np.array([0, 1], np.uint64),
                                np.array([2], np.uint64), [0], 3)
    assert (start.tolist(), end.tolist()) == ([0], [2])


def test_live_intervals_error_is_a_value_error():
    with pytest.raises(ValueError):
        live_intervals(**{**_good(), "n_steps": -1})


# -------------------------------------------------------------------------------------------
# max_live_bytes
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(25))
def test_max_live_bytes_matches_reference(seed):
    rng = np.random.default_rng(1000 + seed)
    for k in range(10):
        n = int(rng.integers(0, 40))
        start, end, size = random_intervals(rng, n, int(rng.integers(1, 50)), mean_length=5,
                                            max_size=100)
        alignment = int(rng.integers(1, 9))
        if k % 2:  # spread the steps so the sort-based sweep runs instead of the diff array
            start, end = start * 10**9 - 7, end * 10**9 + rng.integers(0, 3, n)
        expected = ref.max_live_bytes(start, end, size, alignment=alignment)
        assert max_live_bytes(start, end, size, alignment=alignment) == expected


def test_max_live_bytes_small_cases():
    assert max_live_bytes([], [], []) == 0
    assert max_live_bytes([3], [3], [5]) == 5
    assert max_live_bytes([0, 0], [4, 4], [0, 0]) == 0
    # Inclusive end: a buffer ending at t and one starting at t are live together.
    assert max_live_bytes([0, 2], [2, 4], [10, 20]) == 30
    assert max_live_bytes([0, 3], [2, 4], [10, 20]) == 20
    # Equal starts and ends.
    assert max_live_bytes([1, 1, 1], [1, 1, 1], [1, 2, 3]) == 6
    # -1 and n_steps sentinels are ordinary values here.
    assert max_live_bytes([-1, -1, 0], [-1, 5, 5], [4, 8, 16]) == 24


def test_max_live_bytes_alignment():
    # 10 -> 16, 20 -> 32, 30 -> 32; buffers 1 and 2 never overlap with 0 at once.
    assert max_live_bytes([0, 1, 3], [1, 2, 4], [10, 20, 30], alignment=16) == 48
    assert max_live_bytes([0], [0], [0], alignment=64) == 0
    assert max_live_bytes([0], [0], [64], alignment=64) == 64


def test_max_live_bytes_huge_steps_use_no_big_array():
    # Steps near 1e12 (and the full int64 range) must not allocate a step-sized array.
    start = np.array([0, 10**12, 10**12 + 5, INT64_MIN], dtype=np.int64)
    end = np.array([10**12, 10**12 + 5, 3 * 10**12, INT64_MAX], dtype=np.int64)
    size = np.array([1, 2, 4, 8], dtype=np.int64)
    # At step 1e12 + 5: buffer 1 (inclusive end), 2 (starts) and 3 (everywhere).
    assert max_live_bytes(start, end, size) == 2 + 4 + 8


def test_max_live_bytes_huge_sizes():
    half = INT64_MAX // 2
    assert max_live_bytes([0, 0], [1, 1], [half, half]) == 2 * half
    assert max_live_bytes([0, 0], [1, 1], [INT64_MAX, 0]) == INT64_MAX


def test_max_live_bytes_adversarial_all_nested():
    # 200k intervals nested around one step: the peak is the total.
    n = 200_000
    start = np.arange(n, dtype=np.int64)
    end = 2 * n - start
    size = np.full(n, 3, dtype=np.int64)
    assert max_live_bytes(start, end, size) == 3 * n
    assert max_live_bytes(start * 10**6, end * 10**6, size) == 3 * n


def test_max_live_bytes_does_not_mutate_inputs():
    start, end, size = (np.array(a, dtype=np.int64) for a in ([0, 1], [2, 3], [5, 7]))
    max_live_bytes(start, end, size, alignment=4)
    assert size.tolist() == [5, 7]


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (([0, 1], [1], [1, 1]), {}, r"end must have length 2 \(len\(start\)\); got"),
        (([0, 1], [1, 1], [1]), {}, r"size must have length 2 \(len\(start\)\); got"),
        (([0, 2], [1, 1], [1, 1]), {},
         r"end must be >= start; got end\[1\] = 1 < start\[1\] = 2"),
        (([0, 1], [1, 1], [1, -1]), {}, r"size must be >= 0; got size\[1\] = -1"),
        (([0.5], [1], [1]), {}, r"start must be C-contiguous int64; got float64"),
        (([0], [1], [1]), {"alignment": 0}, r"alignment must be >= 1; got 0"),
        (([0], [1], [1]), {"alignment": 2.0}, r"alignment must be an integer; got float"),
        (([0, 0], [1, 1], [INT64_MAX, 1]), {},
         r"sum of size must fit in int64 \(<= 9223372036854775807\); got 9223372036854775808"),
        (([0], [1], [INT64_MAX - 2]), {"alignment": 4},
         r"size\[0\] = 9223372036854775805 rounded up to alignment 4 must fit in int64"),
        (([0, 0], [1, 1], [2**62, 2**62 - 1]), {"alignment": 2},
         r"sum of size rounded up to alignment 2 must fit in int64"),
    ],
)
def test_max_live_bytes_rejects(args, kwargs, match):
    with pytest.raises(InvalidArrayError, match=match):
        max_live_bytes(*args, **kwargs)


# -------------------------------------------------------------------------------------------
# live_profile
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(25))
def test_live_profile_matches_reference(seed):
    rng = np.random.default_rng(2000 + seed)
    for _ in range(10):
        n, n_steps = int(rng.integers(0, 30)), int(rng.integers(0, 20))
        args = random_liveness(rng, n, max(n_steps, 1), p_output=0.3)
        if n_steps == 0:
            args = (np.full(n, -1, np.int64), np.zeros(n + 1, np.int64),
                    np.empty(0, np.int64), args[3])
        start, end = live_intervals(*args, n_steps)
        size = rng.integers(0, 50, n)
        alignment = int(rng.integers(1, 5))
        got = live_profile(start, end, size, n_steps, alignment=alignment)
        assert got.tolist() == ref.live_profile(start, end, size, n_steps, alignment=alignment)
        assert got.shape == (n_steps + 1,)
        if n and (start >= 0).all():
            assert got.max() == max_live_bytes(start, end, size, alignment=alignment)


def test_live_profile_layout():
    # [-1, -1] (unused param) appears nowhere; [-1, 0] counts at step 0 only;
    # an output (end == n_steps) counts in the last slot.
    profile = live_profile([-1, -1, 0, 1], [-1, 0, 3, 1], [1, 10, 100, 1000], n_steps=3)
    assert profile.tolist() == [110, 1100, 100, 100]
    assert live_profile([], [], [], 0).tolist() == [0]


@pytest.mark.parametrize(
    "start, end, match",
    [
        ([-2], [0], r"start\[0\] = -2 is out of range \[-1, 4\) \(n_steps=3\)"),
        ([0], [4], r"end\[0\] = 4 is out of range \[-1, 4\) \(n_steps=3\)"),
    ],
)
def test_live_profile_rejects_out_of_block(start, end, match):
    with pytest.raises(InvalidArrayError, match=match):
        live_profile(start, end, [1], 3)


def test_live_profile_rejects_bad_n_steps():
    with pytest.raises(InvalidArrayError, match=r"n_steps must be >= 0; got -1"):
        live_profile([], [], [], -1)
