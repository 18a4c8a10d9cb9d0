"""memcore.verify: verify_offsets against the O(n^2) reference; verify_tokens' checks."""

import re
import types

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from memcore import InvalidArrayError, PlanError, plan_tokens, verify_offsets, verify_tokens
from memcore import _reference as ref
from memcore._workloads import random_intervals

INT64_MAX = np.iinfo(np.int64).max


def _conflict(start, end, size, offset, arena_bytes):
    """None when verify_offsets accepts, else the PlanError message."""
    try:
        verify_offsets(start, end, size, offset, arena_bytes)
    except PlanError as exc:
        return str(exc)
    return None


# -------------------------------------------------------------------------------------------
# verify_offsets
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(25))
def test_verify_offsets_matches_reference(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):  # 250 random plans, about a third of them valid
        n = int(rng.integers(0, 30))
        start, end, size = random_intervals(rng, n, 30, mean_length=3, max_size=4)
        size *= 4
        offset = rng.integers(0, 10, n) * 4
        arena = int((offset + size).max()) if n else 0
        pairs = ref.verify_offsets(start, end, size, offset, arena)
        message = _conflict(start, end, size, offset, arena)
        assert (message is None) == (not pairs)
        if message and "overlap in bytes" in message:
            # The two buffers named are one of the reference's conflicting pairs.
            named = re.match(r"buffer (\d+) .* and buffer (\d+) ", message).groups()
            assert tuple(sorted(int(i) for i in named)) in pairs


def _first_fit(start, end, size):
    """A slow but valid planner: largest first, each at the lowest offset that fits."""
    offset = np.zeros(len(start), dtype=np.int64)
    placed = []
    for i in np.argsort(-size, kind="stable"):
        for c in sorted({0, *(int(offset[j] + size[j]) for j in placed)}):
            if all(not (start[j] <= end[i] and start[i] <= end[j]
                        and c < offset[j] + size[j] and offset[j] < c + size[i])
                   for j in placed):
                offset[i] = c
                break
        placed.append(i)
    return offset


@pytest.mark.parametrize("seed", range(10))
def test_verify_offsets_accepts_valid_plans(seed):
    rng = np.random.default_rng(100 + seed)
    start, end, size = random_intervals(rng, 60, 40, mean_length=8, max_size=50)
    offset = _first_fit(start, end, size)
    arena = int((offset + size).max())
    assert ref.verify_offsets(start, end, size, offset, arena) == []
    assert verify_offsets(start, end, size, offset, arena) is None
    # Every buffer side by side is always valid too.
    stacked = np.concatenate([[0], np.cumsum(size)[:-1]])
    assert verify_offsets(start, end, size, stacked, int(size.sum())) is None


def test_verify_offsets_message_names_both_buffers():
    message = _conflict([0, 5, 3], [2, 9, 6], [8, 8, 16], [0, 32, 36], 64)
    assert message == (
        "buffer 2 (live [3, 6], bytes [36, 52)) and buffer 1 (live [5, 9], bytes [32, 40)) "
        "are live at the same time and overlap in bytes"
    )


def test_verify_offsets_boundaries():
    # Touching byte ranges never conflict; touching lifetimes do (end is inclusive).
    assert _conflict([0, 0], [5, 5], [8, 8], [0, 8], 16) is None
    assert _conflict([0, 3], [2, 5], [8, 8], [0, 0], 8) is None
    assert _conflict([0, 2], [2, 5], [8, 8], [0, 0], 8) is not None
    # Zero-size buffers never conflict, wherever they are in the arena.
    assert _conflict([0, 0, 0], [5, 5, 5], [0, 8, 0], [4, 0, 8], 8) is None
    # One buffer enclosing another in bytes.
    assert _conflict([0, 1], [5, 2], [64, 8], [0, 16], 64) is not None
    # Empty and single plans.
    assert verify_offsets([], [], [], [], 0) is None
    assert verify_offsets([-1], [4], [8], [0], 8) is None


def test_verify_offsets_conflict_found_after_removals():
    # The conflicting neighbour is found even after other ranges left the live set.
    start = [0, 0, 0, 4, 4]
    end = [2, 9, 2, 9, 9]
    size = [10, 10, 10, 10, 15]
    offset = [0, 10, 20, 20, 25]
    assert "buffer 3 (live [4, 9], bytes [20, 30)) and buffer 4" in _conflict(
        start, end, size, offset, 40
    )


def test_verify_offsets_arena_bounds():
    with pytest.raises(PlanError, match=r"offset\[1\] must be >= 0; got -8 for buffer 1 "
                                        r"\(live \[1, 2\], bytes \[-8, 0\)\)"):
        verify_offsets([0, 1], [1, 2], [8, 8], [0, -8], 16)
    with pytest.raises(PlanError, match=r"buffer 1 \(live \[1, 2\], bytes \[12, 20\)\) must "
                                        r"fit in the arena of 16 bytes; got offset\[1\] \+ "
                                        r"size\[1\] = 20"):
        verify_offsets([0, 1], [1, 2], [8, 8], [0, 12], 16)
    # Zero-size buffers must lie in [0, arena_bytes] too.
    with pytest.raises(PlanError, match=r"must fit in the arena of 16 bytes"):
        verify_offsets([0], [1], [0], [17], 16)
    assert verify_offsets([0], [1], [0], [16], 16) is None


def test_verify_offsets_huge_values_do_not_overflow():
    big = INT64_MAX - 10
    assert verify_offsets([0, 0], [1, 1], [10, 1], [0, big], INT64_MAX) is None
    with pytest.raises(PlanError, match=r"must fit in the arena"):
        verify_offsets([0], [1], [20], [big], INT64_MAX)


def test_verify_offsets_large_adversarial():
    # 100k buffers live at once, stacked: valid; then two of them overlap by one byte.
    n = 100_000
    start, end, size = np.zeros(n, np.int64), np.full(n, 7, np.int64), np.full(n, 4, np.int64)
    offset = np.arange(n, dtype=np.int64) * 4
    assert verify_offsets(start, end, size, offset, 4 * n) is None
    offset[n // 2] -= 1
    with pytest.raises(PlanError, match=rf"buffer {n // 2 - 1} .* and buffer {n // 2} "):
        verify_offsets(start, end, size, offset, 4 * n)


@pytest.mark.parametrize(
    "args, match",
    [
        (([0], [1], [8], [0, 0], 8), r"offset must have length 1 \(len\(start\)\)"),
        (([0], [1], [8], [0.0], 8), r"offset must be C-contiguous int64; got float64"),
        (([0], [1], [8], [0], -1), r"arena_bytes must be >= 0; got -1"),
        (([0], [1], [8], [0], 8.0), r"arena_bytes must be an integer; got float"),
        (([2], [1], [8], [0], 8), r"end must be >= start; got end\[0\] = 1 < start\[0\] = 2"),
        (([0], [1], [-8], [0], 8), r"size must be >= 0; got size\[0\] = -8"),
        (([0, 0], [1], [8, 8], [0, 0], 8), r"end must have length 2 \(len\(start\)\)"),
    ],
)
def test_verify_offsets_rejects(args, match):
    with pytest.raises(InvalidArrayError, match=match):
        verify_offsets(*args)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 5), st.integers(0, 6)),
                max_size=25))
def test_verify_offsets_accepts_stacked_plans(buffers):
    start = np.array([b[0] for b in buffers], dtype=np.int64)
    end = start + np.array([b[1] for b in buffers], dtype=np.int64)
    size = np.array([b[2] for b in buffers], dtype=np.int64)
    offset = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)[: len(size)]
    assert verify_offsets(start, end, size, offset, int(size.sum())) is None


# -------------------------------------------------------------------------------------------
# verify_tokens
# -------------------------------------------------------------------------------------------

# Tokens: t0 32 B pool 0 (1 ref), t1 16 B pool 0 (1 ref), t2 24 B pool 1 (0 refs),
# t3 8 B sym class 2 (1 ref), t4 8 B sym class 2 (1 ref).
_PROGRAM = dict(
    tok_bytes=[32, 16, 24, 8, 8],
    tok_pool=[0, 0, 1, 0, 0],
    tok_refs=[1, 1, 0, 1, 1],
    ev_kind=np.array([0, 1, 0, 1, 0, 0, 1, 0, 1], dtype=np.int8),
    ev_tok=[0, 0, 1, 1, 2, 3, 3, 4, 4],
    tok_sym=[-1, -1, -1, 2, 2],
)


def _plan(storage_of, storage_bytes, storage_pool):
    return types.SimpleNamespace(
        storage_of=np.array(storage_of), storage_bytes=np.array(storage_bytes),
        storage_pool=np.array(storage_pool),
    )


def test_verify_tokens_accepts_plan_tokens_and_hand_plans():
    assert verify_tokens(**_PROGRAM, plan=plan_tokens(**_PROGRAM)) is None
    # Everything on its own storage is valid, as is any object with the three arrays.
    assert verify_tokens(**_PROGRAM, plan=_plan([0, 1, 2, 3, 4], [32, 16, 24, 8, 8],
                                                [0, 0, 1, 0, 0])) is None
    # Zero-ref tokens are live only at their request: two of them may share a storage.
    prog = dict(tok_bytes=[8, 8], tok_pool=[0, 0], tok_refs=[0, 0], ev_kind=[0, 0],
                ev_tok=[0, 1])
    assert verify_tokens(**prog, plan=_plan([0, 0], [8], [0])) is None


def test_verify_tokens_shared_storage():
    prog = dict(tok_bytes=[8, 8], tok_pool=[0, 0], tok_refs=[1, 1],
                ev_kind=[0, 0, 1, 1], ev_tok=[0, 1, 0, 1])
    with pytest.raises(PlanError, match=r"tokens 0 and 1 must not hold storage 0 at the same "
                                        r"time; got token 1 requested at event 1 while token "
                                        r"0 is still live"):
        verify_tokens(**prog, plan=_plan([0, 0], [8], [0]))


def test_verify_tokens_storage_too_small():
    with pytest.raises(PlanError, match=r"storage 0 must be at least as large as token 0; "
                                        r"got plan.storage_bytes\[0\] = 31 < tok_bytes\[0\] "
                                        r"= 32 \(event 0\)"):
        verify_tokens(**_PROGRAM, plan=_plan([0, 0, 1, 2, 2], [31, 24, 8], [0, 1, 0]))


def test_verify_tokens_pools_mixed():
    with pytest.raises(PlanError, match=r"storage 0 must hold tokens of its pool only; got "
                                        r"token 2 of pool 1 on plan.storage_pool\[0\] = 0 "
                                        r"\(event 4\)"):
        verify_tokens(**_PROGRAM, plan=_plan([0, 0, 0, 1, 1], [32, 8], [0, 0]))


def test_verify_tokens_symbolic_mixed_with_constant():
    with pytest.raises(PlanError, match=r"storage 0 must not mix symbolic size classes or a "
                                        r"class with constant sizes; got token 3 \(symbolic "
                                        r"class 2\) on a storage holding constant sizes "
                                        r"\(event 5\)"):
        verify_tokens(**_PROGRAM, plan=_plan([0, 0, 1, 0, 0], [32, 24], [0, 1]))


def test_verify_tokens_symbolic_classes_mixed():
    prog = {**_PROGRAM, "tok_sym": [-1, -1, -1, 2, 3]}
    with pytest.raises(PlanError, match=r"got token 4 \(symbolic class 3\) on a storage "
                                        r"holding symbolic class 2 \(event 7\)"):
        verify_tokens(**prog, plan=_plan([0, 0, 1, 2, 2], [32, 24, 8], [0, 1, 0]))


def test_verify_tokens_storage_ids():
    with pytest.raises(PlanError, match=r"plan.storage_of\[1\] = 5 must be a storage id in "
                                        r"\[0, 3\) for requested token 1"):
        verify_tokens(**_PROGRAM, plan=_plan([0, 5, 1, 2, 2], [32, 24, 8], [0, 1, 0]))
    prog = {**_PROGRAM, "ev_kind": _PROGRAM["ev_kind"][:4], "ev_tok": _PROGRAM["ev_tok"][:4]}
    with pytest.raises(PlanError, match=r"plan.storage_of\[2\] = 1 must be -1 for token 2, "
                                        r"which is never requested"):
        verify_tokens(**prog, plan=_plan([0, 0, 1, -1, -1], [32, 24], [0, 1]))


def test_verify_tokens_rejects_bad_plan_objects():
    with pytest.raises(InvalidArrayError, match=r"plan must be a TokenPlan .*; got dict"):
        verify_tokens(**_PROGRAM, plan={"storage_of": [0]})
    with pytest.raises(InvalidArrayError, match=r"plan.storage_of must have length 5 "
                                                r"\(len\(tok_bytes\)\)"):
        verify_tokens(**_PROGRAM, plan=_plan([0, 0], [32], [0]))
    with pytest.raises(InvalidArrayError, match=r"plan.storage_pool must have length 3 "
                                                r"\(len\(plan.storage_bytes\)\)"):
        verify_tokens(**_PROGRAM, plan=_plan([0, 0, 1, 2, 2], [32, 24, 8], [0, 1]))
    with pytest.raises(InvalidArrayError, match=r"plan.storage_bytes must be C-contiguous "
                                                r"int64; got float64"):
        verify_tokens(**_PROGRAM, plan=_plan([0, 0, 1, 2, 2], [32.0, 24.0, 8.0], [0, 1, 0]))


@pytest.mark.parametrize(
    "events, match",
    [
        ([(0, 0), (1, 0), (1, 0)], r"ev_tok\[2\] = 0: an EV_DECREF of token 0 needs an "
                                   r"outstanding reference"),
        ([(1, 0)], r"ev_tok\[0\] = 0: an EV_DECREF of token 0 must come after its EV_REQUEST"),
        ([(0, 0), (1, 0), (0, 0)], r"ev_tok\[2\] = 0: token 0 must be requested at most once"),
    ],
)
def test_verify_tokens_rejects_bad_sequences(events, match):
    prog = dict(tok_bytes=[8], tok_pool=[0], tok_refs=[1],
                ev_kind=[k for k, _ in events], ev_tok=[t for _, t in events])
    with pytest.raises(InvalidArrayError, match=match):
        verify_tokens(**prog, plan=_plan([0], [8], [0]))


def test_verify_tokens_rejects_bad_program_arrays():
    with pytest.raises(InvalidArrayError, match=r"ev_tok\[0\] = 9 is out of range \[0, 5\)"):
        verify_tokens(**{**_PROGRAM, "ev_tok": [9] + _PROGRAM["ev_tok"][1:]},
                      plan=plan_tokens(**_PROGRAM))
