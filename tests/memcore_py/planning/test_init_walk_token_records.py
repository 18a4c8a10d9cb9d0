"""The compiled Init walk allocates its TokenInfo records directly (no call of the class):
they are real TokenInfo tuples, equal field by field to the ones the Python path makes, and
the walk refuses a record class it cannot build that way."""
from typing import NamedTuple

import pytest

from memcore_py._compiled import load_compiled
from memcore_py.analysis import storage_tokens as stk
from memcore_py.testing.memory_programs import chain_module


def _fields(info):
    return tuple(info)


def test_walk_records_are_token_infos():
    mod = chain_module(7, width=64)
    stk._CONST_TYPE_INFO.clear()  # first analysis: every type sized by the Python path
    first = stk.analyze_storage_tokens(mod).program.infos
    again = stk.analyze_storage_tokens(mod).program.infos  # constant types known: compiled records
    assert len(first) == len(again) > 1
    for a, b in zip(first, again):
        assert type(b) is stk.TokenInfo
        assert _fields(a) == _fields(b)
        assert b.dtype == a.dtype and b.id == a.id and b.args == a.args


class _Three(NamedTuple):
    a: int
    b: int
    c: int


class _Dict(tuple):
    _fields = tuple("abcdefgh")


@pytest.mark.parametrize("cls", [tuple, _Three, _Dict, dict])
def test_walk_rejects_other_record_classes(cls):
    walk = load_compiled("memcore_py.analysis._storage_walk")
    with pytest.raises(TypeError, match="info_cls"):
        walk.InitWalk(stk.BUILTIN_ALLOC_TENSOR, frozenset(), stk._CARRIERS, {}, {}, cls)


def _walked(mod):
    init = stk._StorageAllocatorInit(mod)
    for gv, func in mod.functions.items():
        if isinstance(func, stk.Function):
            init._visit_function(gv, func)
    return init.walk


def test_decode_without_new_ids_gives_the_same_program():
    from memcore_py.testing.memory_programs import random_memory_module

    for mod in [chain_module(7, width=64), chain_module(70, width=64)] + [random_memory_module(s, n_functions=2, n_steps=20) for s in range(6)]:
        full = _walked(mod).decode()
        lean = _walked(mod).decode(False)
        assert full[-1] is not None and lean[-1] is None
        for a, b in zip(full[:8], lean[:8]):
            assert a.tolist() == b.tolist() and a.dtype == b.dtype
        assert full[8] == lean[8] and full[9] == lean[9]


def test_walk_needs_begin_function():
    walk = load_compiled("memcore_py.analysis._storage_walk")
    w = walk.InitWalk(stk.BUILTIN_ALLOC_TENSOR, frozenset(), stk._CARRIERS, {}, {}, stk.TokenInfo)
    with pytest.raises(RuntimeError, match="begin_function"):
        w.walk((), 0, 0, None)
