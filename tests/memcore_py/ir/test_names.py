"""The names passes give the variables they create (``memcore_py/ir/_names.pyx``): NameTable's
sequence for a hint, for every writer."""
import pytest

from memcore_py._compiled import load_compiled
from memcore_py.ir.builder import NameTable

NAMES = load_compiled("memcore_py.ir._names")


@pytest.mark.parametrize("hint", ["storage", "_", "lv"])
def test_the_k_th_name_is_the_name_tables_k_th(hint):
    table = NameTable()
    expected = [table.fresh(hint) for _ in range(25)]
    assert [NAMES.numbered_name(hint, k) for k in range(25)] == expected
    assert expected[:3] == [hint, f"{hint}1", f"{hint}2"]


def test_names_past_the_kept_ones_continue_the_sequence():
    k = NAMES.NAMES_PER_HINT + 3
    table = NameTable()
    for _ in range(k):
        table.fresh("storage")
    assert NAMES.numbered_name("storage", k) == table.fresh("storage") == f"storage{k}"


def test_a_negative_index_is_refused():
    with pytest.raises(ValueError, match="k must be >= 0"):
        NAMES.numbered_name("storage", -1)


def test_raw_name():
    assert NAMES.raw_name("lv3") == "lv3_raw"


def test_a_long_run_past_the_kept_names_is_the_name_tables_run():
    """Kills and storages of a long chain number in the hundreds of thousands: each k-th name
    past the kept ones is still the table's k-th."""
    table = NameTable()
    n = NAMES.NAMES_PER_HINT + 3000
    expected = [table.fresh("_") for _ in range(n)]
    assert [NAMES.numbered_name("_", k) for k in range(n)] == expected
