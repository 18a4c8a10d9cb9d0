"""The token kernel reads its arrays through raw data pointers (no typed memoryviews: their
set-up cost more than the whole event loop on small programs). With ``check=False`` the
values are trusted, but the array layout is still checked: an array of the wrong dtype,
dimension, memory order or length is a ValueError, never a read past the data. The unchecked
plan equals the checked one, also for empty and all-symbolic programs.
"""

import numpy as np
import pytest

from memcore import EV_DECREF, EV_REQUEST, plan_tokens
from memcore._workloads import random_token_program


def _arrays(prog):
    return dict(
        tok_bytes=np.ascontiguousarray(prog["tok_bytes"], dtype=np.int64),
        tok_pool=np.ascontiguousarray(prog["tok_pool"], dtype=np.int64),
        tok_refs=np.ascontiguousarray(prog["tok_refs"], dtype=np.int64),
        ev_kind=np.ascontiguousarray(prog["ev_kind"], dtype=np.int8),
        ev_tok=np.ascontiguousarray(prog["ev_tok"], dtype=np.int64),
        tok_sym=np.ascontiguousarray(prog["tok_sym"], dtype=np.int64),
    )


def _same(a, b):
    for name in ("storage_of", "storage_bytes", "storage_pool"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert getattr(a, name).dtype == np.int64


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n_tok, p_symbolic", [(1, 0.0), (3, 0.0), (6, 0.5), (40, 0.2), (7, 1.0)])
def test_unchecked_small_programs_give_the_checked_plan(seed, n_tok, p_symbolic):
    prog = random_token_program(np.random.default_rng(seed), n_tok, n_pools=2, p_symbolic=p_symbolic,
                                p_zero_ref=0.2)
    want = plan_tokens(**prog)
    _same(plan_tokens(**_arrays(prog), match_range=16, check=False), want)


def test_empty_program():
    empty = np.empty(0, dtype=np.int64)
    plan = plan_tokens(empty, empty, empty, np.empty(0, dtype=np.int8), empty, check=False, n_pools=0)
    assert plan.storage_of.shape == (0,) and plan.n_storage == 0


def _one_token():
    return dict(tok_bytes=np.array([32], dtype=np.int64), tok_pool=np.array([0], dtype=np.int64),
                tok_refs=np.array([1], dtype=np.int64), ev_kind=np.array([EV_REQUEST, EV_DECREF], dtype=np.int8),
                ev_tok=np.array([0, 0], dtype=np.int64))


def test_one_token_unchecked():
    plan = plan_tokens(**_one_token(), check=False)
    assert plan.storage_of.tolist() == [0] and plan.storage_bytes.tolist() == [32]


@pytest.mark.parametrize("name, bad, why", [
    ("tok_bytes", np.array([32], dtype=np.int32), "int64"),             # wrong width
    ("tok_bytes", np.array([32.0]), "int64"),                           # not integers
    ("tok_pool", np.array([[0]], dtype=np.int64), "1-d"),               # 2-d
    ("tok_refs", np.array([1, 9, 1], dtype=np.int64)[::2], "C-contig"),  # not contiguous
    ("tok_refs", np.array([1, 1], dtype=np.int64), "length 1"),         # length differs from tok_bytes
    ("ev_kind", np.array([0, 1], dtype=np.int64), "int8"),              # kinds are int8
    ("ev_tok", np.array([0], dtype=np.int64), "length 2"),              # length differs from ev_kind
    ("ev_tok", np.array([0, 0], dtype=">i8"), "int64"),                 # byte-swapped
    ("tok_bytes", [32], "numpy array"),                                 # not an array
])
def test_unchecked_layout_errors_are_value_errors(name, bad, why):
    args = _one_token()
    args[name] = bad
    with pytest.raises(ValueError, match=f"{name} must .*{why}"):
        plan_tokens(**args, check=False, n_pools=1)


def test_unchecked_tok_sym_must_be_empty_or_per_token():
    with pytest.raises(ValueError, match="tok_sym"):
        plan_tokens(**_one_token(), tok_sym=np.array([-1, -1], dtype=np.int64), check=False)


@pytest.mark.parametrize("check, n_pools", [(True, None), (False, None), (False, 1)])
def test_plan_arrays_are_read_only(check, n_pools):
    """The kernel's arrays are handed out read-only (the TokenPlan skips re-setting the flags)."""
    plan = plan_tokens(**_one_token(), check=check, n_pools=n_pools)
    for name in ("storage_of", "storage_bytes", "storage_pool"):
        arr = getattr(plan, name)
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr[0] = 1
    assert plan.storage_of.tolist() == [0] and plan.storage_bytes.tolist() == [32]
    assert plan.storage_pool.tolist() == [0]


@pytest.mark.parametrize("bad", [0, -1, 2**63, 1.0, True])
def test_unchecked_n_pools_is_still_checked(bad):
    from memcore import InvalidArrayError

    with pytest.raises(InvalidArrayError):
        plan_tokens(**_one_token(), check=False, n_pools=bad)


@pytest.mark.parametrize("n_pools, n_live", [(1, 9), (1, 40), (2, 30), (300, 12)])
def test_free_lists_overflowing_small_mode_match_the_reference(n_pools, n_live):
    """Many storages of one size bucket freed together move a bucket out of its inline slots
    into a large list (made only when the first bucket overflows; with more than 256 pools
    every list is large from the start); the plan still equals the reference's."""
    from memcore import _reference as ref

    rng = np.random.default_rng(n_live)
    n = 2 * n_live
    tok_bytes = np.concatenate([np.full(n_live, 100), rng.integers(60, 130, n_live)]).astype(np.int64)
    tok_pool = (np.arange(n) % n_pools).astype(np.int64)
    tok_refs = np.ones(n, dtype=np.int64)
    kinds, toks = [], []
    for t in range(n_live):  # all live together, then released in a shuffled order
        kinds.append(EV_REQUEST), toks.append(t)
    for t in rng.permutation(n_live).tolist():
        kinds.append(EV_DECREF), toks.append(t)
    for t in range(n_live, n):  # requests reusing them, released at once
        kinds += [EV_REQUEST, EV_DECREF]
        toks += [t, t]
    prog = dict(tok_bytes=tok_bytes, tok_pool=tok_pool, tok_refs=tok_refs,
                ev_kind=np.array(kinds, dtype=np.int8), ev_tok=np.array(toks, dtype=np.int64))
    want = ref.plan_tokens(**prog, match_range=16, release_zero_ref=False)
    for got in (plan_tokens(**prog), plan_tokens(**prog, check=False, n_pools=n_pools)):
        assert got.storage_of.tolist() == want[0]
        assert got.storage_bytes.tolist() == want[1]
        assert got.storage_pool.tolist() == want[2]
