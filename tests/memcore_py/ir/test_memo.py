"""memcore_py.ir.memo: the memo tables' one owner and one size policy."""
import pytest

from memcore_py.ir.memo import MEMO, MemoTables
from memcore_py.ir.structural import assert_structural_equal
from memcore_py.testing import random_lowered_module
from memcore_py.transform import KillAfterLastUse, LowerAllocTensor, Sequential, StaticPlanBlockMemory


def test_a_full_group_is_emptied_before_the_next_entry():
    tables = MemoTables(max_entries=3)
    g = tables.group("test.two", 2)
    g.put("a", 1)
    g.put("b", 2, table=1)
    g.put("c", 3)
    assert len(g) == 3 and g.tables == ({"a": 1, "c": 3}, {"b": 2})
    assert g.put("d", 4, table=1) == 4  # the group was full: both tables emptied first
    assert g.tables == ({}, {"d": 4})
    assert tables.sizes() == {"test.two": 1}


def test_trim_and_clear_empty_in_place_and_call_on_clear():
    tables = MemoTables(max_entries=2)
    dropped = []
    g = tables.group("test.one", on_clear=lambda: dropped.append(True))
    table = g.table
    table.update(x=1)
    g.trim()
    assert table == {"x": 1} and not dropped
    table.update(y=2)
    g.trim()
    assert table == {} and g.table is table and dropped == [True]
    g.put("z", 3)
    tables.clear()
    assert table == {} and dropped == [True, True]


def test_group_errors():
    tables = MemoTables()
    tables.group("test.g")
    with pytest.raises(ValueError, match="registered already"):
        tables.group("test.g")
    with pytest.raises(ValueError, match="at least one table"):
        tables.group("test.h", 0)


def test_the_library_registers_its_memo_tables():
    StaticPlanBlockMemory(mode="arena")(random_lowered_module(1, 40))  # loads the compiled rewrite
    names = set(MEMO.sizes())
    for name in ("planning.allocate.bytes_imms", "analysis.storage_tokens.const_type_info",
                 "transform.static_plan_block_memory.leaf_imms", "ir.text.prim_func_text.parts",
                 "transform.alloc_rewrite.raw_names"):
        assert name in names


@pytest.mark.parametrize("mode", ["tvm", "arena"])
def test_results_do_not_depend_on_the_memo_tables(mode, monkeypatch):
    """Emptied before a run, full of the previous run's entries, or emptied at every insert:
    the passes give the same module."""
    mod = random_lowered_module(3, 120)
    passes = Sequential([StaticPlanBlockMemory(mode=mode), LowerAllocTensor(), KillAfterLastUse()])
    MEMO.clear()
    cold = passes(mod)
    warm = passes(mod)
    monkeypatch.setattr(MEMO, "max_entries", 0)
    churned = passes(mod)
    assert_structural_equal(warm, cold)
    assert_structural_equal(churned, cold)
