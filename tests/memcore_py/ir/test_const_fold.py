"""The product folding kernel (``memcore_py/ir/_const_fold.pyx``): TIR's ``TryConstFold<Mul>``
on a left-deep product, as a plan over the factors' positions."""
import pytest

from memcore_py.ir._const_fold import product_fold_plan


@pytest.mark.parametrize(
    ("start", "factors", "plan"),
    [
        (4, [2, 3], (24, [])),                    # constants multiply
        (4, [None, 4], (4, [0, 1])),              # 4 * n * 4: a constant after an expression stays
        (1, [None, 4], ((0,), [1])),              # 1 * n is n
        (1, [None, 1, None], ((0,), [2])),        # n * 1 is n
        (4, [None, 0, None], (0, [])),            # n * 0 is 0, and 0 absorbs what follows
        (0, [None, None], (0, [])),               # 0 * n is 0
        (2, [3, None, 5, None], (6, [1, 2, 3])),  # constants fold only before the first expression
        (4, [], (4, [])),
        (-2, [3, None], (-6, [1])),               # negative constants fold as any other
    ],
)
def test_plans(start, factors, plan):
    assert product_fold_plan(start, factors) == plan


@pytest.mark.parametrize(("start", "factors"), [(2 ** 62, [4]), (-(2 ** 62), [4, None]), (3, [2 ** 62])])
def test_a_constant_over_int64_is_an_overflow_error(start, factors):
    with pytest.raises(OverflowError, match="exceeds int64"):
        product_fold_plan(start, factors)


def test_a_factor_that_is_not_an_int64_is_an_overflow_error():
    with pytest.raises(OverflowError):
        product_fold_plan(4, [2 ** 70])


# ------------------------------------------------------------------ fold_mul: one product, two nodes
def _n():
    from memcore_py.ir.prim import PrimVar

    return PrimVar("n", "int64")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("6", "7", "42"),          # two constants multiply
        ("1", "n", "n"),           # 1 * n is n
        ("n", "1", "n"),           # n * 1 is n
        ("0", "n", "0"),           # 0 absorbs on either side
        ("n", "0", "0"),
        ("3", "n", "3 * n"),       # a constant before an expression stays where it was
        ("n", "3", "n * 3"),
        ("n", "n", "n * n"),
    ],
)
def test_fold_mul_folds_as_tir_multiplies(a, b, expected):
    from memcore_py.ir.prim import IntImm, Mul, PrimVar
    from memcore_py.ir.prim_arith import fold_mul

    n = _n()
    node = {"n": n}

    def make(text):
        return node[text] if text in node else IntImm(int(text))

    out = fold_mul(make(a), make(b))
    if expected.isdigit():
        assert type(out) is IntImm and out.value == int(expected) and out.dtype == "int64"
    elif expected == "n":
        assert out is n  # the factor itself, not a copy
    else:
        lhs, rhs = expected.split(" * ")
        assert type(out) is Mul
        for side, text in ((out.a, lhs), (out.b, rhs)):
            if text == "n":
                assert side is n
            else:
                assert type(side) is IntImm and side.value == int(text)
        assert not isinstance(out.a, Mul) and type(out.b) in (IntImm, PrimVar)


def test_fold_mul_keeps_the_dtype_of_an_int32_product():
    from memcore_py.ir.prim import IntImm
    from memcore_py.ir.prim_arith import fold_mul

    out = fold_mul(IntImm(6, "int32"), IntImm(7, "int32"))
    assert (out.value, out.dtype) == (42, "int32")


def test_fold_mul_over_int64_is_an_ir_error():
    from memcore_py.errors import IRError
    from memcore_py.ir.prim import IntImm
    from memcore_py.ir.prim_arith import fold_mul

    with pytest.raises(IRError, match="exceeds int64"):
        fold_mul(IntImm(2 ** 40), IntImm(2 ** 40))
