"""memcore.plan_offsets: published vectors, exact agreement with the Python reference,
validation branches, plan validity (property), the anytime search and the DFS hook."""

import dataclasses
import importlib
import importlib.machinery
import itertools
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memcore.offsets as offsets_module
from memcore import (
    InvalidArrayError,
    max_live_bytes,
    plan_offsets,
    read_minimalloc_csv,
    verify_offsets,
)
from memcore import _offsets
from memcore import _reference_offsets as ref
from memcore.offsets import ALGORITHMS, HEURISTICS, OffsetPlan, _auto_order

from _helpers import MINIMALLOC_DIR as DATA

INT64_MAX = np.iinfo(np.int64).max


def _aligned(size, alignment):
    size = np.asarray(size, dtype=np.int64)
    return (size + alignment - 1) // alignment * alignment


def _check_valid(start, end, size, plan, alignment=1):
    """The plan passes the independent checker and its own contract."""
    aligned = _aligned(size, alignment)
    verify_offsets(start, end, aligned, plan.offset, plan.arena_bytes)
    assert plan.lower_bound == max_live_bytes(start, end, size, alignment=alignment)
    assert plan.lower_bound <= plan.arena_bytes
    assert np.all(plan.offset % alignment == 0)
    live = aligned > 0
    expected_arena = int((plan.offset[live] + aligned[live]).max()) if live.any() else 0
    assert plan.arena_bytes == expected_arena


# -------------------------------------------------------------------------------------------
# Build
# -------------------------------------------------------------------------------------------


def test_kernel_is_compiled():
    module = importlib.import_module("memcore._offsets")
    assert module.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    assert offsets_module._offsets is module


# -------------------------------------------------------------------------------------------
# Published vectors
# -------------------------------------------------------------------------------------------


def test_tflite_complex_records():
    # tensorflow/lite/delegates/gpu/common/memory_management_test.cc, ComplexRecords:
    # records (size, first, last)
    records = [(32, 0, 1), (32, 1, 4), (8, 2, 5), (16, 3, 5), (8, 4, 5), (64, 5, 7),
               (8, 6, 8), (8, 7, 8), (16, 8, 9)]
    size, start, end = (list(col) for col in zip(*records))
    plan = plan_offsets(start, end, size, algorithm="greedy_size")
    assert plan.arena_bytes == 96 == plan.lower_bound
    assert plan.offset.tolist() == [0, 32, 80, 64, 88, 0, 64, 72, 0]
    assert plan_offsets(start, end, size).arena_bytes == 96


def test_pisarchyk_lee_example():
    # "Efficient Memory Management for Deep Neural Net Inference" (2020): (first, last, size)
    records = [(0, 1, 32), (1, 4, 28), (2, 5, 36), (3, 5, 16), (4, 5, 8), (5, 7, 64),
               (6, 8, 10), (7, 8, 40)]
    start, end, size = (list(col) for col in zip(*records))
    assert plan_offsets(start, end, size, algorithm="greedy_size").arena_bytes == 124
    assert plan_offsets(start, end, size).arena_bytes == 124


def test_minimalloc_input12():
    problem = read_minimalloc_csv(DATA / "input.12.csv")
    plan = plan_offsets(problem.start, problem.end, problem.size)
    assert plan.arena_bytes == 12 == plan.lower_bound
    _check_valid(problem.start, problem.end, problem.size, plan)


# -------------------------------------------------------------------------------------------
# Kernels against the O(n^2) reference
# -------------------------------------------------------------------------------------------


def _random_problem(seed):
    """Small random problems covering ties, empty buffers, both time compressions and
    alignment."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 36))
    kind = seed % 6
    start = rng.integers(-1, 24, n)
    if kind == 0:
        length = rng.integers(0, 40, n)  # long lifetimes
    elif kind == 1:
        length = np.zeros(n, dtype=np.int64)  # single steps: many ties
    else:
        length = rng.integers(0, 8, n)
    end = start + length
    if kind == 3:  # huge steps: the rank compression path
        start, end = start * 10**12 - 5, end * 10**12 + 7
    size = rng.integers(0, 6, n) * rng.choice([1, 1, 3, 16], n)
    if kind == 4:
        size = rng.integers(0, 2, n) * 8  # few distinct sizes, many ties and zeros
    alignment = int(rng.choice([1, 1, 1, 4, 3]))
    return start.astype(np.int64), end.astype(np.int64), size.astype(np.int64), alignment


@pytest.mark.parametrize("block", range(30))
def test_heuristics_match_reference(block):
    # 30 blocks x 8 seeds = 240 random problems, every heuristic, and auto's choice.
    for seed in range(8 * block, 8 * block + 8):
        start, end, size, alignment = _random_problem(seed)
        arenas = []
        order = _auto_order(start.shape[0])  # auto's order: the first smallest arena wins
        assert sorted(order) == sorted(HEURISTICS)
        for name in order:
            plan = plan_offsets(start, end, size, alignment=alignment, algorithm=name)
            expected, arena = ref.greedy(name, start, end, size, alignment=alignment)
            assert plan.offset.tolist() == expected, (seed, name)
            assert plan.arena_bytes == arena, (seed, name)
            assert plan.algorithm == name
            arenas.append(arena)
        auto = plan_offsets(start, end, size, alignment=alignment)
        assert auto.arena_bytes == min(arenas), seed
        assert auto.algorithm == order[arenas.index(min(arenas))], seed


@pytest.mark.parametrize("n", [320, 321, 700])
def test_auto_order_by_size(n):
    # size order first up to 320 buffers, the start sweep first above: either way auto keeps
    # the first smallest arena of its order
    order = _auto_order(n)
    assert order[0] == ("greedy_size" if n <= 320 else "greedy_start")
    assert sorted(order) == sorted(HEURISTICS)
    rng = np.random.default_rng(n)
    for _ in range(4):
        start = rng.integers(0, n // 4, n)
        end = start + rng.integers(0, 12, n)
        size = rng.integers(1, 1000, n) * rng.integers(0, 2, n)
        arenas = [plan_offsets(start, end, size, algorithm=name).arena_bytes for name in order]
        auto = plan_offsets(start, end, size)
        assert auto.arena_bytes == min(arenas)
        if auto.arena_bytes > auto.lower_bound:  # every heuristic ran: the first minimum wins
            assert auto.algorithm == order[arenas.index(min(arenas))]
        else:  # stopped at the first reaching the bound
            assert auto.algorithm == order[arenas.index(auto.lower_bound)]


@pytest.mark.parametrize("name", HEURISTICS)
def test_empty(name):
    plan = plan_offsets([], [], [], algorithm=name)
    assert plan.offset.shape == (0,) and plan.offset.dtype == np.int64
    assert (plan.arena_bytes, plan.lower_bound, plan.gap) == (0, 0, 0.0)


@pytest.mark.parametrize("name", ALGORITHMS)
def test_one_buffer(name):
    plan = plan_offsets([3], [3], [10], alignment=8, algorithm=name)
    assert plan.offset.tolist() == [0]
    assert (plan.arena_bytes, plan.lower_bound) == (16, 16)


@pytest.mark.parametrize("name", ALGORITHMS)
def test_zero_sizes_get_offset_zero(name):
    plan = plan_offsets([0, 0, 1, 0], [5, 5, 2, 5], [0, 7, 0, 0], algorithm=name)
    assert plan.offset.tolist() == [0, 0, 0, 0]
    assert plan.arena_bytes == 7


@pytest.mark.parametrize("name", HEURISTICS)
def test_huge_sizes(name):
    # the total of all sizes must fit in int64, and here the arena reaches INT64_MAX
    start, end = [0, 0, 5], [3, 3, 9]
    size = [2**62 - 1, 2**62, 0]
    plan = plan_offsets(start, end, size, algorithm=name)
    assert plan.arena_bytes == INT64_MAX == plan.lower_bound
    _check_valid(start, end, size, plan)
    assert plan_offsets([INT64_MAX - 1], [INT64_MAX], [1]).arena_bytes == 1


@pytest.mark.parametrize("name", HEURISTICS)
def test_ties_go_to_the_lower_index(name):
    # identical buffers are stacked in index order
    plan = plan_offsets([0, 0, 0], [5, 5, 5], [8, 8, 8], algorithm=name)
    assert plan.offset.tolist() == [0, 8, 16]


def test_best_fit_and_first_fit_pick_different_gaps():
    # Size order: 4 -> 0, 1 -> 5 (on top of 4), 2 -> 0, 3 -> 2 (gap [2, 5)); buffer 0 then
    # sees the gaps [0, 2) and [4, 5): best fit takes the smaller one (4), first fit the
    # lower one (0).
    start, end, size = [3, 1, 2, 2, 1], [3, 3, 2, 3, 1], [1, 3, 2, 2, 5]
    assert plan_offsets(start, end, size, algorithm="greedy_size").offset.tolist() == [
        4, 5, 0, 2, 0]
    assert plan_offsets(start, end, size, algorithm="first_fit").offset.tolist() == [
        0, 5, 0, 2, 0]


def test_best_fit_smallest_gap_by_reference():
    # buffers 0..2 live only early/late leave holes for the long buffer 3 to choose from
    start = [0, 0, 0, 6, 6, 0]
    end = [5, 5, 5, 9, 9, 9]
    size = [16, 8, 4, 6, 10, 5]
    for name in ("greedy_size", "first_fit"):
        plan = plan_offsets(start, end, size, algorithm=name)
        assert plan.offset.tolist() == ref.greedy(name, start, end, size)[0]
        _check_valid(start, end, size, plan)


def test_radix_sort_hook_matches_lexsort():
    rng = np.random.default_rng(7)
    for n in (0, 1, 5, 1000):
        keys = np.stack([rng.integers(0, 4, n), rng.integers(0, 2**63, n, dtype=np.uint64)
                         .astype(np.int64)]).astype(np.uint64)
        perm = np.arange(n, dtype=np.int64)
        got = _offsets._py_sort_by_keys(keys, perm)
        assert got.tolist() == np.lexsort((perm, keys[1], keys[0])).tolist()


def test_large_adversarial_mix():
    # long-lived buffers over the whole span on top of 50k short ones: every level of the
    # bucket index, deep sorted buckets and the sweep
    rng = np.random.default_rng(3)
    n = 50_000
    start = np.sort(rng.integers(0, n, n))
    end = start + rng.integers(0, 50, n)
    start[:300] = 0
    end[:300] = n + 60
    size = rng.integers(1, 1000, n)
    for name in ("greedy_start", "greedy_size", "greedy_breadth"):
        plan = plan_offsets(start, end, size, algorithm=name)
        _check_valid(start, end, size, plan)


# -------------------------------------------------------------------------------------------
# Validation
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(start=[0.0, 1.0]), r"start must be C-contiguous int64; got float64 array"),
        (dict(start=[[0, 1]]), r"start must be a 1-D"),
        (dict(start=np.array([0, 2**64 - 1], dtype=np.uint64)), r"start must fit in int64"),
        (dict(end=[1]), r"end must have length 2 \(len\(start\)\); got int64 array"),
        (dict(size=[1, 2, 3]), r"size must have length 2 \(len\(start\)\)"),
        (dict(end=[1, 0]), r"end must be >= start; got end\[1\] = 0 < start\[1\] = 1"),
        (dict(size=[4, -1]), r"size must be >= 0; got size\[1\] = -1"),
        (dict(size=[INT64_MAX, 1]), r"sum of size must fit in int64"),
        (dict(size=[INT64_MAX, 0], alignment=2),
         r"size\[0\] = .* rounded up to alignment 2 must fit in int64"),
        (dict(alignment=0), r"alignment must be >= 1; got 0"),
        (dict(alignment=2.0), r"alignment must be an integer; got float"),
        (dict(alignment=True), r"alignment must be an integer; got bool"),
        (dict(algorithm="best"),
         r"algorithm must be one of 'auto', 'greedy_start', .*'first_fit'.*; got 'best'"),
        (dict(algorithm=None), r"algorithm must be one of .*; got None"),
        (dict(time_limit=0), r"time_limit must be None or a positive finite number"),
        (dict(time_limit=-1.5), r"time_limit must be None or a positive finite number"),
        (dict(time_limit=float("nan")), r"time_limit .*; got nan"),
        (dict(time_limit=float("inf")), r"time_limit .*; got inf"),
        (dict(time_limit="1"), r"time_limit .*; got str '1'"),
        (dict(time_limit=True), r"time_limit .*; got bool True"),
    ],
)
def test_validation(kwargs, match):
    args = dict(start=[0, 1], end=[2, 3], size=[4, 5])
    args.update(kwargs)
    with pytest.raises(InvalidArrayError, match=match):
        plan_offsets(args.pop("start"), args.pop("end"), args.pop("size"), **args)


def test_errors_are_value_errors():
    assert issubclass(InvalidArrayError, ValueError)
    with pytest.raises(ValueError):
        plan_offsets([0], [0], [1], algorithm="nope")


def test_inputs_are_not_mutated_and_views_accepted():
    rng = np.random.default_rng(0)
    start = rng.integers(0, 50, 200)
    end = start + rng.integers(0, 9, 200)
    size = rng.integers(0, 100, 200)
    copies = [a.copy() for a in (start, end, size)]
    for a in (start, end, size):
        a.flags.writeable = False
    plan = plan_offsets(start[::1], end, size.astype(np.int32), alignment=4)
    for a, b in zip((start, end, size), copies):
        assert np.array_equal(a, b)
    _check_valid(start, end, size, plan, alignment=4)
    wide = np.stack([start, start])[:, ::2][0]  # non-contiguous view
    plan_offsets(wide, wide, np.ones_like(wide))


def test_plan_is_frozen_and_read_only():
    plan = plan_offsets([0, 1], [1, 2], [3, 4])
    assert isinstance(plan, OffsetPlan)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.arena_bytes = 0
    with pytest.raises(ValueError):
        plan.offset[0] = 5
    assert plan.gap == pytest.approx(plan.arena_bytes / plan.lower_bound - 1)


# -------------------------------------------------------------------------------------------
# Every plan is valid (property)
# -------------------------------------------------------------------------------------------


@st.composite
def _problems(draw):
    n = draw(st.integers(0, 24))
    start = draw(st.lists(st.integers(-1, 30), min_size=n, max_size=n))
    length = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n))
    size = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    alignment = draw(st.sampled_from([1, 1, 2, 8]))
    start = np.array(start, dtype=np.int64)
    return start, start + np.array(length, dtype=np.int64), np.array(size, np.int64), alignment


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_problems())
def test_every_plan_is_valid(problem):
    start, end, size, alignment = problem
    for name in ALGORITHMS:
        plan = plan_offsets(start, end, size, alignment=alignment, algorithm=name)
        _check_valid(start, end, size, plan, alignment)


# -------------------------------------------------------------------------------------------
# The anytime search
# -------------------------------------------------------------------------------------------


def _medium_problem(seed, n=80):
    rng = np.random.default_rng(seed)
    start = rng.integers(0, 60, n)
    end = start + rng.integers(0, 25, n)
    size = rng.integers(1, 9, n) * 16
    return start, end, size


@pytest.mark.parametrize("seed", range(4))
def test_time_limit_never_worse_than_auto(seed):
    start, end, size = _medium_problem(seed)
    auto = plan_offsets(start, end, size)
    searched = plan_offsets(start, end, size, time_limit=0.2)
    assert searched.arena_bytes <= auto.arena_bytes
    _check_valid(start, end, size, searched)
    if searched.arena_bytes < auto.arena_bytes:
        assert searched.algorithm in ("dfs", "ils")


def test_time_limit_ils_path(monkeypatch):
    # force the iterated greedy (used when the DFS would be too large)
    monkeypatch.setattr(offsets_module, "_DFS_MAX_COVER", 0)
    start, end, size = _medium_problem(11, n=300)
    auto = plan_offsets(start, end, size)
    searched = plan_offsets(start, end, size, time_limit=0.2)
    assert searched.arena_bytes <= auto.arena_bytes
    assert searched.algorithm in (auto.algorithm, "ils")
    _check_valid(start, end, size, searched)


@pytest.mark.slow
def test_time_limit_is_respected():
    problem = read_minimalloc_csv(DATA / "E.1048576.csv")  # auto and the search miss LB
    t0 = time.perf_counter()
    plan = plan_offsets(problem.start, problem.end, problem.size, time_limit=0.3)
    # ~0.3 s when idle; the bound leaves room for a loaded 2-core machine, while a search
    # that ignored the limit would run for minutes
    assert time.perf_counter() - t0 < 0.3 + 5.0
    assert plan.arena_bytes <= plan_offsets(problem.start, problem.end, problem.size).arena_bytes
    _check_valid(problem.start, problem.end, problem.size, plan)


@pytest.mark.slow
def test_time_limit_on_a_large_problem_stays_close():
    # 250k buffers: auto keeps to the start sweep, the DFS is out of budget and an
    # iterated-greedy step (bucket index) would overrun, so none is started
    # (the algorithm check is exact; the wall-clock bound is generous against load spikes)
    rng = np.random.default_rng(5)
    n = 250_000
    start = rng.integers(0, n, n)
    end = start + rng.integers(0, 100, n)
    size = rng.integers(1, 1000, n)
    t0 = time.perf_counter()
    plan_offsets(start, end, size)
    auto_time = time.perf_counter() - t0
    t0 = time.perf_counter()
    plan = plan_offsets(start, end, size, time_limit=0.05)
    assert time.perf_counter() - t0 < 5 * auto_time + 2.0
    assert plan.algorithm == "greedy_start"


def test_search_reaches_lower_bound_on_minimalloc_a():
    problem = read_minimalloc_csv(DATA / "A.1048576.csv")
    auto = plan_offsets(problem.start, problem.end, problem.size)
    assert auto.arena_bytes > auto.lower_bound == 1048576
    plan = plan_offsets(problem.start, problem.end, problem.size, time_limit=10)
    assert plan.arena_bytes == 1048576
    assert plan.algorithm == "dfs"
    _check_valid(problem.start, problem.end, problem.size, plan)


@pytest.mark.slow
def test_search_stops_at_lower_bound_without_searching():
    start, end, size = [0, 1], [1, 2], [3, 4]
    t0 = time.perf_counter()
    plan = plan_offsets(start, end, size, time_limit=30)
    assert time.perf_counter() - t0 < 10  # well under the 30 s a search would use
    assert plan.gap == 0.0


def _brute_force_optimum(first, last, size):
    """Smallest height over every order placed first-fit (gravity): the true optimum."""
    n = len(first)
    best = None
    for order in itertools.permutations(range(n)):
        off = ref.place_in_order(list(order), list(first), list(last), list(size), "first")
        top = max(off[i] + size[i] for i in range(n))
        best = top if best is None else min(best, top)
    return best


@pytest.mark.parametrize("seed", range(30))
def test_dfs_is_exact_on_tiny_problems(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    first = rng.integers(0, 4, n)
    last = first + rng.integers(0, 3, n)
    size = rng.integers(1, 5, n)
    optimum = _brute_force_optimum(first, last, size)
    solver = _offsets._DfsSolver(first, last, size)
    deadline = _offsets._py_monotonic() + 10
    status, off = solver.run(optimum, deadline)
    assert status == 1
    ok = all(
        off[i] + size[i] <= off[j] or off[j] + size[j] <= off[i]
        for i in range(n) for j in range(i + 1, n)
        if first[i] <= last[j] and first[j] <= last[i]
    )
    assert ok and max(off + size) <= optimum
    if optimum > size.max():
        # a height below the optimum is proven impossible (the search is complete)
        assert solver.run(optimum - 1, deadline)[0] == 0


def test_dfs_handles_huge_sizes():
    # heights near 2**62: the branching keys are scaled so nothing overflows
    first = np.array([0, 0, 1, 2], dtype=np.int64)
    last = np.array([1, 2, 2, 2], dtype=np.int64)
    size = np.array([2**60, 2**60 + 3, 2**60, 2**59], dtype=np.int64)
    solver = _offsets._DfsSolver(first, last, size)
    deadline = _offsets._py_monotonic() + 10
    height = int(size[0] + size[1] + size[2])  # buffers 0, 1, 2 all cover section 1
    status, off = solver.run(height, deadline, rule=0, seed=7)
    assert status == 1 and int((off + size).max()) <= height
    assert solver.run(height - 1, deadline)[0] == 0
