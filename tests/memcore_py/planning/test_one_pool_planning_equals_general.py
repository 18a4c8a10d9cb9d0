"""Planning shortcuts for small programs give the general results: the one-pool hint of
pool_groups (taken when TokenProgram.pools finds one pool), the one-group ids of
TokenProgram.group_ids and the one-function lower bounds."""
import numpy as np
import pytest

from memcore_py.analysis.storage_tokens import analyze_storage_tokens
from memcore_py.planning.lower_bound import _POOL_KEY, function_lower_bounds, pool_groups, pool_lower_bounds
from memcore_py.testing.memory_programs import chain_module, random_memory_module


def _programs():
    yield chain_module(7, width=64)
    for seed in range(40):
        yield random_memory_module(seed, n_functions=1 + seed % 3, n_steps=(4, 10)[seed % 2])


def _same_groups(a, b):
    assert [k for k, _ in a] == [k for k, _ in b]
    for (_, x), (_, y) in zip(a, b):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype == np.int64


@pytest.mark.parametrize("i, mod", list(enumerate(_programs())), ids=lambda x: str(x) if isinstance(x, int) else "")
def test_shortcuts_equal_the_general_path(i, mod):
    program = analyze_storage_tokens(mod).program
    _, keys = program.pools()
    if len(keys) == 1:
        _same_groups(pool_groups(program, one_pool=True), pool_groups(program))
    # group_ids: the one-group shortcut against the explicit numbering
    tok_group, group_keys = program.group_ids(_POOL_KEY)
    info_keys = [_POOL_KEY(info) for info in program.infos]
    order = list(dict.fromkeys(info_keys))
    assert group_keys == order
    want = [order.index(info_keys[j]) for j in program.tok_info.tolist()]
    assert tok_group.tolist() == want and tok_group.dtype == np.int64
    # lower bounds per function: every function a key, the pools' sum
    bounds = pool_lower_bounds(program)
    per_func = function_lower_bounds(program, bounds)
    assert list(per_func) == list(program.function_names)
    if not program.has_symbolic:
        assert sum(per_func.values()) == sum(bounds.values())
