"""memcore.plan_tokens(check=False, n_pools=...): a caller that already knows its pool ids are
dense passes their number instead of letting the engine find the largest id.

The plan must not depend on it: the same storages as the checked call (which finds the pool
count itself) and as the pure-Python reference, also when ``n_pools`` exceeds the ids in use
(pools of discarded tokens) and crosses the engine's bucketed / one-list layouts (256 pools).
"""

import numpy as np
import pytest

from memcore import plan_tokens
from memcore import _reference as ref
from memcore._workloads import random_token_program


def _unchecked(prog, n_pools):
    return plan_tokens(
        np.ascontiguousarray(prog["tok_bytes"], dtype=np.int64),
        np.ascontiguousarray(prog["tok_pool"], dtype=np.int64),
        np.ascontiguousarray(prog["tok_refs"], dtype=np.int64),
        np.ascontiguousarray(prog["ev_kind"], dtype=np.int8),
        np.ascontiguousarray(prog["ev_tok"], dtype=np.int64),
        tok_sym=np.ascontiguousarray(prog["tok_sym"], dtype=np.int64),
        match_range=16,
        check=False,
        n_pools=n_pools,
    )


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("pools_used, extra", [(1, 0), (3, 0), (3, 5), (40, 300), (300, 0)])
def test_n_pools_gives_the_checked_plan(seed, pools_used, extra):
    rng = np.random.default_rng(seed)
    prog = random_token_program(rng, 150, n_pools=pools_used, p_symbolic=0.2, p_zero_ref=0.1)
    n_pools = int(prog["tok_pool"].max()) + 1 + extra
    got = _unchecked(prog, n_pools)
    want = plan_tokens(**prog)
    np.testing.assert_array_equal(got.storage_of, want.storage_of)
    np.testing.assert_array_equal(got.storage_bytes, want.storage_bytes)
    np.testing.assert_array_equal(got.storage_pool, want.storage_pool)
    storage_of, storage_bytes = ref.plan_tokens(**prog)[:2]
    np.testing.assert_array_equal(got.storage_of, storage_of)
    np.testing.assert_array_equal(got.storage_bytes, storage_bytes)


def test_n_pools_is_ignored_when_checking():
    prog = random_token_program(np.random.default_rng(0), 50, n_pools=4)
    # a wrong count is not trusted on the checked path
    plan = plan_tokens(**prog, n_pools=1)
    assert plan.storage_of.shape == (50,)
    assert set(plan.storage_pool.tolist()) <= set(prog["tok_pool"].tolist())


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3", True, None.__class__])
def test_n_pools_that_is_not_a_positive_count_is_refused(bad):
    """The count sizes the kernel's per-pool tables: a value that is not an integer >= 1
    (for a program with tokens) is a typed error, never a table of the wrong size."""
    from memcore import InvalidArrayError

    prog = random_token_program(np.random.default_rng(1), 20, n_pools=2)
    with pytest.raises(InvalidArrayError, match="n_pools"):
        _unchecked(prog, bad)
