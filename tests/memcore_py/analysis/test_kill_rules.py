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


KILLED = """
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def k(A: T.handle, B: T.handle):
        T.evaluate(0)

    @R.function(pure=False)
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        a: R.Tensor((4,), "float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _: R.Tuple = cls.k(x, a)
        b: R.Tensor((4,), "float32") = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1: R.Tuple = cls.k(a, b)
        return b
"""


def test_kill_edits_answer_for_the_function_s_bindings_and_refuse_other_indices():
    from memcore_py import parse
    from memcore_py.analysis.last_usage import function_edits

    edits, _table = function_edits(parse(KILLED)["main"].body, "main")
    assert [edits.action(0, p) for p in range(4)] == [0, 0, 0, 0]
    assert [kind for kind, _t, _k in edits.kills_after(0, 3)] == [0]  # a, after its last use
    assert edits.kills_after_block(0) == []
    assert len(edits.records(0, edits.n_kills)) == edits.n_kills
    for block, pos in ((0, 4), (0, -1), (1, 0), (-1, 0)):
        with pytest.raises(IndexError, match="is not a binding of the function's blocks"):
            edits.kills_after(block, pos)
        with pytest.raises(IndexError, match="is not a binding of the function's blocks"):
            edits.action(block, pos)
    with pytest.raises(IndexError, match="is not a block of the table"):
        edits.kills_after_block(1)
    for start, n in ((0, edits.n_kills + 1), (-1, 1), (0, -1)):
        with pytest.raises(IndexError, match="are not within the"):
            edits.records(start, n)
