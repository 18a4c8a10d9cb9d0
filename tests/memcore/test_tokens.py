"""memcore.plan_tokens: TVM Relax/Relay token allocation (spec §1.4, §1.8, §1.9).

Expected storages in the scenario tests are derived from the spec by hand, not from the
kernel's output.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from memcore import (
    EV_DECREF,
    EV_REQUEST,
    InvalidArrayError,
    TokenPlan,
    plan_tokens,
    verify_tokens,
)
from memcore import _reference as ref
from memcore._workloads import random_token_program

INT64_MAX = np.iinfo(np.int64).max


def program(tokens, events):
    """Build plan_tokens arguments.

    tokens: list of (bytes, refs) or (bytes, refs, pool) or (bytes, refs, pool, sym).
    events: string like "R0 R1 D0 D1" (R = EV_REQUEST, D = EV_DECREF).
    """
    rows = [tuple(t) + (0, -1)[len(t) - 2:] if len(t) < 4 else tuple(t) for t in tokens]
    kinds, toks = [], []
    for word in events.split():
        kinds.append(EV_REQUEST if word[0] == "R" else EV_DECREF)
        toks.append(int(word[1:]))
    return dict(
        tok_bytes=[r[0] for r in rows],
        tok_pool=[r[2] for r in rows],
        tok_refs=[r[1] for r in rows],
        ev_kind=np.array(kinds, dtype=np.int8),
        ev_tok=toks,
        tok_sym=[r[3] for r in rows],
    )


def plan(tokens, events, **kwargs):
    args = program(tokens, events)
    result = plan_tokens(**args, **kwargs)
    verify_tokens(**args, plan=result)
    return result


# -------------------------------------------------------------------------------------------
# Against the reference
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(25))
def test_matches_reference_on_random_programs(seed):
    rng = np.random.default_rng(seed)
    for k in range(8):  # 200 programs, each under 4 policies
        prog = random_token_program(
            rng,
            int(rng.integers(0, 60)),
            n_pools=int(rng.integers(1, 4)),
            p_symbolic=0.25 if k % 2 else 0.0,
            mean_live=int(rng.integers(1, 8)),
            p_zero_ref=0.2,
            max_log2_bytes=int(rng.integers(1, 12)),
        )
        for match_range, release_zero_ref in [(16, False), (16, True), (2, False), (0, True)]:
            got = plan_tokens(**prog, match_range=match_range,
                              release_zero_ref=release_zero_ref)
            storage_of, storage_bytes, storage_pool = ref.plan_tokens(
                **prog, match_range=match_range, release_zero_ref=release_zero_ref
            )
            assert got.storage_of.tolist() == storage_of
            assert got.storage_bytes.tolist() == storage_bytes
            assert got.storage_pool.tolist() == storage_pool


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_tok=st.integers(0, 80),
    n_pools=st.integers(1, 3),
    mean_live=st.integers(1, 10),
    p_symbolic=st.sampled_from([0.0, 0.3]),
    match_range=st.sampled_from([0, 1, 2, 16]),
    release_zero_ref=st.booleans(),
)
def test_verify_tokens_accepts_every_plan(
    seed, n_tok, n_pools, mean_live, p_symbolic, match_range, release_zero_ref
):
    prog = random_token_program(
        np.random.default_rng(seed), n_tok, n_pools=n_pools, mean_live=mean_live,
        p_symbolic=p_symbolic, p_zero_ref=0.2, max_log2_bytes=10,
    )
    result = plan_tokens(**prog, match_range=match_range, release_zero_ref=release_zero_ref)
    assert verify_tokens(**prog, plan=result) is None


# -------------------------------------------------------------------------------------------
# Spec scenarios
# -------------------------------------------------------------------------------------------


def test_basic_sequential_reuse():
    # a (32 B) is read once and freed before b (32 B) is allocated: b reuses a's storage.
    result = plan([(32, 1), (32, 1)], "R0 D0 R1 D1")
    assert result.storage_of.tolist() == [0, 0]
    assert result.storage_bytes.tolist() == [32]
    assert result.n_storage == 1


def test_overlapping_tokens_get_separate_storages():
    result = plan([(32, 1), (32, 1)], "R0 R1 D0 D1")
    assert result.storage_of.tolist() == [0, 1]


def test_selection_order_spec_1_9_c():
    # Free {40 B (A, released 2nd), 80 B (B, 3rd), 20 B (C, 1st)}.
    # Request 32: keys in [2, 512], the smallest key >= 32 is 40 -> A's storage.
    # Request 100: keys in [6, 1600]; none >= 100; the largest < 100 is 80 -> B's, -> 100 B.
    tokens = [(40, 1), (80, 1), (20, 1), (32, 1), (100, 1)]
    result = plan(tokens, "R0 R1 R2 D2 D0 D1 R3 R4")
    a, b, c = result.storage_of[:3].tolist()
    assert len({a, b, c}) == 3
    assert result.storage_of[3] == a
    assert result.storage_of[4] == b
    assert result.storage_bytes[b] == 100
    assert result.storage_bytes[a] == 40
    assert result.n_storage == 3


def test_equal_keys_larger_or_equal_is_fifo():
    # 40/40 released A then B: a 40 B request takes A (earliest released).
    result = plan([(40, 1), (40, 1), (40, 1)], "R0 R1 D0 D1 R2")
    assert result.storage_of[2] == result.storage_of[0]


def test_equal_keys_smaller_is_lifo_and_enlarged():
    # 40/40 released A then B: a 48 B request takes B (latest released), enlarged to 48.
    result = plan([(40, 1), (40, 1), (48, 1)], "R0 R1 D0 D1 R2")
    b = result.storage_of[1]
    assert result.storage_of[2] == b
    assert result.storage_bytes[b] == 48
    assert result.storage_bytes[result.storage_of[0]] == 40


def test_equal_keys_order_survives_many_releases():
    # Five equal keys released in order 3, 1, 4, 0, 2; five 8 B requests take them FIFO.
    tokens = [(8, 1)] * 5 + [(8, 1)] * 5
    result = plan(tokens, "R0 R1 R2 R3 R4 D3 D1 D4 D0 D2 R5 R6 R7 R8 R9")
    first = result.storage_of[:5]
    assert result.storage_of[5:].tolist() == first[[3, 1, 4, 0, 2]].tolist()


def test_larger_or_equal_preferred_over_closer_smaller():
    # Free 31 B and 512 B: a 32 B request takes the 512 B storage (>= s first, and
    # 512 = 32 * 16 is still in the window).
    result = plan([(31, 1), (512, 1), (32, 1)], "R0 R1 D0 D1 R2")
    assert result.storage_of[2] == result.storage_of[1]
    assert result.storage_bytes.tolist() == [31, 512]


def test_larger_outside_window_falls_back_to_smaller():
    # Free 31 B and 513 B: 513 > 32 * 16 is out of the window, so the 31 B storage is
    # taken and enlarged to 32.
    result = plan([(31, 1), (513, 1), (32, 1)], "R0 R1 D0 D1 R2")
    assert result.storage_of[2] == result.storage_of[0]
    assert result.storage_bytes.tolist() == [32, 513]


@pytest.mark.parametrize(
    "free_bytes, request_bytes, reused, final_bytes",
    [
        (64, 4, True, 64),     # 64 = 4 * 16: inclusive upper end of the window
        (68, 4, False, None),  # 68 > 4 * 16
        (4, 64, True, 64),     # 64 // 16 = 4: enlarged
        (4, 68, True, 68),     # 68 // 16 = 4: enlarged
        (4, 80, False, None),  # 80 // 16 = 5 > 4
        (0, 15, True, 15),     # 15 // 16 = 0: a 0 B storage serves and grows
        (0, 16, False, None),  # 16 // 16 = 1 > 0
        (15, 0, False, None),  # window of a 0 B request is [0, 0]
        (0, 0, True, 0),
    ],
)
def test_window_boundaries(free_bytes, request_bytes, reused, final_bytes):
    result = plan([(free_bytes, 1), (request_bytes, 1)], "R0 D0 R1")
    assert (result.storage_of[1] == result.storage_of[0]) == reused
    if reused:
        assert result.storage_bytes.tolist() == [final_bytes]
    else:
        assert result.storage_bytes.tolist() == [free_bytes, request_bytes]


@pytest.mark.parametrize(
    "match_range, free_bytes, request_bytes, reused",
    [(2, 8, 4, True), (2, 9, 4, False), (2, 2, 4, True), (2, 1, 4, False), (1, 4, 4, True),
     (1, 5, 4, False), (1, 3, 4, False)],
)
def test_window_follows_match_range(match_range, free_bytes, request_bytes, reused):
    result = plan([(free_bytes, 1), (request_bytes, 1)], "R0 D0 R1", match_range=match_range)
    assert (result.storage_of[1] == result.storage_of[0]) == reused


def test_window_upper_end_saturates():
    # s * 16 overflows int64: the window's upper end saturates, so a larger free storage
    # still serves the request instead of wrapping to a negative bound.
    big = 2**62
    result = plan([(big + 5, 1), (big, 1)], "R0 D0 R1")
    assert result.storage_of.tolist() == [0, 0]
    result = plan([(INT64_MAX, 1), (INT64_MAX // 16 + 1, 1)], "R0 D0 R1")
    assert result.storage_of.tolist() == [0, 0]


def test_match_range_zero_disables_reuse():
    result = plan([(32, 1), (32, 1), (8, 1, 0, 3), (8, 1, 0, 3)], "R0 D0 R1 D1 R2 D2 R3",
                  match_range=0)
    assert result.storage_of.tolist() == [0, 1, 2, 3]


def test_zero_reference():
    # Relax: a token nobody reads gets fresh storage, never pooled, never reused.
    # t0 is freed first; t1 (0 refs) must not take it; t2 takes it; t3 must not get t1's.
    result = plan([(32, 1), (32, 0), (32, 1), (32, 1)], "R0 D0 R1 R2 D2 R3")
    s0, s1, s2, s3 = result.storage_of.tolist()
    assert s1 not in (s0, s2, s3)
    assert s2 == s0 and s3 == s0
    assert result.n_storage == 2


def test_relay_zero_reference_released_at_once():
    # Relay (release_zero_ref=True): t1 takes t0's freed storage and gives it back at once,
    # so t2 takes it again; two back-to-back 0-ref outputs share one storage.
    result = plan([(32, 1), (32, 0), (32, 1)], "R0 D0 R1 R2", release_zero_ref=True)
    assert result.storage_of.tolist() == [0, 0, 0]
    result = plan([(32, 0), (32, 0)], "R0 R1", release_zero_ref=True)
    assert result.storage_of.tolist() == [0, 0]
    result = plan([(32, 0), (32, 0)], "R0 R1")
    assert result.storage_of.tolist() == [0, 1]


def test_relay_zero_reference_enlarges_like_any_other():
    result = plan([(32, 1), (40, 0)], "R0 D0 R1", release_zero_ref=True)
    assert result.storage_of.tolist() == [0, 0]
    assert result.storage_bytes.tolist() == [40]


def test_reused_storage_takes_the_new_tokens_count():
    # t1 reuses t0's storage with 2 refs: after one DECREF it is still held (t2 is fresh);
    # after the second it is free again (t3 reuses it).
    result = plan([(16, 1), (16, 2), (16, 1), (16, 1)], "R0 D0 R1 D1 R2 D1 R3")
    s0, s1, s2, s3 = result.storage_of.tolist()
    assert s1 == s0 and s2 != s0 and s3 == s0


def test_release_after_several_readers():
    result = plan([(16, 3), (16, 1)], "R0 D0 D0 R1 D0")
    assert result.storage_of.tolist() == [0, 1]
    result = plan([(16, 3), (16, 1)], "R0 D0 D0 D0 R1")
    assert result.storage_of.tolist() == [0, 0]


def test_tokens_never_released_keep_their_storage():
    # A token whose count never reaches 0 (e.g. a Relay body output) is never pooled.
    result = plan([(16, 2), (16, 1)], "R0 D0 R1 D1")
    assert result.storage_of.tolist() == [0, 1]


def test_unrequested_tokens_have_no_storage():
    result = plan([(16, 1), (16, 1), (16, 1)], "R1 D1")
    assert result.storage_of.tolist() == [-1, 0, -1]


def test_pools_never_share():
    # Spec §1.9 B: another scope or dtype -> another pool -> separate storages.
    result = plan([(32, 1, 0), (32, 1, 1), (32, 1, 1)], "R0 D0 R1 D1 R2")
    assert result.storage_of.tolist() == [0, 1, 1]
    assert result.storage_pool.tolist() == [0, 1]


def test_large_pool_ids_are_kept():
    big = [10**12, 7, 10**12]
    result = plan([(32, 1, big[0]), (32, 1, big[1]), (32, 1, big[2])], "R0 D0 R1 D1 R2")
    assert result.storage_of.tolist() == [0, 1, 0]
    assert result.storage_pool.tolist() == [10**12, 7]


def test_symbolic_reuse_same_class_fifo_without_enlargement():
    # Symbolic tokens (tok_sym >= 0) reuse the earliest released storage of their class,
    # whatever the carried byte values; bytes are only the maximum seen.
    tokens = [(100, 1, 0, 5), (100, 1, 0, 5), (300, 1, 0, 5), (7, 1, 0, 5)]
    result = plan(tokens, "R0 R1 D1 D0 R2 R3")
    s0, s1, s2, s3 = result.storage_of.tolist()
    assert s2 == s1 and s3 == s0
    assert result.storage_bytes[s1] == 300
    assert result.storage_bytes[s0] == 100


def test_symbolic_never_matches_other_class_or_constant():
    tokens = [(64, 1, 0, 1), (64, 1, 0, 2), (64, 1, 0, -1), (64, 1, 0, 1)]
    result = plan(tokens, "R0 D0 R1 D1 R2 D2 R3")
    s0, s1, s2, s3 = result.storage_of.tolist()
    assert len({s0, s1, s2}) == 3
    assert s3 == s0


def test_symbolic_classes_are_per_pool():
    result = plan([(8, 1, 0, 1), (8, 1, 1, 1)], "R0 D0 R1")
    assert result.storage_of.tolist() == [0, 1]


def test_constant_request_skips_symbolic_storages():
    result = plan([(0, 1, 0, 4), (0, 1, 0, -1)], "R0 D0 R1")
    assert result.storage_of.tolist() == [0, 1]


def test_empty_program():
    result = plan_tokens([], [], [], np.empty(0, np.int8), [])
    assert result.n_storage == 0 and result.storage_of.shape == (0,)
    result = plan_tokens([5, 6], [0, 0], [1, 1], np.empty(0, np.int8), [])
    assert result.storage_of.tolist() == [-1, -1]


def test_token_plan_is_frozen_and_read_only():
    result = plan([(32, 1), (64, 1)], "R0 R1 D0 D1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.storage_of = np.zeros(2, np.int64)
    with pytest.raises(ValueError):
        result.storage_bytes[0] = 1
    assert result.total_bytes == 96
    assert repr(result) == "TokenPlan(n_tok=2, n_storage=2, total_bytes=96)"
    assert isinstance(result, TokenPlan)


def test_total_bytes_is_exact_beyond_int64():
    result = plan([(INT64_MAX, 0), (INT64_MAX, 0)], "R0 R1")
    assert result.total_bytes == 2 * INT64_MAX


def test_inputs_not_mutated():
    prog = random_token_program(np.random.default_rng(3), 200, p_symbolic=0.2)
    copies = {k: v.copy() for k, v in prog.items()}
    plan_tokens(**prog)
    for k, v in prog.items():
        np.testing.assert_array_equal(v, copies[k])


def test_adversarial_huge_free_list():
    # 100k tokens of distinct sizes all live, then all freed: the free list holds 100k
    # storages (many block splits). 100k requests of the same sizes, largest first, each
    # take the storage of exactly their size (the smallest key >= s is s itself).
    n = 100_000
    sizes = np.arange(1, n + 1, dtype=np.int64) * 3
    tok_bytes = np.concatenate([sizes, sizes[::-1]])
    kinds = np.concatenate([np.zeros(n), np.ones(n), np.zeros(n)]).astype(np.int8)
    rng = np.random.default_rng(0)
    toks = np.concatenate([np.arange(n), rng.permutation(n), np.arange(n, 2 * n)])
    result = plan_tokens(tok_bytes, np.zeros(2 * n, np.int64), np.ones(2 * n, np.int64),
                         kinds, toks)
    assert result.n_storage == n
    np.testing.assert_array_equal(result.storage_of[n:], result.storage_of[:n][::-1])
    np.testing.assert_array_equal(result.storage_bytes, sizes)


@pytest.mark.parametrize("seed", range(10))
def test_matches_reference_with_crowded_buckets(seed):
    # Many live tokens over few distinct bit lengths: buckets overflow their inline slots,
    # become blocked lists and empty out again, over and over.
    prog = random_token_program(np.random.default_rng(500 + seed), 3000, n_pools=2,
                                mean_live=60, max_log2_bytes=5, p_zero_ref=0.1)
    for match_range in (16, 2):
        got = plan_tokens(**prog, match_range=match_range)
        storage_of, storage_bytes, _ = ref.plan_tokens(**prog, match_range=match_range)
        assert got.storage_of.tolist() == storage_of
        assert got.storage_bytes.tolist() == storage_bytes


@pytest.mark.parametrize("n_pools", [1, 300])  # 300 > 256: one bucket per pool
def test_many_equal_keys_across_blocks(n_pools):
    # 2000 storages of 3 sizes (hundreds of equal keys: several blocks per key run) are
    # freed in a random order; then requests of equal, larger and smaller sizes must pick
    # exactly as the reference does (FIFO among equal keys >= s, LIFO among keys < s).
    rng = np.random.default_rng(7)
    n = 2000
    first_bytes = rng.choice([64, 96, 100], n)
    later_bytes = rng.choice([64, 80, 96, 100, 101, 500], n)
    tok_bytes = np.concatenate([first_bytes, later_bytes])
    tok_pool = np.zeros(2 * n, dtype=np.int64)
    tok_pool[-1] = n_pools - 1  # forces n_pools pools
    kinds = np.concatenate([np.zeros(n), np.ones(n), np.zeros(n)]).astype(np.int8)
    toks = np.concatenate([np.arange(n), rng.permutation(n), np.arange(n, 2 * n)])
    args = dict(tok_bytes=tok_bytes, tok_pool=tok_pool, tok_refs=np.ones(2 * n, np.int64),
                ev_kind=kinds, ev_tok=toks)
    got = plan_tokens(**args)
    storage_of, storage_bytes, storage_pool = ref.plan_tokens(**args)
    assert got.storage_of.tolist() == storage_of
    assert got.storage_bytes.tolist() == storage_bytes


def test_matches_reference_with_many_pools():
    rng = np.random.default_rng(11)
    prog = random_token_program(rng, 4000, n_pools=300, mean_live=400, p_symbolic=0.1,
                                max_log2_bytes=6)
    for release_zero_ref in (False, True):
        got = plan_tokens(**prog, release_zero_ref=release_zero_ref)
        storage_of, storage_bytes, storage_pool = ref.plan_tokens(
            **prog, release_zero_ref=release_zero_ref)
        assert got.storage_of.tolist() == storage_of
        assert got.storage_bytes.tolist() == storage_bytes
        assert got.storage_pool.tolist() == storage_pool


# -------------------------------------------------------------------------------------------
# Validation
# -------------------------------------------------------------------------------------------


def _good():
    return program([(32, 1), (16, 2), (8, 0)], "R0 R1 D0 D1 R2 D1")


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(tok_bytes=[32.0, 16.0, 8.0]), r"tok_bytes must be C-contiguous int64; got float64"),
        (dict(tok_bytes=[32, -16, 8]), r"tok_bytes must be >= 0; got tok_bytes\[1\] = -16"),
        (dict(tok_pool=[0, 0, -1]), r"tok_pool must be >= 0; got tok_pool\[2\] = -1"),
        (dict(tok_refs=[1, -2, 0]), r"tok_refs must be >= 0; got tok_refs\[1\] = -2"),
        (dict(tok_pool=[0, 0]),
         r"tok_pool must have length 3 \(len\(tok_bytes\)\); got int64 array of shape \(2,\)"),
        (dict(tok_refs=[1, 2, 0, 0]), r"tok_refs must have length 3 \(len\(tok_bytes\)\)"),
        (dict(tok_sym=[-1, -2, -1]),
         r"tok_sym must be >= -1 \(-1 = constant size\); got tok_sym\[1\] = -2"),
        (dict(tok_sym=[-1, -1]), r"tok_sym must have length 3"),
        (dict(ev_kind=[0, 0, 1, 2, 0, 1]),
         r"ev_kind\[3\] = 2 must be one of 0 \(EV_REQUEST\), 1 \(EV_DECREF\)"),
        (dict(ev_kind=[0, 0, -1, 1, 0, 1]), r"ev_kind\[2\] = -1 must be one of"),
        (dict(ev_kind=[0.0, 0.0, 1.0, 1.0, 0.0, 1.0]), r"ev_kind must be int8; got float64"),
        (dict(ev_tok=[0, 1, 0, 1, 2]),
         r"ev_tok must have length 6 \(len\(ev_kind\)\); got int64 array of shape \(5,\)"),
        (dict(ev_tok=[0, 1, 0, 1, 3, 1]),
         r"ev_tok\[4\] = 3 is out of range \[0, 3\) \(n_tok=3\)"),
        (dict(ev_tok=[0, 1, 0, 1, -1, 1]), r"ev_tok\[4\] = -1 is out of range \[0, 3\)"),
    ],
)
def test_rejects_bad_arrays(change, match):
    with pytest.raises(InvalidArrayError, match=match):
        plan_tokens(**{**_good(), **change})


@pytest.mark.parametrize(
    "events, match",
    [
        ("R0 D0 D0", r"ev_tok\[2\] = 0: an EV_DECREF of token 0 needs an outstanding "
                     r"reference; got EV_DECREF at event 2 with its count already 0 "
                     r"\(tok_refs\[0\] = 1\)"),
        ("D1 R1", r"ev_tok\[0\] = 1: an EV_DECREF of token 1 must come after its "
                  r"EV_REQUEST; got EV_DECREF at event 0 before any EV_REQUEST"),
        ("R0 D0 R0", r"ev_tok\[2\] = 0: token 0 must be requested at most once; got a "
                     r"second EV_REQUEST at event 2"),
        ("R2 D2", r"ev_tok\[1\] = 2: an EV_DECREF of token 2 needs an outstanding reference; "
                  r"got EV_DECREF at event 1 with its count already 0 \(tok_refs\[2\] = 0\)"),
    ],
)
@pytest.mark.parametrize("release_zero_ref", [False, True])
def test_rejects_bad_sequences(events, match, release_zero_ref):
    args = program([(32, 1), (16, 2), (8, 0)], events)
    with pytest.raises(InvalidArrayError, match=match):
        plan_tokens(**args, release_zero_ref=release_zero_ref)


def test_rejects_bad_match_range():
    with pytest.raises(InvalidArrayError, match=r"match_range must be >= 0; got -1"):
        plan_tokens(**_good(), match_range=-1)
    with pytest.raises(InvalidArrayError, match=r"match_range must be an integer; got float"):
        plan_tokens(**_good(), match_range=16.0)
