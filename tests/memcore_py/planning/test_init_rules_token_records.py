"""The compiled sizer of the Init rule kernel allocates its TokenInfo records directly (no
call of the class): they are real TokenInfo tuples, equal field by field to the ones the
Python sizing makes, and the sizer refuses a record class it cannot build that way."""
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
def test_sizer_rejects_other_record_classes(cls):
    rules = load_compiled("memcore_py.analysis._storage_walk")
    with pytest.raises(TypeError, match="info_cls"):
        rules.AllocSizer({}, [], cls)


def _walked(mod):
    init = stk._StorageAllocatorInit(mod)
    for gv, func in mod.functions.items():
        if isinstance(func, stk.Function):
            init._visit_function(gv, func)
    return init.recorder


def test_decode_without_new_ids_gives_the_same_program():
    from memcore_py.testing.memory_programs import random_memory_module

    for mod in [chain_module(7, width=64), chain_module(70, width=64)] + [random_memory_module(s, n_functions=2, n_steps=20) for s in range(6)]:
        full = _walked(mod).decode()
        lean = _walked(mod).decode(False)
        assert full[-1] is not None and lean[-1] is None
        for a, b in zip(full[:8], lean[:8]):
            assert a.tolist() == b.tolist() and a.dtype == b.dtype
        assert full[8] == lean[8] and full[9] == lean[9]


def test_rules_need_the_functions_in_order_and_a_started_sizer():
    rules = load_compiled("memcore_py.analysis._storage_walk")
    init = stk._StorageAllocatorInit(chain_module(3, width=8))
    with pytest.raises(ValueError, match="out of order"):
        init.rules.run_function(0, init.sizer)  # nothing read yet
    gv, func = next((gv, f) for gv, f in init.mod.functions.items() if isinstance(f, stk.Function))
    init.reader.read_function(gv.name, func.body)
    with pytest.raises(RuntimeError, match="begin_function"):
        init.rules.run_function(0, rules.AllocSizer({}, [], stk.TokenInfo))
