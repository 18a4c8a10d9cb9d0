"""The shortcuts of the type rules' helpers: :func:`~memcore_py.ir.types.tensor_type_of`
(the unchecked tensor type), :func:`~memcore_py.ir.prim.simplify_const` on leaves, the
dtype check's memo and the constant element count of a reshape, each against the general
code it stands for."""
import pytest

from memcore_py.errors import IRError
from memcore_py.ir.op_rules_common import _broadcast, _product, _static, _static_product
from memcore_py.ir.prim import FloorDiv, IntImm, PrimVar, Sub, canonical, simplify_const
from memcore_py.ir.types import TensorType, check_dtype, tensor_type_of, type_equal

S = PrimVar("s")
N = PrimVar("n")


@pytest.mark.parametrize("shape, dtype, vdevice", [
    ((IntImm(2), S, IntImm(4)), "float32", None),
    ((), "bool", None),
    ((S * 4,), "", "cuda:0"),
])
def test_tensor_type_of_equals_the_checked_constructor(shape, dtype, vdevice):
    fast = tensor_type_of(shape, dtype, vdevice)
    checked = TensorType(shape, dtype, vdevice=vdevice)
    assert type(fast) is TensorType
    assert type_equal(fast, checked)
    assert (fast.shape, fast.dtype, fast.ndim, fast.vdevice) == (checked.shape, checked.dtype, checked.ndim,
                                                                 checked.vdevice)
    with pytest.raises(AttributeError):
        fast.dtype = "int8"  # immutable like any type


def test_checked_constructor_still_rejects_bad_input():
    check_dtype("float32")  # remembered as valid
    with pytest.raises(IRError, match="dtype must be"):
        TensorType((IntImm(2),), "float33x0")
    with pytest.raises(IRError, match="dtype must be"):
        check_dtype(["float32"])  # unhashable: still the typed error
    with pytest.raises(IRError, match="dtype must be"):
        check_dtype(b"float32")
    with pytest.raises(IRError, match="int or PrimExpr"):
        TensorType((IntImm(2), 2.5), "float32")
    with pytest.raises(IRError, match="int or PrimExpr"):
        TensorType((True,), "float32")
    with pytest.raises(IRError, match="ndim must match"):
        TensorType((IntImm(2),), "float32", ndim=2)
    assert TensorType([2, S], "float32").shape[0].value == 2  # ints still become IntImms


@pytest.mark.parametrize("expr, want", [
    (IntImm(0), 0), (IntImm(7), 7), (IntImm(-1, "int32"), -1), (S, None), (Sub(S, S), 0),
    (S * 0 + 3, 3), (FloorDiv(S, N), None),
])
def test_simplify_const_leaves_agree_with_the_canonical_form(expr, want):
    assert simplify_const(expr) == want
    form = canonical(expr)
    general = 0 if not form else (form[0][1] if len(form) == 1 and form[0][0] == () else None)
    assert general == want


@pytest.mark.parametrize("dims", [
    (), (IntImm(2), IntImm(3)), (S, IntImm(4)), (S, IntImm(0)), (IntImm(0), S, N), (S, N),
    (Sub(S, S), N), (FloorDiv(S, N), IntImm(2)), (S * 0 + 5, IntImm(2)),
])
def test_static_product_is_the_product_folded(dims):
    assert _static_product(dims) == _static(_product(dims))


@pytest.mark.parametrize("dims", [(IntImm(2**40), IntImm(2**40)), (S, IntImm(2**40), IntImm(-(2**40)))])
def test_static_product_out_of_int64_raises_as_the_product(dims):
    with pytest.raises(IRError, match="fit in int64") as want:
        _product(dims)
    with pytest.raises(IRError, match="fit in int64") as got:
        _static_product(dims)
    assert str(got.value) == str(want.value)


def test_broadcast_same_dims_and_errors():
    a = TensorType((IntImm(2), S), "float32")
    b = TensorType((S,), "float32")
    assert _broadcast("add", a, b) == ((a.shape[0], S), 2)
    c = TensorType((N, IntImm(1), IntImm(3)), "float32")
    shape, nd = _broadcast("add", c, TensorType((IntImm(5), IntImm(1)), "float32"))
    assert nd == 3 and [d.value if type(d) is IntImm else d for d in shape] == [N, 5, 3]
    assert _broadcast("add", a, TensorType((IntImm(2), N), "float32")) == (None, 2)  # not provable: rank only
    with pytest.raises(IRError, match="cannot be broadcast"):
        _broadcast("add", TensorType((IntImm(2),), "float32"), TensorType((IntImm(3),), "float32"))
