"""memcore_py.ir.prim: expression trees as written, canonical form, prove_equal."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcore_py.errors import IRError
from memcore_py.ir.prim import (
    Add,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimVar,
    Sub,
    as_prim,
    canonical,
    free_prim_vars,
    prove_equal,
    simplify_const,
)

m, n, k = PrimVar("m"), PrimVar("n"), PrimVar("k")


def test_operators_build_trees_as_written():
    e = 4 * (m * n)
    assert type(e) is Mul and type(e.a) is IntImm and e.a.value == 4 and type(e.b) is Mul
    assert type(n + 1) is Add and type(1 + n) is Add and (1 + n).a.value == 1
    assert type(n - 1) is Sub and type(2 - n) is Sub
    assert type(n // 2) is FloorDiv and type(7 // n) is FloorDiv
    assert type(n % 2) is FloorMod and type(7 % n) is FloorMod
    assert e.dtype == "int64"


def test_nodes_are_immutable_and_compared_by_identity():
    with pytest.raises(AttributeError, match="immutable"):
        n.name = "x"
    assert PrimVar("n") != PrimVar("n")
    assert len({PrimVar("n"), PrimVar("n")}) == 2


@pytest.mark.parametrize(
    "a, b",
    [
        (4 * (m * n), (n * m) * 4),
        (n + n, 2 * n),
        ((n + 1) * (n + 1), n * n + 2 * n + 1),
        (n - n, IntImm(0)),
        (m * (n + k), m * k + n * m),
        (Min(n, m), Min(m, n)),
        (Max(n + 1, m), Max(m, 1 + n)),
        (Min(n, n), n),
        (FloorDiv(n, IntImm(1)), n),
        (FloorMod(n, IntImm(1)), IntImm(0)),
        (FloorDiv(IntImm(7), IntImm(2)), IntImm(3)),
        (FloorDiv(IntImm(-7), IntImm(2)), IntImm(-4)),  # floor, not truncation
        (FloorMod(IntImm(-7), IntImm(2)), IntImm(1)),
        (FloorDiv(n + 1, IntImm(2)) * 2, 2 * FloorDiv(1 + n, IntImm(2))),
        (8 * n, 4 * (2 * n)),
    ],
)
def test_prove_equal(a, b):
    assert prove_equal(a, b)
    assert canonical(a) == canonical(b)


@pytest.mark.parametrize(
    "a, b",
    [
        (n, m),
        (n + 1, n),
        (FloorDiv(2 * n, IntImm(2)), n),  # floordiv is opaque: not proven (conservative)
        (Min(n, m), Max(n, m)),
        (FloorDiv(n, IntImm(2)), FloorMod(n, IntImm(2))),
        (n * n, 2 * n),
    ],
)
def test_not_provably_equal(a, b):
    assert not prove_equal(a, b)


def test_division_by_zero_constant_stays_opaque():
    e = FloorDiv(IntImm(4), IntImm(0))
    assert simplify_const(e) is None
    assert not prove_equal(e, IntImm(0))


def test_variables_are_identified_by_name():
    assert prove_equal(PrimVar("n") * 2, 2 * PrimVar("n"))


def test_simplify_const():
    assert simplify_const(4 * (IntImm(2) + 3)) == 20
    assert simplify_const(n - n + 5) == 5
    assert simplify_const(n + 1) is None
    assert simplify_const(Max(IntImm(3), IntImm(9))) == 9
    assert simplify_const(IntImm(0)) == 0


def test_canonical_accepts_ints_and_is_hashable():
    assert canonical(3) == canonical(IntImm(3))
    assert hash(canonical(4 * (m * n))) == hash(canonical((n * m) * 4))


def test_free_prim_vars_in_first_occurrence_order():
    e = Max(n * 2, k) + FloorDiv(m, n)
    assert list(free_prim_vars(e)) == ["n", "k", "m"]
    out = {"z": PrimVar("z")}
    assert list(free_prim_vars(m, out)) == ["z", "m"]


def test_constructor_and_coercion_errors():
    with pytest.raises(IRError, match="IntImm value must fit in int64; got 9223372036854775808"):
        IntImm(2**63)
    with pytest.raises(IRError, match="PrimVar name must be a non-empty str; got ''"):
        PrimVar("")
    with pytest.raises(IRError, match="Add operands must be PrimExpr; got PrimVar, str"):
        Add(n, "x")
    with pytest.raises(IRError, match="got bool True"):
        as_prim(True)
    with pytest.raises(IRError, match="got float 1.5"):
        as_prim(1.5)
    with pytest.raises(IRError, match="canonical form is defined for integer expressions"):
        canonical(FloatImm(1.5))
    assert as_prim(np.int64(3)).value == 3
    assert IntImm(2**40, "int32").value == 2**40  # only int64 literals are range-checked


_leaf = st.one_of(st.integers(-5, 5).map(IntImm), st.sampled_from(["a", "b", "c"]).map(PrimVar))


def _combine(children):
    ops = st.sampled_from([Add, Sub, Mul, Min, Max])
    return st.tuples(ops, children, children).map(lambda t: t[0](t[1], t[2]))


_expr = st.recursive(_leaf, _combine, max_leaves=8)


def _eval(e, env):
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, PrimVar):
        return env[e.name]
    a, b = _eval(e.a, env), _eval(e.b, env)
    return {Add: a + b, Sub: a - b, Mul: a * b, Min: min(a, b), Max: max(a, b)}[type(e)]


@settings(max_examples=150, deadline=None)
@given(_expr, _expr, st.tuples(st.integers(-4, 4), st.integers(-4, 4), st.integers(-4, 4)))
def test_equal_canonical_forms_mean_equal_values(a, b, vals):
    """Soundness: whenever prove_equal says yes, the expressions agree on sample points."""
    env = dict(zip("abc", vals))
    if prove_equal(a, b):
        assert _eval(a, env) == _eval(b, env)
    assert prove_equal(a, a)
