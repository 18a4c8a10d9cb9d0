"""The compiled bound kernel behind ``const_int_bound`` and ``modular_set``: hand-derived
values at its edges (saturation, the modular narrowing of ``%``, int64 overflow), and the
checks its node-list entry makes before reading anything. Its agreement with TVM's analyzer
on random expressions is tests/oracle/test_spbm_arith_oracle.py."""
import pytest

from memcore_py._compiled import load_compiled
from memcore_py.ir.prim import LT, Cast, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimVar, Select
from memcore_py.ir.prim_arith import NEG_INF, POS_INF, VarBounds, const_int_bound, modular_set

ib = load_compiled("memcore_py.ir._int_bound")
n = PrimVar("n")


def _bounds(**ranges):
    b = VarBounds()
    b.ranges.update(ranges)
    return b


def test_products_saturate_at_the_infinities():
    assert const_int_bound(Mul(IntImm(2**62), IntImm(4))) == (POS_INF, POS_INF)
    assert const_int_bound(Mul(IntImm(-(2**62)), IntImm(4))) == (NEG_INF, NEG_INF)
    assert const_int_bound(Mul(n, IntImm(3)), _bounds(n=(0, 2**62))) == (0, POS_INF)


def test_a_remainder_by_a_constant_is_narrowed_by_the_modular_set():
    # 4n + 2 is 2 or 6 modulo 8 whatever n is: [2, 6], not [0, 7]
    e = FloorMod(Mul(n, IntImm(4)) + IntImm(2), IntImm(8))
    assert modular_set(Mul(n, IntImm(4)) + IntImm(2)) == (4, 2)
    assert const_int_bound(e) == (2, 6)


def test_division_min_max_select_and_cast():
    b = _bounds(n=(3, 17))
    assert const_int_bound(FloorDiv(n, IntImm(4)), b) == (0, 4)
    assert const_int_bound(FloorDiv(n, IntImm(-4)), b) == (-5, -1)
    assert const_int_bound(Min(n, IntImm(8)), b) == (3, 8)
    assert const_int_bound(Max(n, IntImm(8)), b) == (8, 17)
    assert const_int_bound(Select(LT(n, IntImm(5)), IntImm(100), n), b) == (3, 100)
    assert const_int_bound(Cast("int8", Mul(n, IntImm(10))), b) == (30, 127)  # [30, 170] within int8
    assert const_int_bound(Cast("int8", n), _bounds()) == (-128, 127)


def test_a_modular_set_that_would_overflow_int64_knows_nothing():
    big = IntImm(2**40)
    assert modular_set(Mul(Mul(big, big), n)) == (1, 0)
    assert modular_set(Mul(big, n)) == (2**40, 0)


@pytest.mark.parametrize("nodes, message", [
    ([], "no nodes"),
    ([(99, -1, -1, 0, 0)], "kind 99 out of range"),
    ([(ib.IMM, -1, -1, 1, 1), (ib.ADD, 0, 1, 0, 0)], "not earlier nodes"),
    ([(ib.IMM, -1, -1, 1, 1), (ib.CAST, 5, -1, 0, 9)], "not earlier nodes"),
    ([(ib.ADD, -1, 0, 0, 0)], "not earlier nodes"),
])
def test_the_node_list_entry_refuses_what_it_cannot_read(nodes, message):
    with pytest.raises(ValueError, match=message):
        ib.bound_of(nodes)


def test_the_node_list_entry_bounds_a_sum_of_products():
    # 3 * v + 5 with v in [0, 10], v's range given in the node
    nodes = [(ib.IMM, -1, -1, 3, 3), (ib.VAR, -1, -1, 0, 10), (ib.MUL, 0, 1, 0, 0), (ib.IMM, -1, -1, 5, 5),
             (ib.ADD, 2, 3, 0, 0)]
    assert ib.bound_of(nodes) == (5, 35)
