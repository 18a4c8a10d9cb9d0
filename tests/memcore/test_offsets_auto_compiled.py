"""The one-call heuristics kernel of plan_offsets (``memcore._offsets._py_heuristics``) and
its parts (time compression, adaptive radix sort, bucket layout) against the pure-Python
reference (``memcore._reference_offsets``) and numpy."""

import numpy as np
import pytest

from memcore import max_live_bytes, plan_offsets, verify_offsets
from memcore import _offsets
from memcore import _reference_offsets as ref
from memcore import InvalidArrayError
from memcore.offsets import _AUTO_LARGE, _HEURISTIC_SPEC, _SPECS, HEURISTICS, _auto_order, pack_trusted


def _problem(seed, n=None):
    """A random problem: narrow or very wide step ranges, zero / huge / unaligned sizes."""
    rng = np.random.default_rng(seed)
    if n is None:
        n = int(rng.choice([0, 1, 2, 7, 23, 24, 25, 40, 90, 260]))
    kind = seed % 5
    steps = int(rng.integers(1, 3 * n + 8))
    start = rng.integers(-1, steps, n)
    end = np.minimum(start + rng.geometric(0.03 if kind == 1 else 0.25, n) - 1, steps)
    if kind == 2:  # steps far apart: the rank compression
        start, end = start * 10**12 - 3, end * 10**12 + 11
    if kind == 3:  # both extremes of int64
        start = np.where(rng.random(n) < 0.3, np.iinfo(np.int64).min + start + 1, start)
        end = np.where(rng.random(n) < 0.3, np.iinfo(np.int64).max - steps + end, end)
    size = rng.integers(0, 5000, n) * rng.choice([0, 1, 1, 1], n)
    if kind == 4:
        size = rng.choice([0, 64, 64, 128, 2**40], n)
    alignment = int(rng.choice([1, 3, 64, 100]))
    return start.astype(np.int64), end.astype(np.int64), size.astype(np.int64), alignment


def _aligned(size, alignment):
    return (size + alignment - 1) // alignment * alignment


@pytest.mark.parametrize("seed", range(60))
def test_each_heuristic_matches_reference(seed):
    start, end, size, alignment = _problem(seed)
    units = _aligned(size, alignment) // alignment
    for name, spec in _HEURISTIC_SPEC.items():
        offset, arena, order, winner, cost, lower = _offsets._py_heuristics(
            start, end, size, alignment, (spec,))
        expected, expected_arena = ref.greedy(name, start, end, size, alignment=alignment)
        assert offset.tolist() == expected, (seed, name)
        assert arena == expected_arena and winner == 0 and cost >= 0.0
        order_name = ref.HEURISTICS[name][0]
        assert order.tolist() == ref.priority_order(order_name, start.tolist(), end.tolist(), units.tolist())
        assert lower == max_live_bytes(start, end, size, alignment=alignment)


@pytest.mark.parametrize("seed", range(60, 200))
def test_auto_keeps_the_first_best_and_stops_at_the_bound(seed):
    start, end, size, alignment = _problem(seed)
    lower = max_live_bytes(start, end, size, alignment=alignment)
    # the expected run: heuristics in auto's order until one reaches the bound
    names = _auto_order(start.shape[0])
    plans = []
    for name in names:
        plans.append(ref.greedy(name, start, end, size, alignment=alignment))
        if plans[-1][1] <= lower:
            break
    arenas = [a for _, a in plans]
    k = arenas.index(min(arenas))
    offset, arena, order, winner, _cost, got_lower = _offsets._py_heuristics(
        start, end, size, alignment, _SPECS[names])
    assert (winner, arena, got_lower) == (k, arenas[k], lower), seed
    assert offset.tolist() == plans[k][0]
    plan = plan_offsets(start, end, size, alignment=alignment)
    assert plan.algorithm == names[k] and plan.offset.tolist() == plans[k][0]
    assert not plan.offset.flags.writeable


@pytest.mark.parametrize("seed, lifetime", [(0, 0.02), (1, 0.1), (2, 0.5)])
def test_auto_on_a_large_pool_matches_the_heuristics_run_alone(seed, lifetime):
    # above 8192 buffers auto skips phase 1 (stop at the bound) and runs phase 2 only: the
    # answer is still the first best of the heuristics run in turn until one reaches the
    # bound (each one run alone goes to the end; those are checked against the reference
    # on small inputs above)
    rng = np.random.default_rng(seed)
    n = 9000
    start = rng.integers(0, n, n)
    end = start + rng.geometric(lifetime, n)
    size = rng.integers(1, 10**6, n) * rng.integers(1, 3, n) ** 8
    alone = []
    for name in HEURISTICS:
        alone.append(_offsets._py_heuristics(start, end, size, 64, (_HEURISTIC_SPEC[name],)))
        if alone[-1][1] <= alone[-1][5]:
            break
    arenas = [r[1] for r in alone]
    k = arenas.index(min(arenas))
    offset, arena, order, winner, _cost, lower = _offsets._py_heuristics(start, end, size, 64, _SPECS[HEURISTICS])
    assert (winner, arena, lower) == (k, arenas[k], alone[k][5])
    assert offset.tolist() == alone[k][0].tolist() and order.tolist() == alone[k][2].tolist()


def test_unaligned_sizes_unchecked_match_checked():
    # check=False hands the raw sizes to the kernel, which rounds them itself
    for seed in range(40):
        start, end, size, alignment = _problem(seed)
        a = plan_offsets(start, end, size, alignment=alignment)
        b = plan_offsets(start, end, size, alignment=alignment, check=False)
        assert a.offset.tolist() == b.offset.tolist()
        assert (a.arena_bytes, a.lower_bound, a.algorithm) == (b.arena_bytes, b.lower_bound, b.algorithm)


def test_pack_trusted_is_plan_offsets_unchecked():
    # memcore_py's arena planner packs through pack_trusted: the same plan as plan_offsets
    # (check=False), as a tuple with a writable offset array
    for seed in range(80):
        start, end, size, alignment = _problem(seed)
        a = plan_offsets(start, end, size, alignment=alignment, check=False)
        offset, arena, lower, algorithm = pack_trusted(start, end, size, alignment, None)
        assert offset.tolist() == a.offset.tolist()
        assert (arena, lower, algorithm) == (a.arena_bytes, a.lower_bound, a.algorithm)
        assert offset.flags.writeable and not a.offset.flags.writeable


def test_pack_trusted_searches_and_checks_its_time_limit():
    start, end, size, alignment = _problem(7, n=40)
    heuristic = plan_offsets(start, end, size, alignment=alignment)
    offset, arena, lower, _ = pack_trusted(start, end, size, alignment, 0.05)
    assert lower == heuristic.lower_bound <= arena <= heuristic.arena_bytes
    verify_offsets(start, end, _aligned(size, alignment), offset, arena)  # raises on an overlap
    for bad in (0, -1.0, float("inf"), float("nan"), True, "0.1"):
        with pytest.raises(InvalidArrayError, match="time_limit"):
            pack_trusted(start, end, size, alignment, bad)


def test_large_input_runs_only_the_start_sweep():
    rng = np.random.default_rng(5)
    n = 3000
    start = rng.integers(0, n, n)
    end = start + rng.integers(0, 30, n)
    size = rng.integers(1, 1000, n)
    offset, arena, _order, winner, _cost, _lower = _offsets._py_heuristics(
        start, end, size, 8, _SPECS[_AUTO_LARGE])
    single = plan_offsets(start, end, size, alignment=8, algorithm="greedy_start")
    assert winner == 0 and offset.tolist() == single.offset.tolist() and arena == single.arena_bytes


@pytest.mark.parametrize("seed", range(20))
def test_compression_is_the_rank_of_the_distinct_steps(seed):
    start, end, _size, _alignment = _problem(seed, n=int(np.random.default_rng(seed).integers(1, 300)))
    s, e, n_points = _offsets._py_compress(start, end)
    lo, hi = int(start.min()), int(end.max())
    if hi - lo <= 4 * start.shape[0] + 64:
        assert s.tolist() == [int(x) - lo for x in start] and e.tolist() == [int(x) - lo for x in end]
        assert n_points == hi - lo + 1
    else:
        points = np.unique(np.concatenate([start, end]))
        assert s.tolist() == np.searchsorted(points, start).tolist()
        assert e.tolist() == np.searchsorted(points, end).tolist()
        assert n_points == points.shape[0]


def test_compression_of_nothing():
    s, e, n_points = _offsets._py_compress(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert s.shape == e.shape == (0,) and n_points == 1


@pytest.mark.parametrize("n", [0, 1, 2, 23, 24, 25, 26, 100, 2047, 2048, 2049, 5000])
def test_radix_sort_matches_lexsort_at_every_digit_width(n):
    rng = np.random.default_rng(n)
    for high in (1, 3, 2**11 + 1, 2**40, 2**64 - 1):
        base = rng.integers(0, 2**63, dtype=np.uint64) if high < 2**40 else np.uint64(0)
        keys = (rng.integers(0, high, n, dtype=np.uint64, endpoint=True) + base)[None, :]
        perm = rng.permutation(n).astype(np.int64)
        got = _offsets._py_sort_by_keys(keys, perm)
        assert got.tolist() == perm[np.lexsort((np.arange(n), keys[0][perm]))].tolist(), (n, high)


@pytest.mark.parametrize("n", [2, 24, 25, 300])
def test_radix_sort_of_equal_keys_keeps_the_order(n):
    perm = np.random.default_rng(n).permutation(n).astype(np.int64)
    for value in (0, 7, 2**64 - 1):
        keys = np.full((1, n), value, dtype=np.uint64)
        assert _offsets._py_sort_by_keys(keys, perm).tolist() == perm.tolist()


def test_equal_sizes_and_steps():
    # every key of some order is constant: one size, one start, one lifetime
    n = 100
    for start, end in ((np.zeros(n), np.full(n, 5)), (np.arange(n), np.arange(n) + 3)):
        start, end, size = start.astype(np.int64), end.astype(np.int64), np.full(n, 64, dtype=np.int64)
        for name, spec in _HEURISTIC_SPEC.items():
            offset = _offsets._py_heuristics(start, end, size, 64, (spec,))[0]
            assert offset.tolist() == ref.greedy(name, start, end, size, alignment=64)[0], name


@pytest.mark.parametrize("seed", range(10))
def test_bucket_width_does_not_change_the_plan(seed):
    # the level-0 width (median span by default) only changes the index, never the plan
    start, end, size, alignment = _problem(seed, n=200)
    units = _aligned(size, alignment) // alignment
    s, e, n_points = _offsets._py_compress(start, end)
    order = _offsets._py_order(0, start, end, s, e, units, n_points)
    expected = ref.place_in_order(order.tolist(), start.tolist(), end.tolist(), units.tolist())
    for sh0 in (-1, 0, 1, 3, 8, 40):
        got = _offsets._py_place(s, e, units, order, n_points, False, False, sh0)
        assert got.tolist() == expected, (seed, sh0)


def test_kernel_rejects_bad_arguments():
    a = np.zeros(3, dtype=np.int64)
    spec = (_HEURISTIC_SPEC["greedy_size"],)
    with pytest.raises(ValueError, match="different lengths"):
        _offsets._py_heuristics(a, a[:2], a, 1, spec)
    with pytest.raises(ValueError, match="different lengths"):
        _offsets._py_heuristics(a, a, a[:1], 1, spec)
    with pytest.raises(ValueError, match="alignment"):
        _offsets._py_heuristics(a, a, a, 0, spec)
    with pytest.raises(ValueError, match="1 to 16"):
        _offsets._py_heuristics(a, a, a, 1, ())
    with pytest.raises(ValueError, match="bad heuristic"):
        _offsets._py_heuristics(a, a, a, 1, ((6, False, False),))
    with pytest.raises(ValueError, match="bad heuristic"):
        _offsets._py_heuristics(a, a, a, 1, ((0, False, True),))  # the sweep needs start order
    with pytest.raises(ValueError, match="ends"):
        _offsets._py_compress(a, a[:2])


def test_empty_and_all_zero_inputs():
    z = np.zeros(0, dtype=np.int64)
    offset, arena, order, winner, _cost, lower = _offsets._py_heuristics(z, z, z, 64, _SPECS[HEURISTICS])
    assert (offset.shape, arena, order.shape, winner, lower) == ((0,), 0, (0,), 0, 0)
    start = np.array([0, 1, 2], dtype=np.int64)
    offset, arena, order, winner, _cost, lower = _offsets._py_heuristics(
        start, start + 1, np.zeros(3, dtype=np.int64), 64, _SPECS[HEURISTICS])
    assert (offset.tolist(), arena, order.shape, winner, lower) == ([0, 0, 0], 0, (0,), 0, 0)
