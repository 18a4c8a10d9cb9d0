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
