"""The structural key of a symbolic size, which memoises its reuse class
(:func:`~memcore_py.analysis.arith.size_class_key`) across pass calls."""
from memcore_py.analysis.arith import size_class_key, size_struct_key, tensor_bytes
from memcore_py.ir.memo import MEMO
from memcore_py.ir.prim import Cast, FloorDiv, IntImm, Mul, PrimVar
import memcore_py
from memcore_py.transform import StaticPlanBlockMemory

GROUP = "analysis.storage_tokens.size_class_key"


def test_equal_structures_of_other_objects_have_equal_keys():
    a = tensor_bytes((PrimVar("n"), IntImm(12), PrimVar("m")), "float32")[0]
    b = tensor_bytes((PrimVar("n"), IntImm(12), PrimVar("m")), "float32")[0]
    assert a is not b
    assert size_struct_key(a) == size_struct_key(b)
    assert size_class_key(a) == size_class_key(b)


def test_different_structures_have_different_keys():
    n, m = PrimVar("n"), PrimVar("m")
    keys = {size_struct_key(e) for e in (Mul(n, m), Mul(m, n), Mul(n, IntImm(4)), FloorDiv(n, IntImm(4)), n,
                                          IntImm(4))}
    assert len(keys) == 6


def test_a_node_outside_the_keyed_kinds_has_no_key():
    assert size_struct_key(Mul(PrimVar("n"), Cast("int64", PrimVar("m")))) is None


TEXT = """
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        a: R.Tensor((n, 4), "float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = R.call_packed("k", x, a, ty_args=(R.Tensor((n,), "float32"),))
        b: R.Tensor((n, 4), "float32") = R.builtin.alloc_tensor(R.shape([n, 4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _1 = R.call_packed("k", x, b, ty_args=(R.Tensor((n,), "float32"),))
        return x
"""


def test_planning_a_module_read_again_adds_no_entry():
    MEMO.clear()
    StaticPlanBlockMemory()(memcore_py.parse(TEXT))
    held = MEMO.sizes()[GROUP]
    assert held >= 1
    for _ in range(3):  # new objects each time, the same sizes
        out = StaticPlanBlockMemory()(memcore_py.parse(TEXT))
    assert MEMO.sizes()[GROUP] == held
    assert out.script().count("R.memory.alloc_storage") == 1  # the two sizes proved equal: one storage
