"""memcore_py.ir.simplify: TVM's canonical simplification of index arithmetic, and the
reshape ``-1`` it resolves. The expected trees are TVM 0.27's ``Analyzer.simplify`` results
for the same input trees (tests/oracle/test_dynamic_shape_arith_oracle.py checks generated
ones against TVM itself)."""
import pytest

import memcore_py
from memcore_py.ir.simplify import UnsupportedSimplify, canonical_simplify, is_simplifiable, simplify
from memcore_py.ir.prim import Add, FloorDiv, FloorMod, IntImm, Max, Mul, PrimVar, Sub, prim_equal, substitute
from memcore_py.ir.prim_arith import VarBounds

s, a = PrimVar("s"), PrimVar("a")


def I(v):  # noqa: E743 - TVM's spelling of an int64 literal
    return IntImm(v)


CASES = [
    # quotient of products sharing factors (TVM ProdDivSimplify): the reshape -1 of view(1, s, -1, 32)
    ("shared_var_and_gcd", FloorDiv(Mul(s, I(256)), Mul(s, I(32))), I(8)),
    ("shared_var_left", FloorDiv(Mul(Mul(a, s), I(256)), Mul(s, I(32))), Mul(a, I(8))),
    ("shared_var_right", FloorDiv(Mul(Mul(a, s), I(256)), Mul(a, I(32))), Mul(s, I(8))),
    ("quotient_below_one", FloorDiv(Mul(s, I(256)), Mul(s, I(512))), I(0)),
    ("remaining_constant_divisor", FloorDiv(Mul(Mul(s, a), I(256)), Mul(s, I(512))), FloorDiv(a, I(2))),
    ("inexact_constant_quotient", FloorDiv(Mul(s, I(256)), Mul(s, I(3))), I(85)),
    ("all_factors_shared", FloorDiv(Mul(s, a), Mul(a, s)), I(1)),
    ("reordered_factors", FloorDiv(Mul(Mul(s, I(8)), a), Mul(a, s)), I(8)),
    ("constant_left_operand", FloorDiv(Mul(Mul(s, I(4)), a), Mul(I(2), s)), Mul(a, I(2))),
    ("unit_factor_in_divisor", FloorDiv(Mul(s, a), Mul(s, Mul(a, I(1)))), I(1)),
    ("remainder_of_products", FloorMod(Mul(s, I(256)), Mul(s, I(32))), I(0)),
    # division and remainder by a constant (SplitExpr / SumExpr)
    ("constant_divisor_of_product", FloorDiv(Mul(Mul(s, a), I(256)), I(512)), FloorDiv(Mul(s, a), I(2))),
    ("scale_divides", FloorDiv(Mul(Mul(I(2), s), I(4)), I(8)), s),
    ("scale_does_not_divide", FloorDiv(Mul(s, I(12)), I(8)), FloorDiv(Mul(s, I(12)), I(8))),
    ("sum_divisible_parts", FloorDiv(Add(Mul(s, I(8)), I(4)), I(4)), Add(Mul(s, I(2)), I(1))),
    ("sum_remainder", FloorMod(Add(Mul(s, I(8)), I(5)), I(4)), I(1)),
    ("unbounded_rest_kept", FloorDiv(Add(s, I(7)), I(8)), FloorDiv(Add(s, I(7)), I(8))),
    ("div_of_mod_identity", FloorDiv(FloorMod(Add(Mul(s, I(4)), a), I(16)), I(4)),
     FloorMod(Add(FloorDiv(a, I(4)), s), I(4))),
    # sums merge terms of one index
    ("like_terms", Add(Mul(s, I(4)), Mul(s, I(4))), Mul(s, I(8))),
    ("difference_of_like_terms", Sub(Mul(s, I(3)), s), Mul(s, I(2))),
]


@pytest.mark.parametrize("expr, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_simplify_matches_tvm(expr, expected):
    got = simplify(expr)
    assert prim_equal(got, expected), f"{expr!r}: got {got!r}, TVM writes {expected!r}"


REWRITE_CASES = [
    # floormod(x * c1, c2) -> floormod(x * floormod(c1, c2), c2), then canonical again
    ("factor_reduced_modulo_divisor", FloorMod(Mul(s, I(6)), I(4)), Mul(FloorMod(s, I(2)), I(2))),
    ("factor_reduced_to_one", FloorMod(Mul(s, I(7)), I(3)), FloorMod(s, I(3))),
    ("reduced_factor_not_dividing", FloorMod(Mul(s, I(16)), I(6)), FloorMod(Mul(s, I(4)), I(6))),
    ("negative_factor_floor_remainder", FloorMod(Mul(s, I(-3)), I(4)), FloorMod(s, I(4))),
    ("negative_divisor", FloorMod(Mul(s, I(6)), I(-4)), FloorMod(Mul(s, I(-2)), I(-4))),
    ("under_an_outer_node", Add(FloorMod(Mul(s, I(16)), I(12)), s), Add(Mul(FloorMod(s, I(3)), I(4)), s)),
    # floormod(x * c1 + y, c2) -> floormod(x, c2 // c1) * c1 + y if c2 % c1 == 0 and y // c1 == 0
    ("offset_below_factor", FloorMod(Add(Mul(s, I(2)), I(1)), I(4)), Add(Mul(FloorMod(s, I(2)), I(2)), I(1))),
    ("offset_not_below_factor", FloorMod(Add(Mul(s, I(2)), I(3)), I(4)), FloorMod(Add(Mul(s, I(2)), I(3)), I(4))),
    ("factor_not_dividing_divisor", FloorMod(Add(Mul(s, I(6)), I(1)), I(4)),
     FloorMod(Add(Mul(s, I(6)), I(1)), I(4))),
    ("offset_negative_divisor", FloorMod(Add(Mul(s, I(2)), I(1)), I(-4)),
     FloorMod(Add(Mul(s, I(2)), I(1)), I(-4))),
]


@pytest.mark.parametrize("expr, expected", [c[1:] for c in REWRITE_CASES], ids=[c[0] for c in REWRITE_CASES])
def test_ported_rewrite_rules_match_tvm(expr, expected):
    got = simplify(expr)
    assert prim_equal(got, expected), f"{expr!r}: got {got!r}, TVM writes {expected!r}"


def test_rewrite_offset_needs_a_proof_from_the_bounds():
    """``y // c1 == 0`` is proved from the variable bounds, as TVM's ``TryCompare`` does."""
    expr = FloorMod(Add(Mul(s, I(2)), a), I(4))
    assert prim_equal(simplify(expr), expr)
    assert prim_equal(simplify(expr, VarBounds(ranges={"a": (0, 1)})), Add(Mul(FloorMod(s, I(2)), I(2)), a))
    assert prim_equal(simplify(expr, VarBounds(ranges={"a": (0, 2)})), expr)


def test_literals_and_variables_are_unchanged():
    assert simplify(s) is s
    one = I(1)
    assert simplify(one) is one


def test_canonical_simplify_is_idempotent_on_its_results():
    for _name, expr, _expected in CASES:
        once = canonical_simplify(expr)
        assert prim_equal(canonical_simplify(once), once)


def test_unsupported_nodes_are_refused_not_guessed():
    e = FloorDiv(Max(s, I(4)), I(2))
    assert not is_simplifiable(e)
    with pytest.raises(UnsupportedSimplify, match="Max"):
        simplify(e)
    assert is_simplifiable(FloorDiv(Mul(s, I(256)), Mul(s, I(32))))


def test_division_by_zero_is_an_error():
    with pytest.raises(memcore_py.errors.IRError, match="division by zero"):
        simplify(FloorDiv(Mul(s, I(4)), I(0)))


def _reshape_shape(text_shape, new_shape):
    from memcore_py.ir.expr import ShapeExpr, Var
    from memcore_py.ir.construct import new_call
    from memcore_py.ir.infer import infer_type
    from memcore_py.ir.op import get_op
    from memcore_py.ir.types import TensorType

    x = Var("x", TensorType(tuple(text_shape), "float32"))
    call = new_call(get_op("relax.reshape"), (x, ShapeExpr(list(new_shape))), {})
    return infer_type(call).shape


@pytest.mark.parametrize("old, new, expected", [
    ((I(1), s, I(256)), (1, s, -1, 32), (I(1), s, I(8), I(32))),           # view(1, s, -1, 32)
    ((s, I(256)), (-1, 32), (Mul(s, I(8)), I(32))),                         # (s*256) // 32
    ((I(2), s, I(8), I(32)), (2, -1, 256), (I(2), s, I(256))),              # merge heads back
    ((a, s, I(64)), (s, -1), (s, Mul(a, I(64)))),                           # a*s*64 // s
    ((a, s, I(12)), (-1, 8), (FloorDiv(Mul(Mul(a, s), I(12)), I(8)), I(8))),  # not exact: kept a floordiv
    ((I(3), I(0), s), (-1, 0, 1), (I(0), I(0), I(1))),                      # a 0 copies the input dim
], ids=["split_heads", "flatten_then_split", "merge_heads", "symbolic_quotient", "inexact", "zero_copies"])
def test_reshape_resolves_minus_one_as_tvm(old, new, expected):
    from memcore_py.ir.prim import as_prim
    got = _reshape_shape(old, [as_prim(d) for d in new])
    assert len(got) == len(expected) and all(prim_equal(g, e) for g, e in zip(got, expected)), got


def _value_at(expr, v: int) -> int:
    got = substitute(expr, {"s": IntImm(v)})
    assert type(got) is IntImm, got
    return got.value


@pytest.mark.parametrize("simplifier", [simplify, canonical_simplify])
def test_quotients_of_negatively_scaled_remainders_keep_their_value(simplifier):
    # ``(s * -1) % 3 // 2`` is 1 at s = 1: the remainder's upper factor is negative (-3), and
    # "(x % c1) // c2 is 0 when c2 >= c1" holds for positive factors only
    bad = []
    for c1 in (-3, -2, -1, 1, 2, 3):
        for c2 in (2, 3, 4, 5, 6, 8):
            for k in (1, -1, 3):
                for d in (2, 3, 4, 6):
                    rem = FloorMod(Mul(s, I(c1)), I(c2))
                    expr = FloorDiv(Mul(rem, I(k)) if k != 1 else rem, I(d))
                    out = simplifier(expr)
                    for v in range(-13, 14):
                        if _value_at(out, v) != _value_at(expr, v):
                            bad.append(f"{expr!r} -> {out!r} at s={v}")
                            break
    assert not bad, f"{len(bad)} change value:\n" + "\n".join(bad[:10])
