"""KillAfterLastUse's kill-kind rule, stated once in ``memcore_py/analysis/_kill_rules.pxd`` and
reached from Python through ``_kill_rules.kill_kind`` (what ``collect_last_usage`` calls)."""
import pytest

from memcore_py.analysis._kill_rules import DEFINITIONS, kill_kind, memcore_type_code
from memcore_py.ir.types import FuncType, ObjectType, PrimType, ShapeType, TensorType, TupleType

TENSOR = TensorType((2, 3), "float32")
PLAIN, STORAGE, NO_REGISTER, CONSTANT = (DEFINITIONS[k] for k in ("plain", "storage", "no_register", "constant"))


@pytest.mark.parametrize(("ty", "kind"), [
    (TENSOR, 0),
    (TupleType([TENSOR]), 2),
    (TupleType([]), -1),
    (ShapeType(ndim=2), -1),
    (PrimType("int64"), -1),
    (FuncType([TENSOR], TENSOR), -1),
    (ObjectType(), 2),
    (None, 2),
])
def test_kill_kind_of_a_plainly_bound_variable_follows_its_type(ty, kind):
    """Tensors get kill_tensor, other register objects kill_object (an untyped value too);
    shapes, prim values, functions and ``R.Tuple()`` hold no register."""
    assert kill_kind(PLAIN, ty) == kind


@pytest.mark.parametrize("ty", [TENSOR, ObjectType(), TupleType([TENSOR]), None])
def test_storage_is_killed_with_kill_storage_whatever_its_type(ty):
    assert kill_kind(STORAGE, ty) == 1


@pytest.mark.parametrize("definition", [NO_REGISTER, CONSTANT])
@pytest.mark.parametrize("ty", [TENSOR, ObjectType(), TupleType([TENSOR])])
def test_constants_and_null_values_are_never_killed(definition, ty):
    assert kill_kind(definition, ty) == -1


def test_type_codes_tell_the_empty_tuple_from_a_tuple():
    assert memcore_type_code(TupleType([])) != memcore_type_code(TupleType([TENSOR]))
    assert memcore_type_code(None) != memcore_type_code(ObjectType())


@pytest.mark.parametrize("bad", [-1, 4, 99])
def test_kill_kind_refuses_an_unknown_definition(bad):
    with pytest.raises(ValueError, match=r"definition must be one of \[0, 1, 2, 3\]; got"):
        kill_kind(bad, TENSOR)
